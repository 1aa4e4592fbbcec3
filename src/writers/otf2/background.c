/* The OTF2 writer's encoding during the run (issue 13, below), and the end
 * of a live run, which takes what it staged (sm_otf2_write). */
#include "sm_build.h" /* from configure: _GNU_SOURCE, before any other */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otf2_internal.h"
#include "../../core/buffer.h"
#include "../../core/clock.h"
#include "../../core/trace_space.h"
#include "../../core/write_behind.h"
#include "../../util/fs.h"
#include "../../util/grow.h"
#include "../../util/log.h"

/* Issue 13 (fast exit): the event files of this process's threads are
 * encoded during the run, on the spill writer thread, as their chunks fill
 * (buffer.h, sm_buffers_set_encoder), into a staging archive in the spill
 * folder (<output>/.spill/otf2-<pid>, one event file per location).  The
 * events carry the process's own ids and its clock ticks: at the end, when
 * the job's ids and clock are known, each such location gets OTF2 mapping
 * tables (regions, communicators) and two ClockOffset points in its local
 * definitions, which readers apply (the job's clock is an affine function
 * of the ticks, so two points reproduce it: within 1 ns, the rounding of
 * the two offsets), its event file is moved into the job's archive and
 * only what was not encoded yet is encoded then.
 *
 * A thread that ends is encoded to its last record on the writer thread,
 * its event file closed (complete, its memory back) and its slot given to
 * the next (sm_otf2_bg_close): thousands of short threads go through the
 * few slots in the order they end; at the end their files are only moved.
 *
 * Left to the end of the run, as before: live threads beyond the slots
 * (SM_OTF2_BG_MAX at most; one is kept for ended threads), GPU streams and
 * metric locations, and a location
 * from its first record that needs the whole job or location to be encoded
 * (call-stack samples, merged in by time; counters and metrics; event
 * attributes), or whose first chunk spilled before the encoder saw it, or
 * whose thread spilled it itself.  Its staged file is then dropped and its
 * records, all still there, are written as before. */
#define SM_OTF2_BG_MAX 8
/* The local communicator id of this process's thread contingent (mapped at
 * the end to the job's). */
#define SM_OTF2_BG_THREADS 0xfffffffeu

typedef struct sm_otf2_bg_loc {
    sm_location_t *loc;
    OTF2_EvtWriter *evt;
    bool stopped;     /* left to the end of the run */
    bool closed;      /* its thread ended: encoded to the end, file closed */
    bool moved;       /* its event file is in the job's archive */
    bool def_file;    /* an empty local definition file made for it */
    uint64_t n_events;       /* when closed */
    uint8_t *lane;           /* when closed: its timeline record (ticks) */
    size_t lane_len;
    bool has_time, thread_events;
    uint64_t last, min, max; /* ticks */
    uint64_t clamps;
    uint64_t records[2];     /* encoded during the run, at the end */
    uint32_t max_region;     /* largest local region id + 1 */
    uint64_t staged_bytes;   /* its event file's bytes, as told to trace_space.h */
    uint64_t *comms;         /* bit per local communicator used */
    uint32_t comm_words;
    sm_timeline_t *timeline; /* binned in ticks */
    sm_nesting_t nest;       /* its enters and leaves kept nested (nesting.h) */
} sm_otf2_bg_loc_t;

static struct {
    int mode;                 /* 0 off, 1 on, 2 on and the end-of-run archive too */
    bool check;               /* the end-of-run archive too (mode 2 asked) */
    uint32_t max;             /* staged writers at most (sm_otf2_background) */
    bool broken;              /* an OTF2 error: nothing more, nothing closed */
    bool take;                /* sm_otf2_write is taking the staged files */
    OTF2_Archive *archive;
    char dir[4096];
    sm_otf2_error_t err;
    sm_otf2_bg_loc_t **by_id; /* every location staged, by its id */
    uint32_t n_by_id;
    uint32_t n_open;          /* slots in use: event writers open */
    uint8_t *kind;            /* local region -> timeline kind + 1 (0: not known yet) */
    uint32_t n_kind;
} sm_bg;

/* Chunks of a staging writer's buffer: one at a time, as for the archive
 * (sm_otf2_allocate), kept while the writer is open and counted against
 * the event budget. */
typedef struct sm_otf2_bg_chunks {
    uint64_t size;
    void *chunk;  /* given to OTF2 */
    void *spare;  /* given back by OTF2, filled again next */
} sm_otf2_bg_chunks_t;

/* Chunks of closed staging writers, kept for the next (each thread that
 * ends opens one: a fresh 4 MiB, populated, cost more than its encoding).
 * Counted against the budget until they go back to the system. */
