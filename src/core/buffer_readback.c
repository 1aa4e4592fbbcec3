/* A location's records read back in order: its frames in the spill file,
 * then the chunks in flight, then memory (see buffer.h). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpus.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- reading back */

/* Delivers records in order (sm_replay_t, buffer_private.h). */
static int sm_replay_record(sm_replay_t *rp, const sm_record_t *r)
{
    int rc;
    if (rp->have_flush) {
        const sm_record_t *f = (const sm_record_t *)rp->flush;
        if (r->time < f->time && r->kind != SM_REC_BUFFER_FLUSH) {
            if ((rc = rp->fn(r, rp->arg)) != 0)
                return rc;
            rp->have_flush = 0;
            return rp->fn(f, rp->arg);
        }
        rp->have_flush = 0;
        if ((rc = rp->fn(f, rp->arg)) != 0)
            return rc;
    }
    if (r->kind == SM_REC_BUFFER_FLUSH && sm_record_size(r) <= sizeof rp->flush) {
        memcpy(rp->flush, r, sm_record_size(r));
        rp->have_flush = 1;
        return 0;
    }
    return rp->fn(r, rp->arg);
}

int sm_replay_bytes(sm_replay_t *rp, const uint8_t *p, const uint8_t *end)
{
    while (p + sizeof(sm_record_t) <= end) {
        const sm_record_t *r = (const sm_record_t *)p;
        if (p + sm_record_size(r) > end)
            break;
        int rc = sm_replay_record(rp, r);
        if (rc != 0)
            return rc;
        p += sm_record_size(r);
    }
    return 0;
}

int sm_replay_end(sm_replay_t *rp, int rc)
{
    if (rc == 0 && rp->have_flush)
        rc = rp->fn((const sm_record_t *)rp->flush, rp->arg);
    return rc;
}

/* Whether the frame at p (header, then its bytes) is intact. */
int sm_frame_intact(const sm_spill_frame_t *f)
{
    return f->magic == SM_FRAME_MAGIC &&
           f->head_check == sm_sum64(f, offsetof(sm_spill_frame_t, head_check));
}

/* Runs of 1 MiB: large enough that the read calls cost nothing, small
 * enough that the buffer stays in cache while its frames are checked and
 * replayed (8 MiB runs left every pass missing). */
#define SM_RUN_MAX (1u << 20)

/* *p holds at least need bytes (its contents are not kept).  0, or -1. */
static int sm_run_room(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    free(*p);
    *cap = 0;
    if (!(*p = malloc(need)))
        return -1;
    *cap = need;
    return 0;
}

/* Reads and checks the run of frames that starts at extent i. -1: out of
 * memory (the run's frames are then lost too, r->unreadable). */
int sm_run_load(sm_run_t *r, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                uint32_t n, uint32_t i)
{
    uint32_t k = 1;
    size_t len = sizeof(sm_spill_frame_t) + e[i].bytes;
    while (i + k < n && e[i + k].offset == e[i].offset + len &&
           len + sizeof(sm_spill_frame_t) + e[i + k].bytes <= SM_RUN_MAX) {
        len += sizeof(sm_spill_frame_t) + e[i + k].bytes;
        k++;
    }
    r->i = i;
    r->k = k;
    r->unreadable = 1;
    if (sm_run_room(&r->buf, &r->cap, len) != 0 || sm_run_room(&r->good, &r->good_cap, k) != 0)
        return -1;
    if (sm_pread_all(fd, r->buf, len, e[i].offset) != 0)
        return 0;
    r->unreadable = 0;
    const uint8_t *p = r->buf;
    for (uint32_t j = 0; j < k; j++) {
        const sm_spill_frame_t *f = (const sm_spill_frame_t *)p;
        /* (a killed process's chunk: its whole records, checked when found) */
        r->good[j] = e[i + j].live == SM_EXTENT_LIVE ||
                     (e[i + j].live == SM_EXTENT_SEALED && sm_frame_intact(f) &&
                      f->location == loc_id && f->bytes == e[i + j].bytes &&
                      f->data_check == sm_sum64(p + sizeof *f, f->bytes));
        p += sizeof *f + e[i + j].bytes;
    }
    return 0;
}

