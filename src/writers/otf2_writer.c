/* The OTF2 writer: one archive (traces.otf2, traces.def, traces/) for the
 * whole job in its output folder.  Every process opens the archive
 * collectively (OTF2's collective callbacks come from the job's process
 * group) and streams its own locations' events from the event layer's
 * buffers into OTF2's event writers, translating its ids into the job's
 * unified ones and its timestamps onto rank 0's clock.  Memory stays bounded
 * (OTF2's own pool per writer, flushed to disk when full).  Then each process
 * sends what the global definitions need of it (its locations, their event
 * counts, time range) to rank 0 along the tree, and rank 0 writes them. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */
#include "../finalize/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "../core/clock.h"
#include "../core/adapter_api.h"
#include "../core/definitions.h"
#include "../core/event_record.h"
#include "../core/location.h"
#include "../core/metrics.h"
#include "../core/buffer.h"
#include "../core/cpus.h"
#include "../core/pages.h"
#include "../core/write_behind.h"
#include "../core/trace_space.h"
#include "../merge/image.h"
#include "../util/bytes.h"
#include "../util/fs.h"
#include "../util/log.h"
#include "timeline.h"
#include "nesting.h"
#include "writers.h"
#include "../util/grow.h"

#define SM_OTF2_ARCHIVE_NAME "traces"
/* Chunks of at least OTF2's 4 MiB file buffer: OTF2 then writes full chunks
 * directly, never through that buffer, which OTF2 3.0.2 frees and then writes
 * from again when a write fails (a crash on a full disk). */
#define SM_OTF2_EVT_CHUNK (4u * 1024u * 1024u)
#define SM_OTF2_DEF_CHUNK (4u * 1024u * 1024u)
/* Definition chunks of a job whose definitions are small (sm_otf2_def_chunk):
 * OTF2 clears the rest of a writer's chunk when it closes it, so every
 * location's local definition file cost a 4 MiB memset (a quarter to a half
 * of a second for 4,000 threads); its files then stay below OTF2's file
 * buffer, which is written only at their close, where a failure is safe. */
#define SM_OTF2_DEF_CHUNK_SMALL (256u * 1024u)


/* Kokkos and HIP became OTF2 paradigms in OTF2 2.3. */
#if OTF2_VERSION_MAJOR > 2 || (OTF2_VERSION_MAJOR == 2 && OTF2_VERSION_MINOR >= 3)
#define SM_OTF2_HAVE_KOKKOS_HIP 1
#endif

/* Transfer metrics (sm_transfer_kind_t): one metric class each, same ids. */
static const char *const sm_otf2_metric_names[SM_XFER_KIND_COUNT] = {
    "MPI-IO bytes read", "MPI-IO bytes written", "RMA bytes put", "RMA bytes got"};

/* Attributes of a GPU activity's Enter, in payload order (gpu.c defines
 * them in every process that has GPU streams). */
#define SM_OTF2_GPU_ATTRS 11
static const char *const sm_otf2_gpu_attr_names[SM_OTF2_GPU_ATTRS] = {
    "correlation id", "bytes",  "grid x",  "grid y",  "grid z", "block x", "block y",
    "block z",        "registers per thread", "static shared memory", "dynamic shared memory"};

/* The first error OTF2 reported through its error callback (which is
 * process-wide, hence a static; the writer runs once, at finalize). */
typedef struct sm_otf2_error {
    OTF2_ErrorCode code;
    char message[256];
} sm_otf2_error_t;

static sm_otf2_error_t sm_otf2_reported;
/* The encoders of the end of the run may fail at once. */
static pthread_mutex_t sm_otf2_reported_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct sm_otf2_writer {
    const sm_run_info_t *run;
    const sm_job_t *job;
    uint32_t n_ranks;
    uint32_t n_comms;     /* the job's communicators: OTF2 comm ids 0..n-1 */
    bool mpi_comms;       /* some of them are MPI's (the others: OpenMP teams) */
    bool team_comms;
    uint64_t unknown_comm;/* message events on a communicator left unnamed */
    OTF2_Archive *archive;
    OTF2_EvtWriter *evt;  /* the location being written */
    /* A writer is open (not closed successfully).  After a failure its
     * buffers may be broken (OTF2 3.0.2 frees its file buffer on a failed
     * write and writes from it at close) and closing the archive would flush
     * them, so the archive is then left open. */
    bool writer_open;
    OTF2_AttributeList *attrs;
    const sm_image_t *img;         /* the process being written */
    sm_image_location_t loc;       /* the location being written */

    /* Timestamps (ns): per location, and over the whole archive. */
    uint64_t last_ns;
    bool loc_has_time;
    uint64_t min_ns, max_ns;
    bool any_time;
    uint64_t clamps;
    uint64_t skipped_attrs;
    bool thread_events; /* a thread contingent is referenced */
    bool metric_events; /* transfer metrics are referenced */
    /* The job's string id of a named metric's name -> its index among the
     * job's named metrics (OTF2 metric SM_XFER_KIND_COUNT + index). */
    uint32_t *named_metric;
    uint32_t n_named_strings;
    /* Counters (PAPI events): the job's named-metric indices of kind
     * counter, in definition order, and the class that holds them all
     * (OTF2 metric after the named ones), used when a process counts
     * exactly these; otherwise each value goes to its own member's class. */
    uint32_t *counters;
    uint32_t n_counters;

    /* First failure: an OTF2 code, or a reason of our own (NULL-handle calls). */
    OTF2_ErrorCode failed_code;
    const char *failed_reason;

    /* Locations whose spill files could not be read back. */
    uint32_t spill_failures;
    char first_spill_failure[96];

    OTF2_StringRef next_string; /* ids after the interned strings */

    /* GPU activities: the job's attributes they carry (by name; undefined
     * when no process defined them), and the end of the last one written on
     * the current location (activities that overlap it are moved after it,
     * and counted). */
    OTF2_AttributeRef gpu_attr[SM_OTF2_GPU_ATTRS];
    uint64_t gpu_last_end;
    uint64_t gpu_overlaps;
    /* Call-stack samples of the location being written: its records hold
     * them after its other events (callstack.c), so they are read first and
     * merged in by time. */
    uint32_t n_contexts;       /* the job's calling contexts */
    struct sm_otf2_sample {
        uint64_t time;
        uint32_t context;      /* the process's id */
        uint32_t depth;
    } *samples;
    uint64_t n_samples, samples_cap, next_sample;
    /* The timeline overview of report.html, binned as the events pass
     * (NULL when out of memory: no timeline.json); the kind of each of the
     * job's regions. */
    sm_timeline_t *timeline;
    uint8_t *region_kind;
    uint32_t n_region_kinds;
    /* Where the location being written keeps its metric samples for the
     * timeline when several threads encode (sm_otf2_encode_parallel); NULL:
     * straight into the timeline. */
    struct sm_otf2_slot *slot;
    uint32_t spill_failure_index; /* the location of first_spill_failure */
    /* An encoder of the end other than the thread that ends the run writes
     * into an archive of its own in this folder (OTF2 closes an event
     * writer, its file included, under its archive's lock), and moves
     * each event file into the job's archive; NULL: w->archive is the job's. */
    const char *stage;
    /* The job archive's definition chunk size, and the locations of the
     * image being written whose (empty) local definition file an encoder
     * made and moved already (NULL: none). */
    uint64_t def_chunk;
    uint8_t *def_made;
    /* The location's enters and leaves kept well nested (nesting.h). */
    sm_nesting_t nest;
} sm_otf2_writer_t;

/* A location's global OTF2 id: the rank in the high half leaves each rank its
 * own range of 2^32 locations. */
static uint64_t sm_otf2_location_ref(uint32_t rank, uint32_t loc_id)
{
    return ((uint64_t)rank << 32) | loc_id;
}

/* Location groups: a process is its rank (as OTF2 asks for MPI); OTF2 3.0
 * wants accelerator streams outside process groups, so a process's GPU
 * streams get a group of their own, numbered after all ranks (readers such as
 * otf2-print expect dense group ids). */
static uint32_t sm_otf2_process_group_ref(uint32_t rank)
{
    return rank;
}

#if OTF2_VERSION_MAJOR >= 3
#define SM_OTF2_HAVE_ACCELERATOR_GROUP 1
#endif

/* Keep OTF2 from printing its own messages: keep the first error for our one
 * line instead.  Warnings are shown only when verbose; aborts are shown, as
 * the process is about to end. */
static OTF2_ErrorCode sm_otf2_error_callback(void *user, const char *file, uint64_t line,
                                             const char *function, OTF2_ErrorCode code,
                                             const char *fmt, va_list va)
{
    sm_otf2_error_t *e = user;
    char msg[sizeof e->message];
    (void)file;
    (void)line;
    (void)function;
    msg[0] = '\0';
    if (fmt)
        vsnprintf(msg, sizeof msg, fmt, va);
    if (code == OTF2_ABORT) {
        sm_error("OTF2: %s", msg);
    } else if (code == OTF2_WARNING || code == OTF2_DEPRECATED) {
        sm_info(2, "OTF2: %s", msg);
    } else if (e) {
        pthread_mutex_lock(&sm_otf2_reported_lock);
        if (e->code == OTF2_SUCCESS) {
            memcpy(e->message, msg, sizeof msg);
            __atomic_store_n(&e->code, code, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&sm_otf2_reported_lock);
    }
    return code;
}

static OTF2_FlushType sm_otf2_pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                        void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    (void)caller;
    (void)final;
    /* Always write full buffers out: OTF2's default for event writers is to
     * keep them in memory. */
    return OTF2_FLUSH;
}

/* OTF2's buffer chunks come from here, and go back to a small pool when a
 * writer is flushed or closed.  Left to itself, OTF2 allocates a fresh 4 MiB
 * chunk for every writer and returns it to the system at close: with
 * thousands of locations (short-lived threads) the page faults and unmaps
 * of those chunks took tens of milliseconds per location on a virtual
 * machine, most of the writing time.  A buffer holds at most
 * SM_OTF2_CHUNKS_PER_BUFFER chunks; then the allocation fails, which makes
 * OTF2 flush the buffer to its file and free its chunks (here).  One chunk:
 * the same 4 MiB are filled again after each flush while still in cache,
 * and only 4 MiB are faulted in at the end of the run (with 4, the fresh
 * 16 MiB cost a tenth of the exit time, issue 13). */
#define SM_OTF2_CHUNKS_PER_BUFFER 1
#define SM_OTF2_POOL (SM_CPUS_END_MAX + 8) /* a chunk per encoder of the end, and some */

/* Every chunk is declared to the write-behind (write_behind.h): while it
 * runs, OTF2's write of a full chunk is queued, and a chunk is filled again
 * only once that write is done (sm_wb_busy), so the encoder fills another
 * meanwhile. */
static void *sm_otf2_chunk_new(uint64_t size)
{
    void *c = sm_pages_get((size_t)size); /* populated (pages.h) */
    if (c)
        sm_wb_own(c, (size_t)size);
    return c;
}

static void sm_otf2_chunk_free(void *c, uint64_t size)
{
    sm_wb_disown(c); /* (waits for its queued write) */
    sm_pages_put(c, (size_t)size);
}

typedef struct sm_otf2_buffer_chunks {
    uint32_t n;
    uint64_t size;
    void *chunk[SM_OTF2_CHUNKS_PER_BUFFER];
} sm_otf2_buffer_chunks_t;

static void *sm_otf2_pool[SM_OTF2_POOL];
static uint64_t sm_otf2_pool_size[SM_OTF2_POOL];
static uint32_t sm_otf2_pool_n;
static pthread_mutex_t sm_otf2_pool_lock = PTHREAD_MUTEX_INITIALIZER; /* several encoders */

static void *sm_otf2_allocate(void *user, OTF2_FileType type, OTF2_LocationRef location,
                              void **per_buffer, uint64_t size)
{
    (void)user;
    (void)type;
    (void)location;
    sm_otf2_buffer_chunks_t *b = *per_buffer;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        *per_buffer = b;
    }
    if (b->n == SM_OTF2_CHUNKS_PER_BUFFER)
        return NULL;
    void *c = NULL;
    pthread_mutex_lock(&sm_otf2_pool_lock);
    for (uint32_t i = sm_otf2_pool_n; i-- > 0;)
        if (sm_otf2_pool_size[i] == size && !sm_wb_busy(sm_otf2_pool[i])) {
            c = sm_otf2_pool[i];
            sm_otf2_pool[i] = sm_otf2_pool[sm_otf2_pool_n - 1];
            sm_otf2_pool_size[i] = sm_otf2_pool_size[sm_otf2_pool_n - 1];
            sm_otf2_pool_n--;
            break;
        }
    pthread_mutex_unlock(&sm_otf2_pool_lock);
    if (!c && !(c = sm_otf2_chunk_new(size)))
        return NULL;
    b->size = size;
    b->chunk[b->n++] = c;
    return c;
}

static void sm_otf2_free_all(void *user, OTF2_FileType type, OTF2_LocationRef location,
                             void **per_buffer, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    sm_otf2_buffer_chunks_t *b = *per_buffer;
    if (!b)
        return;
    for (uint32_t i = 0; i < b->n; i++) {
        void *spare = b->chunk[i];
        pthread_mutex_lock(&sm_otf2_pool_lock);
        if (sm_otf2_pool_n < SM_OTF2_POOL) {
            sm_otf2_pool_size[sm_otf2_pool_n] = b->size;
            sm_otf2_pool[sm_otf2_pool_n++] = spare;
            spare = NULL;
        }
        pthread_mutex_unlock(&sm_otf2_pool_lock);
        if (spare)
            sm_otf2_chunk_free(spare, b->size);
    }
    b->n = 0;
    if (final) {
        free(b);
        *per_buffer = NULL;
    }
}

static void sm_otf2_pool_release(void)
{
    while (sm_otf2_pool_n) {
        sm_otf2_pool_n--;
        sm_otf2_chunk_free(sm_otf2_pool[sm_otf2_pool_n], sm_otf2_pool_size[sm_otf2_pool_n]);
    }
}

/* Notes the first failure; true when rc is success.  An error OTF2 reported
 * through the callback counts even when the call returned success: OTF2 3.0
 * swallows a failed flush of an event buffer (a full disk) and goes on. */
static bool sm_otf2_ok(sm_otf2_writer_t *w, OTF2_ErrorCode rc)
{
    if (rc == OTF2_SUCCESS)
        rc = __atomic_load_n(&sm_otf2_reported.code, __ATOMIC_ACQUIRE);
    if (rc == OTF2_SUCCESS)
        return true;
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason)
        w->failed_code = rc;
    return false;
}

/* For calls that return a handle: NULL is a failure with this reason, unless
 * OTF2 said why. */
