/* A location's next chunk while the trace records, its full chunks handed
 * to the writer thread when the budget is tight, or spilled by the thread
 * itself (see buffer.h). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "trace_space.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- spilling */

/* The BufferFlush record at the start of chunk c: start time, payload word =
 * stop time. */
static uint8_t *sm_put_flush(sm_chunk_t *c, uint64_t t0, uint64_t t1)
{
    sm_record_t *r = (sm_record_t *)c->data;
    r->time = t0;
    r->kind = SM_REC_BUFFER_FLUSH;
    r->words = 1;
    r->aux = 0;
    r->ref = 0;
    memcpy(r + 1, &t1, sizeof t1);
    return c->data + sizeof *r + 8;
}

/* Writes loc's in-flight chunks, then its memory chunks, on the calling
 * thread (the writer thread is stopped).  In-flight chunks are freed; of the
 * memory chunks, the first is kept (empty) when keep is set and all are kept
 * (emptied) otherwise.  0, or -1 when they could not be written (their
 * records are then dropped and counted). */
/* sm_spill_in_place, under sm_enc_lock. */
static int sm_spill_in_place_locked(sm_location_t *loc, int keep_all)
{
    sm_buffer_t *b = &loc->buffer;
    int rc = 0;
    pthread_mutex_lock(&sm_w_lock);
    /* In-flight ones first: they are older. */
    while (b->flying_first) {
        sm_chunk_t *batch[SM_W_BATCH];
        uint64_t offsets[SM_W_BATCH];
        uint32_t n = 0;
        for (sm_chunk_t *c = b->flying_first; c && n < SM_W_BATCH; c = c->next) {
            sm_frame_seal(c, loc->id, c->used);
            batch[n++] = c;
        }
        pthread_mutex_lock(&sm_file_lock);
        int ok = sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        if (!ok) {
            if (!sm_spill_broken)
                sm_report_write_error(err);
            rc = -1;
        }
        sm_chunks_done(batch, n, offsets, ok);
    }
    for (sm_chunk_t *c = b->first; c;) {
        sm_chunk_t *batch[SM_W_BATCH];
        uint64_t offsets[SM_W_BATCH];
        uint32_t n = 0;
        for (; c && n < SM_W_BATCH; c = c->next) {
            uint32_t used = sm_chunk_used(loc, c);
            if (!used)
                continue;
            sm_frame_seal(c, loc->id, used);
            batch[n++] = c;
        }
        pthread_mutex_lock(&sm_file_lock);
        int ok = n == 0 || sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        for (uint32_t i = 0; i < n; i++) {
            if (ok)
                sm_note_extent(loc, offsets[i], &batch[i]->frame, batch[i]->slot_seq);
            else
                b->dropped_records += batch[i]->frame.records;
        }
        if (!ok) {
            if (!sm_spill_broken)
                sm_report_write_error(err);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&sm_w_lock);
    if (!b->first)
        return rc;
    int mapped = 0;
    for (sm_chunk_t *c = b->first; c; c = c->next)
        mapped |= c->slot_offset != 0;
    if (mapped || sm_crash_size) {
        /* Crash-safe slots hold their records now: they cannot be written
         * again.  The memory goes; a fresh chunk (a new slot) when one is
         * kept. */
        loc->live_end = NULL;
        for (sm_chunk_t *c = b->first, *next; c; c = next) {
            next = c->next;
            sm_chunk_free(c);
        }
        b->first = b->current = NULL;
        sm_chunk_t *c = keep_all ? NULL : sm_chunk_alloc();
        if (!c) {
            loc->pos = loc->end = NULL;
            return rc;
        }
        b->first = b->current = c;
        sm_chunk_bind(loc, c);
        sm_set_pos(loc, c->data);
        return rc;
    }
    if (keep_all) {
        /* Emptied chunks take new places in the sequence: what is written
         * into them now comes after everything (the encoder's prefix). */
        for (sm_chunk_t *c = b->first; c; c = c->next) {
            c->used = 0;
            c->slot_seq = b->n_chunks++;
        }
        sm_set_pos(loc, b->current->data);
        return rc;
    }
    sm_chunk_t *keep = b->first;
    for (sm_chunk_t *c = keep->next, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    keep->next = NULL;
    keep->used = 0;
    keep->slot_seq = b->n_chunks++;
    b->current = keep;
    sm_chunk_bind(loc, keep);
    sm_set_pos(loc, keep->data);
    return rc;
}

/* With the encoder kept off the location's chunks meanwhile. */
static int sm_spill_in_place(sm_location_t *loc, int keep_all)
{
    /* Chunks written here are not encoded first: the encoder takes no more
     * of this location (what it took stays a prefix; the rest is read back
     * at the end), and it is not reading them now. */
    sm_buffer_t *b = &loc->buffer;
    pthread_mutex_lock(&sm_enc_lock);
    if (b->enc_status == SM_ENC_NONE)
        b->enc_status = SM_ENC_OFF;
    b->enc_frozen = 1;
    int rc = sm_spill_in_place_locked(loc, keep_all);
    pthread_mutex_unlock(&sm_enc_lock);
    return rc;
}

int sm_buffer_spill(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->first)
        return 0;
    int saved_errno = errno;
    uint64_t t0 = sm_clock_now();
    int rc = sm_spill_in_place(loc, 0);
    if (rc == 0) {
        b->spills++;
        b->spill_waits++;
        if (b->current)
            sm_set_pos(loc, sm_put_flush(b->current, t0, sm_clock_now()));
    }
    sm_space_check(); /* no writer thread: the spilling thread looks */
    errno = saved_errno;
    return rc;
}

/* The budget is tight: loc's chunks go to the writer, and loc gets a chunk
 * back, waiting for the disk only while its own chunks are in flight and the
 * budget is spent. */
static uint8_t *sm_buffer_hand_over(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    uint64_t need = SM_CHUNK_TOTAL(sm_chunk_bytes);
    pthread_mutex_lock(&sm_w_lock);
    if (!sm_writer_usable_locked()) {
        pthread_mutex_unlock(&sm_w_lock);
        sm_buffer_spill(loc);
        return loc->pos;
    }
    int saved_errno = errno;
    sm_hand_over_locked(loc);
    uint64_t t0 = 0;
    int waited = 0;
    while (__atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) + need > sm_budget && b->flying_first &&
           !sm_w_stop) {
        if (!waited)
            t0 = sm_clock_now();
        waited = 1;
        sm_room_waiters++;
        pthread_cond_wait(&sm_w_room, &sm_w_lock);
        sm_room_waiters--;
    }
    pthread_mutex_unlock(&sm_w_lock);
    sm_chunk_t *c = sm_chunk_alloc();
    if (!c)
        abort(); /* out of memory for one chunk: nowhere to record this event */
    b->current = c;
    __atomic_store_n(&b->first, c, __ATOMIC_RELEASE);
    sm_chunk_bind(loc, c);
    uint8_t *pos = c->data;
    if (waited) {
        b->spill_waits++;
        pos = sm_put_flush(c, t0, sm_clock_now());
    }
    sm_set_pos(loc, pos);
    errno = saved_errno;
    return pos;
}