#define SM_OTF2_BG_POOL SM_OTF2_BG_MAX
static void *sm_otf2_bg_pool[SM_OTF2_BG_POOL];
static uint64_t sm_otf2_bg_pool_size[SM_OTF2_BG_POOL];
static uint32_t sm_otf2_bg_pool_n;

static void *sm_otf2_bg_get(uint64_t size)
{
    for (uint32_t i = sm_otf2_bg_pool_n; i-- > 0;)
        if (sm_otf2_bg_pool_size[i] == size && !sm_wb_busy(sm_otf2_bg_pool[i])) {
            void *c = sm_otf2_bg_pool[i];
            sm_otf2_bg_pool_n--;
            sm_otf2_bg_pool[i] = sm_otf2_bg_pool[sm_otf2_bg_pool_n];
            sm_otf2_bg_pool_size[i] = sm_otf2_bg_pool_size[sm_otf2_bg_pool_n];
            return c;
        }
    void *c = sm_otf2_chunk_new(size);
    if (c)
        sm_buffers_account((int64_t)size);
    return c;
}

static void sm_otf2_bg_put(void *c, uint64_t size)
{
    if (sm_otf2_bg_pool_n < SM_OTF2_BG_POOL && sm_otf2_bg_pool_n < sm_bg.max) {
        sm_otf2_bg_pool[sm_otf2_bg_pool_n] = c;
        sm_otf2_bg_pool_size[sm_otf2_bg_pool_n++] = size;
        return;
    }
    sm_otf2_chunk_free(c, size);
    sm_buffers_account(-(int64_t)size);
}

/* At the end: the pool's chunks back to the system. */
static void sm_otf2_bg_pool_release(void)
{
    while (sm_otf2_bg_pool_n) {
        sm_otf2_bg_pool_n--;
        sm_otf2_chunk_free(sm_otf2_bg_pool[sm_otf2_bg_pool_n],
                           sm_otf2_bg_pool_size[sm_otf2_bg_pool_n]);
        sm_buffers_account(-(int64_t)sm_otf2_bg_pool_size[sm_otf2_bg_pool_n]);
    }
}

static void *sm_otf2_bg_allocate(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                 void **per_buffer, uint64_t size)
{
    (void)user;
    (void)type;
    (void)location;
    sm_otf2_bg_chunks_t *b = *per_buffer;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        *per_buffer = b;
    }
    if (b->chunk)
        return NULL; /* OTF2 flushes the buffer then */
    if (b->spare && b->size == size && !sm_wb_busy(b->spare)) {
        b->chunk = b->spare;
        b->spare = NULL;
        return b->chunk;
    }
    if (b->spare) {
        sm_otf2_bg_put(b->spare, b->size);
        b->spare = NULL;
    }
    b->chunk = sm_otf2_bg_get(size);
    if (!b->chunk)
        return NULL;
    b->size = size;
    return b->chunk;
}

static void sm_otf2_bg_free_all(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                void **per_buffer, bool final)
{
    (void)user;
    sm_otf2_bg_chunks_t *b = *per_buffer;
    if (!b)
        return;
    /* A full chunk was written to the staged event file: the space the
     * trace takes grew (trace_space.h; exact once the file is closed,
     * sm_otf2_bg_settle_size). */
    if (b->chunk && !final && type == OTF2_FILETYPE_EVENTS && location < sm_bg.n_by_id &&
        sm_bg.by_id[location]) {
        sm_bg.by_id[location]->staged_bytes += b->size;
        sm_space_staged_add((int64_t)b->size);
    }
    if (b->chunk && !b->spare) {
        b->spare = b->chunk;
        b->chunk = NULL;
    }
    void *gone[2] = {b->chunk, final ? b->spare : NULL};
    for (int i = 0; i < 2; i++)
        if (gone[i])
            sm_otf2_bg_put(gone[i], b->size);
    b->chunk = NULL;
    if (final) {
        free(b);
        *per_buffer = NULL;
    }
}

static bool sm_otf2_bg_ok(OTF2_ErrorCode rc)
{
    if (rc == OTF2_SUCCESS && sm_bg.err.code == OTF2_SUCCESS)
        return true;
    sm_bg.broken = true;
    return false;
}

/* The staging archive, at the first location (writer thread). */
static bool sm_otf2_bg_archive(void)
{
    static const OTF2_MemoryCallbacks memory = {sm_otf2_bg_allocate, sm_otf2_bg_free_all};
    char spill[4096];
    if (sm_bg.broken || sm_buffers_spill_dir(spill, sizeof spill) != 0)
        return false;
    if (snprintf(sm_bg.dir, sizeof sm_bg.dir, "%s/otf2-%ld", spill, (long)getpid()) >=
        (int)sizeof sm_bg.dir)
        return false;
    if (!sm_otf2_fresh_dir(sm_bg.dir))
        return false;
    memset(&sm_bg.err, 0, sizeof sm_bg.err);
    sm_bg.err.code = OTF2_SUCCESS;
    OTF2_Error_RegisterCallback(sm_otf2_error_callback, &sm_bg.err);
    bool ok = sm_otf2_open_staging(&sm_bg.archive, sm_bg.dir, SM_OTF2_DEF_CHUNK, &memory);
    return sm_otf2_bg_ok(ok ? OTF2_SUCCESS : OTF2_ERROR_INVALID);
}