/* Replays a loaded run's intact frames; counts the others in *lost. */
static int sm_run_replay(sm_replay_t *rp, const sm_run_t *r, const sm_spill_extent_t *e,
                         uint64_t *lost, uint64_t *lost_frames)
{
    int rc = 0;
    const uint8_t *p = r->buf;
    for (uint32_t j = 0; j < r->k && rc == 0; j++) {
        const sm_spill_extent_t *x = &e[r->i + j];
        if (r->unreadable || !r->good[j]) {
            *lost += x->records;
            ++*lost_frames;
        } else {
            rc = sm_replay_bytes(rp, p + sizeof(sm_spill_frame_t), p + sizeof(sm_spill_frame_t) +
                                                                       x->bytes);
        }
        if (!r->unreadable)
            p += sizeof(sm_spill_frame_t) + x->bytes;
    }
    return rc;
}

/* Reading ahead: a thread of sysmeasure's own reads and checks the next
 * runs while the caller replays (encodes) the current one, so that the end
 * of the run encodes at the speed of the encoder alone where a second CPU
 * is free (the reads and checksums were a quarter of a spilled trace's
 * end).  A ring of SM_AHEAD runs; the caller and the reader wait on a
 * condition variable, never spin. */
#define SM_AHEAD 3
typedef struct sm_ahead {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fd;
    uint32_t loc_id, n;
    const sm_spill_extent_t *e;
    sm_run_t run[SM_AHEAD];
    uint32_t loaded, replayed; /* runs, counted from the first */
    uint32_t next_i;           /* the extent the reader loads next */
    int stop, failed;
} sm_ahead_t;

static void *sm_ahead_main(void *arg)
{
    sm_ahead_t *a = arg;
    sm_cpus_bind_writer(); /* where the writer thread may run, if anywhere */
    pthread_mutex_lock(&a->lock);
    while (!a->stop && a->next_i < a->n) {
        if (a->loaded - a->replayed == SM_AHEAD) {
            pthread_cond_wait(&a->cond, &a->lock);
            continue;
        }
        sm_run_t *r = &a->run[a->loaded % SM_AHEAD];
        uint32_t i = a->next_i;
        pthread_mutex_unlock(&a->lock);
        int rc = sm_run_load(r, a->fd, a->loc_id, a->e, a->n, i);
        pthread_mutex_lock(&a->lock);
        pthread_cond_broadcast(&a->cond);
        if (rc != 0) { /* out of memory: the caller ends there, as on one thread */
            a->failed = 1;
            break;
        }
        a->next_i = i + r->k;
        a->loaded++;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* sm_replay_extents with the reader thread ahead.  *started: whether the
 * thread started (if not, nothing was replayed).  Returns 0, fn's value, or
 * -1 (out of memory: the runs before it were replayed). */
static int sm_replay_ahead(sm_replay_t *rp, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                           uint32_t n, uint64_t *lost, uint64_t *lost_frames, bool *started)
{
    sm_ahead_t *a = calloc(1, sizeof *a);
    pthread_t reader;
    int rc = 0;
    *started = false;
    if (!a)
        return 0;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    a->fd = fd;
    a->loc_id = loc_id;
    a->e = e;
    a->n = n;
    if (sm_internal_thread_create(&reader, 256u << 10, sm_ahead_main, a) == 0) {
        *started = true;
        uint32_t done = 0;
        pthread_mutex_lock(&a->lock);
        while (rc == 0 && done < n) {
            if (a->loaded == a->replayed) {
                if (a->failed)
                    rc = -1;
                else
                    pthread_cond_wait(&a->cond, &a->lock);
                continue;
            }
            sm_run_t *r = &a->run[a->replayed % SM_AHEAD];
            pthread_mutex_unlock(&a->lock);
            rc = sm_run_replay(rp, r, e, lost, lost_frames);
            done = r->i + r->k;
            pthread_mutex_lock(&a->lock);
            a->replayed++;
            pthread_cond_broadcast(&a->cond);
        }
        a->stop = 1;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        pthread_join(reader, NULL);
        for (int j = 0; j < SM_AHEAD; j++) {
            free(a->run[j].buf);
            free(a->run[j].good);
        }
    }
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    free(a);
    return rc;
}

/* Replays extents e[0..n) of location loc_id from fd, reading runs of
 * adjacent frames at once (ahead, on a thread of its own, when they hold
 * more than two runs).  *lost counts the records of damaged frames.
 * Returns 0, fn's value, or -1 (cannot read). */
int sm_replay_extents(sm_replay_t *rp, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                      uint32_t n, uint64_t *lost, uint64_t *lost_frames)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n && total <= 2ull * SM_RUN_MAX; i++)
        total += sizeof(sm_spill_frame_t) + e[i].bytes;
    if (total > 2ull * SM_RUN_MAX) {
        bool started;
        int rc = sm_replay_ahead(rp, fd, loc_id, e, n, lost, lost_frames, &started);
        if (started)
            return rc;
    }
    /* One run at a time, on this thread. */
    int rc = 0;
    sm_run_t r = {0};
    for (uint32_t i = 0; i < n && rc == 0; i = r.i + r.k) {
        if (sm_run_load(&r, fd, loc_id, e, n, i) != 0) {
            rc = -1;
            break;
        }
        rc = sm_run_replay(rp, &r, e, lost, lost_frames);
    }
    free(r.buf);
    free(r.good);
    return rc;
}

