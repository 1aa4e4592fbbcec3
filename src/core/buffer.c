/* Chunked event buffers under one memory budget, with spill to disk. */
#include "buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "location.h"
#include "../util/fs.h"
#include "../util/log.h"

struct sm_chunk {
    sm_chunk_t *next;
    uint32_t capacity;
    uint32_t used; /* valid for chunks before the current one */
    uint8_t data[];
};

static uint64_t sm_budget = 64u << 20;
static uint64_t sm_chunk_bytes = 256u << 10;
static uint64_t sm_in_use; /* atomic */
static char *sm_spill_dir;
static const char *(*sm_spill_provider)(void);
static pthread_mutex_t sm_spill_dir_lock = PTHREAD_MUTEX_INITIALIZER;

void sm_buffers_configure(uint64_t budget_bytes, uint64_t chunk_bytes)
{
    sm_budget = budget_bytes;
    sm_chunk_bytes = chunk_bytes;
}

void sm_buffers_set_spill_dir(const char *dir)
{
    pthread_mutex_lock(&sm_spill_dir_lock);
    free(sm_spill_dir);
    sm_spill_dir = dir ? strdup(dir) : NULL;
    pthread_mutex_unlock(&sm_spill_dir_lock);
}

void sm_buffers_set_spill_provider(const char *(*provider)(void))
{
    pthread_mutex_lock(&sm_spill_dir_lock);
    sm_spill_provider = provider;
    pthread_mutex_unlock(&sm_spill_dir_lock);
}

uint64_t sm_buffers_in_use(void)
{
    return __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED);
}

uint64_t sm_buffers_chunk_size(void)
{
    return sm_chunk_bytes;
}

void sm_buffer_init(sm_location_t *loc)
{
    memset(&loc->buffer, 0, sizeof loc->buffer);
    loc->buffer.spill_fd = -1;
    loc->pos = loc->end = NULL;
}

/* Chunks a location gave back (after a spill, or when it is freed) are kept
 * for the next one: the memory stays mapped and touched, so refilling a
 * buffer costs no page faults.  The list never holds more than the budget
 * (plus one chunk per thread) ever allocated. */
static sm_chunk_t *sm_free_chunks;
static pthread_mutex_t sm_free_lock = PTHREAD_MUTEX_INITIALIZER;