static bool sm_otf2_got(sm_otf2_writer_t *w, const void *handle, const char *reason)
{
    if (handle)
        return sm_otf2_ok(w, OTF2_SUCCESS);
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason)
        w->failed_reason = reason;
    return false;
}

static void sm_otf2_report_failure(const sm_otf2_writer_t *w)
{
    const char *dir = w->run->output_dir;
    const sm_otf2_error_t *e = &sm_otf2_reported;
    if (e->code != OTF2_SUCCESS) {
        /* OTF2's description names the problem ("No space left on device"),
         * its message the object (the file). */
        const char *desc = e->code == OTF2_ERROR_EFBIG ? sm_fs_size_limit_text()
                                                       : OTF2_Error_GetDescription(e->code);
        if (e->message[0])
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s (%s)", dir, SM_OTF2_ARCHIVE_NAME,
                     desc, e->message);
        else
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME, desc);
    } else if (w->failed_code != OTF2_SUCCESS) {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 w->failed_code == OTF2_ERROR_EFBIG ? sm_fs_size_limit_text()
                                                    : OTF2_Error_GetDescription(w->failed_code));
    } else {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 w->failed_reason ? w->failed_reason : "unknown error");
    }
}

/* What keeping the enters and leaves nested changed (nesting.h), with -v. */
static void sm_otf2_note_nesting(const sm_nesting_t *n)
{
    if (n->dropped || n->closed)
        sm_info(1, "OTF2: %" PRIu64 " leaves of regions whose enter was not recorded left out, "
                "%" PRIu64 " regions left with the region around them (a signal handler of the "
                "program jumped out of sysmeasure's recording of an event)", n->dropped,
                n->closed);
}

/* ---------------------------------------------------------------- events */

/* Ticks to ns on the job's timeline (rank 0's clock), never going back on a
 * location (readers require it). */
static SM_ALWAYS_INLINE uint64_t sm_otf2_time(sm_otf2_writer_t *w, uint64_t ticks)
{
    uint64_t ns = sm_clock_job_ns(&w->img->clock, ticks);
    if (w->loc_has_time && ns < w->last_ns) {
        ns = w->last_ns;
        w->clamps++;
    }
    w->last_ns = ns;
    w->loc_has_time = true;
    if (!w->any_time || ns < w->min_ns)
        w->min_ns = ns;
    if (!w->any_time || ns > w->max_ns)
        w->max_ns = ns;
    w->any_time = true;
    return ns;
}

/* Fills w->attrs from an enter/leave payload; returns the list, or NULL when
 * it stays empty.  Attributes that are unknown, of an unknown type or repeated
 * in one event are skipped (counted) rather than failing the archive. */
static OTF2_AttributeList *sm_otf2_attributes(sm_otf2_writer_t *w, const sm_record_t *rec,
                                              OTF2_ErrorCode *rc)
{
    uint32_t n = rec->aux;
    const sm_id_maps_t *maps = w->img->maps;
    uint32_t n_attributes = maps->n_attributes;
    uint32_t n_strings = maps->n_strings;
    const unsigned char *p = sm_record_payload(rec);
    bool any = false;

    *rc = OTF2_SUCCESS;
    if (n > rec->words / 2u)
        n = rec->words / 2u;
    for (uint32_t i = 0; i < n; i++) {
        sm_record_attr_t a;
        memcpy(&a, p + i * sizeof a, sizeof a); /* no alignment assumption */
        const sm_attribute_def_t *def =
            a.attribute < n_attributes ? sm_attribute_get((sm_attribute_id_t)a.attribute) : NULL;
        OTF2_AttributeRef ref = def ? maps->attributes[a.attribute] : 0;
        if (!def || OTF2_AttributeList_TestAttributeByID(w->attrs, ref)) {
            w->skipped_attrs++;
            continue;
        }
        switch (def->type) {
        case SM_ATTR_INT64:
            *rc = OTF2_AttributeList_AddInt64(w->attrs, ref, a.value.i);
            break;
        case SM_ATTR_DOUBLE:
            *rc = OTF2_AttributeList_AddDouble(w->attrs, ref, a.value.d);
            break;
        case SM_ATTR_STRING:
            if (a.value.string >= n_strings) {
                w->skipped_attrs++;
                continue;
            }
            *rc = OTF2_AttributeList_AddStringRef(w->attrs, ref,
                                                  maps->strings[a.value.string]);
            break;
        default:
            w->skipped_attrs++;
            continue;
        }
        if (*rc != OTF2_SUCCESS)
            return NULL;
        any = true;
    }
    return any ? w->attrs : NULL;
}

/* The job's id of a region or communicator of this process. */
static uint32_t sm_otf2_region(const sm_otf2_writer_t *w, uint32_t local)
{
    const sm_id_maps_t *m = w->img->maps;
    return local < m->n_regions ? m->regions[local] : OTF2_UNDEFINED_REGION;
}

static bool sm_otf2_comm(sm_otf2_writer_t *w, uint32_t local, OTF2_CommRef *ref)
{
    const sm_id_maps_t *m = w->img->maps;
    if (local >= m->n_comms || m->comms[local] == SM_INVALID_ID) {
        w->unknown_comm++;
        return false;
    }
    *ref = m->comms[local];
    return true;
}

/* The thread contingent of this process: a pthread communicator after the
 * job's MPI communicators, one per process. */
static OTF2_CommRef sm_otf2_thread_comm(const sm_otf2_writer_t *w, uint32_t rank)
{
    return w->n_comms + rank;
}

static OTF2_Paradigm sm_otf2_paradigm(uint8_t p);

/* Payload word i of a record (0 when absent). */
static uint64_t sm_otf2_word(const sm_record_t *rec, unsigned i)
{
    uint64_t v = 0;
    if (i < rec->words)
        memcpy(&v, (const uint8_t *)sm_record_payload(rec) + 8u * i, sizeof v);
    return v;
}

static uint32_t sm_otf2_root(uint64_t root)
{
    return root == SM_NO_ROOT ? OTF2_UNDEFINED_UINT32 : (uint32_t)root;
}

/* What an encoder keeps of one location for the thread that ends the run:
 * its timeline lane, and its metric samples, which go into the process's
 * timeline in location order (the first sample of a metric places its
 * bins), so that it is the same as with one encoder. */
typedef struct sm_otf2_slot {
    sm_wbuf_t lane;
    struct sm_otf2_tl_sample {
        uint64_t ns, value;
        uint32_t id;
    } *metrics;
    uint64_t n_metrics, metrics_cap;
    bool oom;
} sm_otf2_slot_t;

static void sm_otf2_tl_metric(sm_otf2_writer_t *w, uint64_t ns, uint32_t id, uint64_t value)
{
    sm_otf2_slot_t *s = w->slot;
    if (!s || !w->timeline) {
        sm_timeline_metric(w->timeline, ns, id, value);
    } else if (s->n_metrics < s->metrics_cap || SM_GROW(s->metrics, s->metrics_cap, 64) == 0) {
        s->metrics[s->n_metrics++] = (struct sm_otf2_tl_sample){ns, value, id};
    } else {
        s->oom = true;
    }
}

/* PAPI counter values: one Metric event of the class of all the job's
 * counters when this process counts exactly those, else one per value. */
static OTF2_ErrorCode sm_otf2_counters_record(sm_otf2_writer_t *w, const sm_record_t *rec,
                                              uint64_t t)
{
    const sm_id_maps_t *m = w->img->maps;
    const uint64_t *v = sm_record_payload(rec);
    OTF2_Type types[256];
    OTF2_MetricValue values[256];
    uint32_t n = rec->words;
    bool whole = n == w->n_counters;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t local = rec->ref + i;
        uint32_t job = local < m->n_metrics ? m->metrics[local] : SM_INVALID_ID;
        whole = whole && job == w->counters[i];
        types[i] = OTF2_TYPE_UINT64;
        values[i].unsigned_int = v[i];
    }
    w->metric_events = true;
    if (whole)
        return OTF2_EvtWriter_Metric(w->evt, NULL, t,
                                     SM_XFER_KIND_COUNT + sm_defset_metric_count(w->job->defs),
                                     (uint8_t)n, types, values);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t local = rec->ref + i;
        uint32_t job = local < m->n_metrics ? m->metrics[local] : SM_INVALID_ID;
        if (job == SM_INVALID_ID)
            continue;
        OTF2_ErrorCode rc = OTF2_EvtWriter_Metric(w->evt, NULL, t, SM_XFER_KIND_COUNT + job, 1,
                                                  &types[i], &values[i]);
        if (rc != OTF2_SUCCESS)
            return rc;
    }
    return OTF2_SUCCESS;
}

/* Messages, requests, collectives and metrics. */
static OTF2_ErrorCode sm_otf2_message_record(sm_otf2_writer_t *w, const sm_record_t *rec)
{
    OTF2_EvtWriter *e = w->evt;
    OTF2_CommRef comm = OTF2_UNDEFINED_COMM;
    uint64_t pt = sm_otf2_word(rec, 0);
    uint32_t peer = (uint32_t)pt, tag = (uint32_t)(pt >> 32);
    uint64_t t;

    switch (rec->kind) {
    case SM_REC_MSG_SEND:
    case SM_REC_MSG_RECV:
    case SM_REC_MSG_ISEND:
    case SM_REC_MSG_IRECV:
    case SM_REC_COLL_END:
    case SM_REC_ICOLL_COMPLETE:
        if (!sm_otf2_comm(w, rec->ref, &comm))
            return OTF2_SUCCESS; /* counted; a reader could not place it */
        break;
    default:
        break;
    }
    t = sm_otf2_time(w, rec->time);
    switch (rec->kind) {
    case SM_REC_MSG_SEND:
        return OTF2_EvtWriter_MpiSend(e, NULL, t, peer, comm, tag, sm_otf2_word(rec, 1));
    case SM_REC_MSG_RECV:
        return OTF2_EvtWriter_MpiRecv(e, NULL, t, peer, comm, tag, sm_otf2_word(rec, 1));
    case SM_REC_MSG_ISEND:
        return OTF2_EvtWriter_MpiIsend(e, NULL, t, peer, comm, tag, sm_otf2_word(rec, 1),
                                       sm_otf2_word(rec, 2));
    case SM_REC_MSG_IRECV:
        return OTF2_EvtWriter_MpiIrecv(e, NULL, t, peer, comm, tag, sm_otf2_word(rec, 1),
                                       sm_otf2_word(rec, 2));
    case SM_REC_MSG_ISEND_COMPLETE:
        return OTF2_EvtWriter_MpiIsendComplete(e, NULL, t, pt);
    case SM_REC_MSG_IRECV_REQUEST:
        return OTF2_EvtWriter_MpiIrecvRequest(e, NULL, t, pt);
    case SM_REC_REQUEST_CANCELLED:
        return OTF2_EvtWriter_MpiRequestCancelled(e, NULL, t, pt);
    case SM_REC_COLL_BEGIN:
        return OTF2_EvtWriter_MpiCollectiveBegin(e, NULL, t);
    case SM_REC_COLL_END:
        return OTF2_EvtWriter_MpiCollectiveEnd(e, NULL, t, (OTF2_CollectiveOp)rec->aux, comm,
                                               sm_otf2_root(pt), sm_otf2_word(rec, 1),
                                               sm_otf2_word(rec, 2));
    case SM_REC_ICOLL_REQUEST:
        return OTF2_EvtWriter_NonBlockingCollectiveRequest(e, NULL, t, pt);
    case SM_REC_ICOLL_COMPLETE:
        return OTF2_EvtWriter_NonBlockingCollectiveComplete(
            e, NULL, t, (OTF2_CollectiveOp)rec->aux, comm, sm_otf2_root(pt),
            sm_otf2_word(rec, 1), sm_otf2_word(rec, 2), sm_otf2_word(rec, 3));
    case SM_REC_METRIC_NAMED: {
        const sm_id_maps_t *m = w->img->maps;
        uint32_t name = rec->ref < m->n_strings ? m->strings[rec->ref] : SM_INVALID_ID;
        if (name >= w->n_named_strings || w->named_metric[name] == SM_INVALID_ID)
            return OTF2_SUCCESS;
        OTF2_Type type = OTF2_TYPE_UINT64;
        OTF2_MetricValue v;
        v.unsigned_int = pt;
        w->metric_events = true;
        sm_otf2_tl_metric(w, t, w->named_metric[name], pt);
        return OTF2_EvtWriter_Metric(e, NULL, t, SM_XFER_KIND_COUNT + w->named_metric[name], 1,
                                     &type, &v);
    }
    case SM_REC_COUNTERS:
        return sm_otf2_counters_record(w, rec, t);
    case SM_REC_METRIC: {
        if (rec->ref >= SM_XFER_KIND_COUNT)
            return OTF2_SUCCESS;
        OTF2_Type type = OTF2_TYPE_UINT64;
        OTF2_MetricValue v;
        v.unsigned_int = pt;
        w->metric_events = true;
        return OTF2_EvtWriter_Metric(e, NULL, t, rec->ref, 1, &type, &v);
    }
    default:
        return OTF2_SUCCESS;
    }
}

/* Fork/join threading: fork/join, teams, locks and tasks (OTF2's Thread*
 * records, which must not be mixed with its older Omp* ones). */
static OTF2_ErrorCode sm_otf2_fork_join_record(sm_otf2_writer_t *w, const sm_record_t *rec)
{
    OTF2_EvtWriter *e = w->evt;
    OTF2_Paradigm model = sm_otf2_paradigm((uint8_t)rec->aux);
    OTF2_CommRef team = OTF2_UNDEFINED_COMM;
    uint64_t word = sm_otf2_word(rec, 0);
    switch (rec->kind) {
    case SM_REC_THREAD_TEAM_BEGIN:
    case SM_REC_THREAD_TEAM_END:
    case SM_REC_THREAD_TASK_CREATE:
    case SM_REC_THREAD_TASK_SWITCH:
    case SM_REC_THREAD_TASK_COMPLETE:
        if (!sm_otf2_comm(w, rec->ref, &team))
            return OTF2_SUCCESS; /* counted */
        break;
    default:
        break;
    }
    uint64_t t = sm_otf2_time(w, rec->time);
    uint32_t thread = (uint32_t)(word >> 32), generation = (uint32_t)word;
    switch (rec->kind) {
    case SM_REC_THREAD_FORK:
        return OTF2_EvtWriter_ThreadFork(e, NULL, t, model, rec->ref);
    case SM_REC_THREAD_JOIN:
        return OTF2_EvtWriter_ThreadJoin(e, NULL, t, model);
    case SM_REC_THREAD_TEAM_BEGIN:
        return OTF2_EvtWriter_ThreadTeamBegin(e, NULL, t, team);
    case SM_REC_THREAD_TEAM_END:
        return OTF2_EvtWriter_ThreadTeamEnd(e, NULL, t, team);
    case SM_REC_THREAD_ACQUIRE_LOCK:
        return OTF2_EvtWriter_ThreadAcquireLock(e, NULL, t, model, rec->ref, (uint32_t)word);
    case SM_REC_THREAD_RELEASE_LOCK:
        return OTF2_EvtWriter_ThreadReleaseLock(e, NULL, t, model, rec->ref, (uint32_t)word);
    case SM_REC_THREAD_TASK_CREATE:
        return OTF2_EvtWriter_ThreadTaskCreate(e, NULL, t, team, thread, generation);
    case SM_REC_THREAD_TASK_SWITCH:
        return OTF2_EvtWriter_ThreadTaskSwitch(e, NULL, t, team, thread, generation);
    case SM_REC_THREAD_TASK_COMPLETE:
        return OTF2_EvtWriter_ThreadTaskComplete(e, NULL, t, team, thread, generation);
    default:
        return OTF2_SUCCESS;
    }
}

