/* Background encoding: the writer thread feeds full chunks to the encoder
 * (the OTF2 writer) while the run goes on (see buffer.h,
 * sm_buffers_set_encoder). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <pthread.h>
#include <string.h>

/* ---------------------------------------------------------------- background encoding */

/* Background encoding (buffer.h): the encoder, a wish for the writer to
 * look for full chunks, and a lock the writer holds while it encodes (a
 * thread that spills its own chunks takes it: they must not go while being
 * read).  Lock order: sm_enc_lock, then sm_w_lock. */
const sm_buffer_encoder_t *sm_encoder;
int sm_enc_stopped; /* sm_buffers_staging_stop (atomic) */
int sm_enc_wanted;  /* writer lock */
pthread_mutex_t sm_enc_lock = PTHREAD_MUTEX_INITIALIZER;
/* Locations whose thread ended, oldest first, for the encoder (writer lock). */
sm_location_t *sm_enc_ended_head, *sm_enc_ended_tail;

_Static_assert(sizeof(((sm_buffer_t *)0)->enc_flush) >= sizeof(sm_record_t) + 8,
               "room for a held-back BufferFlush");

void sm_buffers_set_encoder(const sm_buffer_encoder_t *enc)
{
    sm_encoder = enc;
}

/* A chunk was filled: the writer (started now if need be) looks for work. */
void sm_enc_wake(void)
{
    pthread_mutex_lock(&sm_w_lock);
    if (!sm_enc_wanted && sm_writer_usable_locked()) {
        sm_enc_wanted = 1;
        pthread_cond_signal(&sm_w_work);
    }
    pthread_mutex_unlock(&sm_w_lock);
}

/* Replays used bytes of chunk c into the encoder (sm_enc_lock held, the
 * location encoding).  The chunk counts as taken either way. */
static void sm_enc_bytes(sm_location_t *loc, const uint8_t *data, uint32_t used, uint32_t seq)
{
    sm_buffer_t *b = &loc->buffer;
    sm_replay_t rp = {.fn = sm_encoder->record, .arg = b->enc};
    memcpy(rp.flush, b->enc_flush, sizeof rp.flush);
    rp.have_flush = (int)b->enc_have_flush;
    int rc = sm_replay_bytes(&rp, data, data + used);
    memcpy(b->enc_flush, rp.flush, sizeof rp.flush);
    b->enc_have_flush = (uint32_t)rp.have_flush;
    b->enc_chunks = seq + 1;
    if (rc != 0)
        b->enc_status = SM_ENC_OFF;
}

static void sm_enc_chunk(sm_location_t *loc, sm_chunk_t *c, uint32_t used)
{
    sm_enc_bytes(loc, c->data, used, c->slot_seq);
}

static sm_chunk_t *sm_enc_next_locked(sm_location_t *loc, uint32_t *used);

/* A frozen location's next chunk, spilled unencoded, read back and encoded
 * (sm_enc_lock held; *x copied under the writer's lock).  It is loaded and
 * checked as at the end of the run (a run of one frame); a frame that fails
 * stops this (the end reads it again and says what was lost).  0, or -1. */
static sm_run_t sm_enc_back_run; /* sm_enc_lock */
static uint64_t sm_enc_back_n;   /* chunks taken back (sm_enc_lock) */

static int sm_enc_from_disk(sm_location_t *loc, const sm_spill_extent_t *x)
{
    sm_run_t *r = &sm_enc_back_run;
    pthread_mutex_lock(&sm_file_lock);
    int fd = sm_spill_fd_checked();
    pthread_mutex_unlock(&sm_file_lock);
    if (fd < 0 || sm_run_load(r, fd, loc->id, x, 1, 0) != 0 || r->unreadable || !r->good[0])
        return -1;
    sm_enc_bytes(loc, r->buf + sizeof(sm_spill_frame_t), x->bytes, x->seq);
    sm_enc_back_n++;
    return 0;
}

void sm_buffers_staging_stop(void)
{
    __atomic_store_n(&sm_enc_stopped, 1, __ATOMIC_RELEASE);
}

uint64_t sm_buffers_taken_back(void)
{
    pthread_mutex_lock(&sm_enc_lock);
    uint64_t n = sm_enc_back_n;
    pthread_mutex_unlock(&sm_enc_lock);
    return n;
}

/* The writer, idle, on a frozen location (sm_enc_lock and the writer's lock
 * held): its next chunk to encode, in order.  *x and 1 when that chunk is on
 * disk; else the chunk in memory or in flight that follows the encoded ones
 * (the location thaws: it goes on as before), or NULL and 0. */