static sm_chunk_t *sm_chunk_alloc(void)
{
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    if (c)
        sm_free_chunks = c->next;
    pthread_mutex_unlock(&sm_free_lock);
    if (c && c->capacity != sm_chunk_bytes) { /* chunk size changed (tests) */
        munmap(c, sizeof *c + c->capacity);
        c = NULL;
    }
    if (!c) {
        /* Mapped and populated in one call: faulting a fresh chunk in page
         * by page from the hot path costs several times more. */
        void *p = mmap(NULL, sizeof *c + sm_chunk_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
        c->capacity = (uint32_t)sm_chunk_bytes;
    }
    c->next = NULL;
    c->used = 0;
    __atomic_add_fetch(&sm_in_use, sizeof *c + c->capacity, __ATOMIC_RELAXED);
    return c;
}

static void sm_chunk_free(sm_chunk_t *c)
{
    __atomic_sub_fetch(&sm_in_use, sizeof *c + c->capacity, __ATOMIC_RELAXED);
    pthread_mutex_lock(&sm_free_lock);
    c->next = sm_free_chunks;
    sm_free_chunks = c;
    pthread_mutex_unlock(&sm_free_lock);
}

void sm_buffers_release(void)
{
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    sm_free_chunks = NULL;
    pthread_mutex_unlock(&sm_free_lock);
    while (c) {
        sm_chunk_t *next = c->next;
        munmap(c, sizeof *c + c->capacity);
        c = next;
    }
}

uint64_t sm_buffer_memory(const sm_location_t *loc)
{
    uint64_t bytes = 0;
    for (const sm_chunk_t *c = loc->buffer.first; c; c = c->next)
        bytes += sizeof *c + c->capacity;
    return bytes;
}

/* Bytes used in chunk c of loc (the current chunk's end is loc->pos). */
static uint32_t sm_chunk_used(const sm_location_t *loc, const sm_chunk_t *c)
{
    if (c == loc->buffer.current && loc->pos)
        return (uint32_t)(__atomic_load_n(&loc->pos, __ATOMIC_ACQUIRE) - c->data);
    return c->used;
}

static uint64_t sm_count_records(const uint8_t *p, const uint8_t *end)
{
    uint64_t n = 0;
    while (p + sizeof(sm_record_t) <= end) {
        p += sm_record_size((const sm_record_t *)p);
        n++;
    }
    return n;
}


/* A spill that fails fails again at every chunk: say it once per process;
 * the exact number of lost events goes to the summary and metadata. */
static int sm_spill_error_said;

static int sm_spill_first_error(void)
{
    return __atomic_exchange_n(&sm_spill_error_said, 1, __ATOMIC_RELAXED) == 0;
}

static int sm_spill_open(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->spill_fd >= 0)
        return 0;
    pthread_mutex_lock(&sm_spill_dir_lock);
    char path[4096];
    const char *dir = sm_spill_provider ? sm_spill_provider() : sm_spill_dir;
    int ok = dir && sm_mkdir_p(dir) == 0 &&
             snprintf(path, sizeof path, "%s/%d.%u.events", dir, (int)getpid(), loc->id) <
                 (int)sizeof path;
    int saved = errno;
    char shown[4096];
    snprintf(shown, sizeof shown, "%s", dir ? dir : "(none)");
    pthread_mutex_unlock(&sm_spill_dir_lock);
    if (!ok) {
        if (sm_spill_first_error())
            sm_error("cannot create spill folder %s: %s; events that do not fit in "
                     "SYSMEASURE_BUFFER_SIZE are dropped and counted",
                     shown, strerror(dir ? saved : ENOENT));
        return -1;
    }
    b->spill_fd = sm_fs_create(path, O_RDWR, 0644); /* new, in a folder of ours (fs.h) */
    if (b->spill_fd < 0) {
        if (sm_spill_first_error())
            sm_error("cannot create spill file %s: %s; events that do not fit in "
                     "SYSMEASURE_BUFFER_SIZE are dropped and counted", path, sm_fs_why(errno));
        return -1;
    }
    b->spill_path = strdup(path);
    return 0;
}

static int sm_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Write every chunk to the spill file, free all but the first, and leave loc
 * writing into that first chunk after a BufferFlush record. */
int sm_buffer_spill(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->first)
        return 0;
    int saved_errno = errno;
    uint64_t t0 = sm_clock_now();
    int rc = sm_spill_open(loc);
    uint64_t bytes = 0, records = 0;
    for (sm_chunk_t *c = b->first; c; c = c->next) {
        uint32_t used = sm_chunk_used(loc, c);
        if (rc == 0 && sm_write_all(b->spill_fd, c->data, used) != 0) {
            if (sm_spill_first_error())
                sm_error("spilling events to %s failed: %s; events that do not fit in "
                         "SYSMEASURE_BUFFER_SIZE are dropped and counted", b->spill_path,
                         strerror(errno));
            rc = -1;
        }
        if (rc == 0)
            bytes += used;
        else
            records += sm_count_records(c->data, c->data + used);
    }
    b->dropped_records += records;
    b->spilled_bytes += bytes;
    sm_chunk_t *keep = b->first;
    for (sm_chunk_t *c = keep->next, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    keep->next = NULL;
    keep->used = 0;
    b->current = keep;
    loc->end = keep->data + keep->capacity;
    if (rc != 0) {
        __atomic_store_n(&loc->pos, keep->data, __ATOMIC_RELEASE);
        errno = saved_errno;
        return rc;
    }
    b->spills++;
    uint64_t t1 = sm_clock_now();
    /* The BufferFlush record: start time, payload word = stop time. */
    sm_record_t *r = (sm_record_t *)keep->data;
    r->time = t0;
    r->kind = SM_REC_BUFFER_FLUSH;
    r->words = 1;
    r->aux = 0;
    r->ref = 0;
    memcpy(r + 1, &t1, sizeof t1);
    __atomic_store_n(&loc->pos, keep->data + sizeof *r + 8, __ATOMIC_RELEASE);
    errno = saved_errno;
    return rc;
}