/* buffer.h's open: a staging event writer for a thread, or NULL. */
static void *sm_otf2_bg_open(sm_location_t *loc)
{
    /* Each staged writer holds a 4 MiB OTF2 chunk, counted against the
     * budget: together at most a quarter of it (none under a budget below
     * 16M, which they would spend from the start; sm_otf2_background). */
    /* A live thread may hold its slot for the whole run: one slot is kept
     * for threads that ended, which pass through it one after the other. */
    uint32_t slots = sm_bg.max > 1 && !__atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE)
                         ? sm_bg.max - 1 : sm_bg.max;
    if (!sm_bg.mode || sm_bg.broken || sm_bg.n_open >= slots ||
        loc->type != SM_LOCATION_CPU_THREAD)
        return NULL;
    if (!sm_bg.archive && !sm_otf2_bg_archive())
        return NULL;
    while (loc->id >= sm_bg.n_by_id) {
        uint32_t had = sm_bg.n_by_id;
        if (SM_GROW(sm_bg.by_id, sm_bg.n_by_id, 1024) != 0)
            return NULL;
        memset(sm_bg.by_id + had, 0, sizeof *sm_bg.by_id * (sm_bg.n_by_id - had));
    }
    if (sm_bg.by_id[loc->id])
        return NULL; /* asked once per location */
    sm_otf2_bg_loc_t *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->timeline = sm_timeline_new(); /* NULL: the location is left to the end */
    st->evt = st->timeline ? OTF2_Archive_GetEvtWriter(sm_bg.archive, loc->id) : NULL;
    if (!st->evt) {
        if (st->timeline)
            sm_otf2_bg_ok(OTF2_ERROR_MEM_ALLOC_FAILED);
        sm_timeline_free(st->timeline);
        free(st);
        return NULL;
    }
    st->loc = loc;
    sm_timeline_begin(st->timeline, loc->id, loc->type, "");
    sm_bg.by_id[loc->id] = st;
    sm_bg.n_open++;
    return st;
}

static void sm_otf2_bg_settle_size(sm_otf2_bg_loc_t *st);

/* st's event writer closed (its file complete), its count of events kept;
 * regions left open by a leave that was never recorded (nesting.h) are left
 * at its last time first. */
static bool sm_otf2_bg_close_evt(sm_otf2_bg_loc_t *st)
{
    for (; sm_nesting_top(&st->nest) != UINT32_MAX; sm_nesting_pop(&st->nest)) {
        st->nest.closed++;
        if (!sm_otf2_bg_ok(OTF2_EvtWriter_Leave(st->evt, NULL, st->last,
                                                sm_nesting_top(&st->nest))))
            return false;
        sm_timeline_leave(st->timeline, st->last);
    }
    sm_nesting_free(&st->nest);
    if (!sm_otf2_bg_ok(OTF2_EvtWriter_GetNumberOfEvents(st->evt, &st->n_events)) ||
        !sm_otf2_bg_ok(OTF2_Archive_CloseEvtWriter(sm_bg.archive, st->evt)))
        return false;
    st->evt = NULL;
    sm_otf2_bg_settle_size(st);
    return true;
}

/* The staged file of location id ("evt" or "def"). */
static void sm_otf2_bg_staged(char *path, size_t size, uint32_t id, const char *ext)
{
    snprintf(path, size, "%s/%s/%" PRIu32 ".%s", sm_bg.dir, SM_OTF2_ARCHIVE_NAME, id, ext);
}

/* st's event file closed: the space it takes, told as it is (its last
 * chunk is written short). */
static void sm_otf2_bg_settle_size(sm_otf2_bg_loc_t *st)
{
    char path[4400];
    struct stat sb;
    sm_otf2_bg_staged(path, sizeof path, st->loc->id, "evt");
    if (stat(path, &sb) != 0)
        return;
    sm_space_staged_add((int64_t)sb.st_size - (int64_t)st->staged_bytes);
    st->staged_bytes = (uint64_t)sb.st_size;
}

/* buffer.h's close, on the writer thread: the thread ended and st has all
 * its records (complete), or it is dropped.  Its slot is free either way. */