static int sm_enc_catch_up_locked(sm_location_t *loc, sm_spill_extent_t *x, sm_chunk_t **c,
                                  uint32_t *used)
{
    sm_buffer_t *b = &loc->buffer;
    *c = NULL;
    if (b->enc_status != SM_ENC_ON || b->enc_no_back || sm_crash)
        return 0;
    while (b->enc_spill_i < b->n_spilled && b->spilled[b->enc_spill_i].seq < b->enc_chunks)
        b->enc_spill_i++;
    if (b->enc_spill_i < b->n_spilled && b->spilled[b->enc_spill_i].seq == b->enc_chunks) {
        *x = b->spilled[b->enc_spill_i];
        return 1;
    }
    sm_chunk_t *next = sm_enc_next_locked(loc, used);
    if (next && next->slot_seq == b->enc_chunks) {
        b->enc_frozen = 0;
        *c = next;
    }
    return 0;
}

/* sm_enc_lock held: whether loc is (now) encoding; asks the encoder at its
 * first chunk.  A location whose first chunk is on disk already is not. */
#define SM_ENC_MAX 64
static sm_location_t *sm_enc_opened[SM_ENC_MAX]; /* sm_enc_lock */
static uint32_t sm_enc_n_opened;

static void sm_enc_finish_locked(sm_location_t *loc);

static int sm_enc_start(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->enc_status == SM_ENC_NONE) {
        b->enc = b->n_spilled || b->enc_chunks || sm_enc_n_opened == SM_ENC_MAX ||
                         __atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE)
                     ? NULL : sm_encoder->open(loc);
        b->enc_status = b->enc ? SM_ENC_ON : SM_ENC_OFF;
        if (b->enc)
            sm_enc_opened[sm_enc_n_opened++] = loc;
    }
    return b->enc_status == SM_ENC_ON;
}

/* The writer, before it writes chunks c[0..n) to disk: encode those not
 * encoded yet, in order.  A chunk that is not its location's next one (an
 * earlier chunk was skipped) stops that location's encoding. */
void sm_enc_before_write(sm_chunk_t **c, uint32_t n)
{
    pthread_mutex_lock(&sm_enc_lock);
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = c[i]->owner;
        sm_buffer_t *b = &loc->buffer;
        /* A thread waits for the disk: encoding first would make it wait
         * longer.  This chunk and the rest of its location are left to the
         * end of the run (the encoded part stays a prefix). */
        pthread_mutex_lock(&sm_w_lock);
        int waiting = sm_room_waiters != 0;
        pthread_mutex_unlock(&sm_w_lock);
        /* The same for a thread that ended while memory is over the budget
         * (new threads' first chunks are granted beyond it): encoding it
         * first would keep its chunks, and make new threads take fresh
         * memory, until the writer caught up. */
        waiting |= __atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE) &&
                   __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) > sm_budget;
        /* And once the copy on disk reached its bound (trace_space.h). */
        waiting |= __atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE);
        if (waiting && !b->enc_frozen && b->enc_status == SM_ENC_ON &&
            c[i]->slot_seq >= b->enc_chunks)
            b->enc_frozen = 1;
        if (waiting && b->enc_status == SM_ENC_NONE)
            b->enc_status = SM_ENC_OFF;
        if (b->enc_status == SM_ENC_OFF || b->enc_frozen ||
            (b->enc_status == SM_ENC_ON && c[i]->slot_seq < b->enc_chunks))
            continue;
        if (b->enc_status == SM_ENC_NONE && c[i] != b->flying_first) {
            b->enc_status = SM_ENC_OFF; /* its first chunks are not here */
            continue;
        }
        if (!sm_enc_start(loc))
            continue;
        /* Every chunk before it in flight must be encoded already. */
        pthread_mutex_lock(&sm_w_lock);
        int next = 1;
        for (sm_chunk_t *x = b->flying_first; x && x != c[i]; x = x->next)
            next &= x->slot_seq < b->enc_chunks;
        pthread_mutex_unlock(&sm_w_lock);
        if (!next) {
            b->enc_status = SM_ENC_OFF;
            continue;
        }
        sm_enc_chunk(loc, c[i], c[i]->used);
        sm_enc_finish_locked(loc); /* its last chunk: the slot goes on */
    }
    pthread_mutex_unlock(&sm_enc_lock);
}

/* The next full chunk of loc to encode (writer lock held): in flight, or in
 * memory with a successor (so no longer written to); NULL when none. */
