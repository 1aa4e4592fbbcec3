/* The OTF2 writer, in parts (src/writers/otf2/): one archive (traces.otf2,
 * traces.def, traces/) for the whole job in its output folder.  Every
 * process opens the archive collectively (OTF2's collective callbacks come
 * from the job's process group) and streams its own locations' events from
 * the event layer's buffers into OTF2's event writers, translating its ids
 * into the job's unified ones and its timestamps onto rank 0's clock.
 * Memory stays bounded (OTF2's own pool per writer, flushed to disk when
 * full).  Then each process sends what the global definitions need of it
 * (its locations, their event counts, time range) to rank 0 along the tree,
 * and rank 0 writes them.
 *
 *   archive.c      the archive from open to close, what rank 0 learns of
 *                  every process, the output (sm_output_otf2)
 *   events.c       one location's records encoded into its event file
 *   encoders.c     several encoders at the end of the run
 *   global_defs.c  OTF2's enums of ours, and the global definitions
 *   background.c   encoding during the run (issue 13), and sm_otf2_write
 *   common.c       OTF2's callbacks, the chunk pool, the first failure,
 *                  the folders of the archives
 *
 * This header is what they share; the rest of the tree uses writers.h. */
#ifndef SM_OTF2_INTERNAL_H
#define SM_OTF2_INTERNAL_H

#include "sm_build.h" /* _GNU_SOURCE: struct FTW */

#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/otf2.h>

#include "../../core/compiler.h"
#include "../../core/definitions.h"
#include "../../core/event_record.h"
#include "../../core/location.h"
#include "../../merge/image.h"
#include "../../util/bytes.h"
#include "../nesting.h"
#include "../timeline.h"
#include "../writers.h"

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

/* Attributes of a GPU activity's Enter (their names:
 * sm_otf2_gpu_attr_names, archive.c). */
#define SM_OTF2_GPU_ATTRS 11

/* The first error OTF2 reported through its error callback (which is
 * process-wide, hence one variable; the writer runs once, at finalize). */
typedef struct sm_otf2_error {
    OTF2_ErrorCode code;
    char message[256];
} sm_otf2_error_t;

extern sm_otf2_error_t sm_otf2_reported SM_HIDDEN;

typedef struct sm_otf2_writer {
    const sm_run_info_t *run;
    const sm_job_t *job;
    uint32_t n_ranks;
    uint32_t n_comms;     /* the job's communicators: OTF2 comm ids 0..n-1 */
    bool mpi_comms;       /* some of them are MPI's (the others: OpenMP teams, */
    bool team_comms;
    bool nccl_comms;      /* NCCL's and RCCL's: hashed, definitions.h) */
    bool rccl_comms;
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

/* Small helpers of several parts, inline here: the record loops (events.c,
 * background.c) call some of them for every record. */

/* A location's global OTF2 id: the rank in the high half leaves each rank its
 * own range of 2^32 locations. */
static inline uint64_t sm_otf2_location_ref(uint32_t rank, uint32_t loc_id)
{
    return ((uint64_t)rank << 32) | loc_id;
}

/* Location groups: a process is its rank (as OTF2 asks for MPI); OTF2 3.0
 * wants accelerator streams outside process groups, so a process's GPU
 * streams get a group of their own, numbered after all ranks (readers such as
 * otf2-print expect dense group ids). */
static inline uint32_t sm_otf2_process_group_ref(uint32_t rank)
{
    return rank;
}

/* The thread contingent of this process: a pthread communicator after the
 * job's MPI communicators, one per process. */
static inline OTF2_CommRef sm_otf2_thread_comm(const sm_otf2_writer_t *w, uint32_t rank)
{
    return w->n_comms + rank;
}

/* Payload word i of a record (0 when absent). */
static inline uint64_t sm_otf2_word(const sm_record_t *rec, unsigned i)
{
    uint64_t v = 0;
    if (i < rec->words)
        memcpy(&v, (const uint8_t *)sm_record_payload(rec) + 8u * i, sizeof v);
    return v;
}

static inline uint32_t sm_otf2_root(uint64_t root)
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

/* OTF2's paradigm of one of ours (sm_paradigm_t). */
static inline OTF2_Paradigm sm_otf2_paradigm(uint8_t p)
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
    case SM_PARADIGM_RCCL:
        return OTF2_PARADIGM_HIP;
#else
    case SM_PARADIGM_KOKKOS:
    case SM_PARADIGM_HIP:
    case SM_PARADIGM_RCCL:
        return OTF2_PARADIGM_USER;
#endif
    /* OTF2 3.0 has no paradigm for a collectives library: NCCL is CUDA's
     * (its calls queue CUDA kernels on CUDA streams), RCCL HIP's; not MPI,
     * whose communicators and functions they would then pass for. */
    case SM_PARADIGM_CUDA:
    case SM_PARADIGM_NCCL:
        return OTF2_PARADIGM_CUDA;
    case SM_PARADIGM_COMPILER:
        return OTF2_PARADIGM_COMPILER;
    case SM_PARADIGM_SAMPLING:
        return OTF2_PARADIGM_SAMPLING;
    default:
        return OTF2_PARADIGM_UNKNOWN;
    }
}

