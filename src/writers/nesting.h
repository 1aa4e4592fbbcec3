/* The enters and leaves of one location, kept well nested for the archive.
 *
 * The event layer records an enter as a frame push, then its record, and a
 * leave as a frame pop, then its record.  A program's signal handler that
 * leaves by siglongjmp from between the two (it interrupted sysmeasure's
 * own recording) leaves one of them unrecorded: a frame whose enter has no
 * record, whose leave (written when an outer region is left) then closes
 * nothing; or an enter whose frame is gone, whose leave never comes.  The
 * profile, kept by the frames, is right either way.  The writer passes each
 * enter and leave through here: a leave of a region that is not open is
 * dropped, one of a region open deeper first leaves those above it (at the
 * same time), and what is open when the location's records end is left at
 * its last time.  On a well-nested stream nothing changes. */
#ifndef SM_NESTING_H
#define SM_NESTING_H

#include <stdint.h>
#include "../core/compiler.h"

typedef struct sm_nesting {
    uint32_t *open; /* regions open, innermost last */
    uint32_t depth, cap;
    int off;        /* out of memory: records pass as they are */
    uint64_t dropped; /* leaves of regions not open */
    uint64_t closed;  /* regions left by a leave of one open below them */
} sm_nesting_t;

/* An enter of region. */
void sm_nesting_enter(sm_nesting_t *n, uint32_t region) SM_HIDDEN;
/* A leave of region: -1 when it is not open (drop it), else how many
 * regions are open above it; the caller leaves each (sm_nesting_top, then
 * sm_nesting_pop), then region itself (sm_nesting_pop). */
int64_t sm_nesting_leave(sm_nesting_t *n, uint32_t region) SM_HIDDEN;
/* The innermost open region, and leaving it. */
uint32_t sm_nesting_top(const sm_nesting_t *n) SM_HIDDEN;
void sm_nesting_pop(sm_nesting_t *n) SM_HIDDEN;
/* Starts over (a new location); the counts stay. */
void sm_nesting_reset(sm_nesting_t *n) SM_HIDDEN;
void sm_nesting_free(sm_nesting_t *n) SM_HIDDEN;

#endif