static sm_chunk_t *sm_enc_next_locked(sm_location_t *loc, uint32_t *used)
{
    sm_buffer_t *b = &loc->buffer;
    for (sm_chunk_t *c = b->flying_first; c; c = c->next)
        if (b->enc_status == SM_ENC_NONE || c->slot_seq >= b->enc_chunks) {
            *used = c->used;
            return c;
        }
    for (sm_chunk_t *c = __atomic_load_n(&b->first, __ATOMIC_ACQUIRE); c;) {
        sm_chunk_t *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
        if (!next && !__atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE))
            return NULL; /* the one being filled */
        if (b->enc_status == SM_ENC_NONE || c->slot_seq >= b->enc_chunks) {
            *used = c->used;
            return c;
        }
        c = next;
    }
    return NULL;
}

/* sm_enc_lock held: an ended location whose records are all encoded is
 * closed in the encoder, and its slot goes to the next one. */
static void sm_enc_finish_locked(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!__atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE) || b->enc_closed || !b->enc)
        return;
    int complete = b->enc_status == SM_ENC_ON && !b->enc_frozen;
    if (complete) {
        uint32_t used;
        pthread_mutex_lock(&sm_w_lock);
        sm_chunk_t *c = sm_enc_next_locked(loc, &used);
        pthread_mutex_unlock(&sm_w_lock);
        if (c)
            return; /* more to encode first */
        if (b->enc_have_flush) /* held back across chunks: none follows now */
            complete = sm_encoder->record((const sm_record_t *)b->enc_flush, b->enc) == 0;
        b->enc_have_flush = 0;
    }
    /* Complete, or dropped (left to the end of the run, from its first
     * record); either way its slot goes to the next location. */
    if (sm_encoder->close(loc, b->enc, complete) != 0 || !complete)
        b->enc_status = SM_ENC_OFF;
    b->enc_closed = 1;
    for (uint32_t i = 0; i < sm_enc_n_opened; i++)
        if (sm_enc_opened[i] == loc) {
            sm_enc_opened[i] = sm_enc_opened[--sm_enc_n_opened];
            break;
        }
}

/* The writer: the locations whose thread ended, in the order they ended,
 * each encoded to its end and closed.  0, or -1 when told to stop (the
 * disk first, or the end of the run). */
static int sm_enc_ended_all(void)
{
    for (;;) {
        pthread_mutex_lock(&sm_enc_lock);
        pthread_mutex_lock(&sm_w_lock);
        sm_location_t *loc = sm_enc_ended_head;
        int stop = sm_w_stop || sm_q_head != NULL;
        uint32_t used = 0;
        sm_chunk_t *c = NULL;
        if (loc && !stop) {
            sm_buffer_t *b = &loc->buffer;
            if (b->enc_status != SM_ENC_OFF && !b->enc_frozen)
                c = sm_enc_next_locked(loc, &used);
            if (c && b->enc_status == SM_ENC_NONE && b->n_spilled)
                c = NULL, b->enc_status = SM_ENC_OFF; /* its first chunks are on disk */
            if (!c) { /* done with it */
                sm_enc_ended_head = b->enc_next_ended;
                if (!sm_enc_ended_head)
                    sm_enc_ended_tail = NULL;
                b->enc_next_ended = NULL;
            }
        }
        pthread_mutex_unlock(&sm_w_lock);
        if (c && sm_enc_start(loc))
            sm_enc_chunk(loc, c, used);
        else if (loc && !stop && !c)
            sm_enc_finish_locked(loc);
        pthread_mutex_unlock(&sm_enc_lock);
        if (stop)
            return -1;
        if (!loc)
            return 0;
    }
}

/* The writer, with no chunks to write: encode the full chunks of every
 * location, oldest first, until told to stop. */