static int sm_otf2_bg_close(sm_location_t *loc, void *arg, int complete)
{
    sm_otf2_bg_loc_t *st = arg;
    sm_bg.n_open--;
    if (complete && !st->stopped && !sm_bg.broken && st->evt && sm_otf2_bg_close_evt(st)) {
        st->closed = true;
        /* Its lane in a few KiB, not the whole binning state. */
        sm_timeline_end(st->timeline);
        if (st->timeline->out.len && !st->timeline->out.oom) {
            st->lane = st->timeline->out.p;
            st->lane_len = st->timeline->out.len;
            st->timeline->out.p = NULL;
        }
        sm_timeline_free(st->timeline);
        st->timeline = NULL;
        /* Its local definition file, empty, made now: at the end OTF2 only
         * truncates it (moved into the archive), where creating thousands
         * of files cost up to 0.25 ms each on an ext4 without a journal. */
        char path[4400];
        sm_otf2_bg_staged(path, sizeof path, loc->id, "def");
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        st->def_file = fd >= 0;
        if (fd >= 0)
            close(fd);
        return 0;
    }
    st->stopped = true; /* written at the end, its staged file dropped */
    if (!sm_bg.broken && st->evt &&
        sm_otf2_bg_ok(OTF2_Archive_CloseEvtWriter(sm_bg.archive, st->evt))) {
        st->evt = NULL;
        sm_otf2_bg_settle_size(st);
    }
    return 1;
}

/* Ticks, never going back on the location. */
static SM_ALWAYS_INLINE uint64_t sm_otf2_bg_time(sm_otf2_bg_loc_t *st, uint64_t t)
{
    if (st->has_time && t < st->last) {
        t = st->last;
        st->clamps++;
    }
    st->last = t;
    if (!st->has_time || t < st->min)
        st->min = t;
    if (!st->has_time || t > st->max)
        st->max = t;
    st->has_time = true;
    return t;
}

static bool sm_otf2_bg_comm(sm_otf2_bg_loc_t *st, uint32_t local)
{
    if (local == SM_OTF2_BG_THREADS)
        return false;
    uint32_t word = local / 64;
    if (word >= st->comm_words) {
        uint32_t n = word + 8;
        uint64_t *grown = realloc(st->comms, sizeof *grown * n);
        if (!grown)
            return false;
        memset(grown + st->comm_words, 0, sizeof *grown * (n - st->comm_words));
        st->comms = grown;
        st->comm_words = n;
    }
    st->comms[word] |= 1ull << (local % 64);
    return true;
}

/* The timeline kind of a local region. */
static int sm_otf2_bg_kind(uint32_t region)
{
    if (region >= sm_bg.n_kind) {
        uint32_t n = region + 256;
        uint8_t *grown = realloc(sm_bg.kind, n);
        if (!grown)
            return SM_TL_OTHER;
        memset(grown + sm_bg.n_kind, 0, n - sm_bg.n_kind);
        sm_bg.kind = grown;
        sm_bg.n_kind = n;
    }
    if (!sm_bg.kind[region]) {
        const sm_region_def_t *d = sm_region_get(region);
        int k = d ? sm_tl_kind_of_paradigm(sm_paradigm_name((sm_paradigm_t)d->paradigm))
                  : SM_TL_OTHER;
        sm_bg.kind[region] = (uint8_t)(k + 1);
    }
    return sm_bg.kind[region] - 1;
}

/* buffer.h's record: one record in the process's ids and ticks.  Non-zero
 * stops the location (left to the end of the run). */
