/* The writer thread: it writes the chunks handed over to the spill file,
 * maps crash-safe slots ahead and encodes full chunks while idle; its
 * pause around daemon() and its absence in a forked child; a thread's
 * end (see buffer.h). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpus.h"
#include "sig_hold.h"
#include "trace_space.h"

/* ---------------------------------------------------------------- the writer thread */

pthread_mutex_t sm_w_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sm_w_work = PTHREAD_COND_INITIALIZER;  /* queue not empty, or stop */
pthread_cond_t sm_w_room = PTHREAD_COND_INITIALIZER;  /* chunks written, or stopped */
sm_chunk_t *sm_q_head, *sm_q_tail;
static pthread_t sm_w_thread;
static int sm_w_started, sm_w_joined, sm_w_claimed;
int sm_w_stop;
static int sm_w_sync; /* no writer thread (stopped, or could not start): spill in place */
uint32_t sm_room_waiters; /* threads waiting for the disk (writer lock) */

/* A location's frame on disk (writer lock held). */
void sm_note_extent(sm_location_t *loc, uint64_t offset, const sm_spill_frame_t *f,
                    uint32_t seq)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->n_spilled == b->cap_spilled) {
        uint32_t cap = b->cap_spilled ? 2 * b->cap_spilled : 8;
        sm_spill_extent_t *grown = realloc(b->spilled, cap * sizeof *grown);
        if (!grown) { /* cannot find them again: count them as lost */
            b->dropped_records += f->records;
            return;
        }
        b->spilled = grown;
        b->cap_spilled = cap;
    }
    if (b->n_spilled == 0)
        sm_spill_users++;
    b->spilled[b->n_spilled++] = (sm_spill_extent_t){offset, f->bytes, f->records, SM_EXTENT_SEALED, seq, 0};
    b->spilled_bytes += f->bytes;
}

/* The chunks c[0..n) were written (ok) or not: record them on their owners,
 * take them off the owners' in-flight lists (each is the oldest there), and
 * give their memory back.  Writer lock held. */
void sm_chunks_done(sm_chunk_t **c, uint32_t n, const uint64_t *offsets, int ok)
{
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = c[i]->owner;
        sm_buffer_t *b = &loc->buffer;
        if (ok)
            sm_note_extent(loc, offsets[i], &c[i]->frame, c[i]->slot_seq);
        else
            b->dropped_records += c[i]->frame.records;
        b->flying_first = c[i]->next;
        if (!b->flying_first)
            b->flying_last = NULL;
        sm_chunk_free(c[i]);
    }
}

/* The writer thread takes about 2 MiB of chunks at a time (8 of the default
 * size; up to SM_W_BATCH small ones) and looks for a stop between them: at
 * the end of the run it must not finish a large batch that would only be
 * read back from disk again (quiesce waits for it); what it leaves is read
 * from memory. */
#define SM_W_TAKE_BYTES (2u << 20)

/* --crash-safe: slots mapped and made writable ahead of need by the writer
 * thread (mapping a slot costs a system call and a page-table fill per
 * page, which would otherwise land on the application's thread at each new
 * chunk).  Under the writer lock; taken in file order. */
#define SM_READY_MAX 4
static sm_chunk_t *sm_ready[SM_READY_MAX];
static uint32_t sm_n_ready;
static int sm_ready_wanted;

sm_chunk_t *sm_crash_chunk_map(void)
{
    sm_chunk_t *c = NULL;
    pthread_mutex_lock(&sm_w_lock);
    if (sm_n_ready) {
        c = sm_ready[0];
        memmove(sm_ready, sm_ready + 1, --sm_n_ready * sizeof *sm_ready);
    }
    if (sm_n_ready < SM_READY_MAX / 2 && sm_writer_usable_locked()) {
        sm_ready_wanted = 1;
        pthread_cond_signal(&sm_w_work);
    }
    pthread_mutex_unlock(&sm_w_lock);
    return c ? c : sm_crash_chunk_map_now();
}

/* The writer's part: fill the ready slots (writer lock held, dropped while
 * mapping). */
static void sm_ready_refill_locked(void)
{
    sm_ready_wanted = 0;
    while (sm_n_ready < SM_READY_MAX && !sm_w_stop && __atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&sm_w_lock);
        sm_chunk_t *c = sm_crash_chunk_map_now();
        pthread_mutex_lock(&sm_w_lock);
        if (!c)
            break;
        sm_ready[sm_n_ready++] = c;
    }
}

