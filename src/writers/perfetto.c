/* trace.pftrace from traces.otf2 (see perfetto.h): the plugin
 * libsysmeasure-perfetto.so, so that only a process writing a Perfetto trace
 * loads protobuf-c.  The messages come from
 * our subset of Perfetto's format (perfetto_trace.proto) through protobuf-c;
 * each packet is packed and written as one `packet` field of the Trace
 * message, so the file grows packet by packet.
 *
 * Sequences: packet sequence 1 holds the track descriptors; each location
 * is a sequence of its own (2 + its index), whose first packet clears the
 * incremental state and whose packets intern the names they use (region
 * names, attribute names) the first time.  Events of one location come out
 * in the archive's order, which is time order. */
#include "sm_build.h"

#include "perfetto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>
#include <stdarg.h>

#include "../util/log.h"
#include "src/writers/perfetto_trace.pb-c.h"

typedef Perfetto__Protos__TracePacket sm_pf_packet_t;
typedef Perfetto__Protos__TrackEvent sm_pf_event_t;
typedef Perfetto__Protos__DebugAnnotation sm_pf_arg_t;

/* Definition tables indexed by reference; larger references than this are
 * taken for a damaged archive (sysmeasure numbers its definitions densely). */
#define SM_PF_MAX_REF (1u << 26)
#define SM_PF_NONE UINT32_MAX

/* Slice arguments kept per event: the attributes of an Enter and what a
 * message adds. */
#define SM_PF_MAX_ARGS 24

/* Names of our own (not regions): event names and argument names, interned
 * with iids after those of the archive's regions and attributes. */
enum {
    SM_PF_NAME_SENT,
    SM_PF_NAME_RECEIVED,
    SM_PF_NAME_FLUSH,
    SM_PF_NAME_MEASUREMENT_OFF,
    SM_PF_NAME_MEASUREMENT_ON,
    SM_PF_N_EVENT_NAMES
};
static const char *const sm_pf_event_names[SM_PF_N_EVENT_NAMES] = {
    "MPI message sent", "MPI message received", "sysmeasure buffer flush",
    "measurement off", "measurement on"};
enum { SM_PF_ARG_PEER_TO, SM_PF_ARG_PEER_FROM, SM_PF_ARG_TAG, SM_PF_ARG_BYTES, SM_PF_ARG_COMM,
       SM_PF_ARG_FLUSH_NS, SM_PF_N_ARG_NAMES };
static const char *const sm_pf_arg_names[SM_PF_N_ARG_NAMES] = {
    "to rank", "from rank", "tag", "bytes", "communicator", "flush duration (ns)"};

typedef struct {
    uint64_t ref;
    uint32_t name;  /* string */
    uint32_t type;  /* OTF2_LocationType */
    uint32_t group; /* location group */
    uint64_t n_events; /* 0: it may have no event file (a rank that left no data) */
} sm_pf_location_t;

typedef struct {
    uint32_t name;
    uint32_t type;    /* OTF2_LocationGroupType */
    uint32_t creator; /* creating location group (accelerators) */
    uint32_t proc;    /* index of its process among the processes; SM_PF_NONE */
    bool defined;
} sm_pf_group_t;

typedef struct {
    uint32_t name, unit;
    bool defined;
} sm_pf_member_t;

typedef struct {
    uint32_t n;
    uint32_t *members; /* classes; instances point to their class */
    uint32_t klass;    /* instances: the class; SM_PF_NONE for classes */
    bool defined;
} sm_pf_metric_t;

typedef struct {
    uint32_t type, paradigm, n;
    uint64_t *members;
    bool defined;
} sm_pf_ogroup_t; /* an OTF2 Group (communicator members) */

typedef struct {
    uint32_t group;
    bool defined;
} sm_pf_comm_t;

typedef struct {
    uint32_t name;
    uint32_t type; /* OTF2_Type */
    bool defined;
} sm_pf_attr_t;

/* One message channel's count so far: (communicator, sender, receiver,
 * tag) -> messages seen on one side. */
typedef struct {
    uint64_t key_a, key_b; /* packed key; key_a == 0: empty slot */
    uint64_t count;
} sm_pf_channel_t;

typedef struct {
    uint32_t name_iid_kind; /* 0: attribute ref, 1: our argument name */
    uint32_t name;
    uint32_t type; /* OTF2_Type */
    OTF2_AttributeValue v;
} sm_pf_argval_t;

/* An Enter not yet written: a message event right after it adds a flow. */
typedef struct {
    bool active;
    uint64_t ts;
    uint32_t region;
    uint32_t n_args;
    sm_pf_argval_t args[SM_PF_MAX_ARGS];
    uint32_t n_flows, n_ends;
    uint64_t flows[4], ends[4];
} sm_pf_pending_t;

typedef struct {
    /* output */
    FILE *out;
    uint8_t *buf;
    size_t cap;
    uint64_t bytes;
    bool write_failed;
    int write_errno;

    /* definitions */
    char **strings;
    uint32_t n_strings;
    uint32_t *region_name;
    uint32_t n_regions;
    sm_pf_attr_t *attrs;
    uint32_t n_attrs;
    sm_pf_location_t *locs;
    uint32_t n_locs, cap_locs;
    sm_pf_group_t *groups;
    uint32_t n_groups;
    uint32_t n_procs;
    sm_pf_member_t *members;
    uint32_t n_members;
    sm_pf_metric_t *metrics;
    uint32_t n_metrics;
    sm_pf_ogroup_t *ogroups;
    uint32_t n_ogroups;
    sm_pf_comm_t *comms;
    uint32_t n_comms;
    uint64_t resolution, offset;
    bool damaged_defs;
    uint32_t corr_attr; /* the attribute "correlation id"; SM_PF_NONE */

    /* the location being converted */
    uint32_t loc;       /* index in locs */
    uint32_t proc;      /* its process */
    uint64_t track;     /* its track's uuid */
    uint32_t seq;
    uint8_t *region_seen, *attr_seen, *member_seen;
    bool extra_seen[SM_PF_N_EVENT_NAMES], extra_arg_seen[SM_PF_N_ARG_NAMES];
    sm_pf_pending_t pending;

    /* flows */
    sm_pf_channel_t *channels;
    uint64_t n_channels, cap_channels;

    sm_perfetto_stats_t stats;
    bool out_of_memory;
} sm_pf_t;

/* ---------------------------------------------------------------- small helpers */

static uint64_t sm_pf_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A dense table slot for ref: grows *arr (zero-filled) to hold it. */
static void *sm_pf_slot(sm_pf_t *pf, void **arr, uint32_t *n, uint64_t ref, size_t elem)
{
    if (ref >= SM_PF_MAX_REF) {
        pf->damaged_defs = true;
        return NULL;
    }
    if (ref >= *n) {
        uint32_t want = *n ? *n : 16;
        while (want <= ref)
            want *= 2;
        char *more = realloc(*arr, want * elem);
        if (!more) {
            pf->out_of_memory = true;
            return NULL;
        }
        memset(more + (size_t)*n * elem, 0, (size_t)(want - *n) * elem);
        *arr = more;
        *n = want;
    }
    return (char *)*arr + ref * elem;
}