static int sm_otf2_bg_record(const sm_record_t *rec, void *arg)
{
    sm_otf2_bg_loc_t *st = arg;
    OTF2_EvtWriter *e = st->evt;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    uint64_t pt = sm_otf2_word(rec, 0), t;
    uint32_t peer = (uint32_t)pt, tag = (uint32_t)(pt >> 32);
    uint32_t thread = (uint32_t)(pt >> 32), generation = (uint32_t)pt;
    OTF2_Paradigm model = sm_otf2_paradigm((uint8_t)rec->aux);
    if (st->stopped || sm_bg.broken || !st->evt)
        return 1;
    st->records[sm_bg.take]++;

    switch (rec->kind) {
    case SM_REC_ENTER:
    case SM_REC_LEAVE:
        if ((rec->aux && rec->words) || rec->ref >= sm_region_count())
            goto stop; /* attributes (mapped at the end), or not a region */
        t = sm_otf2_bg_time(st, rec->time);
        if (rec->ref >= st->max_region)
            st->max_region = rec->ref + 1;
        if (rec->kind == SM_REC_ENTER) {
            sm_nesting_enter(&st->nest, rec->ref);
            rc = OTF2_EvtWriter_Enter(e, NULL, t, rec->ref);
            sm_timeline_enter(st->timeline, t, sm_otf2_bg_kind(rec->ref));
            break;
        }
        int64_t above = sm_nesting_leave(&st->nest, rec->ref);
        if (above < 0)
            break; /* its enter was never recorded */
        for (int64_t k = 0; k <= above && rc == OTF2_SUCCESS; k++) {
            rc = OTF2_EvtWriter_Leave(e, NULL, t, sm_nesting_top(&st->nest));
            sm_timeline_leave(st->timeline, t);
            sm_nesting_pop(&st->nest);
        }
        break;
    case SM_REC_BUFFER_FLUSH: {
        uint64_t stop = rec->time;
        t = sm_otf2_bg_time(st, rec->time);
        if (rec->words >= 1)
            memcpy(&stop, sm_record_payload(rec), sizeof stop);
        if (stop < t)
            stop = t;
        if (stop > st->max)
            st->max = stop;
        rc = OTF2_EvtWriter_BufferFlush(e, NULL, t, stop);
        break;
    }
    case SM_REC_MEASUREMENT:
        t = sm_otf2_bg_time(st, rec->time);
        rc = OTF2_EvtWriter_MeasurementOnOff(e, NULL, t,
                                             rec->aux ? OTF2_MEASUREMENT_ON : OTF2_MEASUREMENT_OFF);
        break;
    case SM_REC_THREAD_CREATE:
        t = sm_otf2_bg_time(st, rec->time);
        rc = OTF2_EvtWriter_ThreadCreate(e, NULL, t, SM_OTF2_BG_THREADS, rec->ref);
        st->thread_events = true;
        break;
    case SM_REC_THREAD_BEGIN:
    case SM_REC_THREAD_END:
        if ((rec->kind == SM_REC_THREAD_BEGIN && rec->ref == SM_INVALID_ID) ||
            st->loc->creator == SM_INVALID_ID)
            return 0;
        t = sm_otf2_bg_time(st, rec->time);
        rc = rec->kind == SM_REC_THREAD_BEGIN
                 ? OTF2_EvtWriter_ThreadBegin(e, NULL, t, SM_OTF2_BG_THREADS, st->loc->id)
                 : OTF2_EvtWriter_ThreadEnd(e, NULL, t, SM_OTF2_BG_THREADS, st->loc->id);
        st->thread_events = true;
        break;
    case SM_REC_MSG_SEND:
    case SM_REC_MSG_RECV:
    case SM_REC_MSG_ISEND:
    case SM_REC_MSG_IRECV:
    case SM_REC_COLL_END:
    case SM_REC_ICOLL_COMPLETE:
    case SM_REC_THREAD_TEAM_BEGIN:
    case SM_REC_THREAD_TEAM_END:
    case SM_REC_THREAD_TASK_CREATE:
    case SM_REC_THREAD_TASK_SWITCH:
    case SM_REC_THREAD_TASK_COMPLETE:
        if (!sm_otf2_bg_comm(st, rec->ref))
            goto stop;
        /* fall through */
    case SM_REC_MSG_ISEND_COMPLETE:
    case SM_REC_MSG_IRECV_REQUEST:
    case SM_REC_REQUEST_CANCELLED:
    case SM_REC_COLL_BEGIN:
    case SM_REC_ICOLL_REQUEST:
    case SM_REC_THREAD_FORK:
    case SM_REC_THREAD_JOIN:
    case SM_REC_THREAD_ACQUIRE_LOCK:
    case SM_REC_THREAD_RELEASE_LOCK:
        t = sm_otf2_bg_time(st, rec->time);
        switch (rec->kind) {
        case SM_REC_MSG_SEND:
            rc = OTF2_EvtWriter_MpiSend(e, NULL, t, peer, rec->ref, tag, sm_otf2_word(rec, 1));
            break;
        case SM_REC_MSG_RECV:
            rc = OTF2_EvtWriter_MpiRecv(e, NULL, t, peer, rec->ref, tag, sm_otf2_word(rec, 1));
            break;
        case SM_REC_MSG_ISEND:
            rc = OTF2_EvtWriter_MpiIsend(e, NULL, t, peer, rec->ref, tag, sm_otf2_word(rec, 1),
                                         sm_otf2_word(rec, 2));
            break;
        case SM_REC_MSG_IRECV:
            rc = OTF2_EvtWriter_MpiIrecv(e, NULL, t, peer, rec->ref, tag, sm_otf2_word(rec, 1),
                                         sm_otf2_word(rec, 2));
            break;
        case SM_REC_MSG_ISEND_COMPLETE:
            rc = OTF2_EvtWriter_MpiIsendComplete(e, NULL, t, pt);
            break;
        case SM_REC_MSG_IRECV_REQUEST:
            rc = OTF2_EvtWriter_MpiIrecvRequest(e, NULL, t, pt);
            break;
        case SM_REC_REQUEST_CANCELLED:
            rc = OTF2_EvtWriter_MpiRequestCancelled(e, NULL, t, pt);
            break;
        case SM_REC_COLL_BEGIN:
            rc = OTF2_EvtWriter_MpiCollectiveBegin(e, NULL, t);
            break;
        case SM_REC_COLL_END:
            rc = OTF2_EvtWriter_MpiCollectiveEnd(e, NULL, t, (OTF2_CollectiveOp)rec->aux, rec->ref,
                                                 sm_otf2_root(pt), sm_otf2_word(rec, 1),
                                                 sm_otf2_word(rec, 2));
            break;
        case SM_REC_ICOLL_REQUEST:
            rc = OTF2_EvtWriter_NonBlockingCollectiveRequest(e, NULL, t, pt);
            break;
        case SM_REC_ICOLL_COMPLETE:
            rc = OTF2_EvtWriter_NonBlockingCollectiveComplete(
                e, NULL, t, (OTF2_CollectiveOp)rec->aux, rec->ref, sm_otf2_root(pt),
                sm_otf2_word(rec, 1), sm_otf2_word(rec, 2), sm_otf2_word(rec, 3));
            break;
        case SM_REC_THREAD_FORK:
            rc = OTF2_EvtWriter_ThreadFork(e, NULL, t, model, rec->ref);
            break;
        case SM_REC_THREAD_JOIN:
            rc = OTF2_EvtWriter_ThreadJoin(e, NULL, t, model);
            break;
        case SM_REC_THREAD_TEAM_BEGIN:
            rc = OTF2_EvtWriter_ThreadTeamBegin(e, NULL, t, rec->ref);
            break;
        case SM_REC_THREAD_TEAM_END:
            rc = OTF2_EvtWriter_ThreadTeamEnd(e, NULL, t, rec->ref);
            break;
        case SM_REC_THREAD_ACQUIRE_LOCK:
            rc = OTF2_EvtWriter_ThreadAcquireLock(e, NULL, t, model, rec->ref, (uint32_t)pt);
            break;
        case SM_REC_THREAD_RELEASE_LOCK:
            rc = OTF2_EvtWriter_ThreadReleaseLock(e, NULL, t, model, rec->ref, (uint32_t)pt);
            break;
        case SM_REC_THREAD_TASK_CREATE:
            rc = OTF2_EvtWriter_ThreadTaskCreate(e, NULL, t, rec->ref, thread, generation);
            break;
        case SM_REC_THREAD_TASK_SWITCH:
            rc = OTF2_EvtWriter_ThreadTaskSwitch(e, NULL, t, rec->ref, thread, generation);
            break;
        default:
            rc = OTF2_EvtWriter_ThreadTaskComplete(e, NULL, t, rec->ref, thread, generation);
            break;
        }
        break;
    default:
        if (rec->kind < SM_REC_KIND_COUNT)
            goto stop; /* metrics, counters, samples, GPU work: at the end */
        return 0;      /* a kind no writer knows: skipped, as at the end */
    }
    if (sm_otf2_bg_ok(rc))
        return 0;
    st->stopped = true; /* its buffers may be broken: never closed */
    return 1;
stop:
    sm_info(2, "OTF2: location %" PRIu32 " is left to the end of the run from a record of kind %u",
            st->loc->id, (unsigned)rec->kind);
    st->stopped = true;
    /* Its memory goes now (the staged file is dropped at the end). */
    if (sm_otf2_bg_ok(OTF2_Archive_CloseEvtWriter(sm_bg.archive, st->evt))) {
        st->evt = NULL;
        sm_otf2_bg_settle_size(st);
    }
    return 1;
}