/* A new chunk for loc, as while the trace records. */
uint8_t *sm_buffer_next_chunk_now(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->current) {
        b->current->used = (uint32_t)(loc->pos - b->current->data);
        if (sm_discard) { /* forked child: nothing of it is written */
            sm_set_pos(loc, b->current->data);
            return loc->pos;
        }
        /* --crash-safe: the full slot is sealed now, on this thread (one
         * checksum per chunk, 2.5-5 GB/s: 6-12 ns per region pair's 32
         * bytes, against the ~330 ns the shared mapping costs), so that
         * only the chunk being written at a kill lacks a checksum. */
        if (b->current->slot_offset)
            sm_frame_seal(b->current, loc->id, b->current->used);
        uint64_t need = SM_CHUNK_TOTAL(sm_chunk_bytes);
        if (__atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) + need > sm_mark)
            return sm_buffer_hand_over(loc);
    }
    /* The first chunk of a location is granted even beyond the budget: every
     * thread needs somewhere to write. */
    sm_chunk_t *c = sm_chunk_alloc();
    if (!c) {
        if (b->current) {
            sm_buffer_spill(loc);
            return loc->pos;
        }
        abort();
    }
    /* Published for the writer thread, which encodes full chunks (their
     * `next` set) while they are still in memory. */
    if (b->current)
        __atomic_store_n(&b->current->next, c, __ATOMIC_RELEASE);
    else
        __atomic_store_n(&b->first, c, __ATOMIC_RELEASE);
    int full = b->current != NULL;
    b->current = c;
    sm_chunk_bind(loc, c);
    sm_set_pos(loc, c->data);
    if (full && sm_encoder && loc->buffer.enc_status != SM_ENC_OFF &&
        !__atomic_load_n(&sm_enc_stopped, __ATOMIC_RELAXED))
        sm_enc_wake();
    return loc->pos;
}

int sm_buffer_save(sm_location_t *loc)
{
    sm_buffers_quiesce();
    sm_scratch_settle(loc); /* (counted before its position is moved) */
    if (!loc->buffer.first && !loc->buffer.flying_first)
        return 0;
    if (sm_spill_in_place(loc, 1) != 0) {
        sm_error("saving the events of location %u to %s failed", loc->id,
                 sm_spill_file ? sm_spill_file : "the spill folder");
        return -1;
    }
    return 0;
}