static void *sm_writer_main(void *arg)
{
    (void)arg;
    sm_cpus_bind_writer();
    sm_chunk_t *batch[SM_W_BATCH];
    uint64_t offsets[SM_W_BATCH];
    pthread_mutex_lock(&sm_w_lock);
    for (;;) {
        while (!sm_q_head && !sm_w_stop && !sm_ready_wanted && !sm_enc_wanted)
            pthread_cond_wait(&sm_w_work, &sm_w_lock);
        if (sm_w_stop)
            break;
        if (sm_ready_wanted) {
            sm_ready_refill_locked(); /* (crash-safe: the file grew) */
            pthread_mutex_unlock(&sm_w_lock);
            sm_space_check();
            pthread_mutex_lock(&sm_w_lock);
            if (!sm_q_head && !sm_enc_wanted)
                continue;
        }
        if (!sm_q_head) { /* only full chunks to encode */
            sm_enc_wanted = 0;
            pthread_mutex_unlock(&sm_w_lock);
            sm_enc_ahead();
            sm_space_check(); /* (the staged files grew) */
            pthread_mutex_lock(&sm_w_lock);
            continue;
        }
        uint32_t n = 0;
        uint64_t taken = 0;
        while (sm_q_head && n < SM_W_BATCH && taken < SM_W_TAKE_BYTES) {
            taken += sm_q_head->used;
            batch[n++] = sm_q_head;
            sm_q_head = sm_q_head->qnext;
        }
        if (!sm_q_head)
            sm_q_tail = NULL;
        pthread_mutex_unlock(&sm_w_lock);

        if (sm_encoder)
            sm_enc_before_write(batch, n); /* what goes to disk is encoded first */
        for (uint32_t i = 0; i < n; i++)
            sm_frame_seal(batch[i], batch[i]->owner->id, batch[i]->used);
        pthread_mutex_lock(&sm_file_lock);
        int ok = sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        if (!ok && !sm_spill_broken)
            sm_report_write_error(err);
        sm_space_check(); /* where the trace grows on disk (trace_space.h) */

        pthread_mutex_lock(&sm_w_lock);
        sm_chunks_done(batch, n, offsets, ok);
        pthread_cond_broadcast(&sm_w_room);
    }
    pthread_cond_broadcast(&sm_w_room);
    pthread_mutex_unlock(&sm_w_lock);
    return NULL;
}

/* The writer thread is not measured, and no signal is delivered to it (a
 * fatal signal's handler writes the output and waits for this thread). */
static int sm_writer_start(void)
{
    return sm_internal_thread_create(&sm_w_thread, 256u << 10, sm_writer_main, NULL);
}

void sm_buffers_quiesce(void)
{
    pthread_mutex_lock(&sm_w_lock);
    sm_w_sync = 1;
    if (sm_w_started && !sm_w_claimed) {
        sm_w_claimed = 1;
        sm_w_stop = 1;
        pthread_cond_signal(&sm_w_work);
        pthread_mutex_unlock(&sm_w_lock);
        pthread_join(sm_w_thread, NULL);
        pthread_mutex_lock(&sm_w_lock);
        sm_w_joined = 1;
        pthread_cond_broadcast(&sm_w_room);
    } else {
        while (sm_w_started && !sm_w_joined)
            pthread_cond_wait(&sm_w_room, &sm_w_lock);
    }
    pthread_mutex_unlock(&sm_w_lock);
}

/* Whether the writer thread was in use before sm_buffers_pause. */
static int sm_w_sync_before_pause;

void sm_buffers_pause(void)
{
    pthread_mutex_lock(&sm_w_lock);
    sm_w_sync_before_pause = sm_w_sync;
    pthread_mutex_unlock(&sm_w_lock);
    sm_buffers_quiesce();
}

/* In a forked child only the calling thread is left: a lock another
 * thread held at the fork would stay taken.  Every lock and condition of
 * the writer and the spill files, new. */
static void sm_buffers_fresh_locks(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    sm_w_lock = m;
    sm_file_lock = m;
    sm_free_lock = m;
    sm_spill_dir_lock = m;
    sm_enc_lock = m;
    sm_w_work = cv;
    sm_w_room = cv;
}

void sm_buffers_resume(int child)
{
    if (child) {
        sm_buffers_fresh_locks();
        sm_room_waiters = 0;
    }
    pthread_mutex_lock(&sm_w_lock);
    sm_w_started = sm_w_stop = sm_w_claimed = sm_w_joined = 0;
    sm_w_sync = sm_w_sync_before_pause;
    pthread_mutex_unlock(&sm_w_lock);
}

