/* Write-behind for a shared library's file output (issue 13: the end of
 * the run).  A library that writes its files with stdio (fwrite from its own
 * buffers, then fclose) makes the calling thread wait for every copy into
 * the page cache.  Where a CPU is idle, those writes can be done by another
 * thread while the caller goes on filling its next buffer.
 *
 * sm_wb_hook points the library's own calls of fwrite, fseek and fclose
 * (its entries in the global offset table: nothing else in the process is
 * affected) at this module.  While write-behind runs (sm_wb_start ..
 * sm_wb_stop), an fwrite from memory the caller declared with sm_wb_own is
 * queued for the write-behind thread and returns at once; the caller must
 * not change that memory before sm_wb_busy says its writes are done.  Any other fwrite, an fseek and an fclose first wait for the
 * stream's queued writes, so each stream's bytes keep their order.  A queued
 * write that fails is reported by the stream's fclose (EOF, errno), which a
 * library checks anyway.  Outside sm_wb_start .. sm_wb_stop every call goes
 * straight to the C library. */
#ifndef SM_WRITE_BEHIND_H
#define SM_WRITE_BEHIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* The shared library that holds the function at `fn`: its fwrite, fseek
 * and fclose come here from now on.  0, or -1 (not a loaded shared library,
 * or it imports none of them: nothing changed). */
int sm_wb_hook(const void *fn) SM_HIDDEN;

/* The write-behind thread.  start: 0, or -1 (not hooked, no thread: calls
 * stay synchronous).  stop: every queued write done, the thread gone. */
int sm_wb_start(void) SM_HIDDEN;
void sm_wb_stop(void) SM_HIDDEN;

/* Memory [p, p+n) stays the caller's until its queued writes are done:
 * fwrite from it may be queued.  disown waits for them, then forgets it
 * (before the memory is freed). */
void sm_wb_own(const void *p, size_t n) SM_HIDDEN;
void sm_wb_disown(const void *p) SM_HIDDEN;

/* Whether a write from the owned memory at p is still queued. */
bool sm_wb_busy(const void *p) SM_HIDDEN;

/* Bytes written behind since the process started. */
uint64_t sm_wb_bytes(void) SM_HIDDEN;

#endif
