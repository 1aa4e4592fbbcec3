/* The OTF2 writer: one archive (traces.otf2, traces.def, traces/) in the run's
 * output folder.  Events are streamed location by location from the event
 * layer's buffers into OTF2's event writers, so memory stays bounded (OTF2's
 * own pool per writer, flushed to disk when full); the global definitions are
 * written last, when every location's event count is known. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */

#include <errno.h>
#include <ftw.h>
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
#include "../core/definitions.h"
#include "../core/event_record.h"
#include "../core/location.h"
#include "../util/log.h"
#include "writers.h"

#define SM_OTF2_ARCHIVE_NAME "traces"
/* Chunks of at least OTF2's 4 MiB file buffer: OTF2 then writes full chunks
 * directly, never through that buffer, which OTF2 3.0.2 frees and then writes
 * from again when a write fails (a crash on a full disk). */
#define SM_OTF2_EVT_CHUNK (4u * 1024u * 1024u)
#define SM_OTF2_DEF_CHUNK (4u * 1024u * 1024u)

/* Kokkos and HIP became OTF2 paradigms in OTF2 2.3. */
#if OTF2_VERSION_MAJOR > 2 || (OTF2_VERSION_MAJOR == 2 && OTF2_VERSION_MINOR >= 3)
#define SM_OTF2_HAVE_KOKKOS_HIP 1
#endif

/* Fixed ids of the one thread contingent (pthread creation/begin/end). */
#define SM_OTF2_GROUP_THREAD_LOCATIONS 0
#define SM_OTF2_GROUP_THREAD_MEMBERS 1
#define SM_OTF2_COMM_THREADS 0

/* The first error OTF2 reported through its error callback (which is
 * process-wide, hence a static; the writer runs once, at finalize). */
typedef struct sm_otf2_error {
    OTF2_ErrorCode code;
    char message[256];
} sm_otf2_error_t;

static sm_otf2_error_t sm_otf2_reported;

typedef struct sm_otf2_writer {
    const sm_run_info_t *run;
    uint32_t rank; /* 0 of 1 until the MPI work gives each rank its range */
    uint32_t n_ranks;
    OTF2_Archive *archive;
    OTF2_EvtWriter *evt;  /* the location being written */
    /* A writer is open (not closed successfully).  After a failure its
     * buffers may be broken (OTF2 3.0.2 frees its file buffer on a failed
     * write and writes from it at close) and closing the archive would flush
     * them, so the archive is then left open. */
    bool writer_open;
    OTF2_AttributeList *attrs;
    sm_location_t *loc;
    uint32_t n_locations; /* snapshot taken before writing */

    /* Timestamps (ns): per location, and over the whole archive. */
    uint64_t last_ns;
    bool loc_has_time;
    uint64_t min_ns, max_ns;
    bool any_time;
    uint64_t clamps;
    uint64_t skipped_attrs;
    bool thread_events; /* a thread contingent is referenced */

    /* First failure: an OTF2 code, or a reason of our own (NULL-handle calls). */
    OTF2_ErrorCode failed_code;
    const char *failed_reason;

    /* Locations whose spill files could not be read back. */
    uint32_t spill_failures;
    const sm_location_t *first_spill_failure;

    OTF2_StringRef next_string; /* ids after the interned strings */
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
static uint32_t sm_otf2_accelerator_group_ref(uint32_t rank, uint32_t n_ranks)
{
    return n_ranks + rank;
}
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
    } else if (e && e->code == OTF2_SUCCESS) {
        e->code = code;
        memcpy(e->message, msg, sizeof msg);
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

/* Notes the first failure; true when rc is success.  An error OTF2 reported
 * through the callback counts even when the call returned success: OTF2 3.0
 * swallows a failed flush of an event buffer (a full disk) and goes on. */
static bool sm_otf2_ok(sm_otf2_writer_t *w, OTF2_ErrorCode rc)
{
    if (rc == OTF2_SUCCESS)
        rc = sm_otf2_reported.code;
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
        const char *desc = OTF2_Error_GetDescription(e->code);
        if (e->message[0])
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s (%s)", dir, SM_OTF2_ARCHIVE_NAME,
                     desc, e->message);
        else
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME, desc);
    } else if (w->failed_code != OTF2_SUCCESS) {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 OTF2_Error_GetDescription(w->failed_code));
    } else {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 w->failed_reason ? w->failed_reason : "unknown error");
    }
}