/* A GPU activity: Enter with its correlation id (and bytes, launch
 * configuration) at its start, Leave at its end. */
static OTF2_ErrorCode sm_otf2_gpu_record(sm_otf2_writer_t *w, const sm_record_t *rec)
{
    uint64_t start = rec->time, end = sm_otf2_word(rec, 0);
    if (end < start)
        end = start;
    if (w->loc_has_time && start < w->gpu_last_end) {
        /* Overlapping work on one stream (graph branches): after the last. */
        w->gpu_overlaps++;
        uint64_t d = end - start;
        start = w->gpu_last_end;
        end = start + d;
    }
    w->gpu_last_end = end;
    uint64_t v[SM_OTF2_GPU_ATTRS];
    uint32_t n = 0;
    v[n++] = sm_otf2_word(rec, 1);
    v[n++] = sm_otf2_word(rec, 2);
    if (rec->aux == SM_GPU_KERNEL && rec->words >= 8) {
        for (unsigned k = 3; k <= 5; k++) {
            uint64_t x = sm_otf2_word(rec, k);
            v[n++] = (uint32_t)x;
            v[n++] = x >> 32;
        }
        v[n++] = sm_otf2_word(rec, 6);
        v[n++] = (uint32_t)sm_otf2_word(rec, 7);
        v[n++] = sm_otf2_word(rec, 7) >> 32;
    }
    OTF2_AttributeList *al = NULL;
    for (uint32_t k = 0; k < n; k++) {
        if (w->gpu_attr[k] == OTF2_UNDEFINED_ATTRIBUTE || (k == 0 && !v[0]) ||
            (k == 1 && rec->aux == SM_GPU_KERNEL))
            continue;
        OTF2_ErrorCode rc = OTF2_AttributeList_AddInt64(w->attrs, w->gpu_attr[k], (int64_t)v[k]);
        if (rc != OTF2_SUCCESS)
            return rc;
        al = w->attrs;
    }
    uint32_t region = sm_otf2_region(w, rec->ref);
    uint64_t ts = sm_otf2_time(w, start);
    OTF2_ErrorCode rc = OTF2_EvtWriter_Enter(w->evt, al, ts, region);
    if (rc != OTF2_SUCCESS)
        return rc;
    uint64_t te = sm_otf2_time(w, end);
    sm_timeline_span(w->timeline, ts, te, sm_tl_kind_of_gpu(rec->aux));
    return OTF2_EvtWriter_Leave(w->evt, NULL, te, region);
}

/* The samples of the location up to time `until` (ticks), as
 * CallingContextSample events of the one interrupt generator (0). */
static OTF2_ErrorCode sm_otf2_samples_until(sm_otf2_writer_t *w, uint64_t until)
{
    const sm_id_maps_t *m = w->img->maps;
    while (w->next_sample < w->n_samples && w->samples[w->next_sample].time <= until) {
        const struct sm_otf2_sample *x = &w->samples[w->next_sample++];
        uint32_t ctx = x->context < m->n_contexts ? m->contexts[x->context] : SM_INVALID_ID;
        if (ctx == SM_INVALID_ID)
            continue;
        OTF2_ErrorCode rc = OTF2_EvtWriter_CallingContextSample(
            w->evt, NULL, sm_otf2_time(w, x->time), ctx, x->depth, 0);
        if (rc != OTF2_SUCCESS)
            return rc;
    }
    return OTF2_SUCCESS;
}

static int sm_otf2_collect_sample(const sm_record_t *rec, void *arg)
{
    sm_otf2_writer_t *w = arg;
    if (rec->kind != SM_REC_CALLING_CONTEXT_SAMPLE)
        return 0;
    if (w->n_samples == w->samples_cap && SM_GROW(w->samples, w->samples_cap, 4096) != 0)
        return 1;
    w->samples[w->n_samples++] = (struct sm_otf2_sample){rec->time, rec->ref, rec->aux};
    return 0;
}

/* Buffer flushes (the spills, shown as OTF2's BufferFlush) and
 * measurement on/off. */
static OTF2_ErrorCode sm_otf2_control_record(sm_otf2_writer_t *w, const sm_record_t *rec)
{
    uint64_t t = sm_otf2_time(w, rec->time);
    if (rec->kind == SM_REC_MEASUREMENT)
        return OTF2_EvtWriter_MeasurementOnOff(w->evt, NULL, t, rec->aux ? OTF2_MEASUREMENT_ON
                                                                         : OTF2_MEASUREMENT_OFF);
    uint64_t stop_ticks = rec->time, stop;
    if (rec->words >= 1)
        memcpy(&stop_ticks, sm_record_payload(rec), sizeof stop_ticks);
    stop = sm_clock_job_ns(&w->img->clock, stop_ticks);
    if (stop < t)
        stop = t;
    if (stop > w->max_ns)
        w->max_ns = stop;
    return OTF2_EvtWriter_BufferFlush(w->evt, NULL, t, stop);
}

/* Thread create, begin and end.  The sequence number pairs a creator's
 * ThreadCreate with the child's ThreadBegin: the created location's id on
 * both sides.  Only threads with a recorded creator begin and end in OTF2:
 * a ThreadBegin must match a ThreadCreate, and the main thread (or one
 * created unseen) has none. */
static OTF2_ErrorCode sm_otf2_thread_life_record(sm_otf2_writer_t *w, const sm_record_t *rec)
{
    OTF2_CommRef threads = sm_otf2_thread_comm(w, w->img->rank);
    if (rec->kind == SM_REC_THREAD_CREATE) {
        w->thread_events = true;
        return OTF2_EvtWriter_ThreadCreate(w->evt, NULL, sm_otf2_time(w, rec->time), threads,
                                           rec->ref);
    }
    if (w->loc.creator == SM_INVALID_ID ||
        (rec->kind == SM_REC_THREAD_BEGIN && rec->ref == SM_INVALID_ID))
        return OTF2_SUCCESS;
    w->thread_events = true;
    uint64_t t = sm_otf2_time(w, rec->time);
    return rec->kind == SM_REC_THREAD_BEGIN
               ? OTF2_EvtWriter_ThreadBegin(w->evt, NULL, t, threads, w->loc.id)
               : OTF2_EvtWriter_ThreadEnd(w->evt, NULL, t, threads, w->loc.id);
}

/* sm_buffer_for_each callback: one record into the event writer.  Returns 1
 * on an OTF2 failure (the buffer layer uses -1 for its own). */
static int sm_otf2_record(const sm_record_t *rec, void *arg)
{
    sm_otf2_writer_t *w = arg;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    uint64_t t;

    if (w->next_sample < w->n_samples) {
        if (rec->kind == SM_REC_CALLING_CONTEXT_SAMPLE)
            return 0; /* placed by time, here */
        rc = sm_otf2_samples_until(w, rec->time);
        if (rc != OTF2_SUCCESS)
            return sm_otf2_ok(w, rc) ? 0 : 1;
    } else if (rec->kind == SM_REC_CALLING_CONTEXT_SAMPLE) {
        return 0;
    }

    switch (sm_record_family(rec->kind)) {
    case SM_RECORD_FAMILY_REGION: {
        OTF2_AttributeList *al = NULL;
        t = sm_otf2_time(w, rec->time);
        if (rec->aux && rec->words) {
            al = sm_otf2_attributes(w, rec, &rc);
            if (rc != OTF2_SUCCESS)
                break;
        }
        uint32_t region = sm_otf2_region(w, rec->ref);
        if (rec->kind == SM_REC_ENTER) {
            sm_nesting_enter(&w->nest, rec->ref);
            rc = OTF2_EvtWriter_Enter(w->evt, al, t, region);
            sm_timeline_enter(w->timeline, t, region < w->n_region_kinds
                                                  ? w->region_kind[region] : SM_TL_OTHER);
            break;
        }
        int64_t above = sm_nesting_leave(&w->nest, rec->ref);
        if (above < 0)
            break; /* its enter was never recorded */
        for (int64_t k = 0; k < above && rc == OTF2_SUCCESS; k++) {
            rc = OTF2_EvtWriter_Leave(w->evt, NULL, t, sm_otf2_region(w, sm_nesting_top(&w->nest)));
            sm_timeline_leave(w->timeline, t);
            sm_nesting_pop(&w->nest);
        }
        if (rc != OTF2_SUCCESS)
            break;
        sm_nesting_pop(&w->nest);
        rc = OTF2_EvtWriter_Leave(w->evt, al, t, region);
        sm_timeline_leave(w->timeline, t);
        break;
    }
    case SM_RECORD_FAMILY_CONTROL:
        rc = sm_otf2_control_record(w, rec);
        break;
    case SM_RECORD_FAMILY_THREAD_LIFE:
        rc = sm_otf2_thread_life_record(w, rec);
        break;
    case SM_RECORD_FAMILY_GPU:
        rc = sm_otf2_gpu_record(w, rec);
        break;
    case SM_RECORD_FAMILY_FORK_JOIN:
        rc = sm_otf2_fork_join_record(w, rec);
        break;
    case SM_RECORD_FAMILY_MESSAGE:
    case SM_RECORD_FAMILY_METRIC:
        rc = sm_otf2_message_record(w, rec);
        break;
    case SM_RECORD_FAMILY_SAMPLE: /* placed by time above */
    case SM_RECORD_FAMILY_NONE:   /* a kind this writer does not know: skipped */
        break;
    }
    return sm_otf2_ok(w, rc) ? 0 : 1;
}

static bool sm_otf2_bg_take(sm_otf2_writer_t *w, uint64_t *n_events);
static bool sm_otf2_bg_may_take(const sm_otf2_writer_t *w, uint32_t id);

/* Location i of the current image into w->loc. */
static bool sm_otf2_read_location(sm_otf2_writer_t *w, uint32_t i)
{
    const sm_image_t *img = w->img;
    free(w->loc.creation_path);
    w->loc.creation_path = NULL;
    if (img->location(img->ctx, i, &w->loc) != 0)
        return sm_otf2_got(w, NULL, "a location of the process cannot be read");
    return true;
}

/* The file `from` renamed into the job's archive as w->loc's ("evt" or
 * "def"). */
static bool sm_otf2_move_in(const sm_otf2_writer_t *w, const char *from, const char *ext)
{
    char to[4400];
    snprintf(to, sizeof to, "%s/%s/%" PRIu64 ".%s", w->run->output_dir, SM_OTF2_ARCHIVE_NAME,
             sm_otf2_location_ref(w->img->rank, w->loc.id), ext);
    return rename(from, to) == 0;
}

/* w->loc's file ("evt" or "def"), written in the archive in folder `from`,
 * into the job's. */
static bool sm_otf2_move_file(sm_otf2_writer_t *w, const char *from, const char *ext)
{
    char a[4400];
    snprintf(a, sizeof a, "%s/%s/%" PRIu64 ".%s", from, SM_OTF2_ARCHIVE_NAME,
             sm_otf2_location_ref(w->img->rank, w->loc.id), ext);
    return sm_otf2_got(w, sm_otf2_move_in(w, a, ext) ? w : NULL,
                       "cannot move a file into the archive");
}

/* An encoder's location i: its empty local definition file too, made in
 * its own archive (the job's has the same definition chunk size) and moved,
 * so that the thread that ends the run does not create thousands of them
 * one after the other. */
static bool sm_otf2_encoder_defs(sm_otf2_writer_t *w, uint32_t i)
{
    OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(
        w->archive, sm_otf2_location_ref(w->img->rank, w->loc.id));
    w->writer_open = d != NULL;
    if (!sm_otf2_got(w, d, "cannot create a definition writer") ||
        !sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d)))
        return false;
    w->writer_open = false;
    if (!sm_otf2_move_file(w, w->stage, "def"))
        return false;
    w->def_made[i] = 1;
    return true;
}

/* Location i (w->loc) encoded: its events; its event count in *n_events. */
static bool sm_otf2_encode_location(sm_otf2_writer_t *w, uint32_t i, uint64_t *n_events)
{
    const sm_image_t *img = w->img;
    w->evt = OTF2_Archive_GetEvtWriter(w->archive, sm_otf2_location_ref(img->rank, w->loc.id));
    w->writer_open = w->evt != NULL;
    if (!sm_otf2_got(w, w->evt, "cannot create an event writer"))
        return false;
    w->loc_has_time = false;
    w->gpu_last_end = 0;
    w->n_samples = w->next_sample = 0;
    sm_nesting_reset(&w->nest);
    sm_timeline_begin(w->timeline, w->loc.id, w->loc.type, w->loc.name);
    int rc = 0;
    if (w->n_contexts && img->maps->n_contexts) {
        rc = img->for_each(img->ctx, i, sm_otf2_collect_sample, w);
        if (rc > 0)
            return sm_otf2_got(w, NULL, "out of memory reading the call-stack samples");
    }
    if (rc == 0)
        rc = img->for_each(img->ctx, i, sm_otf2_record, w);
    if (rc == 0 && !sm_otf2_ok(w, sm_otf2_samples_until(w, UINT64_MAX)))
        return false;
    if (rc > 0)
        return false; /* OTF2 failure, already noted */
    /* Left open by a leave that was never recorded (nesting.h): left at the
     * location's last time. */
    for (; sm_nesting_top(&w->nest) != UINT32_MAX; sm_nesting_pop(&w->nest)) {
        w->nest.closed++;
        if (!sm_otf2_ok(w, OTF2_EvtWriter_Leave(w->evt, NULL, w->last_ns,
                                                sm_otf2_region(w, sm_nesting_top(&w->nest)))))
            return false;
        sm_timeline_leave(w->timeline, w->last_ns);
    }
    if (rc < 0 && w->spill_failures++ == 0) {
        /* The rest of the archive is still worth having: go on, report later. */
        w->spill_failure_index = i;
        snprintf(w->first_spill_failure, sizeof w->first_spill_failure,
                 "location %" PRIu32 " (%s) of rank %" PRIu32, w->loc.id, w->loc.name, img->rank);
    }
    sm_timeline_end(w->timeline);
    if (!sm_otf2_ok(w, OTF2_EvtWriter_GetNumberOfEvents(w->evt, n_events)))
        return false;
    if (!sm_otf2_ok(w, OTF2_Archive_CloseEvtWriter(w->archive, w->evt)))
        return false;
    w->evt = NULL;
    w->writer_open = false;
    return !w->stage || (sm_otf2_move_file(w, w->stage, "evt") &&
                         (!w->def_made || sm_otf2_encoder_defs(w, i)));
}