/* Notes the first failure; true when rc is success.  An error OTF2 reported
 * through the callback counts even when the call returned success: OTF2 3.0
 * swallows a failed flush of an event buffer (a full disk) and goes on. */
static inline bool sm_otf2_ok(sm_otf2_writer_t *w, OTF2_ErrorCode rc)
{
    if (rc == OTF2_SUCCESS)
        rc = __atomic_load_n(&sm_otf2_reported.code, __ATOMIC_ACQUIRE);
    if (rc == OTF2_SUCCESS)
        return true;
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason)
        w->failed_code = rc;
    return false;
}

/* ---------------------------------------------------------------- common.c */

OTF2_ErrorCode sm_otf2_error_callback(void *user, const char *file, uint64_t line,
                                      const char *function, OTF2_ErrorCode code,
                                      const char *fmt, va_list va) SM_HIDDEN;
OTF2_FlushType sm_otf2_pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                 void *caller, bool final) SM_HIDDEN;
/* OTF2's buffer chunks (OTF2_MemoryCallbacks), from a small pool. */
void *sm_otf2_chunk_new(uint64_t size) SM_HIDDEN;
void sm_otf2_chunk_free(void *c, uint64_t size) SM_HIDDEN;
void *sm_otf2_allocate(void *user, OTF2_FileType type, OTF2_LocationRef location,
                       void **per_buffer, uint64_t size) SM_HIDDEN;
void sm_otf2_free_all(void *user, OTF2_FileType type, OTF2_LocationRef location,
                      void **per_buffer, bool final) SM_HIDDEN;
void sm_otf2_pool_release(void) SM_HIDDEN;
bool sm_otf2_got(sm_otf2_writer_t *w, const void *handle, const char *reason) SM_HIDDEN;
void sm_otf2_report_failure(const sm_otf2_writer_t *w) SM_HIDDEN;
int sm_otf2_remove_entry(const char *path, const struct stat *st, int type,
                         struct FTW *ftw) SM_HIDDEN;
bool sm_otf2_fresh_dir(const char *dir) SM_HIDDEN;
bool sm_otf2_open_staging(OTF2_Archive **archive, const char *dir, uint64_t def_chunk,
                          const OTF2_MemoryCallbacks *memory) SM_HIDDEN;

/* ---------------------------------------------------------------- events.c */

bool sm_otf2_read_location(sm_otf2_writer_t *w, uint32_t i) SM_HIDDEN;
bool sm_otf2_move_in(const sm_otf2_writer_t *w, const char *from, const char *ext) SM_HIDDEN;
bool sm_otf2_encode_location(sm_otf2_writer_t *w, uint32_t i, uint64_t *n_events) SM_HIDDEN;
bool sm_otf2_write_location_events(sm_otf2_writer_t *w, uint32_t i,
                                   uint64_t *n_events) SM_HIDDEN;

/* ---------------------------------------------------------------- encoders.c */

extern bool sm_otf2_one_encoder SM_HIDDEN;
bool sm_otf2_encode_parallel(sm_otf2_writer_t *w, uint64_t *n_events, int threads) SM_HIDDEN;

/* ---------------------------------------------------------------- global_defs.c */

bool sm_otf2_write_global_defs(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                               const sm_otf2_proc_info_t *procs) SM_HIDDEN;

/* ---------------------------------------------------------------- background.c */

bool sm_otf2_bg_may_take(const sm_otf2_writer_t *w, uint32_t id) SM_HIDDEN;
bool sm_otf2_bg_take(sm_otf2_writer_t *w, uint64_t *n_events) SM_HIDDEN;
bool sm_otf2_bg_local_defs(sm_otf2_writer_t *w, OTF2_DefWriter *d, const sm_image_t *img,
                           uint32_t id) SM_HIDDEN;

#endif
