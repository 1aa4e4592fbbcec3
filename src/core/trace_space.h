/* The disk space a process's trace takes while the run lasts (issue 27: a
 * busy run with --crash-safe wrote its trace twice over until the disk was
 * full).
 *
 * Two limits, from the configuration: SYSMEASURE_MAX_TRACE_SIZE, the most
 * this process's trace files may take, and SYSMEASURE_MIN_FREE_SPACE, the
 * free space left on the file system that holds them.  Both count what the
 * end of the run will still write (the archive of the events not encoded
 * yet, and what memory holds), so that the limit holds at the end too.
 * Before either is reached the trace stops: one line on stderr, and every
 * location ends its trace at its next chunk (buffer.h: the regions open
 * there are left in the trace, what follows is counted, not recorded); the
 * profile goes on.  The summary says when and why (sm_space_note).
 *
 * The check runs where the trace grows on disk, off the application's
 * path: on the spill writer thread after each batch it writes (and on a
 * thread that spills in place when there is no writer thread); statvfs at
 * most every 100 ms, sooner only as the room left halves.
 *
 * It also bounds the copy of the events on disk: the staged OTF2 event
 * files that the background encoder writes during the run (writers/otf2/)
 * hold events whose raw records stay in the spill or crash-safe file (they
 * are the fallback at the end and what sysmeasure-merge recovers from).
 * Once both hold an eighth of the limit, the encoder takes no more chunks
 * (sm_buffers_staging_stop): the copy stays below that. */
#ifndef SM_TRACE_SPACE_H
#define SM_TRACE_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "compiler.h"

typedef enum {
    SM_SPACE_RUNNING,     /* the trace records */
    SM_SPACE_MAX_SIZE,    /* stopped: SYSMEASURE_MAX_TRACE_SIZE */
    SM_SPACE_FREE_SPACE,  /* stopped: SYSMEASURE_MIN_FREE_SPACE */
    SM_SPACE_REASON_COUNT
} sm_space_reason_t;

/* The limits: max_bytes (0: none), and the free-space floor as bytes or as
 * a fraction of the file system (whichever is set; both 0: none). */
void sm_space_configure(uint64_t max_bytes, uint64_t min_free_bytes, double min_free_fraction)
    SM_HIDDEN;

/* This process is rank `rank` of a job: only rank 0 says at once that its
 * trace stopped (the others at -v; rank 0 says it for the job at the end,
 * sm_runtime's note), so that a job says it in one line. */
void sm_space_set_rank(uint32_t rank) SM_HIDDEN;

/* Bytes the staged OTF2 files of this process grew by (the background
 * encoder's flushes; negative: a file was found smaller than counted). */
void sm_space_staged_add(int64_t bytes) SM_HIDDEN;

/* Looks at the space now (see above); stops the trace when a limit is
 * near.  Any thread of sysmeasure's own, never the hot path. */
void sm_space_check(void) SM_HIDDEN;

/* Whether the trace stopped (read by a buffer at each new chunk). */
extern int sm_space_stopped_flag SM_HIDDEN;
static inline bool sm_space_stopped(void)
{
    return __atomic_load_n(&sm_space_stopped_flag, __ATOMIC_ACQUIRE) != 0;
}

/* Why and when (monotonic ns since the run began) the trace stopped. */
sm_space_reason_t sm_space_reason(void) SM_HIDDEN;
uint64_t sm_space_stop_ns(void) SM_HIDDEN;
/* A reason in words, with this process's limits ("the trace files reached
 * SYSMEASURE_MAX_TRACE_SIZE (8.0 MiB, ...)"), for the summary. */
void sm_space_reason_words(sm_space_reason_t why, char *buf, size_t len) SM_HIDDEN;

/* The summary's note for the job: "trace stopped at 1.234 s: <reason>, N
 * events not recorded ..." (ranks: how many stopped, of n_ranks; the
 * reasons, "; "-separated). */
void sm_space_note(char *buf, size_t len, double at_s, const char *reason, uint64_t not_recorded,
                   uint32_t ranks, uint32_t n_ranks) SM_HIDDEN;

#endif