/* Location i of the current image: its events; its event count in *n_events. */
static bool sm_otf2_write_location_events(sm_otf2_writer_t *w, uint32_t i, uint64_t *n_events)
{
    if (!sm_otf2_read_location(w, i))
        return false;
    if (sm_otf2_bg_take(w, n_events))
        return true; /* encoded during the run */
    return sm_otf2_encode_location(w, i, n_events);
}

/* ---------------------------------------------------------------- several encoders */

/* SYSMEASURE_OTF2_BACKGROUND=check writes its second archive with one
 * encoder: the tests compare the two. */
static bool sm_otf2_one_encoder;

/* The end of the run with more than one CPU to use (sm_cpus_end_threads):
 * the program's threads are encoded by that many threads at once, each with
 * an event writer of its own in an archive of its own (w->stage).  While
 * the others start, the thread that ends the run takes, in location order,
 * what it writes alone: locations staged during the run (only moved, or
 * written here when that fails), GPU streams (sorted on reading) and
 * metric sources; then it is one of the encoders.  Each keeps its own
 * counts and timeline, added to the writer's at the end in location order,
 * so that the archive and timeline.json are those of one encoder. */
typedef struct sm_otf2_encoders {
    sm_otf2_writer_t *w;   /* the thread that ends the run */
    const uint32_t *todo;  /* the locations left to encode */
    uint32_t n_todo;
    uint32_t next;         /* atomic: the next of todo to take */
    int stop;              /* atomic: an encoder failed */
    uint64_t *n_events;
    sm_otf2_slot_t *slots; /* per location */
} sm_otf2_encoders_t;

typedef struct sm_otf2_encoder {
    sm_otf2_encoders_t *all;
    sm_otf2_writer_t w;
    pthread_t thread;
    char dir[4200]; /* its archive's folder (w.stage) */
} sm_otf2_encoder_t;

/* Moves what the location added to the timeline since `from` into its slot. */
static void sm_otf2_keep_lane(sm_otf2_writer_t *w, size_t from, sm_otf2_slot_t *s)
{
    sm_timeline_t *tl = w->timeline;
    if (!tl)
        return;
    if (tl->out.oom) {
        s->oom = true;
    } else if (tl->out.len > from) {
        sm_put_bytes(&s->lane, tl->out.p + from, tl->out.len - from);
        s->oom |= s->lane.oom;
    }
    tl->out.len = from;
}

static void sm_otf2_encode_some(sm_otf2_writer_t *w, sm_otf2_encoders_t *a)
{
    while (!__atomic_load_n(&a->stop, __ATOMIC_RELAXED)) {
        uint32_t k = __atomic_fetch_add(&a->next, 1, __ATOMIC_RELAXED);
        if (k >= a->n_todo)
            break;
        uint32_t i = a->todo[k];
        size_t from = w->timeline ? w->timeline->out.len : 0;
        w->slot = &a->slots[i];
        bool ok = sm_otf2_read_location(w, i) && sm_otf2_encode_location(w, i, &a->n_events[i]);
        sm_otf2_keep_lane(w, from, w->slot);
        w->slot = NULL;
        if (!ok) {
            __atomic_store_n(&a->stop, 1, __ATOMIC_RELAXED);
            break;
        }
    }
}

static void *sm_otf2_encoder_main(void *arg)
{
    sm_otf2_encoder_t *e = arg;
    sm_cpus_bind_end();
    sm_otf2_encode_some(&e->w, e->all);
    return NULL;
}

static int sm_otf2_remove_entry(const char *path, const struct stat *st, int type,
                                struct FTW *ftw);