/* ---------------------------------------------------------------- events */

/* Ticks to ns, never going back on a location (readers require it). */
static uint64_t sm_otf2_time(sm_otf2_writer_t *w, uint64_t ticks)
{
    uint64_t ns = sm_clock_to_ns(ticks);
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
    uint32_t n_attributes = sm_attribute_count();
    uint32_t n_strings = sm_string_count();
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
        OTF2_AttributeRef ref = (OTF2_AttributeRef)a.attribute;
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
            *rc = OTF2_AttributeList_AddStringRef(w->attrs, ref, (OTF2_StringRef)a.value.string);
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

/* sm_buffer_for_each callback: one record into the event writer.  Returns 1
 * on an OTF2 failure (the buffer layer uses -1 for its own). */
static int sm_otf2_record(const sm_record_t *rec, void *arg)
{
    sm_otf2_writer_t *w = arg;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    uint64_t t;

    switch (rec->kind) {
    case SM_REC_ENTER:
    case SM_REC_LEAVE: {
        OTF2_AttributeList *al = NULL;
        t = sm_otf2_time(w, rec->time);
        if (rec->aux && rec->words) {
            al = sm_otf2_attributes(w, rec, &rc);
            if (rc != OTF2_SUCCESS)
                break;
        }
        if (rec->kind == SM_REC_ENTER)
            rc = OTF2_EvtWriter_Enter(w->evt, al, t, rec->ref);
        else
            rc = OTF2_EvtWriter_Leave(w->evt, al, t, rec->ref);
        break;
    }
    case SM_REC_BUFFER_FLUSH: {
        uint64_t stop_ticks = rec->time, stop;
        t = sm_otf2_time(w, rec->time);
        if (rec->words >= 1)
            memcpy(&stop_ticks, sm_record_payload(rec), sizeof stop_ticks);
        stop = sm_clock_to_ns(stop_ticks);
        if (stop < t)
            stop = t;
        if (stop > w->max_ns)
            w->max_ns = stop;
        rc = OTF2_EvtWriter_BufferFlush(w->evt, NULL, t, stop);
        break;
    }
    case SM_REC_MEASUREMENT:
        t = sm_otf2_time(w, rec->time);
        rc = OTF2_EvtWriter_MeasurementOnOff(w->evt, NULL, t,
                                             rec->aux ? OTF2_MEASUREMENT_ON : OTF2_MEASUREMENT_OFF);
        break;
    /* The sequence number pairs a creator's ThreadCreate with the child's
     * ThreadBegin: the created location's id on both sides. */
    case SM_REC_THREAD_CREATE:
        t = sm_otf2_time(w, rec->time);
        rc = OTF2_EvtWriter_ThreadCreate(w->evt, NULL, t, SM_OTF2_COMM_THREADS, rec->ref);
        w->thread_events = true;
        break;
    /* Only threads with a recorded creator begin and end in OTF2: a
     * ThreadBegin must match a ThreadCreate, and the main thread (or one
     * created unseen) has none. */
    case SM_REC_THREAD_BEGIN:
        if (rec->ref == SM_INVALID_ID || w->loc->creator == SM_INVALID_ID)
            return 0;
        t = sm_otf2_time(w, rec->time);
        rc = OTF2_EvtWriter_ThreadBegin(w->evt, NULL, t, SM_OTF2_COMM_THREADS, w->loc->id);
        w->thread_events = true;
        break;
    case SM_REC_THREAD_END:
        if (w->loc->creator == SM_INVALID_ID)
            return 0;
        t = sm_otf2_time(w, rec->time);
        rc = OTF2_EvtWriter_ThreadEnd(w->evt, NULL, t, SM_OTF2_COMM_THREADS, w->loc->id);
        w->thread_events = true;
        break;
    default:
        return 0; /* a kind this writer does not know (yet) */
    }
    return sm_otf2_ok(w, rc) ? 0 : 1;
}

/* One location's events; its event count in *n_events. */
static bool sm_otf2_write_location_events(sm_otf2_writer_t *w, sm_location_t *loc,
                                          uint64_t *n_events)
{
    w->evt = OTF2_Archive_GetEvtWriter(w->archive, sm_otf2_location_ref(w->rank, loc->id));
    w->writer_open = w->evt != NULL;
    if (!sm_otf2_got(w, w->evt, "cannot create an event writer"))
        return false;
    w->loc = loc;
    w->loc_has_time = false;
    int rc = sm_buffer_for_each(loc, sm_otf2_record, w);
    if (rc > 0)
        return false; /* OTF2 failure, already noted */
    if (rc < 0) {
        /* The rest of the archive is still worth having: go on, report later. */
        if (w->spill_failures++ == 0)
            w->first_spill_failure = loc;
    }
    if (!sm_otf2_ok(w, OTF2_EvtWriter_GetNumberOfEvents(w->evt, n_events)))
        return false;
    if (!sm_otf2_ok(w, OTF2_Archive_CloseEvtWriter(w->archive, w->evt)))
        return false;
    w->evt = NULL;
    w->writer_open = false;
    return true;
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

/* The names of the regions open in the creator, outermost first: "a > b". */
static char *sm_otf2_creation_path(const sm_location_t *loc)
{
    static const char sep[] = " > ";
    size_t len = 1;
    for (uint32_t i = 0; i < loc->creator_depth; i++) {
        const char *n = sm_region_name(loc->creator_path[i]);
        len += strlen(n ? n : "?") + sizeof sep - 1;
    }
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < loc->creator_depth; i++) {
        const char *n = sm_region_name(loc->creator_path[i]);
        size_t l = strlen(n ? n : "?");
        if (i) {
            memcpy(p, sep, sizeof sep - 1);
            p += sizeof sep - 1;
        }
        memcpy(p, n ? n : "?", l);
        p += l;
    }
    *p = '\0';
    return s;
}

/* Creator name and creation path of threads created by another thread. */
static bool sm_otf2_lineage(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, const sm_location_t *loc)
{
    char name[sizeof loc->name + 32];
    const sm_location_t *creator =
        loc->creator < w->n_locations ? sm_location_get(loc->creator) : NULL;
    OTF2_LocationRef ref = sm_otf2_location_ref(w->rank, loc->id);

    if (creator)
        snprintf(name, sizeof name, "%.*s", (int)sizeof creator->name, creator->name);
    else
        snprintf(name, sizeof name, "location %" PRIu32, loc->creator);
    if (!sm_otf2_string_property(w, g, ref, "created by", name))
        return false;

    char *path = sm_otf2_creation_path(loc);
    if (!sm_otf2_got(w, path, strerror(ENOMEM)))
        return false;
    bool ok = sm_otf2_string_property(w, g, ref, "creation path", path);
    free(path);
    return ok;
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

/* The thread contingent of ThreadCreate/Begin/End: a pthread Comm over all
 * CPU-thread locations. */
static bool sm_otf2_thread_contingent(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g)
{
    uint32_t n = 0;
    uint64_t *members = malloc(sizeof *members * (w->n_locations ? w->n_locations : 1));
    if (!sm_otf2_got(w, members, strerror(ENOMEM)))
        return false;
    for (uint32_t i = 0; i < w->n_locations; i++) {
        const sm_location_t *loc = sm_location_get(i);
        if (loc && loc->type == SM_LOCATION_CPU_THREAD)
            members[n++] = sm_otf2_location_ref(w->rank, loc->id);
    }
    OTF2_StringRef s_locations, s_threads, s_comm;
    bool ok = sm_otf2_extra_string(w, g, "pthread locations", &s_locations) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                                g, SM_OTF2_GROUP_THREAD_LOCATIONS, s_locations,
                                OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_PTHREAD,
                                OTF2_GROUP_FLAG_NONE, n, members));
    /* The communicator's group lists indexes into the locations group. */
    for (uint32_t i = 0; i < n; i++)
        members[i] = i;
    ok = ok && sm_otf2_extra_string(w, g, "pthread thread members", &s_threads) &&
         sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(g, SM_OTF2_GROUP_THREAD_MEMBERS, s_threads,
                                                       OTF2_GROUP_TYPE_COMM_GROUP,
                                                       OTF2_PARADIGM_PTHREAD, OTF2_GROUP_FLAG_NONE,
                                                       n, members)) &&
         sm_otf2_extra_string(w, g, "pthread threads", &s_comm) &&
         sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, SM_OTF2_COMM_THREADS, s_comm,
                                                      SM_OTF2_GROUP_THREAD_MEMBERS,
                                                      OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
    free(members);
    return ok;
}

