/* The Perfetto writer, in parts (src/writers/perfetto/): trace.pftrace
 * from traces.otf2 (see ../perfetto.h), the plugin
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
 * in the archive's order, which is time order.
 *
 *   convert.c      the plugin's entry: the archive opened, its locations
 *                  read one after another, the file written and renamed
 *   definitions.c  the archive's global definitions, and what they say
 *                  (a location's process, a communicator rank's process)
 *   packets.c      a packet written; track descriptors; a location's
 *                  sequence, its interned names and its slices
 *   events.c       OTF2's event callbacks: regions, messages and their
 *                  flows, GPU flows, counters
 *
 * This header is what they share; the rest of the tree uses ../perfetto.h. */
#ifndef SM_PERFETTO_INTERNAL_H
#define SM_PERFETTO_INTERNAL_H

#include "sm_build.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <otf2/otf2.h>

#include "../perfetto.h"
#include "src/writers/perfetto_trace.pb-c.h"

typedef Perfetto__Protos__TracePacket sm_pf_packet_t;
typedef Perfetto__Protos__TrackEvent sm_pf_event_t;
typedef Perfetto__Protos__DebugAnnotation sm_pf_arg_t;

/* No such definition, process or location. */
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
enum { SM_PF_ARG_PEER_TO, SM_PF_ARG_PEER_FROM, SM_PF_ARG_TAG, SM_PF_ARG_BYTES, SM_PF_ARG_COMM,
       SM_PF_ARG_FLUSH_NS, SM_PF_N_ARG_NAMES };

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

static inline const char *sm_pf_string(const sm_pf_t *pf, uint32_t ref)
{
    return ref < pf->n_strings && pf->strings[ref] ? pf->strings[ref] : NULL;
}

/* Track uuids: processes, locations, counters (nonzero, distinct). */
static inline uint64_t sm_pf_process_uuid(uint32_t proc)
{
    return 0x1000000000000ull + proc;
}
static inline uint64_t sm_pf_location_uuid(uint32_t loc)
{
    return 0x2000000000000ull + loc;
}
static inline uint64_t sm_pf_counter_uuid(uint32_t loc, uint32_t member)
{
    return 0x3000000000000ull + ((uint64_t)loc << 24) + member;
}

/* ---------------------------------------------------------------- definitions.c */

bool sm_pf_read_defs(sm_pf_t *pf, OTF2_Reader *r) SM_HIDDEN;
void sm_pf_index(sm_pf_t *pf) SM_HIDDEN;
uint32_t sm_pf_group_proc(const sm_pf_t *pf, uint32_t g) SM_HIDDEN;
uint32_t sm_pf_comm_peer(const sm_pf_t *pf, uint32_t comm, uint32_t rank, uint32_t me) SM_HIDDEN;

/* ---------------------------------------------------------------- packets.c */

void sm_pf_emit(sm_pf_t *pf, sm_pf_packet_t *p) SM_HIDDEN;
void sm_pf_descriptor(sm_pf_t *pf, Perfetto__Protos__TrackDescriptor *td) SM_HIDDEN;
void sm_pf_write_tracks(sm_pf_t *pf) SM_HIDDEN;
void sm_pf_packet_init(sm_pf_t *pf, sm_pf_packet_t *p, uint64_t ts) SM_HIDDEN;
void sm_pf_sequence_start(sm_pf_t *pf) SM_HIDDEN;
void sm_pf_write_event(sm_pf_t *pf, uint64_t ts, int type, bool is_region, uint32_t name,
                       const sm_pf_argval_t *vals, uint32_t n_vals, const uint64_t *flows,
                       uint32_t n_flows, const uint64_t *ends, uint32_t n_ends) SM_HIDDEN;
void sm_pf_flush_pending(sm_pf_t *pf) SM_HIDDEN;
void sm_pf_write_end(sm_pf_t *pf, uint64_t ts, const sm_pf_argval_t *vals,
                     uint32_t n_vals) SM_HIDDEN;

/* ---------------------------------------------------------------- events.c */

OTF2_EvtReaderCallbacks *sm_pf_event_callbacks(void) SM_HIDDEN;

#endif