/* A fresh folder dir (what a killed run left there removed). */
static bool sm_otf2_fresh_dir(const char *dir)
{
    if (access(dir, F_OK) == 0)
        nftw(dir, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return sm_mkdir_p(dir) == 0;
}

/* An archive in folder dir written by one thread, whose files are moved into
 * the job's: the staging archive of the run's encoding, and each extra
 * encoder's at the end.  *archive: the archive, or NULL; false when it or
 * one of its settings failed (it may be open then). */
static bool sm_otf2_open_staging(OTF2_Archive **archive, const char *dir, uint64_t def_chunk,
                                 const OTF2_MemoryCallbacks *memory)
{
    static const OTF2_FlushCallbacks flush = {sm_otf2_pre_flush, NULL};
    OTF2_Archive *a = OTF2_Archive_Open(dir, SM_OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
                                        SM_OTF2_EVT_CHUNK, def_chunk, OTF2_SUBSTRATE_POSIX,
                                        OTF2_COMPRESSION_NONE);
    *archive = a;
    return a && OTF2_Archive_SetFlushCallbacks(a, &flush, NULL) == OTF2_SUCCESS &&
           OTF2_Archive_SetMemoryCallbacks(a, memory, NULL) == OTF2_SUCCESS &&
           OTF2_Archive_SetSerialCollectiveCallbacks(a) == OTF2_SUCCESS &&
           OTF2_Archive_OpenEvtFiles(a) == OTF2_SUCCESS;
}

/* Encoder k's archive, in the spill folder: event files only, of the
 * job's chunk size, moved into the job's archive as they close. */
static bool sm_otf2_encoder_archive(sm_otf2_encoder_t *e, int k)
{
    static const OTF2_MemoryCallbacks memory = {sm_otf2_allocate, sm_otf2_free_all};
    sm_otf2_writer_t *x = &e->w;
    char spill[4096], traces[4400];
    if (sm_buffers_spill_dir(spill, sizeof spill) != 0 ||
        snprintf(e->dir, sizeof e->dir, "%s/otf2-end-%ld-%d", spill, (long)getpid(), k) >=
            (int)sizeof e->dir)
        return false;
    snprintf(traces, sizeof traces, "%s/%s", x->run->output_dir, SM_OTF2_ARCHIVE_NAME);
    if (!sm_otf2_fresh_dir(e->dir) || (mkdir(traces, 0777) != 0 && errno != EEXIST))
        return false;
    x->stage = e->dir;
    return sm_otf2_open_staging(&x->archive, e->dir, x->def_chunk, &memory) &&
           (!x->def_made || OTF2_Archive_OpenDefFiles(x->archive) == OTF2_SUCCESS);
}

static void sm_otf2_encoder_archive_close(sm_otf2_encoder_t *e)
{
    sm_otf2_writer_t *x = &e->w;
    /* A failed writer's buffers may be broken (see writer_open): left open. */
    if (x->archive && !x->writer_open) {
        OTF2_Archive_CloseEvtFiles(x->archive);
        if (x->def_made)
            OTF2_Archive_CloseDefFiles(x->archive);
        OTF2_Archive_Close(x->archive);
    }
    x->archive = NULL;
    if (x->stage)
        nftw(e->dir, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Encoder k's writer: the shared parts of w, its own archive and
 * per-location state.  False: this encoder is not used. */
static bool sm_otf2_encoder_init(sm_otf2_encoder_t *e, sm_otf2_encoders_t *a, int k)
{
    const sm_otf2_writer_t *w = a->w;
    sm_otf2_writer_t *x = &e->w;
    memset(x, 0, sizeof *x);
    x->run = w->run;
    x->job = w->job;
    x->n_ranks = w->n_ranks;
    x->n_comms = w->n_comms;
    x->mpi_comms = w->mpi_comms;
    x->team_comms = w->team_comms;
    x->img = w->img;
    x->named_metric = w->named_metric;
    x->n_named_strings = w->n_named_strings;
    x->counters = w->counters;
    x->n_counters = w->n_counters;
    x->failed_code = OTF2_SUCCESS;
    memcpy(x->gpu_attr, w->gpu_attr, sizeof x->gpu_attr);
    x->n_contexts = w->n_contexts;
    x->region_kind = w->region_kind;
    x->n_region_kinds = w->n_region_kinds;
    x->def_chunk = w->def_chunk;
    x->def_made = w->def_made;
    e->all = a;
    if (!sm_otf2_encoder_archive(e, k) || !(x->attrs = OTF2_AttributeList_New()) ||
        (w->timeline && !(x->timeline = sm_timeline_new()))) {
        if (x->attrs)
            OTF2_AttributeList_Delete(x->attrs);
        sm_otf2_encoder_archive_close(e);
        return false;
    }
    return true;
}

/* An encoder's counts and failures into w's; its archive closed, its
 * memory freed. */
static void sm_otf2_encoder_done(sm_otf2_writer_t *w, sm_otf2_encoder_t *e)
{
    sm_otf2_writer_t *x = &e->w;
    sm_otf2_encoder_archive_close(e);
    w->unknown_comm += x->unknown_comm;
    w->clamps += x->clamps;
    w->skipped_attrs += x->skipped_attrs;
    w->gpu_overlaps += x->gpu_overlaps;
    w->thread_events |= x->thread_events;
    w->metric_events |= x->metric_events;
    if (x->any_time) {
        if (!w->any_time || x->min_ns < w->min_ns)
            w->min_ns = x->min_ns;
        if (!w->any_time || x->max_ns > w->max_ns)
            w->max_ns = x->max_ns;
        w->any_time = true;
    }
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason) {
        w->failed_code = x->failed_code;
        w->failed_reason = x->failed_reason;
    }
    w->writer_open |= x->writer_open; /* (then the archive is left open) */
    if (x->spill_failures &&
        (!w->spill_failures || x->spill_failure_index < w->spill_failure_index)) {
        w->spill_failure_index = x->spill_failure_index;
        memcpy(w->first_spill_failure, x->first_spill_failure, sizeof w->first_spill_failure);
    }
    w->spill_failures += x->spill_failures;
    w->nest.dropped += x->nest.dropped;
    w->nest.closed += x->nest.closed;
    sm_nesting_free(&x->nest);
    OTF2_AttributeList_Delete(x->attrs);
    free(x->loc.creation_path);
    free(x->samples);
    sm_timeline_free(x->timeline);
}

static bool sm_otf2_encode_parallel(sm_otf2_writer_t *w, uint64_t *n_events, int threads)
{
    const sm_image_t *img = w->img;
    uint32_t n = img->n_locations;
    uint32_t *todo = malloc(sizeof *todo * n);
    sm_otf2_slot_t *slots = calloc(n, sizeof *slots);
    sm_otf2_encoder_t *enc = calloc((size_t)threads, sizeof *enc);
    sm_otf2_encoders_t a = {.w = w, .todo = todo, .n_events = n_events, .slots = slots};
    free(w->def_made);
    w->def_made = calloc(n ? n : 1, 1); /* NULL (out of memory): the defs as before */
    bool ok = sm_otf2_got(w, todo && slots && enc ? todo : NULL, strerror(ENOMEM));

    /* The threads' locations not staged during the run go to the encoders
     * (this thread among them), which start at once; meanwhile this thread
     * takes, in location order, what it writes alone. */
    uint32_t *alone = malloc(sizeof *alone * (n ? n : 1)), n_alone = 0, n_end = 0;
    ok = ok && sm_otf2_got(w, alone, strerror(ENOMEM));
    for (uint32_t i = 0; ok && i < n; i++) {
        if (!(ok = sm_otf2_read_location(w, i)))
            break;
        if (w->loc.type == SM_LOCATION_CPU_THREAD && !sm_otf2_bg_may_take(w, w->loc.id))
            todo[a.n_todo++] = i;
        else
            alone[n_alone++] = i;
    }
    int started = 0;
    for (int k = 1; ok && k < threads && (uint32_t)k < a.n_todo; k++) {
        if (!sm_otf2_encoder_init(&enc[started], &a, k))
            break;
        if (sm_internal_thread_create(&enc[started].thread, 0, sm_otf2_encoder_main,
                                      &enc[started]) != 0) {
            sm_otf2_encoder_done(w, &enc[started]);
            break;
        }
        started++;
    }
    for (uint32_t j = 0; ok && j < n_alone; j++) {
        uint32_t i = alone[j];
        if (!(ok = sm_otf2_read_location(w, i)))
            break;
        size_t from = w->timeline ? w->timeline->out.len : 0;
        w->slot = &slots[i];
        if (!sm_otf2_bg_take(w, &n_events[i])) { /* (else: staged, moved) */
            ok = sm_otf2_encode_location(w, i, &n_events[i]);
            n_end++;
        }
        sm_otf2_keep_lane(w, from, &slots[i]);
        w->slot = NULL;
    }
    if (ok) {
        sm_info(2, "OTF2: %" PRIu32 " of %" PRIu32 " locations encoded at the end by %d thread%s",
                a.n_todo + n_end, n, started + 1, started ? "s" : "");
        sm_otf2_encode_some(w, &a);
    } else {
        __atomic_store_n(&a.stop, 1, __ATOMIC_RELAXED);
    }
    free(alone);
    for (int k = 0; k < started; k++) {
        pthread_join(enc[k].thread, NULL);
        sm_otf2_encoder_done(w, &enc[k]);
    }
    ok = ok && !__atomic_load_n(&a.stop, __ATOMIC_RELAXED) &&
         a.next >= a.n_todo && w->failed_code == OTF2_SUCCESS && !w->failed_reason;

    /* The lanes and metric samples, in location order. */
    for (uint32_t i = 0; slots && i < n; i++) {
        sm_otf2_slot_t *s = &slots[i];
        if (w->timeline) {
            if (s->oom)
                w->timeline->out.oom = true; /* no timeline rather than a wrong one */
            sm_put_bytes(&w->timeline->out, s->lane.p, s->lane.len);
            for (uint64_t j = 0; j < s->n_metrics; j++)
                sm_timeline_metric(w->timeline, s->metrics[j].ns, s->metrics[j].id,
                                   s->metrics[j].value);
        }
        free(s->lane.p);
        free(s->metrics);
    }
    free(slots);
    free(todo);
    free(enc);
    return ok;
}

/* ---------------------------------------------------------------- what rank 0 learns */

/* One location as the global definitions need it. */
typedef struct sm_otf2_loc_info {
    uint32_t id;
    uint32_t type;     /* sm_location_type_t */
    uint64_t n_events;
    uint32_t creator;  /* location id in the same process, or SM_INVALID_ID */
    char name[64];
    char *creation_path; /* "a > b", region names; NULL when no creator */
    uint32_t has_device; /* a GPU stream, of this device */
    sm_gpu_device_def_t device;
} sm_otf2_loc_info_t;

/* One process as the global definitions need it. */
typedef struct sm_otf2_proc_info {
    const uint8_t *timeline; /* its timeline bins (in the gathered bytes) */
    uint64_t timeline_len;
    uint64_t run_start_ns, run_end_ns; /* the run in this process */
    uint32_t n_locations;
    uint8_t any_time, thread_events, metric_events, any_gpu;
    uint64_t min_ns, max_ns;
    sm_otf2_loc_info_t *locations;
} sm_otf2_proc_info_t;

/* What the global definitions need of one image (its time range, flags set
 * while its events were written, and its locations with their event
 * counts): a header, then each location. */
static void *sm_otf2_proc_blob(sm_otf2_writer_t *w, const uint64_t *n_events, uint64_t *len)
{
    const sm_image_t *img = w->img;
    sm_wbuf_t b = {0};
    sm_otf2_proc_info_t h = {
        .n_locations = img->n_locations,
        .any_time = w->any_time,
        .thread_events = w->thread_events,
        .metric_events = w->metric_events,
        .min_ns = w->min_ns,
        .max_ns = w->max_ns,
        .run_start_ns = sm_clock_job_ns(&img->clock, img->start_ticks),
        .run_end_ns = sm_clock_job_ns(&img->clock, img->end_ticks),
    };
    if (!w->any_time) {
        h.min_ns = sm_clock_job_ns(&img->clock, img->start_ticks);
        h.max_ns = sm_clock_job_ns(&img->clock, img->end_ticks);
    }
    sm_put_bytes(&b, &h, sizeof h);
    for (uint32_t i = 0; i < img->n_locations; i++) {
        sm_otf2_loc_info_t li;
        sm_image_location_t il;
        memset(&li, 0, sizeof li);
        if (img->location(img->ctx, i, &il) != 0) {
            b.oom = true;
            break;
        }
        li.id = il.id;
        li.type = il.type;
        li.n_events = n_events[i];
        li.creator = il.creator;
        memcpy(li.name, il.name, sizeof li.name);
        li.has_device = il.has_device;
        li.device = il.device;
        uint32_t plen = il.creation_path ? (uint32_t)strlen(il.creation_path) : 0;
        h.any_gpu |= il.type == SM_LOCATION_GPU_STREAM;
        sm_put_bytes(&b, &li, sizeof li);
        sm_put_bytes(&b, &plen, sizeof plen);
        sm_put_bytes(&b, il.creation_path ? il.creation_path : "", plen);
        free(il.creation_path);
    }
    /* Then this image's timeline bins (sm_timeline_t's out). */
    sm_timeline_end_process(w->timeline);
    uint64_t tl_len = w->timeline && !w->timeline->out.oom ? w->timeline->out.len : 0;
    sm_put_u64(&b, tl_len);
    if (tl_len)
        sm_put_bytes(&b, w->timeline->out.p, tl_len);
    if (!b.oom)
        memcpy(b.p, &h, sizeof h); /* any_gpu is known now */
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

static void sm_otf2_procs_free(sm_otf2_proc_info_t *procs, uint32_t n)
{
    for (uint32_t r = 0; procs && r < n; r++) {
        for (uint32_t i = 0; procs[r].locations && i < procs[r].n_locations; i++)
            free(procs[r].locations[i].creation_path);
        free(procs[r].locations);
    }
    free(procs);
}

/* Rank 0: every process's part, by rank.  NULL on malformed input. */
static sm_otf2_proc_info_t *sm_otf2_procs_parse(const void *all, uint64_t len, uint32_t n_ranks)
{
    sm_otf2_proc_info_t *procs = calloc(n_ranks, sizeof *procs);
    const uint8_t *p = all, *end = p + len, *blob;
    uint32_t rank;
    uint64_t blen;
    bool bad = !procs;
    while (!bad && (p = sm_tree_next(p, end, &rank, &blob, &blen)) != NULL) {
        const uint8_t *q = blob, *qend = blob + blen;
        sm_otf2_proc_info_t h;
        if (rank >= n_ranks || blen < sizeof h || procs[rank].locations) {
            bad = true;
            break;
        }
        memcpy(&h, q, sizeof h);
        q += sizeof h;
        h.locations = calloc(h.n_locations ? h.n_locations : 1, sizeof *h.locations);
        if (!h.locations || h.n_locations > blen / sizeof(sm_otf2_loc_info_t)) {
            free(h.locations);
            bad = true;
            break;
        }
        procs[rank] = h;
        procs[rank].timeline = NULL; /* (the sender's pointer) */
        procs[rank].timeline_len = 0;
        for (uint32_t i = 0; i < h.n_locations && !bad; i++) {
            sm_otf2_loc_info_t *li = &procs[rank].locations[i];
            uint32_t plen;
            if ((uint64_t)(qend - q) < sizeof *li + sizeof plen) {
                bad = true;
                break;
            }
            memcpy(li, q, sizeof *li);
            q += sizeof *li;
            li->name[sizeof li->name - 1] = '\0';
            li->creation_path = NULL;
            memcpy(&plen, q, sizeof plen);
            q += sizeof plen;
            if ((uint64_t)(qend - q) < plen) {
                bad = true;
                break;
            }
            if (li->creator != SM_INVALID_ID)
                li->creation_path = strndup((const char *)q, plen);
            q += plen;
        }
        uint64_t tl_len = 0;
        if (!bad && (uint64_t)(qend - q) >= sizeof tl_len) {
            memcpy(&tl_len, q, sizeof tl_len);
            q += sizeof tl_len;
            if (tl_len <= (uint64_t)(qend - q)) {
                procs[rank].timeline = tl_len ? q : NULL;
                procs[rank].timeline_len = tl_len;
            }
        }
    }
    if (bad) {
        sm_otf2_procs_free(procs, n_ranks);
        return NULL;
    }
    return procs;
}

/* ---------------------------------------------------------------- definitions */

static OTF2_Paradigm sm_otf2_paradigm(uint8_t p)
{
    switch (p) {
    case SM_PARADIGM_USER:
        return OTF2_PARADIGM_USER;
    case SM_PARADIGM_MEASUREMENT:
        return OTF2_PARADIGM_MEASUREMENT_SYSTEM;
    case SM_PARADIGM_PTHREAD:
        return OTF2_PARADIGM_PTHREAD;
    case SM_PARADIGM_MPI:
        return OTF2_PARADIGM_MPI;
    case SM_PARADIGM_OPENMP:
        return OTF2_PARADIGM_OPENMP;
#ifdef SM_OTF2_HAVE_KOKKOS_HIP
    case SM_PARADIGM_KOKKOS:
        return OTF2_PARADIGM_KOKKOS;
    case SM_PARADIGM_HIP:
        return OTF2_PARADIGM_HIP;
#else
    case SM_PARADIGM_KOKKOS:
    case SM_PARADIGM_HIP:
        return OTF2_PARADIGM_USER;
#endif
    case SM_PARADIGM_CUDA:
        return OTF2_PARADIGM_CUDA;
    case SM_PARADIGM_COMPILER:
        return OTF2_PARADIGM_COMPILER;
    case SM_PARADIGM_SAMPLING:
        return OTF2_PARADIGM_SAMPLING;
    case SM_PARADIGM_PYTHON: /* OTF2 has no Python paradigm */
        return OTF2_PARADIGM_USER;
    default:
        return OTF2_PARADIGM_UNKNOWN;
    }
}

static OTF2_RegionRole sm_otf2_role(uint8_t r)
{
    switch (r) {
    case SM_ROLE_FUNCTION:
        return OTF2_REGION_ROLE_FUNCTION;
    case SM_ROLE_CODE:
        return OTF2_REGION_ROLE_CODE;
    case SM_ROLE_WRAPPER:
        return OTF2_REGION_ROLE_WRAPPER;
    case SM_ROLE_ARTIFICIAL:
        return OTF2_REGION_ROLE_ARTIFICIAL;
    case SM_ROLE_PARALLEL:
        return OTF2_REGION_ROLE_PARALLEL;
    case SM_ROLE_BARRIER:
        return OTF2_REGION_ROLE_BARRIER;
    case SM_ROLE_TASK:
        return OTF2_REGION_ROLE_TASK;
    case SM_ROLE_LOOP:
        return OTF2_REGION_ROLE_LOOP;
    case SM_ROLE_COLLECTIVE:
        return OTF2_REGION_ROLE_COLL_ALL2ALL;
    case SM_ROLE_POINT2POINT:
        return OTF2_REGION_ROLE_POINT2POINT;
    case SM_ROLE_DATA_TRANSFER:
        return OTF2_REGION_ROLE_DATA_TRANSFER;
    default:
        return OTF2_REGION_ROLE_UNKNOWN;
    }
}

/* Name and class of the parallel paradigms; false for those without a
 * paradigm class (user, measurement system), which get no Paradigm record. */
static bool sm_otf2_paradigm_info(OTF2_Paradigm p, const char **name, OTF2_ParadigmClass *cls)
{
    switch (p) {
    case OTF2_PARADIGM_PTHREAD:
        *name = "Pthread";
        *cls = OTF2_PARADIGM_CLASS_THREAD_CREATE_WAIT;
        return true;
    case OTF2_PARADIGM_MPI:
        *name = "MPI";
        *cls = OTF2_PARADIGM_CLASS_PROCESS;
        return true;
    case OTF2_PARADIGM_OPENMP:
        *name = "OpenMP";
        *cls = OTF2_PARADIGM_CLASS_THREAD_FORK_JOIN;
        return true;
    case OTF2_PARADIGM_CUDA:
        *name = "CUDA";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
#ifdef SM_OTF2_HAVE_KOKKOS_HIP
    case OTF2_PARADIGM_HIP:
        *name = "HIP";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
    case OTF2_PARADIGM_KOKKOS:
        *name = "Kokkos";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
#endif
    default:
        return false;
    }
}

/* A string beyond the interned ones, written right before its first use. */
static bool sm_otf2_extra_string(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, const char *s,
                                 OTF2_StringRef *ref)
{
    *ref = w->next_string++;
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteString(g, *ref, s ? s : ""));
}

static bool sm_otf2_string_property(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                    OTF2_LocationRef location, const char *name, const char *value)
{
    OTF2_StringRef name_ref, value_ref;
    OTF2_AttributeValue v;
    if (!sm_otf2_extra_string(w, g, name, &name_ref) ||
        !sm_otf2_extra_string(w, g, value, &value_ref))
        return false;
    v.stringRef = value_ref;
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationProperty(g, location, name_ref,
                                                                    OTF2_TYPE_STRING, v));
}

static OTF2_LocationType sm_otf2_location_type(sm_location_type_t t)
{
    switch (t) {
    case SM_LOCATION_CPU_THREAD:
        return OTF2_LOCATION_TYPE_CPU_THREAD;
    case SM_LOCATION_GPU_STREAM:
        return OTF2_LOCATION_TYPE_ACCELERATOR_STREAM; /* OTF2 3.0's name for "GPU" */
    case SM_LOCATION_METRIC:
        return OTF2_LOCATION_TYPE_METRIC;
    default:
        return OTF2_LOCATION_TYPE_UNKNOWN;
    }
}

/* ---------------------------------------------------------------- global definitions */

/* Creator name and creation path of threads created by another thread. */
static bool sm_otf2_lineage(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, uint32_t rank,
                            const sm_otf2_proc_info_t *proc, const sm_otf2_loc_info_t *li)
{
    char name[96];
    const sm_otf2_loc_info_t *creator = NULL;
    for (uint32_t i = 0; i < proc->n_locations && !creator; i++)
        if (proc->locations[i].id == li->creator)
            creator = &proc->locations[i];
    if (creator)
        snprintf(name, sizeof name, "%s", creator->name);
    else
        snprintf(name, sizeof name, "location %" PRIu32, li->creator);
    OTF2_LocationRef ref = sm_otf2_location_ref(rank, li->id);
    return sm_otf2_string_property(w, g, ref, "created by", name) &&
           sm_otf2_string_property(w, g, ref, "creation path",
                                   li->creation_path ? li->creation_path : "");
}

/* Group ids, dense and in the order written (readers want them so): the
 * MPI locations group when there are MPI communicators, the OpenMP
 * locations group when there are teams, one group per communicator (MPI's
 * and OpenMP teams), then the pthread locations group and one group per
 * process for its thread contingent. */
#define SM_OTF2_GROUP_MPI_LOCATIONS 0
static uint32_t sm_otf2_omp_locations_group(const sm_otf2_writer_t *w)
{
    return w->mpi_comms ? 1 : 0;
}

static uint32_t sm_otf2_comm_group(const sm_otf2_writer_t *w, uint32_t comm)
{
    return sm_otf2_omp_locations_group(w) + (w->team_comms ? 1 : 0) + comm;
}

/* OTF2 allows one locations group per paradigm: for pthread it lists the
 * CPU threads of every rank, and each rank's contingent is a group of
 * indexes into it. */
static uint32_t sm_otf2_thread_locations_group(const sm_otf2_writer_t *w)
{
    return sm_otf2_comm_group(w, w->n_comms);
}

static uint32_t sm_otf2_thread_members_group(const sm_otf2_writer_t *w, uint32_t rank)
{
    return sm_otf2_thread_locations_group(w) + 1 + rank;
}

/* The CPU threads of every rank, in rank and location order: what the
 * OpenMP and pthread locations groups list. */
static uint64_t *sm_otf2_cpu_threads(const sm_otf2_proc_info_t *procs, uint32_t n_ranks,
                                     uint32_t *n)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        total += procs[r].n_locations;
    uint64_t *all = malloc(sizeof *all * (total ? total : 1));
    *n = 0;
    for (uint32_t r = 0; all && r < n_ranks; r++)
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].type == SM_LOCATION_CPU_THREAD)
                all[(*n)++] = sm_otf2_location_ref(r, procs[r].locations[i].id);
    return all;
}

/* An OpenMP team: a group of indexes into the OpenMP locations group (its
 * threads by thread number), and a communicator whose parent is the team
 * of the thread that forked it. */