static const char *sm_otf2_host(const sm_run_info_t *run)
{
    return run->hostname[0] ? run->hostname : "unknown";
}

/* Wall-clock ns of a CLOCK_MONOTONIC ns value. */
static uint64_t sm_otf2_realtime_of(uint64_t monotonic_ns)
{
    int64_t delta = (int64_t)(monotonic_ns - sm_clock_monotonic_at_init_ns());
    return sm_clock_realtime_at_init_ns() + (uint64_t)delta;
}

static bool sm_otf2_write_global_defs(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                      const uint64_t *n_events)
{
    const sm_run_info_t *run = w->run;
    /* Regions and attributes first, then strings: everything those two
     * reference exists in the string snapshot. */
    uint32_t n_regions = sm_region_count();
    uint32_t n_attributes = sm_attribute_count();
    uint32_t n_strings = sm_string_count();
    w->next_string = n_strings;

    /* Clock: ns since boot (CLOCK_MONOTONIC), anchored to wall-clock time. */
    uint64_t offset, length;
    if (w->any_time) {
        offset = w->min_ns;
        length = w->max_ns - w->min_ns;
    } else {
        offset = sm_clock_to_ns(run->start_time);
        uint64_t end = sm_clock_to_ns(run->end_time);
        length = end > offset ? end - offset : 0;
    }
    if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteClockProperties(
                           g, UINT64_C(1000000000), offset, length, sm_otf2_realtime_of(offset))))
        return false;

    for (uint32_t i = 0; i < n_strings; i++) {
        const char *s = sm_string_get(i);
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteString(g, i, s ? s : "")))
            return false;
    }

    /* Paradigms: those of the regions, and pthread for thread events. */
    bool used[256] = {false};
    for (uint32_t i = 0; i < n_regions; i++) {
        const sm_region_def_t *r = sm_region_get(i);
        if (r)
            used[sm_otf2_paradigm(r->paradigm)] = true;
    }
    if (w->thread_events)
        used[OTF2_PARADIGM_PTHREAD] = true;
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
        const sm_attribute_def_t *a = sm_attribute_get(i);
        OTF2_Type type;
        if (!a)
            continue;
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

    for (uint32_t i = 0; i < n_regions; i++) {
        const sm_region_def_t *r = sm_region_get(i);
        if (!r)
            continue;
        OTF2_StringRef file = r->file < n_strings ? r->file : OTF2_UNDEFINED_STRING;
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteRegion(
                               g, i, r->name, r->name, s_empty, sm_otf2_role(r->role),
                               sm_otf2_paradigm(r->paradigm), OTF2_REGION_FLAG_NONE, file,
                               r->line, 0 /* end line: unknown */)))
            return false;
    }

    /* System tree: this host, one process on it. */
    char text[320];
    OTF2_StringRef s_host, s_node, s_process;
    const char *host = sm_otf2_host(run);
    snprintf(text, sizeof text, "Process %ld", (long)run->pid);
    if (!sm_otf2_extra_string(w, g, host, &s_host) ||
        !sm_otf2_extra_string(w, g, "node", &s_node) ||
        !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_host, s_node,
                                                                OTF2_UNDEFINED_SYSTEM_TREE_NODE)) ||
        !sm_otf2_extra_string(w, g, text, &s_process) ||
        !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                           g, sm_otf2_process_group_ref(w->rank), s_process,
                           OTF2_LOCATION_GROUP_TYPE_PROCESS, 0, OTF2_UNDEFINED_LOCATION_GROUP)))
        return false;
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
    bool any_gpu = false;
    for (uint32_t i = 0; i < w->n_locations && !any_gpu; i++) {
        const sm_location_t *loc = sm_location_get(i);
        any_gpu = loc && loc->type == SM_LOCATION_GPU_STREAM;
    }
    OTF2_StringRef s_gpu;
    snprintf(text, sizeof text, "GPU streams of process %ld", (long)run->pid);
    if (any_gpu && (!sm_otf2_extra_string(w, g, text, &s_gpu) ||
                    !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                                       g, sm_otf2_accelerator_group_ref(w->rank, w->n_ranks), s_gpu,
                                       OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, 0,
                                       sm_otf2_process_group_ref(w->rank)))))
        return false;