static sm_buffer_encoder_t sm_otf2_bg_encoder = {sm_otf2_bg_open, sm_otf2_bg_record,
                                                 sm_otf2_bg_close, 0};

void sm_otf2_background(int mode)
{
    /* As many staged writers as a quarter of the budget holds (sm_otf2_bg_open). */
    uint64_t n = sm_buffers_budget() / 4 / SM_OTF2_EVT_CHUNK;
    sm_otf2_bg_encoder.max_locations = (uint32_t)(n < SM_OTF2_BG_MAX ? n : SM_OTF2_BG_MAX);
    sm_bg.max = sm_otf2_bg_encoder.max_locations;
    sm_bg.mode = sm_otf2_bg_encoder.max_locations ? mode : 0;
    sm_bg.check = mode == 2;
    sm_buffers_set_encoder(sm_bg.mode ? &sm_otf2_bg_encoder : NULL);
}

/* The staged state of live location i of the process being written, when
 * it can be taken (NULL: written as before). */
static sm_otf2_bg_loc_t *sm_otf2_bg_of(const sm_otf2_writer_t *w, uint32_t id)
{
    (void)w;
    if (!sm_bg.take || sm_bg.broken || !sm_bg.archive || id >= sm_bg.n_by_id)
        return NULL;
    sm_otf2_bg_loc_t *st = sm_bg.by_id[id];
    return !st || st->stopped || (!st->evt && !st->closed) ? NULL : st;
}