static bool sm_otf2_team_comm(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, uint32_t c,
                              const sm_otf2_proc_info_t *procs, const uint32_t *first_thread)
{
    const sm_comm_def_t *def = sm_defset_comm_get(w->job->defs, c);
    uint32_t rank = def->key.leader;
    uint32_t size = def->members && rank < w->n_ranks ? def->size : 0;
    uint64_t *m = malloc(sizeof *m * (size ? size : 1));
    if (!sm_otf2_got(w, m, strerror(ENOMEM)))
        return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < size; i++) {
        /* The member's index among its rank's CPU threads. */
        uint32_t at = first_thread[rank];
        bool found = false;
        for (uint32_t j = 0; j < procs[rank].n_locations && !found; j++) {
            const sm_otf2_loc_info_t *li = &procs[rank].locations[j];
            if (li->type != SM_LOCATION_CPU_THREAD)
                continue;
            if (li->id == def->members[i])
                found = true;
            else
                at++;
        }
        if (found) /* a thread number the runtime never filled is left out */
            m[k++] = at;
    }
    const char *cname = sm_defset_string_get(w->job->defs, def->name);
    OTF2_StringRef gs;
    OTF2_CommRef parent = def->parent < w->n_comms ? def->parent : OTF2_UNDEFINED_COMM;
    bool ok = sm_otf2_extra_string(w, g, cname ? cname : "OpenMP thread team", &gs) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                                g, sm_otf2_comm_group(w, c), gs, OTF2_GROUP_TYPE_COMM_GROUP,
                                OTF2_PARADIGM_OPENMP, OTF2_GROUP_FLAG_NONE, k, m)) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, c, gs, sm_otf2_comm_group(w, c),
                                                           parent, OTF2_COMM_FLAG_NONE));
    free(m);
    return ok;
}

/* MPI: rank r is its process's first location; each communicator is a group
 * of ranks (world ranks index the locations group).  OpenMP: the CPU threads
 * of all ranks are the locations group; each team indexes into it. */
static bool sm_otf2_comms(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                          const sm_otf2_proc_info_t *procs)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = w->n_ranks, n_threads = 0;
    uint64_t *members = malloc(sizeof *members * (n ? n : 1));
    uint64_t *threads = w->team_comms ? sm_otf2_cpu_threads(procs, n, &n_threads) : NULL;
    uint32_t *first_thread = malloc(sizeof *first_thread * (n ? n : 1));
    OTF2_StringRef s;
    bool ok = sm_otf2_got(w, members && first_thread && (threads || !w->team_comms) ? members
                                                                                     : NULL,
                          strerror(ENOMEM));
    for (uint32_t r = 0, at = 0; ok && r < n; r++) {
        members[r] = sm_otf2_location_ref(r, 0);
        first_thread[r] = at;
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            at += procs[r].locations[i].type == SM_LOCATION_CPU_THREAD;
    }
    if (ok && w->mpi_comms)
        ok = sm_otf2_extra_string(w, g, "MPI ranks", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, SM_OTF2_GROUP_MPI_LOCATIONS, s, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                               OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, members));
    if (ok && w->team_comms)
        ok = sm_otf2_extra_string(w, g, "OpenMP threads", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_omp_locations_group(w), s,
                               OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_OPENMP,
                               OTF2_GROUP_FLAG_NONE, n_threads, threads));
    for (uint32_t c = 0; ok && c < w->n_comms; c++) {
        const sm_comm_def_t *def = sm_defset_comm_get(d, c);
        if (sm_comm_key_is_team(def->key)) {
            ok = sm_otf2_team_comm(w, g, c, procs, first_thread);
            continue;
        }
        char name[96];
        OTF2_GroupType type = OTF2_GROUP_TYPE_COMM_GROUP;
        uint32_t size = def->size;
        uint64_t *m = NULL;
        if (def->key.leader == SM_COMM_LEADER_SELF) {
            type = OTF2_GROUP_TYPE_COMM_SELF;
            size = 0;
        } else {
            if (!def->members)
                size = n; /* MPI_COMM_WORLD */
            m = malloc(sizeof *m * (size ? size : 1));
            if (!sm_otf2_got(w, m, strerror(ENOMEM)))
                break;
            for (uint32_t i = 0; i < size; i++)
                m[i] = def->members ? def->members[i] : i;
        }
        const char *cname = sm_defset_string_get(d, def->name);
        if (!cname) {
            snprintf(name, sizeof name, "communicator %" PRIu32 ".%" PRIu32, def->key.leader,
                     def->key.seq);
            cname = name;
        }
        OTF2_StringRef gs;
        ok = sm_otf2_extra_string(w, g, cname, &gs) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(g, sm_otf2_comm_group(w, c), gs, type,
                                                           OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                                           size, m));
        free(m);
        OTF2_CommRef parent = def->parent < w->n_comms ? def->parent : OTF2_UNDEFINED_COMM;
        ok = ok && sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, c, gs, sm_otf2_comm_group(w, c),
                                                                parent, OTF2_COMM_FLAG_NONE));
    }
    free(members);
    free(threads);
    free(first_thread);
    return ok;
}

/* Each process's thread contingent (ThreadCreate/Begin/End): a pthread comm
 * over its CPU-thread locations; sequence numbers are location ids. */
static bool sm_otf2_thread_contingents(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                       const sm_otf2_proc_info_t *procs)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++)
        total += procs[r].n_locations;
    uint32_t n = 0;
    uint64_t *all = sm_otf2_cpu_threads(procs, w->n_ranks, &n);
    uint64_t *index = malloc(sizeof *index * (total ? total : 1));
    OTF2_StringRef s;
    bool ok = sm_otf2_got(w, all && index ? all : NULL, strerror(ENOMEM));
    ok = ok && sm_otf2_extra_string(w, g, "pthread locations", &s) &&
         sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                           g, sm_otf2_thread_locations_group(w), s,
                           OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_PTHREAD,
                           OTF2_GROUP_FLAG_NONE, n, all));
    uint32_t at = 0;
    for (uint32_t r = 0; ok && r < w->n_ranks; r++) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].type == SM_LOCATION_CPU_THREAD)
                index[k++] = at++;
        char name[64];
        OTF2_StringRef s_threads;
        snprintf(name, sizeof name, "pthread threads of rank %" PRIu32, r);
        ok = sm_otf2_extra_string(w, g, name, &s_threads) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_thread_members_group(w, r), s_threads,
                               OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_PTHREAD,
                               OTF2_GROUP_FLAG_NONE, k, index)) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, sm_otf2_thread_comm(w, r), s_threads,
                                                          sm_otf2_thread_members_group(w, r),
                                                          OTF2_UNDEFINED_COMM,
                                                          OTF2_COMM_FLAG_NONE));
    }
    free(all);
    free(index);
    return ok;
}

/* Named metrics (Kokkos memory spaces...): one member and class each,
 * after the transfer metrics, in the order of the job's definitions. */
static bool sm_otf2_named_metrics(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = sm_defset_metric_count(d);
    OTF2_StringRef s_desc, s_counter;
    if (n && (!sm_otf2_extra_string(w, g, "a counter's value", &s_desc) ||
              !sm_otf2_extra_string(w, g, "PAPI event count since the thread began",
                                    &s_counter)))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const sm_named_metric_def_t *m = sm_defset_metric_get(d, i);
        OTF2_MetricMemberRef ref = SM_XFER_KIND_COUNT + i;
        OTF2_StringRef unit = m->unit != SM_INVALID_ID ? m->unit : s_desc;
        bool counter = m->kind == SM_METRIC_COUNTER;
        /* A counter is read with every enter and leave of its thread:
         * strictly synchronous, counted from the thread's start. */
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricMember(
                               g, ref, m->name, counter ? s_counter : s_desc,
                               counter ? OTF2_METRIC_TYPE_PAPI : OTF2_METRIC_TYPE_OTHER,
                               counter ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT,
                               OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, unit)) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(
                               g, ref, 1, &ref,
                               counter ? OTF2_METRIC_SYNCHRONOUS_STRICT : OTF2_METRIC_ASYNCHRONOUS,
                               counter ? OTF2_RECORDER_KIND_CPU : OTF2_RECORDER_KIND_ABSTRACT)))
            return false;
    }
    if (!w->n_counters)
        return true;
    /* All counters together: the class each enter and leave refers to. */
    OTF2_MetricMemberRef members[256];
    for (uint32_t i = 0; i < w->n_counters; i++)
        members[i] = SM_XFER_KIND_COUNT + w->counters[i];
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(
                             g, SM_XFER_KIND_COUNT + n, (uint8_t)w->n_counters, members,
                             OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU));
}

static bool sm_otf2_metrics(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g)
{
    OTF2_StringRef s_unit, s_desc;
    if (!sm_otf2_extra_string(w, g, "bytes", &s_unit) ||
        !sm_otf2_extra_string(w, g, "running total of this location", &s_desc))
        return false;
    for (uint32_t k = 0; k < SM_XFER_KIND_COUNT; k++) {
        OTF2_StringRef s_name;
        OTF2_MetricMemberRef member = k;
        if (!sm_otf2_extra_string(w, g, sm_otf2_metric_names[k], &s_name) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricMember(
                               g, k, s_name, s_desc, OTF2_METRIC_TYPE_OTHER,
                               OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
                               OTF2_BASE_DECIMAL, 0, s_unit)) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(g, k, 1, &member,
                                                                 OTF2_METRIC_ASYNCHRONOUS,
                                                                 OTF2_RECORDER_KIND_ABSTRACT)))
            return false;
    }
    return true;
}

/* Wall-clock ns of a CLOCK_MONOTONIC ns value (rank 0's clock). */
static uint64_t sm_otf2_realtime_of(uint64_t monotonic_ns)
{
    int64_t delta = (int64_t)(monotonic_ns - sm_clock_monotonic_at_init_ns());
    return sm_clock_realtime_at_init_ns() + (uint64_t)delta;
}

/* Devices: each distinct device of a rank's GPU streams is a system-tree
 * node (domain ACCELERATOR_DEVICE) under its host and a location group
 * (ACCELERATOR, created by the process's group) holding its streams.  They
 * are numbered in rank order, then by first appearance among the rank's
 * locations: group n_ranks + k, node first_node + k. */
static bool sm_otf2_same_device(const sm_otf2_loc_info_t *a, const sm_otf2_loc_info_t *b)
{
    return a->has_device == b->has_device &&
           (!a->has_device ||
            (a->device.vendor == b->device.vendor && a->device.ordinal == b->device.ordinal));
}

/* Whether location i of p is the first of its device; and the number of
 * distinct devices among p's locations before i (i = n_locations: all). */
static uint32_t sm_otf2_devices_before(const sm_otf2_proc_info_t *p, uint32_t i, bool *first)
{
    uint32_t k = 0;
    if (first)
        *first = false;
    for (uint32_t j = 0; j <= i && j < p->n_locations; j++) {
        if (p->locations[j].type != SM_LOCATION_GPU_STREAM)
            continue;
        bool seen = false;
        for (uint32_t e = 0; e < j && !seen; e++)
            seen = p->locations[e].type == SM_LOCATION_GPU_STREAM &&
                   sm_otf2_same_device(&p->locations[e], &p->locations[j]);
        if (j == i) {
            if (first)
                *first = !seen;
            if (seen) {
                /* Its device's index: that of the first location with it. */
                for (uint32_t e = 0; e < j; e++)
                    if (p->locations[e].type == SM_LOCATION_GPU_STREAM &&
                        sm_otf2_same_device(&p->locations[e], &p->locations[j]))
                        return sm_otf2_devices_before(p, e, NULL);
            }
            return k;
        }
        if (!seen)
            k++;
    }
    return k;
}

/* The device slot (0, 1, ... over the job) of location i of rank r. */
static uint32_t sm_otf2_device_slot(const sm_otf2_proc_info_t *procs, uint32_t r, uint32_t i)
{
    uint32_t k = 0;
    for (uint32_t q = 0; q < r; q++)
        k += sm_otf2_devices_before(&procs[q], procs[q].n_locations, NULL);
    return k + sm_otf2_devices_before(&procs[r], i, NULL);
}

/* System tree: the job, one node per host, one location group per process. */
static bool sm_otf2_system_tree(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                const sm_otf2_proc_info_t *procs)
{
    const sm_job_process_t *jp = w->job->processes;
    uint32_t n = w->n_ranks, n_nodes = 0;
    uint32_t *node_of = calloc(n ? n : 1, sizeof *node_of);
    OTF2_StringRef s_machine = 0, s_job = 0, s_node = 0, s_host = 0;
    char text[160];
    if (!sm_otf2_got(w, node_of, strerror(ENOMEM)))
        return false;
    bool ok = sm_otf2_extra_string(w, g, "machine", &s_machine) &&
              sm_otf2_extra_string(w, g, "job", &s_job) &&
              sm_otf2_extra_string(w, g, "node", &s_node) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(
                                g, 0, s_job, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
    /* One node per distinct host name, in order of first appearance. */
    for (uint32_t r = 0; ok && r < n; r++) {
        const char *host = jp && jp[r].hostname[0] ? jp[r].hostname : "unknown";
        uint32_t k = 0;
        while (k < r && strcmp(jp && jp[k].hostname[0] ? jp[k].hostname : "unknown", host) != 0)
            k++;
        if (k < r) {
            node_of[r] = node_of[k];
            continue;
        }
        node_of[r] = 1 + n_nodes++;
        ok = sm_otf2_extra_string(w, g, host, &s_host) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, node_of[r], s_host, s_node,
                                                                    0));
    }
    for (uint32_t r = 0; ok && r < n; r++) {
        OTF2_StringRef s_process;
        if (n > 1)
            snprintf(text, sizeof text, "MPI Rank %" PRIu32, r);
        else
            snprintf(text, sizeof text, "Process %" PRId64, jp ? jp[r].pid : (int64_t)w->run->pid);
        ok = sm_otf2_extra_string(w, g, text, &s_process) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                               g, sm_otf2_process_group_ref(r), s_process,
                               OTF2_LOCATION_GROUP_TYPE_PROCESS, node_of[r],
                               OTF2_UNDEFINED_LOCATION_GROUP));
    }
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
    OTF2_StringRef s_device = 0, s_uuid = 0, s_pci = 0;
    ok = ok && sm_otf2_extra_string(w, g, "accelerator", &s_device) &&
         sm_otf2_extra_string(w, g, "UUID", &s_uuid) &&
         sm_otf2_extra_string(w, g, "PCI bus id", &s_pci);
    for (uint32_t r = 0; ok && r < n; r++) {
        const sm_otf2_proc_info_t *p = &procs[r];
        for (uint32_t i = 0; ok && i < p->n_locations; i++) {
            bool first;
            const sm_otf2_loc_info_t *li = &p->locations[i];
            if (li->type != SM_LOCATION_GPU_STREAM)
                continue;
            sm_otf2_devices_before(p, i, &first);
            if (!first)
                continue;
            uint32_t slot = sm_otf2_device_slot(procs, r, i);
            uint32_t node = 1 + n_nodes + slot;
            OTF2_StringRef s_name, s_group, s_value;
            const sm_gpu_device_def_t *d = &li->device;
            if (li->has_device)
                snprintf(text, sizeof text, "GPU %" PRIu32 " %s", d->ordinal, d->name);
            else
                snprintf(text, sizeof text, "GPU (unknown)");
            ok = sm_otf2_extra_string(w, g, text, &s_name) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, node, s_name, s_device,
                                                                        node_of[r])) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(
                                   g, node, OTF2_SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE));
            if (ok && li->has_device && d->uuid[0])
                ok = sm_otf2_extra_string(w, g, d->uuid, &s_value) &&
                     sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(
                                       g, node, s_uuid, OTF2_TYPE_STRING,
                                       (OTF2_AttributeValue){.stringRef = s_value}));
            if (ok && li->has_device && d->pci_bus_id[0])
                ok = sm_otf2_extra_string(w, g, d->pci_bus_id, &s_value) &&
                     sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(
                                       g, node, s_pci, OTF2_TYPE_STRING,
                                       (OTF2_AttributeValue){.stringRef = s_value}));
            if (n > 1)
                snprintf(text, sizeof text, "GPU %" PRIu32 " of rank %" PRIu32,
                         li->has_device ? d->ordinal : 0, r);
            else
                snprintf(text, sizeof text, "GPU %" PRIu32, li->has_device ? d->ordinal : 0);
            ok = ok && sm_otf2_extra_string(w, g, text, &s_group) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                                   g, n + slot, s_group, OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, node,
                                   sm_otf2_process_group_ref(r)));
        }
    }