static const char *sm_pf_string(const sm_pf_t *pf, uint32_t ref)
{
    return ref < pf->n_strings && pf->strings[ref] ? pf->strings[ref] : NULL;
}

/* Ticks to ns from the start of the archive (its clock's global offset),
 * plus 1 ns: small numbers are short varints, and no timestamp is 0 (which
 * could read as "none"). */
static uint64_t sm_pf_ns(const sm_pf_t *pf, uint64_t t)
{
    uint64_t d = t > pf->offset ? t - pf->offset : 0;
    if (pf->resolution != 1000000000u && pf->resolution != 0)
        d = (uint64_t)((unsigned __int128)d * 1000000000u / pf->resolution);
    return d + 1;
}

/* Track uuids: processes, locations, counters (nonzero, distinct). */
static uint64_t sm_pf_process_uuid(uint32_t proc)
{
    return 0x1000000000000ull + proc;
}
static uint64_t sm_pf_location_uuid(uint32_t loc)
{
    return 0x2000000000000ull + loc;
}
static uint64_t sm_pf_counter_uuid(uint32_t loc, uint32_t member)
{
    return 0x3000000000000ull + ((uint64_t)loc << 24) + member;
}

/* ---------------------------------------------------------------- output */

static void sm_pf_emit(sm_pf_t *pf, sm_pf_packet_t *p)
{
    if (pf->write_failed)
        return;
    size_t len = perfetto__protos__trace_packet__get_packed_size(p);
    if (len + 16 > pf->cap) {
        size_t want = pf->cap ? pf->cap : 4096;
        while (want < len + 16)
            want *= 2;
        uint8_t *more = realloc(pf->buf, want);
        if (!more) {
            pf->out_of_memory = true;
            pf->write_failed = true;
            pf->write_errno = ENOMEM;
            return;
        }
        pf->buf = more;
        pf->cap = want;
    }
    /* Trace.packet (field 1, length-delimited): tag, length, bytes. */
    uint8_t *q = pf->buf;
    *q++ = 0x0a;
    uint64_t v = len;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    size_t head = (size_t)(q - pf->buf);
    perfetto__protos__trace_packet__pack(p, q);
    if (fwrite(pf->buf, 1, head + len, pf->out) != head + len) {
        pf->write_failed = true;
        pf->write_errno = errno ? errno : EIO;
        return;
    }
    pf->bytes += head + len;
}

/* ---------------------------------------------------------------- definitions */