#endif

    for (uint32_t i = 0; i < w->n_locations; i++) {
        const sm_location_t *loc = sm_location_get(i);
        OTF2_StringRef s_name;
        if (!loc)
            continue;
        OTF2_LocationGroupRef group = sm_otf2_process_group_ref(w->rank);
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
        if (loc->type == SM_LOCATION_GPU_STREAM)
            group = sm_otf2_accelerator_group_ref(w->rank, w->n_ranks);
#endif
        snprintf(text, sizeof text, "%.*s", (int)sizeof loc->name, loc->name);
        if (!sm_otf2_extra_string(w, g, text, &s_name) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocation(
                               g, sm_otf2_location_ref(w->rank, loc->id), s_name,
                               sm_otf2_location_type(loc->type), n_events[i], group)))
            return false;
    }
    for (uint32_t i = 0; i < w->n_locations; i++) {
        const sm_location_t *loc = sm_location_get(i);
        if (loc && loc->creator != SM_INVALID_ID && !sm_otf2_lineage(w, g, loc))
            return false;
    }

    return !w->thread_events || sm_otf2_thread_contingent(w, g);
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

static bool sm_otf2_write_archive(sm_otf2_writer_t *w, uint64_t *n_events)
{
    static const OTF2_FlushCallbacks flush = {sm_otf2_pre_flush, NULL};
    const sm_run_info_t *run = w->run;
    char description[512];

    sm_otf2_remove_previous(run->output_dir);
    w->archive = OTF2_Archive_Open(run->output_dir, SM_OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
                                   SM_OTF2_EVT_CHUNK, SM_OTF2_DEF_CHUNK, OTF2_SUBSTRATE_POSIX,
                                   OTF2_COMPRESSION_NONE);
    if (!sm_otf2_got(w, w->archive, "cannot create the archive"))
        return false;
    snprintf(description, sizeof description, "sysmeasure trace of %s (pid %ld on %s)",
             run->program ? run->program : "a program", (long)run->pid, sm_otf2_host(run));
    if (!sm_otf2_ok(w, OTF2_Archive_SetFlushCallbacks(w->archive, &flush, NULL)) ||
        !sm_otf2_ok(w, OTF2_Archive_SetSerialCollectiveCallbacks(w->archive)) ||
        !sm_otf2_ok(w, OTF2_Archive_SetCreator(w->archive, "sysmeasure " PACKAGE_VERSION)) ||
        !sm_otf2_ok(w, OTF2_Archive_SetMachineName(w->archive, sm_otf2_host(run))) ||
        !sm_otf2_ok(w, OTF2_Archive_SetDescription(w->archive, description)))
        return false;

    w->attrs = OTF2_AttributeList_New();
    if (!sm_otf2_got(w, w->attrs, strerror(ENOMEM)))
        return false;

    /* Events, one location at a time. */
    if (!sm_otf2_ok(w, OTF2_Archive_OpenEvtFiles(w->archive)))
        return false;
    for (uint32_t i = 0; i < w->n_locations; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc && !sm_otf2_write_location_events(w, loc, &n_events[i]))
            return false;
    }
    if (!sm_otf2_ok(w, OTF2_Archive_CloseEvtFiles(w->archive)))
        return false;

    /* Local definitions: none, but readers expect a file per location. */
    if (!sm_otf2_ok(w, OTF2_Archive_OpenDefFiles(w->archive)))
        return false;
    for (uint32_t i = 0; i < w->n_locations; i++) {
        const sm_location_t *loc = sm_location_get(i);
        if (!loc)
            continue;
        OTF2_DefWriter *d =
            OTF2_Archive_GetDefWriter(w->archive, sm_otf2_location_ref(w->rank, loc->id));
        w->writer_open = d != NULL;
        if (!sm_otf2_got(w, d, "cannot create a definition writer") ||
            !sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d)))
            return false;
        w->writer_open = false;
    }
    if (!sm_otf2_ok(w, OTF2_Archive_CloseDefFiles(w->archive)))
        return false;

    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(w->archive);
    w->writer_open = g != NULL;
    if (!sm_otf2_got(w, g, "cannot create the global definition writer") ||
        !sm_otf2_write_global_defs(w, g, n_events) ||
        !sm_otf2_ok(w, OTF2_Archive_CloseGlobalDefWriter(w->archive, g)))
        return false;
    w->writer_open = false;

    OTF2_ErrorCode rc = OTF2_Archive_Close(w->archive);
    w->archive = NULL;
    return sm_otf2_ok(w, rc);
}