/* Location id was staged during the run: sm_otf2_bg_take may take it. */
bool sm_otf2_bg_may_take(const sm_otf2_writer_t *w, uint32_t id)
{
    const sm_otf2_bg_loc_t *st = sm_otf2_bg_of(w, id);
    return st && st->loc;
}

/* w->loc's staged file ("evt" or "def") moved into the job's archive. */
static bool sm_otf2_bg_move(const sm_otf2_writer_t *w, const char *ext)
{
    char from[4400];
    sm_otf2_bg_staged(from, sizeof from, w->loc.id, ext);
    return sm_otf2_move_in(w, from, ext);
}

/* Location w->loc, staged: the rest of its records encoded, its file moved
 * into the job's archive.  False: written as before (its staged file is
 * dropped). */
bool sm_otf2_bg_take(sm_otf2_writer_t *w, uint64_t *n_events)
{
    sm_otf2_bg_loc_t *st = sm_otf2_bg_of(w, w->loc.id);
    if (!st || !st->loc)
        return false;
    if (sm_buffer_encoded(st->loc) != st || sm_buffer_for_each_rest(st->loc, sm_otf2_bg_record, st) != 0 ||
        st->stopped || sm_bg.broken) {
        sm_info(2, "OTF2: location %" PRIu32 " is written at the end (its encoding during the "
                "run stopped)", w->loc.id);
        return false;
    }
    /* Every id it used must have the job's: else the old way (which leaves
     * out the events of an unnamed communicator). */
    const sm_id_maps_t *m = w->img->maps;
    if (st->max_region > m->n_regions)
        return false;
    for (uint32_t i = 0; i < st->comm_words * 64u; i++)
        if ((st->comms[i / 64] >> (i % 64) & 1) && (i >= m->n_comms || m->comms[i] == SM_INVALID_ID))
            return false;
    if (!st->closed && !sm_otf2_bg_close_evt(st))
        return false;
    w->nest.dropped += st->nest.dropped;
    w->nest.closed += st->nest.closed;
    uint64_t n = st->n_events;
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/%s", w->run->output_dir, SM_OTF2_ARCHIVE_NAME);
    if ((mkdir(dir, 0777) != 0 && errno != EEXIST) || !sm_otf2_bg_move(w, "evt"))
        return false;
    st->moved = true;
    if (st->def_file && !sm_otf2_bg_move(w, "def")) { /* best effort: else OTF2 creates it */
        sm_otf2_bg_staged(dir, sizeof dir, w->loc.id, "def");
        unlink(dir);
    }
    sm_info(1, "OTF2: location %" PRIu32 ": %" PRIu64 " records encoded during the run, %" PRIu64
            " at its end", w->loc.id, st->records[0], st->records[1]);
    *n_events = n;
    w->clamps += st->clamps;
    w->thread_events |= st->thread_events;
    if (st->has_time) {
        uint64_t lo = sm_clock_job_ns(&w->img->clock, st->min);
        uint64_t hi = sm_clock_job_ns(&w->img->clock, st->max);
        if (!w->any_time || lo < w->min_ns)
            w->min_ns = lo;
        if (!w->any_time || hi > w->max_ns)
            w->max_ns = hi;
        w->any_time = true;
        /* Its timeline lane, binned in ticks, in ns; then as the others. */
        double rate = st->max > st->min ? (double)(hi - lo) / (double)(st->max - st->min)
                                        : sm_clock_ns_per_tick();
        sm_timeline_t *tl = st->timeline;
        if (st->closed) { /* its record, in ticks */
            if (w->timeline && st->lane) {
                uint64_t origin = sm_timeline_record_origin(st->lane, st->lane_len);
                sm_timeline_rescale_record(st->lane, st->lane_len, w->loc.name,
                                           sm_clock_job_ns(&w->img->clock, origin), rate);
                sm_put_bytes(&w->timeline->out, st->lane, st->lane_len);
            }
        } else {
            snprintf(tl->name, sizeof tl->name, "%s", w->loc.name);
            sm_timeline_rescale(tl, sm_clock_job_ns(&w->img->clock, tl->origin), rate);
            sm_timeline_end(tl);
            if (w->timeline && tl->out.len && !tl->out.oom)
                sm_put_bytes(&w->timeline->out, tl->out.p, tl->out.len);
        }
    }
    return true;
}

/* The local definitions of a staged location: the job's ids of the ones it
 * used, and its ticks on the job's clock. */