void sm_enc_ahead(void)
{
    if (__atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE)) {
        /* No more: ended threads keep what was encoded of them (their
         * writer stays open; the end encodes the rest, as for a thread
         * still running). */
        pthread_mutex_lock(&sm_w_lock);
        for (sm_location_t *loc = sm_enc_ended_head, *next; loc; loc = next) {
            next = loc->buffer.enc_next_ended;
            loc->buffer.enc_next_ended = NULL;
        }
        sm_enc_ended_head = sm_enc_ended_tail = NULL;
        pthread_mutex_unlock(&sm_w_lock);
        return;
    }
    if (sm_enc_ended_all() != 0) {
        pthread_mutex_lock(&sm_w_lock);
        sm_enc_wanted = 1; /* come back after the disk */
        pthread_mutex_unlock(&sm_w_lock);
        return;
    }
    /* Once the encoder has all the locations it takes, only those are
     * looked at (thousands of threads must not cost a scan per chunk). */
    pthread_mutex_lock(&sm_enc_lock);
    uint32_t max = sm_encoder->max_locations < SM_ENC_MAX ? sm_encoder->max_locations : SM_ENC_MAX;
    int all_opened = sm_enc_n_opened >= max;
    pthread_mutex_unlock(&sm_enc_lock);
    uint32_t n = all_opened ? sm_enc_n_opened : sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = all_opened ? sm_enc_opened[i] : sm_location_get(i);
        if (!loc || loc->buffer.enc_status == SM_ENC_OFF || loc->buffer.enc_closed ||
            __atomic_load_n(&loc->buffer.enc_ended, __ATOMIC_ACQUIRE))
            continue; /* ended ones: sm_enc_ended_all */
        for (;;) {
            pthread_mutex_lock(&sm_enc_lock);
            pthread_mutex_lock(&sm_w_lock);
            int stop = sm_w_stop || sm_q_head != NULL; /* disk first */
            uint32_t used = 0;
            sm_chunk_t *c = NULL;
            sm_spill_extent_t back;
            int from_disk = 0;
            if (!stop && loc->buffer.enc_frozen)
                from_disk = sm_enc_catch_up_locked(loc, &back, &c, &used);
            else if (!stop)
                c = sm_enc_next_locked(loc, &used);
            if (c && loc->buffer.enc_status == SM_ENC_NONE && loc->buffer.n_spilled)
                c = NULL, loc->buffer.enc_status = SM_ENC_OFF;
            pthread_mutex_unlock(&sm_w_lock);
            int took = 0;
            if (from_disk) {
                took = sm_enc_from_disk(loc, &back) == 0;
                loc->buffer.enc_no_back = !took;
            } else if (c && sm_enc_start(loc)) {
                sm_enc_chunk(loc, c, used);
                took = 1;
            }
            pthread_mutex_unlock(&sm_enc_lock);
            if (stop) {
                pthread_mutex_lock(&sm_w_lock);
                sm_enc_wanted = 1; /* come back after the disk */
                pthread_mutex_unlock(&sm_w_lock);
                return;
            }
            if (!took)
                break;
        }
    }
}

void *sm_buffer_encoded(sm_location_t *loc)
{
    sm_buffers_quiesce();
    return loc->buffer.enc_status == SM_ENC_ON ? loc->buffer.enc : NULL;
}

int sm_buffer_for_each_rest(sm_location_t *loc, sm_record_fn fn, void *arg)
{
    sm_buffer_t *b = &loc->buffer;
    sm_buffers_quiesce();
    if (b->enc_status != SM_ENC_ON)
        return -2;
    sm_replay_t rp = {.fn = fn, .arg = arg};
    memcpy(rp.flush, b->enc_flush, sizeof rp.flush);
    rp.have_flush = (int)b->enc_have_flush;
    int rc = 0;
    /* Frames the writer spilled were encoded first; those the thread
     * spilled itself (sm_buffer_save at MPI_Finalize) may not be. */
    uint32_t first = 0;
    while (first < b->n_spilled && b->spilled[first].seq < b->enc_chunks)
        first++;
    for (uint32_t i = first; i < b->n_spilled; i++)
        if (b->spilled[i].seq < b->enc_chunks)
            return -2; /* not a prefix */
    if (first < b->n_spilled) {
        uint64_t lost = 0, lost_frames = 0;
        pthread_mutex_lock(&sm_file_lock);
        int fd = sm_spill_fd_checked();
        pthread_mutex_unlock(&sm_file_lock);
        rc = fd < 0 ? -1
                    : sm_replay_extents(&rp, fd, loc->id, b->spilled + first, b->n_spilled - first,
                                        &lost, &lost_frames);
        if (rc != 0 || lost_frames)
            return rc > 0 ? rc : -1; /* the end-of-run path says what was lost */
    }
    for (sm_chunk_t *c = b->flying_first; c && rc == 0; c = c->next)
        if (c->slot_seq >= b->enc_chunks)
            rc = sm_replay_bytes(&rp, c->data, c->data + c->used);
    for (sm_chunk_t *c = b->first; c && rc == 0; c = c->next)
        if (c->slot_seq >= b->enc_chunks)
            rc = sm_replay_bytes(&rp, c->data, c->data + sm_chunk_used(loc, c));
    return sm_replay_end(&rp, rc);
}
