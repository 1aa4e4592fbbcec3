/* The trace stopped before a disk limit (trace_space.h): each location
 * ends its trace at its next chunk (see buffer.h). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pages.h"
#include "sig_hold.h"
#include "trace_space.h"

/* ---------------------------------------------------------------- the trace stopped */

/* After the trace stopped (trace_space.h), each location ends its trace at
 * its next chunk, on the thread that writes it, in three steps, so that the
 * trace stays balanced without a look at the records:
 *
 * 1. armed, at that chunk's end: the record being made gets its room in a
 *    new chunk, as before, and the regions open now are noted.  Enter and
 *    leave change the stack before they ask for room, so these are exactly
 *    the regions open in the trace once that record is in.  The chunk's end
 *    is set right after that record: the next record comes back here.
 * 2. closing, at the next record: a leave of each noted region (innermost
 *    first) and a MeasurementOnOff (off) at the current time.
 * 3. untraced: every later record goes to a chunk of its own that is used
 *    again and again, never written to disk nor read; its records are
 *    counted when it is reused and at the end.
 *
 * So the disk takes at most one more chunk per location, and a thread
 * whose chunk does not fill goes on recording into it (memory it has
 * already) until it ends. */

/* Counts the records in loc's scratch chunk and empties it. */
void sm_scratch_settle(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    sm_chunk_t *s = b->scratch;
    uint8_t *pos = loc->pos;
    if (!s || b->stop_state != SM_STOP_UNTRACED || !pos || pos < s->data ||
        pos > s->data + s->capacity)
        return;
    b->untraced += sm_count_records(s->data, pos);
    sm_set_pos(loc, s->data);
}

/* Step 3: room in the scratch chunk (made at the first time). */
static uint8_t *sm_buffer_untraced_room(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->stop_state != SM_STOP_UNTRACED) {
        /* The chunk being filled ends here, as at any chunk's end. */
        if (b->current && loc->pos)
            b->current->used = (uint32_t)(loc->pos - b->current->data);
        loc->live_end = NULL; /* a crash-safe slot is complete here */
        b->stop_state = SM_STOP_UNTRACED;
    }
    sm_chunk_t *s = b->scratch;
    if (!s) {
        s = sm_pages_get(SM_CHUNK_TOTAL(sm_chunk_bytes));
        if (!s)
            abort(); /* out of memory for one chunk, as in sm_buffer_hand_over */
        memset(s, 0, sizeof *s);
        s->capacity = (uint32_t)sm_chunk_bytes;
        b->scratch = s;
        sm_set_pos(loc, s->data);
    } else {
        sm_scratch_settle(loc);
    }
    loc->end = s->data + s->capacity;
    return loc->pos;
}

/* Step 1. */
static uint8_t *sm_buffer_stop_arm(sm_location_t *loc, size_t bytes)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->current) /* nothing recorded: nothing to close */
        return sm_buffer_untraced_room(loc);
    uint32_t n = (uint32_t)(loc->sp - loc->stack), depth = 0;
    uint32_t *open = n ? malloc(n * sizeof *open) : NULL;
    if (n && !open) /* cannot note them: the regions stay open in the trace */
        return sm_buffer_untraced_room(loc);
    for (uint32_t i = 1; i <= n; i++)
        if (loc->stack[i].region != SM_DEEP_REGION)
            open[depth++] = loc->stack[i].region;
    b->stop_open = open;
    b->stop_depth = depth;
    b->stop_state = SM_STOP_CLOSING; /* a chunk as before */
    uint8_t *pos = sm_buffer_next_chunk_now(loc);
    b->stop_end = loc->end;
    loc->end = pos + bytes;
    b->stop_state = SM_STOP_ARMED;
    return pos;
}

/* Step 2. */
static uint8_t *sm_buffer_stop_close(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    b->stop_state = SM_STOP_CLOSING;
    loc->end = b->stop_end;
    uint64_t t = sm_clock_now();
    for (uint32_t i = b->stop_depth; i-- > 0;) {
        sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof *r);
        *r = (sm_record_t){.time = t, .kind = SM_REC_LEAVE, .ref = b->stop_open[i]};
        SM_BUFFER_COMMIT(loc, r + 1);
    }
    /* Where a thread's trace ends, for the viewers (GPU streams and metric
     * locations carry times of their own: none there). */
    if (loc->type == SM_LOCATION_CPU_THREAD) {
        sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof *r);
        *r = (sm_record_t){.time = t, .kind = SM_REC_MEASUREMENT, .aux = 0};
        SM_BUFFER_COMMIT(loc, r + 1);
    }
    free(b->stop_open);
    b->stop_open = NULL;
    b->stop_depth = 0;
    return sm_buffer_untraced_room(loc);
}

static uint8_t *sm_buffer_next_chunk_held(sm_location_t *loc, size_t bytes)
{
    sm_buffer_t *b = &loc->buffer;
    if (bytes + sizeof(sm_record_t) + 8 > sm_chunk_bytes)
        abort(); /* records are small; a chunk is at least 4 KiB */
    /* Once per chunk: whether the trace stopped (a forked child's records
     * are discarded anyway). */
    if (SM_UNLIKELY(b->stop_state != SM_STOP_NONE || (sm_space_stopped() && !sm_discard))) {
        switch ((sm_buffer_stop_t)b->stop_state) {
        case SM_STOP_NONE:
            return sm_buffer_stop_arm(loc, bytes);
        case SM_STOP_ARMED:
            return sm_buffer_stop_close(loc);
        case SM_STOP_UNTRACED:
            return sm_buffer_untraced_room(loc);
        case SM_STOP_CLOSING:
            break;
        }
    }
    return sm_buffer_next_chunk_now(loc);
}

uint64_t sm_buffer_untraced(sm_location_t *loc)
{
    /* Counted where they are (a thread still running may be writing there
     * after its location closed: nothing is moved). */
    const sm_buffer_t *b = &loc->buffer;
    const sm_chunk_t *s = b->scratch;
    const uint8_t *pos = __atomic_load_n(&loc->pos, __ATOMIC_ACQUIRE);
    uint64_t n = b->untraced;
    if (s && b->stop_state == SM_STOP_UNTRACED && pos && pos >= s->data &&
        pos <= s->data + s->capacity)
        n += sm_count_records(s->data, pos);
    return n;
}
/* On the application's thread, with locks taken: no signal handler may jump
 * out of it (sig_hold.h); a spill written here may meet a file size limit. */
uint8_t *sm_buffer_next_chunk(sm_location_t *loc, size_t bytes)
{
    sm_sig_hold(SM_SIG_LOCKS_IO);
    uint8_t *pos = sm_buffer_next_chunk_held(loc, bytes);
    sm_sig_release();
    return pos;
}