int sm_otf2_write(const sm_run_info_t *run)
{
    sm_otf2_writer_t w;
    memset(&w, 0, sizeof w);
    w.run = run;
    w.rank = 0;
    w.n_ranks = 1;
    w.failed_code = OTF2_SUCCESS;
    w.n_locations = sm_location_count();

    memset(&sm_otf2_reported, 0, sizeof sm_otf2_reported);
    sm_otf2_reported.code = OTF2_SUCCESS;
    OTF2_ErrorCallback previous = OTF2_Error_RegisterCallback(sm_otf2_error_callback,
                                                              &sm_otf2_reported);

    uint64_t *n_events = calloc(w.n_locations ? w.n_locations : 1, sizeof *n_events);
    bool ok = sm_otf2_got(&w, n_events, strerror(ENOMEM)) && sm_otf2_write_archive(&w, n_events);

    if (!ok) {
        /* Close what can be closed safely (see writer_open; the process is
         * ending, so what is left open is only leaked); later errors add
         * nothing to the first one. */
        sm_otf2_error_t first = sm_otf2_reported;
        if (w.archive && !w.writer_open)
            OTF2_Archive_Close(w.archive);
        sm_otf2_reported = first;
        sm_otf2_report_failure(&w);
    }
    if (w.attrs)
        OTF2_AttributeList_Delete(w.attrs);
    free(n_events);
    OTF2_Error_RegisterCallback(previous, NULL);

    if (!ok)
        return -1;
    if (w.clamps)
        sm_info(1, "OTF2: %" PRIu64 " timestamps that went backwards on their location were clamped",
                w.clamps);
    if (w.skipped_attrs)
        sm_info(1, "OTF2: %" PRIu64 " event attributes were unknown or repeated and left out",
                w.skipped_attrs);
    if (w.spill_failures) {
        const sm_location_t *loc = w.first_spill_failure;
        sm_error("writing OTF2 archive %s/%s.otf2 failed: cannot read back the spilled events of "
                 "location %" PRIu32 " (%.*s, %s)%s",
                 run->output_dir, SM_OTF2_ARCHIVE_NAME, loc->id, (int)sizeof loc->name, loc->name,
                 loc->buffer.spill_path ? loc->buffer.spill_path : "no spill file",
                 w.spill_failures > 1 ? " and of others; the archive lacks them"
                                      : "; the archive lacks them");
        return -1;
    }
    sm_info(2, "OTF2: wrote %s/%s.otf2 (%" PRIu32 " locations)", run->output_dir,
            SM_OTF2_ARCHIVE_NAME, w.n_locations);
    return 0;
}
