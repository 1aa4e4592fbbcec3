/* The Perfetto writer's packets: one packet packed and written, the track
 * descriptors, and a location's sequence (its first packet, the names it
 * interns, its slices begun and ended). */
#include "sm_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_internal.h"

/* The names of SM_PF_NAME_* and SM_PF_ARG_* (perfetto_internal.h). */
static const char *const sm_pf_event_names[SM_PF_N_EVENT_NAMES] = {
    "MPI message sent", "MPI message received", "sysmeasure buffer flush",
    "measurement off", "measurement on"};
static const char *const sm_pf_arg_names[SM_PF_N_ARG_NAMES] = {
    "to rank", "from rank", "tag", "bytes", "communicator", "flush duration (ns)"};

/* ---------------------------------------------------------------- output */

void sm_pf_emit(sm_pf_t *pf, sm_pf_packet_t *p)
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

/* ---------------------------------------------------------------- track descriptors */

void sm_pf_descriptor(sm_pf_t *pf, Perfetto__Protos__TrackDescriptor *td)
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

void sm_pf_write_tracks(sm_pf_t *pf)
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

/* ---------------------------------------------------------------- a location's sequence */

/* A packet of the current location's sequence. */
void sm_pf_packet_init(sm_pf_t *pf, sm_pf_packet_t *p, uint64_t ts)
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
void sm_pf_sequence_start(sm_pf_t *pf)
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
void sm_pf_write_event(sm_pf_t *pf, uint64_t ts, int type, bool is_region, uint32_t name,
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

void sm_pf_flush_pending(sm_pf_t *pf)
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
void sm_pf_write_end(sm_pf_t *pf, uint64_t ts, const sm_pf_argval_t *vals, uint32_t n_vals)
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