void sm_buffers_after_fork_child(void)
{
    sm_buffers_fresh_locks();
    sm_q_head = sm_q_tail = NULL;
    sm_enc_ended_head = sm_enc_ended_tail = NULL;
    sm_w_started = sm_w_stop = sm_w_claimed = sm_w_joined = 0;
    sm_w_sync = 1;
    sm_n_ready = 0; /* the parent's slots: never written from here */
    sm_ready_wanted = 0;
    /* Crash-safe chunks are the parent's file, shared: the child gets
     * private copies at the same addresses, so its writes never reach it. */
    sm_crash = 0;
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (!loc)
            continue;
        sm_chunk_t *lists[2] = {loc->buffer.first, loc->buffer.flying_first};
        for (int k = 0; k < 2; k++)
            for (sm_chunk_t *c = lists[k], *next; c; c = next) {
                next = c->next;
                if (c->slot_offset &&
                    mmap(c, sm_slot_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                         sm_spill_fd, (off_t)c->slot_offset) == MAP_FAILED) {
                    void *copy = malloc(sm_slot_bytes);
                    if (copy)
                        memcpy(copy, c, sm_slot_bytes);
                    mmap(c, sm_slot_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                    if (copy)
                        memcpy(c, copy, sm_slot_bytes);
                    free(copy);
                }
            }
    }
    /* The descriptor is the parent's file: never written from here. */
    sm_spill_fd = -1;
    sm_spill_broken = 1;
    sm_discard = 1;
}

void sm_buffers_fork_child(sm_location_t *self)
{
    sm_buffers_after_fork_child();
    /* Records of its own from now on: in memory, beyond the budget in a
     * spill file of its own, without a writer thread or the encoding during
     * the run (that state is the parent's) and not crash-safe. */
    sm_discard = 0;
    sm_encoder = NULL;
    sm_spill_file = NULL;
    sm_spill_end = sm_crash_size = 0;
    sm_spill_users = 0;
    sm_spill_broken = 0;
    sm_spill_error_said = 0;
    __atomic_store_n(&sm_in_use, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sm_peak, 0, __ATOMIC_RELAXED);
    if (self) /* (the parent's chunks stay in its copy of the memory, never touched) */
        sm_buffer_init(self);
}

/* Moves all of loc's chunks to the writer's queue (writer lock held). */
void sm_hand_over_locked(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    for (sm_chunk_t *c = b->first, *next; c; c = next) {
        next = c->next;
        c->next = NULL;
        if (!c->used) { /* nothing in it: straight back to the pool */
            sm_chunk_free(c);
            continue;
        }
        c->owner = loc;
        c->qnext = NULL;
        if (b->flying_last)
            b->flying_last->next = c;
        else
            b->flying_first = c;
        b->flying_last = c;
        if (sm_q_tail)
            sm_q_tail->qnext = c;
        else
            sm_q_head = c;
        sm_q_tail = c;
    }
    b->first = b->current = NULL;
    loc->live_end = NULL; /* the writer seals and unmaps those slots */
    b->spills++;
    pthread_cond_signal(&sm_w_work);
}

/* Writer lock held: whether the writer thread runs (started now if need be). */
int sm_writer_usable_locked(void)
{
    if (sm_w_sync || sm_discard)
        return 0;
    if (!sm_w_started) {
        if (sm_writer_start() != 0) {
            sm_w_sync = 1;
            return 0;
        }
        sm_w_started = 1;
    }
    return 1;
}

/* ---------------------------------------------------------------- a thread's end */

static void sm_buffer_thread_ended_held(sm_location_t *loc);

void sm_buffer_thread_ended(sm_location_t *loc)
{
    sm_sig_hold(SM_SIG_LOCKS);
    sm_buffer_thread_ended_held(loc);
    sm_sig_release();
}

static void sm_buffer_thread_ended_held(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->current || sm_discard)
        return;
    int tight = __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) > sm_mark;
    /* No more records: the encoder takes its last chunk too, and then
     * closes it (sm_enc_finish_locked), so that it is not left to the end
     * of the run. */
    int encode = sm_encoder && sm_encoder->close &&
                 __atomic_load_n(&b->enc_status, __ATOMIC_RELAXED) != SM_ENC_OFF &&
                 !__atomic_load_n(&b->enc_frozen, __ATOMIC_RELAXED) &&
                 !__atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE);
    if (!tight && !encode)
        return;
    if (b->stop_state == SM_STOP_UNTRACED)
        sm_scratch_settle(loc); /* its last chunk's end was noted then */
    else
        b->current->used = (uint32_t)(loc->pos - b->current->data);
    pthread_mutex_lock(&sm_w_lock);
    if (sm_writer_usable_locked()) {
        if (encode) {
            __atomic_store_n(&b->enc_ended, 1, __ATOMIC_RELEASE);
            b->enc_next_ended = NULL;
            if (sm_enc_ended_tail)
                sm_enc_ended_tail->buffer.enc_next_ended = loc;
            else
                sm_enc_ended_head = loc;
            sm_enc_ended_tail = loc;
            sm_enc_wanted = 1;
            pthread_cond_signal(&sm_w_work);
        }
        if (tight) {
            loc->pos = loc->end = NULL;
            loc->live_end = NULL;
            sm_hand_over_locked(loc);
        }
    }
    pthread_mutex_unlock(&sm_w_lock);
}