bool sm_otf2_bg_local_defs(sm_otf2_writer_t *w, OTF2_DefWriter *d, const sm_image_t *img,
                           uint32_t id)
{
    sm_otf2_bg_loc_t *st = sm_bg.take && id < sm_bg.n_by_id ? sm_bg.by_id[id] : NULL;
    if (!st || !st->moved)
        return true;
    const sm_id_maps_t *m = img->maps;
    bool ok = true;
    if (st->max_region) {
        OTF2_IdMap *map = OTF2_IdMap_CreateFromUint32Array(st->max_region, m->regions, false);
        ok = sm_otf2_got(w, map, strerror(ENOMEM)) &&
             sm_otf2_ok(w, OTF2_DefWriter_WriteMappingTable(d, OTF2_MAPPING_REGION, map));
        if (map)
            OTF2_IdMap_Free(map);
    }
    if (ok && (st->comm_words || st->thread_events)) {
        OTF2_IdMap *map = OTF2_IdMap_Create(OTF2_ID_MAP_SPARSE, 16);
        ok = sm_otf2_got(w, map, strerror(ENOMEM));
        for (uint32_t i = 0; ok && i < st->comm_words * 64u; i++)
            if (st->comms[i / 64] >> (i % 64) & 1)
                ok = sm_otf2_ok(w, OTF2_IdMap_AddIdPair(map, i, m->comms[i]));
        if (ok && st->thread_events)
            ok = sm_otf2_ok(w, OTF2_IdMap_AddIdPair(map, SM_OTF2_BG_THREADS,
                                                    sm_otf2_thread_comm(w, img->rank)));
        ok = ok && sm_otf2_ok(w, OTF2_DefWriter_WriteMappingTable(d, OTF2_MAPPING_COMM, map));
        if (map)
            OTF2_IdMap_Free(map);
    }
    /* Ticks to the job's ns: affine, so the offsets at the first and the
     * last time reproduce it (OTF2 interpolates between them and carries
     * the line on beyond). */
    if (ok && st->has_time) {
        uint64_t pts[2] = {st->min, st->max};
        for (int k = 0; ok && k < (st->max > st->min ? 2 : 1); k++) {
            uint64_t ns = sm_clock_job_ns(&img->clock, pts[k]);
            ok = sm_otf2_ok(w, OTF2_DefWriter_WriteClockOffset(d, pts[k],
                                                               (int64_t)(ns - pts[k]), 0.0));
        }
    }
    return ok;
}

/* The end: the staging archive closed (unless broken: its buffers may be)
 * and its folder removed. */
static void sm_otf2_bg_finish(void)
{
    if (!sm_bg.archive)
        return;
    if (!sm_bg.broken) {
        for (uint32_t k = 0; k < sm_bg.n_by_id; k++)
            if (sm_bg.by_id[k] && sm_bg.by_id[k]->evt &&
                sm_otf2_bg_ok(OTF2_Archive_CloseEvtWriter(sm_bg.archive, sm_bg.by_id[k]->evt)))
                sm_bg.by_id[k]->evt = NULL;
    }
    if (!sm_bg.broken) {
        OTF2_Archive_CloseEvtFiles(sm_bg.archive);
        OTF2_Archive_Close(sm_bg.archive);
        sm_bg.archive = NULL;
    }
    nftw(sm_bg.dir, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    sm_otf2_bg_pool_release();
    bool kept = false;
    for (uint32_t k = 0; k < sm_bg.n_by_id; k++) {
        sm_otf2_bg_loc_t *st = sm_bg.by_id[k];
        if (!st)
            continue;
        if (st->evt) { /* left open (broken): its memory stays */
            kept = true;
            continue;
        }
        sm_timeline_free(st->timeline);
        free(st->lane);
        free(st->comms);
        sm_nesting_free(&st->nest);
        free(st);
        sm_bg.by_id[k] = NULL;
    }
    if (!kept) {
        free(sm_bg.by_id);
        sm_bg.by_id = NULL;
        sm_bg.n_by_id = 0;
    }
    sm_bg.n_open = 0;
    sm_bg.mode = 0;
}

/* This process's part of the archive at the end of a live run (writers.h). */
int sm_otf2_write(const sm_run_info_t *run, const sm_job_t *job)
{
    sm_image_t self;
    sm_image_live(&self, job->procs->rank, job->maps, run->start_time, run->end_time);
    sm_buffers_quiesce(); /* the encoder is done: what it staged is taken now */
    sm_bg.take = sm_bg.mode != 0;
    int rc = sm_otf2_write_images(run, job, &self, 1);
    sm_bg.take = false;
    if (sm_bg.check) {
        /* For tests: the same archive written wholly at the end, beside. */
        char dir[4400];
        sm_run_info_t again = *run;
        snprintf(dir, sizeof dir, "%s/otf2-at-end", run->output_dir);
        again.output_dir = dir;
        sm_otf2_one_encoder = true;
        if (sm_mkdir_p(dir) != 0 || sm_otf2_write_images(&again, job, &self, 1) != 0)
            rc = -1;
        sm_otf2_one_encoder = false;
    }
    sm_otf2_bg_finish();
    return rc;
}