static OTF2_CallbackCode sm_pf_def_string(void *u, OTF2_StringRef self, const char *s)
{
    sm_pf_t *pf = u;
    char **slot = sm_pf_slot(pf, (void **)&pf->strings, &pf->n_strings, self, sizeof *slot);
    if (slot) {
        free(*slot);
        *slot = strdup(s ? s : "");
        if (!*slot)
            pf->out_of_memory = true;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_region(void *u, OTF2_RegionRef self, OTF2_StringRef name,
                                          OTF2_StringRef canonical, OTF2_StringRef desc,
                                          OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                          OTF2_RegionFlag flags, OTF2_StringRef file,
                                          uint32_t begin, uint32_t end)
{
    sm_pf_t *pf = u;
    (void)canonical, (void)desc, (void)role, (void)paradigm, (void)flags, (void)file,
        (void)begin, (void)end;
    uint32_t old = pf->n_regions;
    uint32_t *slot = sm_pf_slot(pf, (void **)&pf->region_name, &pf->n_regions, self, sizeof *slot);
    for (uint32_t i = old; i < pf->n_regions; i++)
        pf->region_name[i] = SM_PF_NONE;
    if (slot)
        *slot = name;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_attribute(void *u, OTF2_AttributeRef self, OTF2_StringRef name,
                                             OTF2_StringRef desc, OTF2_Type type)
{
    sm_pf_t *pf = u;
    (void)desc;
    sm_pf_attr_t *a = sm_pf_slot(pf, (void **)&pf->attrs, &pf->n_attrs, self, sizeof *a);
    if (a)
        *a = (sm_pf_attr_t){name, type, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_location(void *u, OTF2_LocationRef self, OTF2_StringRef name,
                                            OTF2_LocationType type, uint64_t n_events,
                                            OTF2_LocationGroupRef group)
{
    sm_pf_t *pf = u;
    if (pf->n_locs == pf->cap_locs) {
        uint32_t want = pf->cap_locs ? 2 * pf->cap_locs : 64;
        sm_pf_location_t *more = realloc(pf->locs, sizeof *more * want);
        if (!more) {
            pf->out_of_memory = true;
            return OTF2_CALLBACK_INTERRUPT;
        }
        pf->locs = more;
        pf->cap_locs = want;
    }
    pf->locs[pf->n_locs++] = (sm_pf_location_t){self, name, type, group, n_events};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_location_group(void *u, OTF2_LocationGroupRef self,
                                                  OTF2_StringRef name,
                                                  OTF2_LocationGroupType type,
                                                  OTF2_SystemTreeNodeRef parent,
                                                  OTF2_LocationGroupRef creator)
{
    sm_pf_t *pf = u;
    (void)parent;
    sm_pf_group_t *g = sm_pf_slot(pf, (void **)&pf->groups, &pf->n_groups, self, sizeof *g);
    if (g)
        *g = (sm_pf_group_t){name, type, creator, SM_PF_NONE, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_member(void *u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                                          OTF2_StringRef desc, OTF2_MetricType mtype,
                                          OTF2_MetricMode mode, OTF2_Type vtype, OTF2_Base base,
                                          int64_t exponent, OTF2_StringRef unit)
{
    sm_pf_t *pf = u;
    (void)desc, (void)mtype, (void)mode, (void)vtype, (void)base, (void)exponent;
    sm_pf_member_t *m = sm_pf_slot(pf, (void **)&pf->members, &pf->n_members, self, sizeof *m);
    if (m)
        *m = (sm_pf_member_t){name, unit, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_metric_class(void *u, OTF2_MetricRef self, uint8_t n,
                                                const OTF2_MetricMemberRef *members,
                                                OTF2_MetricOccurrence occ, OTF2_RecorderKind kind)
{
    sm_pf_t *pf = u;
    (void)occ, (void)kind;
    sm_pf_metric_t *m = sm_pf_slot(pf, (void **)&pf->metrics, &pf->n_metrics, self, sizeof *m);
    if (!m)
        return OTF2_CALLBACK_SUCCESS;
    free(m->members);
    m->members = malloc(sizeof *m->members * (n ? n : 1u));
    if (!m->members) {
        pf->out_of_memory = true;
        return OTF2_CALLBACK_INTERRUPT;
    }
    for (uint32_t i = 0; i < n; i++)
        m->members[i] = members[i];
    m->n = n;
    m->klass = SM_PF_NONE;
    m->defined = true;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_metric_instance(void *u, OTF2_MetricRef self,
                                                   OTF2_MetricRef klass, OTF2_LocationRef rec,
                                                   OTF2_MetricScope scope, uint64_t which)
{
    sm_pf_t *pf = u;
    (void)rec, (void)scope, (void)which;
    sm_pf_metric_t *m = sm_pf_slot(pf, (void **)&pf->metrics, &pf->n_metrics, self, sizeof *m);
    if (m) {
        m->klass = klass;
        m->defined = true;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_group(void *u, OTF2_GroupRef self, OTF2_StringRef name,
                                         OTF2_GroupType type, OTF2_Paradigm paradigm,
                                         OTF2_GroupFlag flags, uint32_t n, const uint64_t *members)
{
    sm_pf_t *pf = u;
    (void)name, (void)flags;
    sm_pf_ogroup_t *g = sm_pf_slot(pf, (void **)&pf->ogroups, &pf->n_ogroups, self, sizeof *g);
    if (!g)
        return OTF2_CALLBACK_SUCCESS;
    free(g->members);
    g->members = malloc(sizeof *g->members * (n ? n : 1u));
    if (!g->members) {
        pf->out_of_memory = true;
        return OTF2_CALLBACK_INTERRUPT;
    }
    if (n)
        memcpy(g->members, members, sizeof *members * n);
    g->n = n;
    g->type = type;
    g->paradigm = paradigm;
    g->defined = true;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_comm(void *u, OTF2_CommRef self, OTF2_StringRef name,
                                        OTF2_GroupRef group, OTF2_CommRef parent,
                                        OTF2_CommFlag flags)
{
    sm_pf_t *pf = u;
    (void)name, (void)parent, (void)flags;
    sm_pf_comm_t *c = sm_pf_slot(pf, (void **)&pf->comms, &pf->n_comms, self, sizeof *c);
    if (c)
        *c = (sm_pf_comm_t){group, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_clock(void *u, uint64_t resolution, uint64_t offset,
                                         uint64_t length, uint64_t realtime)
{
    sm_pf_t *pf = u;
    (void)length, (void)realtime;
    pf->resolution = resolution;
    pf->offset = offset;
    return OTF2_CALLBACK_SUCCESS;
}

/* The location with reference ref; SM_PF_NONE.  Locations come sorted by
 * reference from sysmeasure, so try a binary search first. */
static uint32_t sm_pf_find_location(const sm_pf_t *pf, uint64_t ref)
{
    uint32_t lo = 0, hi = pf->n_locs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pf->locs[mid].ref < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < pf->n_locs && pf->locs[lo].ref == ref)
        return lo;
    for (uint32_t i = 0; i < pf->n_locs; i++)
        if (pf->locs[i].ref == ref)
            return i;
    return SM_PF_NONE;
}

/* The process (index) of a location group: itself, or the process that
 * created it (an accelerator). */
static uint32_t sm_pf_group_proc(const sm_pf_t *pf, uint32_t g)
{
    for (int hops = 0; hops < 4 && g < pf->n_groups && pf->groups[g].defined; hops++) {
        if (pf->groups[g].proc != SM_PF_NONE)
            return pf->groups[g].proc;
        g = pf->groups[g].creator;
    }
    return SM_PF_NONE;
}

/* The process of rank `rank` of communicator `comm`, seen from process
 * `me`; SM_PF_NONE when the archive does not say. */
static uint32_t sm_pf_comm_peer(const sm_pf_t *pf, uint32_t comm, uint32_t rank, uint32_t me)
{
    if (comm >= pf->n_comms || !pf->comms[comm].defined)
        return SM_PF_NONE;
    uint32_t g = pf->comms[comm].group;
    if (g >= pf->n_ogroups || !pf->ogroups[g].defined)
        return SM_PF_NONE;
    const sm_pf_ogroup_t *grp = &pf->ogroups[g];
    if (grp->type == OTF2_GROUP_TYPE_COMM_SELF)
        return rank == 0 ? me : SM_PF_NONE;
    if (grp->type != OTF2_GROUP_TYPE_COMM_GROUP || rank >= grp->n)
        return SM_PF_NONE;
    uint64_t index = grp->members[rank];
    /* Its members index the locations group of its paradigm. */
    for (uint32_t i = 0; i < pf->n_ogroups; i++) {
        const sm_pf_ogroup_t *l = &pf->ogroups[i];
        if (!l->defined || l->type != OTF2_GROUP_TYPE_COMM_LOCATIONS ||
            l->paradigm != grp->paradigm)
            continue;
        if (index >= l->n)
            return SM_PF_NONE;
        uint32_t loc = sm_pf_find_location(pf, l->members[index]);
        return loc == SM_PF_NONE ? SM_PF_NONE : sm_pf_group_proc(pf, pf->locs[loc].group);
    }
    return SM_PF_NONE;
}

/* ---------------------------------------------------------------- track descriptors */

static void sm_pf_descriptor(sm_pf_t *pf, Perfetto__Protos__TrackDescriptor *td)
{
    sm_pf_packet_t p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.has_trusted_packet_sequence_id = 1;
    p.trusted_packet_sequence_id = 1;
    p.track_descriptor = td;
    sm_pf_emit(pf, &p);
    pf->stats.tracks++;
}

/* pid and tid shown for rank r and location i: distinct across the job
 * (real pids repeat across hosts). */
static int32_t sm_pf_pid(uint32_t proc)
{
    return (int32_t)(proc + 1u);
}
static int32_t sm_pf_tid(uint32_t loc)
{
    return (int32_t)((1u << 22) + (loc & 0x3fffffffu));
}

static void sm_pf_write_tracks(sm_pf_t *pf)
{
    char name[320];
    for (uint32_t g = 0; g < pf->n_groups; g++) {
        sm_pf_group_t *grp = &pf->groups[g];
        if (!grp->defined || grp->type == OTF2_LOCATION_GROUP_TYPE_ACCELERATOR)
            continue;
        Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
        Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
        const char *s = sm_pf_string(pf, grp->name);
        snprintf(name, sizeof name, "%s", s ? s : "process");
        td.has_uuid = 1;
        td.uuid = sm_pf_process_uuid(grp->proc);
        pd.has_pid = 1;
        pd.pid = sm_pf_pid(grp->proc);
        pd.process_name = name;
        td.process = &pd;
        sm_pf_descriptor(pf, &td);
    }
    for (uint32_t i = 0; i < pf->n_locs; i++) {
        const sm_pf_location_t *l = &pf->locs[i];
        uint32_t proc = sm_pf_group_proc(pf, l->group);
        const char *s = sm_pf_string(pf, l->name);
        Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
        Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
        td.has_uuid = 1;
        td.uuid = sm_pf_location_uuid(i);
        snprintf(name, sizeof name, "%s", s ? s : "location");
        if (l->type == OTF2_LOCATION_TYPE_CPU_THREAD && proc != SM_PF_NONE) {
            thd.has_pid = 1;
            thd.pid = sm_pf_pid(proc);
            thd.has_tid = 1;
            thd.tid = sm_pf_tid(i);
            thd.thread_name = name;
            td.thread = &thd;
        } else {
            /* GPU streams and metric locations: a track under the process. */
            td.name = name;
            if (proc != SM_PF_NONE) {
                td.has_parent_uuid = 1;
                td.parent_uuid = sm_pf_process_uuid(proc);
            }
        }
        sm_pf_descriptor(pf, &td);
    }
}

/* ---------------------------------------------------------------- events */

/* A packet of the current location's sequence. */
static void sm_pf_packet_init(sm_pf_t *pf, sm_pf_packet_t *p, uint64_t ts)
{
    perfetto__protos__trace_packet__init(p);
    p->has_timestamp = 1;
    p->timestamp = ts;
    p->has_trusted_packet_sequence_id = 1;
    p->trusted_packet_sequence_id = pf->seq;
    p->has_sequence_flags = 1;
    p->sequence_flags = 2; /* needs incremental state (names, the default track) */
}

/* The first packet of a location's sequence: clears the incremental state
 * and makes the location's track the default of its events (which saves
 * the track's 10 bytes in each of them). */
static void sm_pf_sequence_start(sm_pf_t *pf)
{
    sm_pf_packet_t p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
    Perfetto__Protos__TrackEventDefaults te = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
    te.has_track_uuid = 1;
    te.track_uuid = pf->track;
    d.track_event_defaults = &te;
    p.has_trusted_packet_sequence_id = 1;
    p.trusted_packet_sequence_id = pf->seq;
    p.has_sequence_flags = 1;
    p.sequence_flags = 1; /* incremental state cleared */
    p.trace_packet_defaults = &d;
    sm_pf_emit(pf, &p);
}

/* iids: regions 1.., our event names after them; attributes 1.., our
 * argument names after them. */
static uint64_t sm_pf_region_iid(uint32_t region)
{
    return (uint64_t)region + 1;
}
static uint64_t sm_pf_extra_iid(const sm_pf_t *pf, uint32_t k)
{
    return (uint64_t)pf->n_regions + 1 + k;
}
static uint64_t sm_pf_attr_iid(uint32_t attr)
{
    return (uint64_t)attr + 1;
}
static uint64_t sm_pf_extra_arg_iid(const sm_pf_t *pf, uint32_t k)
{
    return (uint64_t)pf->n_attrs + 1 + k;
}

/* Interned names a packet introduces (at most one event name and its
 * arguments' names). */
typedef struct {
    Perfetto__Protos__InternedData data;
    Perfetto__Protos__EventName ename, *enames[1];
    Perfetto__Protos__DebugAnnotationName anames[SM_PF_MAX_ARGS], *anp[SM_PF_MAX_ARGS];
    char fallback[32];
} sm_pf_intern_t;

static void sm_pf_intern_init(sm_pf_intern_t *in)
{
    perfetto__protos__interned_data__init(&in->data);
}

static void sm_pf_intern_event(sm_pf_t *pf, sm_pf_intern_t *in, uint64_t iid, const char *name)
{
    (void)pf;
    perfetto__protos__event_name__init(&in->ename);
    in->ename.has_iid = 1;
    in->ename.iid = iid;
    in->ename.name = (char *)name;
    in->enames[0] = &in->ename;
    in->data.event_names = in->enames;
    in->data.n_event_names = 1;
}

static void sm_pf_intern_arg(sm_pf_intern_t *in, uint64_t iid, const char *name)
{
    size_t k = in->data.n_debug_annotation_names;
    if (k >= SM_PF_MAX_ARGS)
        return;
    perfetto__protos__debug_annotation_name__init(&in->anames[k]);
    in->anames[k].has_iid = 1;
    in->anames[k].iid = iid;
    in->anames[k].name = (char *)name;
    in->anp[k] = &in->anames[k];
    in->data.debug_annotation_names = in->anp;
    in->data.n_debug_annotation_names = k + 1;
}

static const char *sm_pf_region_name(const sm_pf_t *pf, uint32_t region, char *buf, size_t len)
{
    const char *s = region < pf->n_regions ? sm_pf_string(pf, pf->region_name[region]) : NULL;
    if (s)
        return s;
    snprintf(buf, len, "region %u", (unsigned)region);
    return buf;
}

/* Fills args[] from vals[], interning names not yet sent on this sequence. */
static size_t sm_pf_fill_args(sm_pf_t *pf, sm_pf_intern_t *in, const sm_pf_argval_t *vals,
                              uint32_t n, sm_pf_arg_t *args, sm_pf_arg_t **argp)
{
    static char names[SM_PF_MAX_ARGS][24]; /* (the writer runs on one thread) */
    size_t k = 0;
    for (uint32_t i = 0; i < n && k < SM_PF_MAX_ARGS; i++) {
        const sm_pf_argval_t *a = &vals[i];
        sm_pf_arg_t *d = &args[k];
        perfetto__protos__debug_annotation__init(d);
        d->has_name_iid = 1;
        if (a->name_iid_kind == 0 && (a->name >= pf->n_attrs || !pf->attrs[a->name].defined)) {
            d->has_name_iid = 0; /* an attribute the definitions do not name */
            snprintf(names[k], sizeof names[k], "attribute %u", (unsigned)a->name);
            d->name = names[k];
        } else if (a->name_iid_kind == 0) {
            d->name_iid = sm_pf_attr_iid(a->name);
            if (!pf->attr_seen[a->name]) {
                const char *s = sm_pf_string(pf, pf->attrs[a->name].name);
                sm_pf_intern_arg(in, d->name_iid, s ? s : "attribute");
                pf->attr_seen[a->name] = 1;
            }
        } else {
            d->name_iid = sm_pf_extra_arg_iid(pf, a->name);
            if (!pf->extra_arg_seen[a->name]) {
                sm_pf_intern_arg(in, d->name_iid, sm_pf_arg_names[a->name]);
                pf->extra_arg_seen[a->name] = true;
            }
        }
        switch (a->type) {
        case OTF2_TYPE_INT8:
        case OTF2_TYPE_INT16:
        case OTF2_TYPE_INT32:
        case OTF2_TYPE_INT64:
            d->has_int_value = 1;
            d->int_value = a->type == OTF2_TYPE_INT64   ? a->v.int64
                           : a->type == OTF2_TYPE_INT32 ? a->v.int32
                           : a->type == OTF2_TYPE_INT16 ? a->v.int16
                                                        : a->v.int8;
            break;
        case OTF2_TYPE_UINT8:
        case OTF2_TYPE_UINT16:
        case OTF2_TYPE_UINT32:
        case OTF2_TYPE_UINT64:
            d->has_uint_value = 1;
            d->uint_value = a->type == OTF2_TYPE_UINT64   ? a->v.uint64
                            : a->type == OTF2_TYPE_UINT32 ? a->v.uint32
                            : a->type == OTF2_TYPE_UINT16 ? a->v.uint16
                                                          : a->v.uint8;
            break;
        case OTF2_TYPE_FLOAT:
        case OTF2_TYPE_DOUBLE:
            d->has_double_value = 1;
            d->double_value = a->type == OTF2_TYPE_DOUBLE ? a->v.float64 : a->v.float32;
            break;
        case OTF2_TYPE_STRING: {
            const char *s = sm_pf_string(pf, a->v.stringRef);
            d->string_value = (char *)(s ? s : "");
            break;
        }
        default: /* references to other definitions: their number */
            d->has_uint_value = 1;
            d->uint_value = a->v.uint64;
            break;
        }
        argp[k] = d;
        k++;
    }
    return k;
}

/* Writes a slice begin (or an instant) with name iid, arguments and flows. */
static void sm_pf_write_event(sm_pf_t *pf, uint64_t ts, int type, bool is_region, uint32_t name,
                              const sm_pf_argval_t *vals, uint32_t n_vals, const uint64_t *flows,
                              uint32_t n_flows, const uint64_t *ends, uint32_t n_ends)
{
    sm_pf_packet_t p;
    sm_pf_event_t e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    sm_pf_intern_t in;
    sm_pf_arg_t args[SM_PF_MAX_ARGS], *argp[SM_PF_MAX_ARGS];
    char buf[32];
    sm_pf_packet_init(pf, &p, ts);
    sm_pf_intern_init(&in);
    e.has_type = 1;
    e.type = (Perfetto__Protos__TrackEvent__Type)type;
    e.has_name_iid = 1;
    if (is_region) {
        e.name_iid = sm_pf_region_iid(name);
        if (name < pf->n_regions && !pf->region_seen[name]) {
            sm_pf_intern_event(pf, &in, e.name_iid, sm_pf_region_name(pf, name, buf, sizeof buf));
            pf->region_seen[name] = 1;
        } else if (name >= pf->n_regions) {
            /* a region the definitions do not name: by its number */
            e.has_name_iid = 0;
            e.name = (char *)sm_pf_region_name(pf, name, buf, sizeof buf);
        }
    } else {
        e.name_iid = sm_pf_extra_iid(pf, name);
        if (!pf->extra_seen[name]) {
            sm_pf_intern_event(pf, &in, e.name_iid, sm_pf_event_names[name]);
            pf->extra_seen[name] = true;
        }
    }
    e.n_debug_annotations = sm_pf_fill_args(pf, &in, vals, n_vals, args, argp);
    e.debug_annotations = argp;
    e.n_flow_ids = n_flows;
    e.flow_ids = (uint64_t *)flows;
    e.n_terminating_flow_ids = n_ends;
    e.terminating_flow_ids = (uint64_t *)ends;
    if (in.data.n_event_names || in.data.n_debug_annotation_names)
        p.interned_data = &in.data;
    p.track_event = &e;
    sm_pf_emit(pf, &p);
    if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
        pf->stats.slices++;
    else
        pf->stats.instants++;
    pf->stats.flows_begun += n_flows;
    pf->stats.flows_ended += n_ends;
}

static void sm_pf_flush_pending(sm_pf_t *pf)
{
    sm_pf_pending_t *q = &pf->pending;
    if (!q->active)
        return;
    q->active = false;
    sm_pf_write_event(pf, q->ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, true,
                      q->region, q->args, q->n_args, q->flows, q->n_flows, q->ends, q->n_ends);
}

/* A slice end; a Leave's attributes (annotations given at pop) become
 * arguments of the slice too. */
static void sm_pf_write_end(sm_pf_t *pf, uint64_t ts, const sm_pf_argval_t *vals, uint32_t n_vals)
{
    sm_pf_packet_t p;
    sm_pf_event_t e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    sm_pf_intern_t in;
    sm_pf_arg_t args[SM_PF_MAX_ARGS], *argp[SM_PF_MAX_ARGS];
    sm_pf_packet_init(pf, &p, ts);
    sm_pf_intern_init(&in);
    e.has_type = 1;
    e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
    if (n_vals) {
        e.n_debug_annotations = sm_pf_fill_args(pf, &in, vals, n_vals, args, argp);
        e.debug_annotations = argp;
        if (in.data.n_debug_annotation_names)
            p.interned_data = &in.data;
    }
    p.track_event = &e;
    sm_pf_emit(pf, &p);
}

static void sm_pf_add_arg(sm_pf_pending_t *q, uint32_t kind, uint32_t name, uint32_t type,
                          OTF2_AttributeValue v)
{
    if (q->n_args < SM_PF_MAX_ARGS)
        q->args[q->n_args++] = (sm_pf_argval_t){kind, name, type, v};
}

static OTF2_CallbackCode sm_pf_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                     void *u, OTF2_AttributeList *al, OTF2_RegionRef region)
{
    sm_pf_t *pf = u;
    (void)loc, (void)pos;
    pf->stats.events++;
    sm_pf_flush_pending(pf);
    sm_pf_pending_t *q = &pf->pending;
    q->active = true;
    q->ts = sm_pf_ns(pf, t);
    q->region = region;
    q->n_args = q->n_flows = q->n_ends = 0;
    uint32_t n = al ? OTF2_AttributeList_GetNumberOfElements(al) : 0;
    for (uint32_t i = 0; i < n; i++) {
        OTF2_AttributeRef a;
        OTF2_Type type;
        OTF2_AttributeValue v;
        if (OTF2_AttributeList_GetAttributeByIndex(al, i, &a, &type, &v) != OTF2_SUCCESS)
            continue;
        sm_pf_add_arg(q, 0, a, type, v);
        /* GPU launches: the API call starts a flow, the device work ends
         * it (by correlation id, within one process). */
        if (a == pf->corr_attr && pf->proc != SM_PF_NONE &&
            (type == OTF2_TYPE_INT64 || type == OTF2_TYPE_UINT64) && v.uint64) {
            uint64_t id = sm_pf_mix(sm_pf_mix(0x6770750000000000ull ^ pf->proc) ^ v.uint64);
            if (pf->locs[pf->loc].type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM) {
                if (q->n_ends < 4)
                    q->ends[q->n_ends++] = id;
            } else if (q->n_flows < 4) {
                q->flows[q->n_flows++] = id;
            }
        }
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                     void *u, OTF2_AttributeList *al, OTF2_RegionRef region)
{
    sm_pf_t *pf = u;
    (void)loc, (void)pos, (void)region;
    pf->stats.events++;
    sm_pf_flush_pending(pf);
    sm_pf_argval_t vals[SM_PF_MAX_ARGS];
    uint32_t n = al ? OTF2_AttributeList_GetNumberOfElements(al) : 0, k = 0;
    for (uint32_t i = 0; i < n && k < SM_PF_MAX_ARGS; i++) {
        OTF2_AttributeRef a;
        OTF2_Type type;
        OTF2_AttributeValue v;
        if (OTF2_AttributeList_GetAttributeByIndex(al, i, &a, &type, &v) == OTF2_SUCCESS)
            vals[k++] = (sm_pf_argval_t){0, a, type, v};
    }
    sm_pf_write_end(pf, sm_pf_ns(pf, t), vals, k);
    return OTF2_CALLBACK_SUCCESS;
}

/* The number of earlier messages on a channel (seen from one side), and
 * one more. */
static uint64_t sm_pf_channel_next(sm_pf_t *pf, uint64_t a, uint64_t b)
{
    if (pf->n_channels * 2 >= pf->cap_channels) {
        uint64_t cap = pf->cap_channels ? pf->cap_channels * 2 : 1024;
        sm_pf_channel_t *t = calloc(cap, sizeof *t);
        if (!t) {
            pf->out_of_memory = true;
            return 0;
        }
        for (uint64_t i = 0; i < pf->cap_channels; i++) {
            sm_pf_channel_t *c = &pf->channels[i];
            if (!c->key_a)
                continue;
            uint64_t h = sm_pf_mix(c->key_a ^ sm_pf_mix(c->key_b)) & (cap - 1);
            while (t[h].key_a)
                h = (h + 1) & (cap - 1);
            t[h] = *c;
        }
        free(pf->channels);
        pf->channels = t;
        pf->cap_channels = cap;
    }
    uint64_t h = sm_pf_mix(a ^ sm_pf_mix(b)) & (pf->cap_channels - 1);
    while (pf->channels[h].key_a && (pf->channels[h].key_a != a || pf->channels[h].key_b != b))
        h = (h + 1) & (pf->cap_channels - 1);
    sm_pf_channel_t *c = &pf->channels[h];
    if (!c->key_a) {
        c->key_a = a;
        c->key_b = b;
        pf->n_channels++;
    }
    return c->count++;
}

/* A message's flow id: the n-th message from `from` to `to` on comm with
 * tag (both sides count their own events of that channel). */
static uint64_t sm_pf_message_flow(sm_pf_t *pf, bool send, uint32_t from, uint32_t to,
                                   uint32_t comm, uint32_t tag)
{
    /* key_a: direction bit, comm, tag (never 0); key_b: the two processes */
    uint64_t a = (1ull << 63) | ((uint64_t)send << 62) | ((uint64_t)(comm & 0x3fffffffu) << 32) | tag;
    uint64_t b = ((uint64_t)from << 32) | to;
    uint64_t n = sm_pf_channel_next(pf, a, b);
    return sm_pf_mix(sm_pf_mix(sm_pf_mix(((uint64_t)comm << 32) | tag) ^ b) ^ n) | 1u;
}

static void sm_pf_message(sm_pf_t *pf, OTF2_TimeStamp t, bool send, uint32_t peer_rank,
                          OTF2_CommRef comm, uint32_t tag, uint64_t len)
{
    pf->stats.events++;
    uint32_t peer = sm_pf_comm_peer(pf, comm, peer_rank, pf->proc);
    sm_pf_argval_t vals[4];
    uint32_t n = 0;
    vals[n++] = (sm_pf_argval_t){1, send ? SM_PF_ARG_PEER_TO : SM_PF_ARG_PEER_FROM,
                                 OTF2_TYPE_UINT32, {.uint32 = peer_rank}};
    vals[n++] = (sm_pf_argval_t){1, SM_PF_ARG_TAG, OTF2_TYPE_UINT32, {.uint32 = tag}};
    vals[n++] = (sm_pf_argval_t){1, SM_PF_ARG_BYTES, OTF2_TYPE_UINT64, {.uint64 = len}};
    vals[n++] = (sm_pf_argval_t){1, SM_PF_ARG_COMM, OTF2_TYPE_UINT32, {.uint32 = comm}};
    uint64_t id = 0;
    if (peer != SM_PF_NONE && pf->proc != SM_PF_NONE)
        id = send ? sm_pf_message_flow(pf, true, pf->proc, peer, comm, tag)
                  : sm_pf_message_flow(pf, false, peer, pf->proc, comm, tag);
    sm_pf_pending_t *q = &pf->pending;
    if (send && q->active && q->n_flows < 4) {
        /* The send's flow starts at the MPI call around it. */
        for (uint32_t i = 0; i < n; i++)
            sm_pf_add_arg(q, vals[i].name_iid_kind, vals[i].name, vals[i].type, vals[i].v);
        if (id)
            q->flows[q->n_flows++] = id;
        return;
    }
    /* A receive ends its flow where it completes (after the send began);
     * a send outside any region starts it at an instant. */
    sm_pf_flush_pending(pf);
    sm_pf_write_event(pf, sm_pf_ns(pf, t), PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, false,
                      send ? SM_PF_NAME_SENT : SM_PF_NAME_RECEIVED, vals, n, send && id ? &id : NULL,
                      send && id ? 1 : 0, !send && id ? &id : NULL, !send && id ? 1 : 0);
}

static OTF2_CallbackCode sm_pf_send(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *u,
                                    OTF2_AttributeList *al, uint32_t to, OTF2_CommRef comm,
                                    uint32_t tag, uint64_t len)
{
    (void)loc, (void)pos, (void)al;
    sm_pf_message(u, t, true, to, comm, tag, len);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_isend(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                     void *u, OTF2_AttributeList *al, uint32_t to,
                                     OTF2_CommRef comm, uint32_t tag, uint64_t len, uint64_t req)
{
    (void)loc, (void)pos, (void)al, (void)req;
    sm_pf_message(u, t, true, to, comm, tag, len);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_recv(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *u,
                                    OTF2_AttributeList *al, uint32_t from, OTF2_CommRef comm,
                                    uint32_t tag, uint64_t len)
{
    (void)loc, (void)pos, (void)al;
    sm_pf_message(u, t, false, from, comm, tag, len);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_irecv(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                     void *u, OTF2_AttributeList *al, uint32_t from,
                                     OTF2_CommRef comm, uint32_t tag, uint64_t len, uint64_t req)
{
    (void)loc, (void)pos, (void)al, (void)req;
    sm_pf_message(u, t, false, from, comm, tag, len);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_metric(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                      void *u, OTF2_AttributeList *al, OTF2_MetricRef metric,
                                      uint8_t n, const OTF2_Type *types,
                                      const OTF2_MetricValue *values)
{
    sm_pf_t *pf = u;
    (void)loc, (void)pos, (void)al;
    pf->stats.events++;
    /* (a pending Enter stays pending: counters are tracks of their own, and
     * PAPI values right after an Enter must not keep a send's flow off it) */
    const sm_pf_metric_t *m = metric < pf->n_metrics ? &pf->metrics[metric] : NULL;
    if (m && m->defined && m->klass != SM_PF_NONE)
        m = m->klass < pf->n_metrics ? &pf->metrics[m->klass] : NULL;
    if (!m || !m->defined || !m->members)
        return OTF2_CALLBACK_SUCCESS; /* (an undefined metric: nothing to name it by) */
    uint64_t ts = sm_pf_ns(pf, t);
    for (uint32_t i = 0; i < n && i < m->n; i++) {
        uint32_t member = m->members[i];
        if (member >= pf->n_members || !pf->members[member].defined)
            continue;
        uint64_t uuid = sm_pf_counter_uuid(pf->loc, member);
        if (!pf->member_seen[member]) {
            /* The counter's track, under the location's, before its first value. */
            Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
            Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
            const char *s = sm_pf_string(pf, pf->members[member].name);
            const char *unit = sm_pf_string(pf, pf->members[member].unit);
            td.has_uuid = 1;
            td.uuid = uuid;
            td.has_parent_uuid = 1;
            td.parent_uuid = pf->track;
            td.name = (char *)(s ? s : "metric");
            if (unit && (!strcmp(unit, "bytes") || !strcmp(unit, "B"))) {
                cd.has_unit = 1;
                cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
            } else if (unit && !strcmp(unit, "ns")) {
                cd.has_unit = 1;
                cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_TIME_NS;
            }
            td.counter = &cd;
            sm_pf_descriptor(pf, &td);
            pf->member_seen[member] = 1;
        }
        sm_pf_packet_t p;
        sm_pf_event_t e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
        sm_pf_packet_init(pf, &p, ts);
        e.has_type = 1;
        e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        e.has_track_uuid = 1;
        e.track_uuid = uuid;
        switch (types[i]) {
        case OTF2_TYPE_DOUBLE:
            e.has_double_counter_value = 1;
            e.double_counter_value = values[i].floating_point;
            break;
        case OTF2_TYPE_UINT64:
            e.has_counter_value = 1;
            e.counter_value = (int64_t)values[i].unsigned_int;
            break;
        default:
            e.has_counter_value = 1;
            e.counter_value = values[i].signed_int;
            break;
        }
        p.track_event = &e;
        sm_pf_emit(pf, &p);
        pf->stats.counter_values++;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_flush_event(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                           void *u, OTF2_AttributeList *al, OTF2_TimeStamp stop)
{
    sm_pf_t *pf = u;
    (void)loc, (void)pos, (void)al;
    pf->stats.events++;
    sm_pf_flush_pending(pf);
    sm_pf_argval_t v = {1, SM_PF_ARG_FLUSH_NS, OTF2_TYPE_UINT64,
                        {.uint64 = sm_pf_ns(pf, stop) - sm_pf_ns(pf, t)}};
    sm_pf_write_event(pf, sm_pf_ns(pf, t), PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, false,
                      SM_PF_NAME_FLUSH, &v, 1, NULL, 0, NULL, 0);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_on_off(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                      void *u, OTF2_AttributeList *al, OTF2_MeasurementMode mode)
{
    sm_pf_t *pf = u;
    (void)loc, (void)pos, (void)al;
    pf->stats.events++;
    sm_pf_flush_pending(pf);
    sm_pf_write_event(pf, sm_pf_ns(pf, t), PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, false,
                      mode == OTF2_MEASUREMENT_ON ? SM_PF_NAME_MEASUREMENT_ON
                                                  : SM_PF_NAME_MEASUREMENT_OFF,
                      NULL, 0, NULL, 0, NULL, 0);
    return OTF2_CALLBACK_SUCCESS;
}

/* Events we do not show (OpenMP team and task events, collectives' own
 * records, samples): counted, so that the totals still add up. */
static OTF2_CallbackCode sm_pf_other(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                     void *u, OTF2_AttributeList *al)
{
    (void)loc, (void)t, (void)pos, (void)al;
    ((sm_pf_t *)u)->stats.events++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_unknown(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,
                                       void *u, OTF2_AttributeList *al)
{
    return sm_pf_other(loc, t, pos, u, al);
}

/* ---------------------------------------------------------------- errors */

typedef struct {
    OTF2_ErrorCode code;
    char message[256];
} sm_pf_error_t;

static OTF2_ErrorCode sm_pf_error_callback(void *user, const char *file, uint64_t line,
                                           const char *function, OTF2_ErrorCode code,
                                           const char *fmt, va_list va)
{
    sm_pf_error_t *e = user;
    (void)file, (void)line, (void)function;
    if (e && e->code == OTF2_SUCCESS && code != OTF2_WARNING && code != OTF2_DEPRECATED) {
        e->code = code;
        e->message[0] = '\0';
        if (fmt)
            vsnprintf(e->message, sizeof e->message, fmt, va);
    }
    return code;
}

/* ---------------------------------------------------------------- driver */

static void sm_pf_free(sm_pf_t *pf)
{
    for (uint32_t i = 0; i < pf->n_strings; i++)
        free(pf->strings[i]);
    free(pf->strings);
    free(pf->region_name);
    free(pf->attrs);
    free(pf->locs);
    free(pf->groups);
    free(pf->members);
    for (uint32_t i = 0; i < pf->n_metrics; i++)
        free(pf->metrics[i].members);
    free(pf->metrics);
    for (uint32_t i = 0; i < pf->n_ogroups; i++)
        free(pf->ogroups[i].members);
    free(pf->ogroups);
    free(pf->comms);
    free(pf->region_seen);
    free(pf->attr_seen);
    free(pf->member_seen);
    free(pf->channels);
    free(pf->buf);
}

static bool sm_pf_read_defs(sm_pf_t *pf, OTF2_Reader *r)
{
    OTF2_GlobalDefReader *g = OTF2_Reader_GetGlobalDefReader(r);
    if (!g)
        return false;
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    if (!cb) {
        pf->out_of_memory = true;
        return false;
    }
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, sm_pf_def_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, sm_pf_def_region);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, sm_pf_def_attribute);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, sm_pf_def_location);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, sm_pf_def_location_group);
    OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(cb, sm_pf_def_member);
    OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(cb, sm_pf_def_metric_class);
    OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(cb, sm_pf_def_metric_instance);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, sm_pf_def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, sm_pf_def_comm);
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, sm_pf_def_clock);
    OTF2_ErrorCode rc = OTF2_Reader_RegisterGlobalDefCallbacks(r, g, cb, pf);
    uint64_t n = 0;
    if (rc == OTF2_SUCCESS)
        rc = OTF2_Reader_ReadAllGlobalDefinitions(r, g, &n);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    OTF2_Reader_CloseGlobalDefReader(r, g);
    return rc == OTF2_SUCCESS && !pf->out_of_memory && !pf->damaged_defs;
}

/* Numbers the processes (location groups of type process, by reference)
 * and finds the correlation-id attribute. */
static void sm_pf_index(sm_pf_t *pf)
{
    pf->n_procs = 0;
    for (uint32_t g = 0; g < pf->n_groups; g++)
        if (pf->groups[g].defined && pf->groups[g].type != OTF2_LOCATION_GROUP_TYPE_ACCELERATOR)
            pf->groups[g].proc = pf->n_procs++;
    pf->corr_attr = SM_PF_NONE;
    for (uint32_t a = 0; a < pf->n_attrs; a++) {
        const char *s = pf->attrs[a].defined ? sm_pf_string(pf, pf->attrs[a].name) : NULL;
        if (s && !strcmp(s, "correlation id"))
            pf->corr_attr = a;
    }
}

static bool sm_pf_read_location(sm_pf_t *pf, OTF2_Reader *r, OTF2_EvtReaderCallbacks *cb,
                                uint32_t i)
{
    pf->loc = i;
    pf->proc = sm_pf_group_proc(pf, pf->locs[i].group);
    pf->track = sm_pf_location_uuid(i);
    pf->seq = i + 2;
    memset(pf->region_seen, 0, pf->n_regions ? pf->n_regions : 1);
    memset(pf->attr_seen, 0, pf->n_attrs ? pf->n_attrs : 1);
    memset(pf->member_seen, 0, pf->n_members ? pf->n_members : 1);
    memset(pf->extra_seen, 0, sizeof pf->extra_seen);
    memset(pf->extra_arg_seen, 0, sizeof pf->extra_arg_seen);
    pf->pending.active = false;
    sm_pf_sequence_start(pf);
    if (!pf->locs[i].n_events)
        return true;
    OTF2_EvtReader *e = OTF2_Reader_GetEvtReader(r, pf->locs[i].ref);
    if (!e)
        return false;
    OTF2_ErrorCode rc = OTF2_Reader_RegisterEvtCallbacks(r, e, cb, pf);
    uint64_t n = 0;
    if (rc == OTF2_SUCCESS)
        rc = OTF2_Reader_ReadAllLocalEvents(r, e, &n);
    sm_pf_flush_pending(pf);
    OTF2_Reader_CloseEvtReader(r, e);
    return rc == OTF2_SUCCESS && !pf->out_of_memory;
}

static OTF2_EvtReaderCallbacks *sm_pf_event_callbacks(void)
{
    OTF2_EvtReaderCallbacks *cb = OTF2_EvtReaderCallbacks_New();
    if (!cb)
        return NULL;
    OTF2_EvtReaderCallbacks_SetUnknownCallback(cb, sm_pf_unknown);
    OTF2_EvtReaderCallbacks_SetEnterCallback(cb, sm_pf_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, sm_pf_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, sm_pf_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, sm_pf_isend);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, sm_pf_recv);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, sm_pf_irecv);
    OTF2_EvtReaderCallbacks_SetMetricCallback(cb, sm_pf_metric);
    OTF2_EvtReaderCallbacks_SetBufferFlushCallback(cb, sm_pf_flush_event);
    OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(cb, sm_pf_on_off);
    return cb;
}

/* The plugin's one entry (perfetto_loader.c finds it with dlsym). */
SM_EXPORT int sysmeasure_perfetto_convert(const char *dir, sm_perfetto_stats_t *stats, char *err,
                                          size_t errlen)
{
    char anchor[4200], path[4200], tmp[4300];
    snprintf(anchor, sizeof anchor, "%s/traces.otf2", dir);
    snprintf(path, sizeof path, "%s/trace.pftrace", dir);
    snprintf(tmp, sizeof tmp, "%s/.trace.pftrace.%ld.tmp", dir, (long)getpid());
    struct stat st;
    if (stat(anchor, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s holds no OTF2 archive (traces.otf2): not a sysmeasure output "
                 "folder with a trace", dir);
        return SM_PERFETTO_NOT_OUTPUT;
    }

    sm_pf_error_t reported = {OTF2_SUCCESS, ""};
    OTF2_ErrorCallback previous = OTF2_Error_RegisterCallback(sm_pf_error_callback, &reported);
    sm_pf_t pf;
    memset(&pf, 0, sizeof pf);
    int result = SM_PERFETTO_NOT_OUTPUT;
    const char *damage = NULL;
    OTF2_Reader *r = OTF2_Reader_Open(anchor);
    OTF2_EvtReaderCallbacks *cb = NULL;
    if (!r || OTF2_Reader_SetSerialCollectiveCallbacks(r) != OTF2_SUCCESS) {
        damage = "its anchor file cannot be read";
        goto done;
    }
    if (!sm_pf_read_defs(&pf, r)) {
        damage = pf.out_of_memory ? NULL : "its definitions are damaged";
        goto done;
    }
    sm_pf_index(&pf);
    pf.region_seen = calloc(pf.n_regions ? pf.n_regions : 1, 1);
    pf.attr_seen = calloc(pf.n_attrs ? pf.n_attrs : 1, 1);
    pf.member_seen = calloc(pf.n_members ? pf.n_members : 1, 1);
    cb = sm_pf_event_callbacks();
    if (!pf.region_seen || !pf.attr_seen || !pf.member_seen || !cb) {
        pf.out_of_memory = true;
        goto done;
    }
    for (uint32_t i = 0; i < pf.n_locs; i++)
        OTF2_Reader_SelectLocation(r, pf.locs[i].ref);
    /* Local definitions (mapping tables), where an archive has them. */
    if (OTF2_Reader_OpenDefFiles(r) == OTF2_SUCCESS) {
        for (uint32_t i = 0; i < pf.n_locs; i++) {
            OTF2_DefReader *d = OTF2_Reader_GetDefReader(r, pf.locs[i].ref);
            if (d) {
                uint64_t n = 0;
                OTF2_Reader_ReadAllLocalDefinitions(r, d, &n);
                OTF2_Reader_CloseDefReader(r, d);
            }
        }
        OTF2_Reader_CloseDefFiles(r);
    }
    reported.code = OTF2_SUCCESS; /* (a missing local definition file is no damage) */
    if (OTF2_Reader_OpenEvtFiles(r) != OTF2_SUCCESS) {
        damage = "its event files cannot be opened";
        goto done;
    }

    pf.out = fopen(tmp, "wb");
    if (!pf.out) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        result = -1;
        goto done;
    }
    setvbuf(pf.out, NULL, _IOFBF, 1u << 20);
    errno = 0;
    sm_pf_write_tracks(&pf);
    for (uint32_t i = 0; i < pf.n_locs && !pf.write_failed; i++)
        if (!sm_pf_read_location(&pf, r, cb, i)) {
            if (!pf.out_of_memory)
                damage = "the events of a location are damaged";
            break;
        }
    OTF2_Reader_CloseEvtFiles(r);
    if (damage || pf.out_of_memory)
        goto done;
    if (fflush(pf.out) != 0 && !pf.write_failed) {
        pf.write_failed = true;
        pf.write_errno = errno;
    }
    if (fclose(pf.out) != 0 && !pf.write_failed) {
        pf.write_failed = true;
        pf.write_errno = errno;
    }
    pf.out = NULL;
    if (pf.write_failed) {
        sm_error("writing %s failed: %s", path, strerror(pf.write_errno));
        result = -1;
        goto done;
    }
    if (rename(tmp, path) != 0) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        result = -1;
        goto done;
    }
    pf.stats.bytes = pf.bytes;
    if (stats)
        *stats = pf.stats;
    result = 0;
done:
    if (result != 0 && pf.out_of_memory) {
        sm_error("writing %s failed: out of memory", path);
        result = -1;
    } else if (result == SM_PERFETTO_NOT_OUTPUT) {
        if (reported.code != OTF2_SUCCESS && reported.message[0])
            snprintf(err, errlen, "the OTF2 archive %s is damaged: %s (%s)", anchor,
                     damage ? damage : "it cannot be read", reported.message);
        else
            snprintf(err, errlen, "the OTF2 archive %s is damaged: %s", anchor,
                     damage ? damage : "it cannot be read");
    }
    if (pf.out)
        fclose(pf.out);
    if (result != 0)
        unlink(tmp);
    if (cb)
        OTF2_EvtReaderCallbacks_Delete(cb);
    if (r)
        OTF2_Reader_Close(r);
    OTF2_Error_RegisterCallback(previous, NULL);
    sm_pf_free(&pf);
    return result;
}

