/* Memory for event buffers and writer chunks, ready to write into.
 *
 * A fresh anonymous page costs a fault on first touch; in a virtual machine
 * that is microseconds per 4 KiB page (two levels of page tables to fill),
 * which at 32 bytes of trace per region pair is more than the rest of the
 * record.  Pieces handed out here come from address space backed by
 * transparent huge pages where the kernel offers them (one fault per 2 MiB),
 * populated as each piece is handed out, so the hot path writes into memory
 * that is mapped already (and, just cleared, still in cache).  Without huge
 * pages each piece is mapped and populated in one call.  Not for the hot
 * path itself: one call per chunk. */
#ifndef SM_PAGES_H
#define SM_PAGES_H

#include <stddef.h>
#include "compiler.h"

/* bytes of zeroed, populated memory, page-aligned; NULL when none is left.
 * Thread-safe. */
void *sm_pages_get(size_t bytes) SM_HIDDEN;
/* Gives back a piece from sm_pages_get (same size). */
void sm_pages_put(void *p, size_t bytes) SM_HIDDEN;
/* Whether the slabs are huge-page backed (for the benchmarks' report). */
int sm_pages_huge(void) SM_HIDDEN;

#endif
