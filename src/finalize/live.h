/* The end of a live run (live.c). */
#ifndef SM_FINALIZE_LIVE_H
#define SM_FINALIZE_LIVE_H

#include <stddef.h>
#include "../core/compiler.h"
#include "../core/procs.h"
#include "../core/runtime.h"

/* Everything the job writes, collectively over procs, from what this
 * process measured (run: its run totals, summed over the job here).  The
 * closing line's MPI share goes into summary_line ("" when none).  Returns
 * this process's failures. */
int sm_finalize_live(const sm_procs_t *procs, sm_run_info_t *run, char *summary_line,
                     size_t summary_len) SM_HIDDEN;

#endif