#else
    (void)procs;
#endif
    free(node_of);
    return ok;
}

static bool sm_otf2_write_global_defs(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                      const sm_otf2_proc_info_t *procs)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n_regions = sm_defset_region_count(d);
    uint32_t n_attributes = sm_defset_attribute_count(d);
    uint32_t n_strings = sm_defset_string_count(d);
    w->next_string = n_strings;

    /* Clock: ns of rank 0's CLOCK_MONOTONIC, anchored to wall-clock time. */
    bool any = false, threads = false, metrics = false;
    uint64_t lo = 0, hi = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const sm_otf2_proc_info_t *p = &procs[r];
        if (!p->locations)
            continue; /* a rank that left no data (sysmeasure-merge) */
        if (!any || p->min_ns < lo)
            lo = p->min_ns;
        if (!any || p->max_ns > hi)
            hi = p->max_ns;
        any = true;
        threads |= p->thread_events;
        metrics |= p->metric_events;
    }
    if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteClockProperties(
                           g, UINT64_C(1000000000), lo, hi > lo ? hi - lo : 0,
                           sm_otf2_realtime_of(lo))))
        return false;

    for (uint32_t i = 0; i < n_strings; i++) {
        const char *s = sm_defset_string_get(d, i);
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteString(g, i, s ? s : "")))
            return false;
    }

    /* Paradigms: those of the regions, pthread for thread events, MPI for
     * communicators. */
    bool used[256] = {false};
    for (uint32_t i = 0; i < n_regions; i++)
        used[sm_otf2_paradigm(sm_defset_region_get(d, i)->paradigm)] = true;
    used[OTF2_PARADIGM_PTHREAD] |= threads;
    used[OTF2_PARADIGM_MPI] |= w->mpi_comms;
    used[OTF2_PARADIGM_OPENMP] |= w->team_comms;
    for (unsigned p = 0; p < 256; p++) {
        const char *name;
        OTF2_ParadigmClass cls;
        OTF2_StringRef s;
        if (!used[p] || !sm_otf2_paradigm_info((OTF2_Paradigm)p, &name, &cls))
            continue;
        if (!sm_otf2_extra_string(w, g, name, &s) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteParadigm(g, (OTF2_Paradigm)p, s, cls)))
            return false;
    }

    OTF2_StringRef s_empty;
    if (!sm_otf2_extra_string(w, g, "", &s_empty))
        return false;

    for (uint32_t i = 0; i < n_attributes; i++) {
        const sm_attribute_def_t *a = sm_defset_attribute_get(d, i);
        OTF2_Type type;
        switch (a->type) {
        case SM_ATTR_INT64:
            type = OTF2_TYPE_INT64;
            break;
        case SM_ATTR_DOUBLE:
            type = OTF2_TYPE_DOUBLE;
            break;
        case SM_ATTR_STRING:
            type = OTF2_TYPE_STRING;
            break;
        default:
            continue; /* its values were skipped too */
        }
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteAttribute(g, i, a->name, s_empty, type)))
            return false;
    }

    /* A sampled function's description is its module (from its contexts). */
    uint32_t n_contexts = sm_defset_context_count(d);
    OTF2_StringRef *desc = malloc(sizeof *desc * (n_regions + 1u));
    if (!desc)
        return sm_otf2_got(w, NULL, "out of memory");
    for (uint32_t i = 0; i < n_regions; i++)
        desc[i] = s_empty;
    for (uint32_t i = 0; i < n_contexts; i++) {
        const sm_context_def_t *c = sm_defset_context_get(d, i);
        if (c->region < n_regions && c->module < n_strings)
            desc[c->region] = c->module;
    }
    for (uint32_t i = 0; i < n_regions; i++) {
        const sm_region_def_t *r = sm_defset_region_get(d, i);
        OTF2_StringRef file = r->file < n_strings ? r->file : OTF2_UNDEFINED_STRING;
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteRegion(
                               g, i, r->name, r->name, desc[i], sm_otf2_role(r->role),
                               sm_otf2_paradigm(r->paradigm), OTF2_REGION_FLAG_NONE, file,
                               r->line, 0 /* end line: unknown */))) {
            free(desc);
            return false;
        }
    }
    free(desc);

    /* Call-stack sampling: its timer, and the calling contexts (parents
     * first) that the CallingContextSample events name. */
    if (n_contexts) {
        const sm_config_t *cfg = w->run->config;
        int64_t hz = cfg && cfg->sampling_freq > 0 ? cfg->sampling_freq : 100;
        char name[96];
        snprintf(name, sizeof name, "call-stack sampling (%s time)",
                 cfg && cfg->sampling_clock == SM_SAMPLING_CLOCK_REAL ? "wall-clock" : "CPU");
        OTF2_StringRef s_gen;
        if (!sm_otf2_extra_string(w, g, name, &s_gen) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteInterruptGenerator(
                               g, 0, s_gen, OTF2_INTERRUPT_GENERATOR_MODE_TIME, OTF2_BASE_DECIMAL,
                               -9, (uint64_t)(1000000000 / hz))))
            return false;
        for (uint32_t i = 0; i < n_contexts; i++) {
            const sm_context_def_t *c = sm_defset_context_get(d, i);
            OTF2_CallingContextRef parent =
                c->parent < i ? c->parent : OTF2_UNDEFINED_CALLING_CONTEXT;
            if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteCallingContext(
                                   g, i, c->region, OTF2_UNDEFINED_SOURCE_CODE_LOCATION, parent)))
                return false;
        }
    }

    if (!sm_otf2_system_tree(w, g, procs))
        return false;

    char text[96];
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        /* A rank that left no data still is a member of its communicators:
         * an empty location stands for it. */
        OTF2_StringRef s_none;
        if (!procs[r].locations &&
            (!sm_otf2_extra_string(w, g, "no data (the rank left none)", &s_none) ||
             !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocation(
                                g, sm_otf2_location_ref(r, 0), s_none,
                                OTF2_LOCATION_TYPE_CPU_THREAD, 0, sm_otf2_process_group_ref(r)))))
            return false;
        for (uint32_t i = 0; i < procs[r].n_locations; i++) {
            const sm_otf2_loc_info_t *li = &procs[r].locations[i];
            OTF2_StringRef s_name;
            OTF2_LocationGroupRef group = sm_otf2_process_group_ref(r);
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
            if (li->type == SM_LOCATION_GPU_STREAM)
                group = w->n_ranks + sm_otf2_device_slot(procs, r, i);
#endif
            snprintf(text, sizeof text, "%s", li->name);
            if (!sm_otf2_extra_string(w, g, text, &s_name) ||
                !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocation(
                                   g, sm_otf2_location_ref(r, li->id), s_name,
                                   sm_otf2_location_type(li->type), li->n_events, group)))
                return false;
        }
    }
    for (uint32_t r = 0; r < w->n_ranks; r++)
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].creator != SM_INVALID_ID &&
                !sm_otf2_lineage(w, g, r, &procs[r], &procs[r].locations[i]))
                return false;

    if (w->n_comms && !sm_otf2_comms(w, g, procs))
        return false;
    if (threads && !sm_otf2_thread_contingents(w, g, procs))
        return false;
    /* Named metrics are numbered after the transfer ones: both go in. */
    bool named = sm_defset_metric_count(w->job->defs) > 0;
    return (!(metrics || named) || sm_otf2_metrics(w, g)) && (!named || sm_otf2_named_metrics(w, g));
}

/* ---------------------------------------------------------------- the archive */

static int sm_otf2_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* OTF2 will not overwrite an archive: a run that reuses an --output folder
 * replaces the archive of the run before (as the other writers replace
 * their files).  Only the archive's own three names are touched. */
static void sm_otf2_remove_previous(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, SM_OTF2_ARCHIVE_NAME);
    if (access(path, F_OK) == 0)
        nftw(path, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(path, sizeof path, "%s/%s.otf2", dir, SM_OTF2_ARCHIVE_NAME);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.def", dir, SM_OTF2_ARCHIVE_NAME);
    unlink(path);
}

/* ---------------------------------------------------------------- background encoding */

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
static bool sm_otf2_bg_may_take(const sm_otf2_writer_t *w, uint32_t id)
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
static bool sm_otf2_bg_take(sm_otf2_writer_t *w, uint64_t *n_events)
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
static bool sm_otf2_bg_local_defs(sm_otf2_writer_t *w, OTF2_DefWriter *d, const sm_image_t *img,
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

/* Whether any process failed so far (all processes take the same path
 * afterwards, so no one waits in a collective the others left). */
static bool sm_otf2_any_failed(sm_otf2_writer_t *w, bool failed_here)
{
    const sm_procs_t *p = w->job->procs;
    uint64_t v = failed_here;
    if (p->size > 1 && p->allreduce_max_u64(p->ctx, &v, 1) != 0)
        v = 1;
    return v != 0;
}

/* One image's events; its part of the global definitions appended to seq
 * (as sm_tree_gather would: rank, length, bytes). */
static bool sm_otf2_write_image_events(sm_otf2_writer_t *w, const sm_image_t *img,
                                       sm_wbuf_t *seq)
{
    w->img = img;
    sm_timeline_reset(w->timeline);
    w->any_time = w->thread_events = w->metric_events = false;
    w->min_ns = w->max_ns = 0;
    uint64_t *n_events = calloc(img->n_locations ? img->n_locations : 1, sizeof *n_events);
    bool ok = sm_otf2_got(w, n_events, strerror(ENOMEM));
    int threads = img->parallel && !sm_otf2_one_encoder ? sm_cpus_end_threads() : 1;
    bool parallel = threads > 1 && img->n_locations > 1;
    /* A CPU more than the encoders need: OTF2's file writes go to it. */
    bool behind = threads > 1 && img->n_locations < (uint32_t)threads &&
                  sm_wb_hook((const void *)OTF2_Archive_Open) == 0 && sm_wb_start() == 0;
    uint64_t behind_bytes = behind ? sm_wb_bytes() : 0;
    if (ok && parallel)
        ok = sm_otf2_encode_parallel(w, n_events, threads);
    for (uint32_t i = 0; ok && !parallel && i < img->n_locations; i++)
        ok = sm_otf2_write_location_events(w, i, &n_events[i]);
    uint64_t back = img->parallel ? sm_buffers_taken_back() : 0;
    if (back)
        sm_info(2, "OTF2: %" PRIu64 " chunks spilled unencoded were read back and encoded "
                "during the run", back);
    if (behind) {
        sm_wb_stop();
        sm_info(2, "OTF2: %.1f MB of event files written by a second thread",
                (double)(sm_wb_bytes() - behind_bytes) / 1e6);
    }
    uint64_t len = 0;
    void *blob = ok ? sm_otf2_proc_blob(w, n_events, &len) : NULL;
    ok = ok && sm_otf2_got(w, blob, strerror(ENOMEM));
    if (ok) {
        sm_put_bytes(seq, &img->rank, sizeof img->rank);
        sm_put_bytes(seq, &len, sizeof len);
        sm_put_bytes(seq, blob, len);
        ok = sm_otf2_got(w, seq->oom ? NULL : seq->p, strerror(ENOMEM));
    }
    free(blob);
    free(n_events);
    return ok;
}

/* sysmeasure-merge: ranks that left no data get an empty location (see the
 * global definitions), and readers want its event and definition files. */
static bool sm_otf2_empty_ranks(sm_otf2_writer_t *w, const sm_image_t *imgs, uint32_t n_imgs,
                                bool events)
{
    bool ok = true;
    for (uint32_t r = 0; ok && w->job->procs->size == 1 && r < w->n_ranks; r++) {
        uint32_t k = 0;
        while (k < n_imgs && imgs[k].rank != r)
            k++;
        if (k < n_imgs)
            continue;
        OTF2_LocationRef ref = sm_otf2_location_ref(r, 0);
        if (events) {
            OTF2_EvtWriter *e = OTF2_Archive_GetEvtWriter(w->archive, ref);
            ok = sm_otf2_got(w, e, "cannot create an event writer") &&
                 sm_otf2_ok(w, OTF2_Archive_CloseEvtWriter(w->archive, e));
        } else {
            OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(w->archive, ref);
            ok = sm_otf2_got(w, d, "cannot create a definition writer") &&
                 sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d));
        }
    }
    return ok;
}

/* Steps that are collective in OTF2 run on every process; after each, all
 * agree whether to go on. */
/* The job's ids of the attributes GPU activities carry (by name). */
static void sm_otf2_find_gpu_attrs(sm_otf2_writer_t *w)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = sm_defset_attribute_count(d);
    for (uint32_t k = 0; k < SM_OTF2_GPU_ATTRS; k++) {
        w->gpu_attr[k] = OTF2_UNDEFINED_ATTRIBUTE;
        for (uint32_t i = 0; i < n; i++) {
            const sm_attribute_def_t *a = sm_defset_attribute_get(d, i);
            const char *name = a ? sm_defset_string_get(d, a->name) : NULL;
            if (name && a->type == SM_ATTR_INT64 && strcmp(name, sm_otf2_gpu_attr_names[k]) == 0) {
                w->gpu_attr[k] = i;
                break;
            }
        }
    }
}