int sm_buffer_for_each(sm_location_t *loc, sm_record_fn fn, void *arg)
{
    sm_buffer_t *b = &loc->buffer;
    sm_replay_t rp = {.fn = fn, .arg = arg};
    int rc = 0;
    sm_buffers_quiesce();
    if (b->n_spilled) {
        uint64_t lost = 0, lost_frames = 0;
        pthread_mutex_lock(&sm_file_lock);
        int fd = sm_spill_fd_checked();
        pthread_mutex_unlock(&sm_file_lock);
        if (fd < 0) {
            for (uint32_t i = 0; i < b->n_spilled; i++)
                lost += b->spilled[i].records;
            lost_frames = b->n_spilled;
        } else {
            rc = sm_replay_extents(&rp, fd, loc->id, b->spilled, b->n_spilled, &lost,
                                   &lost_frames);
        }
        if (lost_frames) {
            sm_error("spill file %s: %llu chunk%s of location %u damaged or unreadable; "
                     "%llu events lost", sm_spill_file ? sm_spill_file : "(gone)",
                     (unsigned long long)lost_frames, lost_frames == 1 ? "" : "s", loc->id,
                     (unsigned long long)lost);
            if (rc == 0)
                rc = -1;
        }
        if (rc > 0)
            return rc;
    }
    int result = rc;
    rc = rc < 0 ? 0 : rc;
    for (sm_chunk_t *c = b->flying_first; c && rc == 0; c = c->next)
        rc = sm_replay_bytes(&rp, c->data, c->data + c->used);
    for (sm_chunk_t *c = b->first; c && rc == 0; c = c->next)
        rc = sm_replay_bytes(&rp, c->data, c->data + sm_chunk_used(loc, c));
    rc = sm_replay_end(&rp, rc);
    return rc != 0 ? rc : result;
}

static int sm_count_one(const sm_record_t *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

uint64_t sm_buffer_record_count(sm_location_t *loc)
{
    uint64_t n = 0;
    sm_buffer_for_each(loc, sm_count_one, &n);
    return n;
}