uint8_t *sm_buffer_next_chunk(sm_location_t *loc, size_t bytes)
{
    sm_buffer_t *b = &loc->buffer;
    if (bytes + sizeof(sm_record_t) + 8 > sm_chunk_bytes)
        abort(); /* records are small; a chunk is at least 4 KiB */
    if (b->current) {
        b->current->used = (uint32_t)(loc->pos - b->current->data);
        uint64_t need = sizeof(sm_chunk_t) + sm_chunk_bytes;
        if (__atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) + need > sm_budget) {
            sm_buffer_spill(loc);
            return loc->pos;
        }
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
    if (b->current)
        b->current->next = c;
    else
        b->first = c;
    b->current = c;
    loc->end = c->data + c->capacity;
    __atomic_store_n(&loc->pos, c->data, __ATOMIC_RELEASE);
    return loc->pos;
}

void sm_buffer_remove_spill(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->spill_fd >= 0) {
        close(b->spill_fd);
        b->spill_fd = -1;
    }
    if (b->spill_path) {
        unlink(b->spill_path);
        free(b->spill_path);
        b->spill_path = NULL;
    }
}

void sm_buffer_free(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    for (sm_chunk_t *c = b->first, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    b->first = b->current = NULL;
    loc->pos = loc->end = NULL;
    sm_buffer_remove_spill(loc);
}

/* Delivers records in order.  A record written right after a spill carries a
 * time taken before the spill began (the spill happened while reserving its
 * room), so it is delivered before the BufferFlush record that precedes it. */
typedef struct sm_replay {
    sm_record_fn fn;
    void *arg;
    uint8_t flush[sizeof(sm_record_t) + 8];
    int have_flush;
} sm_replay_t;

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

static int sm_replay_bytes(sm_replay_t *rp, const uint8_t *p, const uint8_t *end,
                           const uint8_t **stop)
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
    *stop = p;
    return 0;
}

/* Replays a spill file from fd; 0, the callback's value, or -1. */
static int sm_replay_file(sm_replay_t *rp, int fd, const char *path)
{
    size_t cap = 1u << 20, have = 0;
    uint8_t *buf = malloc(cap);
    int rc = 0;
    if (!buf)
        return -1;
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf + have, cap - have, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            sm_error("reading spill file %s failed: %s", path, strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        off += n;
        have += (size_t)n;
        const uint8_t *stop;
        if ((rc = sm_replay_bytes(rp, buf, buf + have, &stop)) != 0)
            break;
        have -= (size_t)(stop - buf); /* a record cut by the block edge */
        memmove(buf, stop, have);
    }
    free(buf);
    return rc;
}

int sm_buffer_for_each(sm_location_t *loc, sm_record_fn fn, void *arg)
{
    sm_buffer_t *b = &loc->buffer;
    sm_replay_t rp = {.fn = fn, .arg = arg};
    int rc = 0;
    if (b->spill_fd >= 0)
        rc = sm_replay_file(&rp, b->spill_fd, b->spill_path);
    for (sm_chunk_t *c = b->first; c && rc == 0; c = c->next) {
        const uint8_t *stop;
        rc = sm_replay_bytes(&rp, c->data, c->data + sm_chunk_used(loc, c), &stop);
    }
    if (rc == 0 && rp.have_flush)
        rc = fn((const sm_record_t *)rp.flush, arg);
    return rc;
}

int sm_spill_file_for_each(const char *path, sm_record_fn fn, void *arg)
{
    sm_replay_t rp = {.fn = fn, .arg = arg};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        sm_error("cannot open spill file %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = sm_replay_file(&rp, fd, path);
    close(fd);
    if (rc == 0 && rp.have_flush)
        rc = fn((const sm_record_t *)rp.flush, arg);
    return rc;
}

int sm_buffer_save(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (sm_spill_open(loc) != 0)
        return -1;
    for (sm_chunk_t *c = b->first; c; c = c->next) {
        uint32_t used = sm_chunk_used(loc, c);
        if (sm_write_all(b->spill_fd, c->data, used) != 0) {
            sm_error("saving the events of location %u to %s failed: %s", loc->id,
                     b->spill_path, strerror(errno));
            return -1;
        }
    }
    /* They are on disk now: memory starts empty for anyone still reading. */
    for (sm_chunk_t *c = b->first; c; c = c->next)
        c->used = 0;
    if (b->current)
        __atomic_store_n(&loc->pos, b->current->data, __ATOMIC_RELEASE);
    return 0;
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