/* Rank 0: timeline.json over the job's run (from the first process's start
 * to the last one's end; events outside it, such as a GPU's stray
 * timestamps, are left out of the picture).  A failure is reported there
 * and leaves the archive as it is. */
static void sm_otf2_timeline(sm_otf2_writer_t *w, const sm_otf2_proc_info_t *infos)
{
    const uint8_t **blobs = calloc(w->n_ranks, sizeof *blobs);
    uint64_t *lens = calloc(w->n_ranks, sizeof *lens), lo = 0, hi = 0;
    bool any = false;
    for (uint32_t r = 0; blobs && lens && r < w->n_ranks; r++) {
        blobs[r] = infos[r].timeline;
        lens[r] = infos[r].timeline_len;
        const sm_otf2_proc_info_t *p = &infos[r];
        bool run = p->run_end_ns > p->run_start_ns;
        if (!run && !p->any_time)
            continue;
        uint64_t a = run ? p->run_start_ns : p->min_ns, b = run ? p->run_end_ns : p->max_ns;
        if (!any || a < lo)
            lo = a;
        if (!any || b > hi)
            hi = b;
        any = true;
    }
    if (blobs && lens && any)
        sm_timeline_write_json(w->run->output_dir, w->job->defs, w->n_ranks, blobs, lens, lo, hi);
    else if (!blobs || !lens)
        sm_error("writing %s/timeline.json failed: %s", w->run->output_dir, strerror(ENOMEM));
    free(blobs);
    free(lens);
}

/* The definition chunk size: small when one process writes the archive and
 * a generous estimate of its largest definition file (the global one: every
 * string, region, location and group; a location's mapping tables) stays
 * far below OTF2's 4 MiB file buffer, and its largest record (a group of all
 * locations, 10 bytes a member) fits a small chunk; else SM_OTF2_DEF_CHUNK.
 * (All processes of an MPI job must agree before they know the locations.) */
static uint64_t sm_otf2_def_chunk(const sm_otf2_writer_t *w, const sm_image_t *imgs,
                                  uint32_t n_imgs)
{
    if (w->job->procs->size > 1)
        return SM_OTF2_DEF_CHUNK;
    const sm_defset_t *d = w->job->defs;
    uint64_t locs = w->n_ranks, est = 0;
    for (uint32_t k = 0; k < n_imgs; k++)
        locs += imgs[k].n_locations;
    for (uint32_t i = 0, n = sm_defset_string_count(d); i < n && est < SM_OTF2_DEF_CHUNK; i++) {
        const char *str = sm_defset_string_get(d, i);
        est += (str ? strlen(str) : 0) + 16;
    }
    est += 64ull * (sm_defset_region_count(d) + sm_defset_metric_count(d) +
                    sm_defset_attribute_count(d) + locs) +
           16ull * locs * (sm_defset_comm_count(d) + 8);
    return est < SM_OTF2_DEF_CHUNK / 4 && locs * 10 < SM_OTF2_DEF_CHUNK_SMALL / 2
               ? SM_OTF2_DEF_CHUNK_SMALL : SM_OTF2_DEF_CHUNK;
}

static bool sm_otf2_write_archive(sm_otf2_writer_t *w, const sm_image_t *imgs, uint32_t n_imgs,
                                  bool *others_failed)
{
    static const OTF2_FlushCallbacks flush = {sm_otf2_pre_flush, NULL};
    static const OTF2_MemoryCallbacks memory = {sm_otf2_allocate, sm_otf2_free_all};
    const sm_run_info_t *run = w->run;
    const sm_procs_t *procs = w->job->procs;
    char description[512];
    bool ok;

    if (procs->rank == 0)
        sm_otf2_remove_previous(run->output_dir);
    if (procs->size > 1)
        procs->barrier(procs->ctx);
    w->def_chunk = sm_otf2_def_chunk(w, imgs, n_imgs);
    w->archive = OTF2_Archive_Open(run->output_dir, SM_OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
                                   SM_OTF2_EVT_CHUNK, w->def_chunk,
                                   OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    ok = sm_otf2_got(w, w->archive, "cannot create the archive") &&
         sm_otf2_ok(w, OTF2_Archive_SetFlushCallbacks(w->archive, &flush, NULL)) &&
         sm_otf2_ok(w, OTF2_Archive_SetMemoryCallbacks(w->archive, &memory, NULL));
    if (ok && procs->otf2_collectives(procs->ctx, w->archive) != 0) {
        w->failed_reason = "cannot set up the collective operations of the archive";
        ok = false;
    }
    if (w->n_ranks > 1)
        snprintf(description, sizeof description, "sysmeasure trace of %s (%" PRIu32 " ranks)",
                 run->program ? run->program : "a program", w->n_ranks);
    else
        snprintf(description, sizeof description, "sysmeasure trace of %s (pid %ld on %s)",
                 run->program ? run->program : "a program", (long)run->pid,
                 run->hostname[0] ? run->hostname : "unknown");
    ok = ok && sm_otf2_ok(w, OTF2_Archive_SetCreator(w->archive, "sysmeasure " PACKAGE_VERSION)) &&
         sm_otf2_ok(w, OTF2_Archive_SetMachineName(w->archive,
                                                   run->hostname[0] ? run->hostname : "unknown")) &&
         sm_otf2_ok(w, OTF2_Archive_SetDescription(w->archive, description));
    if (ok) {
        w->attrs = OTF2_AttributeList_New();
        ok = sm_otf2_got(w, w->attrs, strerror(ENOMEM));
    }
    sm_otf2_find_gpu_attrs(w);
    if (sm_otf2_any_failed(w, !ok))
        goto others;

    /* Events, one location at a time. */
    sm_wbuf_t seq = {0};
    ok = sm_otf2_ok(w, OTF2_Archive_OpenEvtFiles(w->archive));
    for (uint32_t k = 0; ok && k < n_imgs; k++)
        ok = sm_otf2_write_image_events(w, &imgs[k], &seq);
    ok = ok && sm_otf2_empty_ranks(w, imgs, n_imgs, true);
    if (sm_otf2_any_failed(w, !ok)) {
        free(seq.p);
        goto others;
    }
    ok = sm_otf2_ok(w, OTF2_Archive_CloseEvtFiles(w->archive));

    /* Local definitions: none, but readers expect a file per location;
     * those encoded during the run map their ids and ticks to the job's. */
    ok = ok && sm_otf2_ok(w, OTF2_Archive_OpenDefFiles(w->archive));
    for (uint32_t k = 0; ok && k < n_imgs; k++) {
        for (uint32_t i = 0; ok && i < imgs[k].n_locations; i++) {
            sm_image_location_t il;
            ok = imgs[k].location(imgs[k].ctx, i, &il) == 0;
            if (!ok)
                break;
            free(il.creation_path);
            if (n_imgs == 1 && w->def_made && w->def_made[i])
                continue; /* made by an encoder */
            OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(
                w->archive, sm_otf2_location_ref(imgs[k].rank, il.id));
            w->writer_open = d != NULL;
            ok = sm_otf2_got(w, d, "cannot create a definition writer") &&
                 sm_otf2_bg_local_defs(w, d, &imgs[k], il.id) &&
                 sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d));
            if (ok)
                w->writer_open = false;
        }
    }
    ok = ok && sm_otf2_empty_ranks(w, imgs, n_imgs, false) &&
         sm_otf2_ok(w, OTF2_Archive_CloseDefFiles(w->archive));
    if (sm_otf2_any_failed(w, !ok)) {
        free(seq.p);
        goto others;
    }

    /* What the global definitions need of every process, at rank 0: the
     * images of this process (all of them when merging), or one per process
     * along the tree. */
    void *all = seq.p;
    uint64_t all_len = seq.len;
    if (procs->size > 1) {
        const uint8_t *blob = NULL;
        uint64_t blen = 0;
        uint32_t r;
        sm_tree_next(seq.p, seq.p + seq.len, &r, &blob, &blen);
        all = NULL;
        if (sm_tree_gather(procs, blob ? (const void *)blob : "", blen, &all, &all_len) != 0)
            ok = sm_otf2_got(w, NULL, "cannot gather the locations of the job");
        free(seq.p);
    }
    if (ok && procs->rank == 0) {
        sm_otf2_proc_info_t *infos = sm_otf2_procs_parse(all, all_len, w->n_ranks);
        ok = sm_otf2_got(w, infos, "the locations of another process could not be read");
        OTF2_GlobalDefWriter *g = ok ? OTF2_Archive_GetGlobalDefWriter(w->archive) : NULL;
        w->writer_open = g != NULL;
        ok = ok && sm_otf2_got(w, g, "cannot create the global definition writer") &&
             sm_otf2_write_global_defs(w, g, infos) &&
             sm_otf2_ok(w, OTF2_Archive_CloseGlobalDefWriter(w->archive, g));
        if (ok)
            w->writer_open = false;
        if (ok)
            sm_otf2_timeline(w, infos);
        sm_otf2_procs_free(infos, w->n_ranks);
    }
    free(all);
    if (sm_otf2_any_failed(w, !ok))
        goto others;

    OTF2_ErrorCode rc = OTF2_Archive_Close(w->archive);
    w->archive = NULL;
    sm_otf2_pool_release();
    return sm_otf2_ok(w, rc);

others:
    /* A process failed: if it was another, this one says nothing more; the
     * archive stays open (closing is collective and may flush broken
     * buffers, see writer_open). */
    *others_failed = ok;
    w->archive = NULL;
    return false;
}

int sm_otf2_write_images(const sm_run_info_t *run, const sm_job_t *job, const sm_image_t *imgs,
                         uint32_t n_imgs)
{
    sm_otf2_writer_t w;
    memset(&w, 0, sizeof w);
    w.run = run;
    w.job = job;
    w.n_ranks = job->n_ranks ? job->n_ranks : job->procs->size;
    w.n_comms = sm_defset_comm_count(job->defs);
    w.n_contexts = sm_defset_context_count(job->defs);
    for (uint32_t c = 0; c < w.n_comms; c++) {
        if (sm_comm_key_is_team(sm_defset_comm_get(job->defs, c)->key))
            w.team_comms = true;
        else
            w.mpi_comms = true;
    }
    w.failed_code = OTF2_SUCCESS;
    w.timeline = sm_timeline_new();
    w.n_region_kinds = sm_defset_region_count(job->defs);
    w.region_kind = malloc(w.n_region_kinds + 1u);
    for (uint32_t i = 0; w.region_kind && i < w.n_region_kinds; i++) {
        const sm_region_def_t *rd = sm_defset_region_get(job->defs, i);
        w.region_kind[i] = (uint8_t)(rd ? sm_tl_kind_of_paradigm(sm_paradigm_name(rd->paradigm))
                                        : SM_TL_OTHER);
    }
    if (!w.region_kind || !w.timeline) { /* out of memory: no timeline */
        sm_timeline_free(w.timeline);
        w.timeline = NULL;
        w.n_region_kinds = 0;
    }
    w.n_named_strings = sm_defset_string_count(job->defs);
    w.named_metric = malloc(sizeof *w.named_metric * (w.n_named_strings + 1u));
    for (uint32_t i = 0; w.named_metric && i < w.n_named_strings; i++)
        w.named_metric[i] = SM_INVALID_ID;
    for (uint32_t i = 0; w.named_metric && i < sm_defset_metric_count(job->defs); i++)
        w.named_metric[sm_defset_metric_get(job->defs, i)->name] = i;
    if (!w.named_metric)
        w.n_named_strings = 0; /* out of memory: named metrics are left out */
    uint32_t n_metrics = sm_defset_metric_count(job->defs);
    w.counters = malloc(sizeof *w.counters * (n_metrics + 1u));
    for (uint32_t i = 0; w.counters && i < n_metrics && w.n_counters < 255; i++)
        if (sm_defset_metric_get(job->defs, i)->kind == SM_METRIC_COUNTER)
            w.counters[w.n_counters++] = i;

    memset(&sm_otf2_reported, 0, sizeof sm_otf2_reported);
    sm_otf2_reported.code = OTF2_SUCCESS;
    OTF2_ErrorCallback previous = OTF2_Error_RegisterCallback(sm_otf2_error_callback,
                                                              &sm_otf2_reported);
    bool others_failed = false;
    bool ok = sm_otf2_write_archive(&w, imgs, n_imgs, &others_failed);
    if (!ok && !others_failed)
        sm_otf2_report_failure(&w);
    if (w.attrs)
        OTF2_AttributeList_Delete(w.attrs);
    free(w.loc.creation_path);
    free(w.named_metric);
    free(w.counters);
    sm_otf2_pool_release();
    free(w.samples);
    free(w.def_made);
    sm_timeline_free(w.timeline);
    free(w.region_kind);
    sm_nesting_free(&w.nest);
    OTF2_Error_RegisterCallback(previous, NULL);
    sm_otf2_note_nesting(&w.nest);

    if (!ok)
        return others_failed ? 0 : -1;
    if (w.clamps)
        sm_info(1, "OTF2: %" PRIu64 " timestamps that went backwards on their location were clamped",
                w.clamps);
    if (w.gpu_overlaps)
        sm_info(1, "OTF2: %" PRIu64 " GPU activities overlapped the previous one on their stream "
                "and were moved after it", w.gpu_overlaps);
    if (w.skipped_attrs)
        sm_info(1, "OTF2: %" PRIu64 " event attributes were unknown or repeated and left out",
                w.skipped_attrs);
    if (w.unknown_comm)
        sm_info(1, "OTF2: %" PRIu64 " message events on an unnamed communicator were left out",
                w.unknown_comm);
    if (w.spill_failures) {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: cannot read back the spilled events of "
                 "%s%s", run->output_dir, SM_OTF2_ARCHIVE_NAME, w.first_spill_failure,
                 w.spill_failures > 1 ? " and of others; the archive lacks them"
                                      : "; the archive lacks them");
        return -1;
    }
    sm_info(2, "OTF2: wrote %s/%s.otf2", run->output_dir, SM_OTF2_ARCHIVE_NAME);
    return 0;
}

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

/* ---------------------------------------------------------------- the output */

static bool sm_otf2_output_wanted(const sm_finalize_t *f)
{
    return f->trace;
}

static int sm_otf2_output_write(sm_finalize_t *f)
{
    return f->images ? sm_otf2_write_images(f->run, &f->job, f->images, f->n_images)
                     : sm_otf2_write(f->run, &f->job);
}

const sm_output_t sm_output_otf2 = {
    .file = "traces.otf2",
    .who = SM_OUTPUT_EVERY_RANK,
    .wanted = sm_otf2_output_wanted,
    .write = sm_otf2_output_write,
};
