/* The Perfetto writer's events: OTF2's event callbacks for one location,
 * which turn region visits into slices, messages into instants or
 * arguments of their MPI call with a flow from send to receive, GPU
 * launches into flows by correlation id, and metric values into counter
 * tracks. */
#include "sm_build.h"

#include <stdlib.h>
#include <string.h>

#include "perfetto_internal.h"

static uint64_t sm_pf_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
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

/* ---------------------------------------------------------------- events */

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

/* OTF2's callbacks of one direction (sending or receiving), blocking and
 * immediate: the same message (an immediate send is drawn where it is
 * posted, an immediate receive where it completes, as OTF2 records them;
 * the request id adds nothing). */
#define SM_PF_P2P_CALLBACKS(dir, is_send)                                                      \
    static OTF2_CallbackCode sm_pf_##dir(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos,  \
                                         void *u, OTF2_AttributeList *al, uint32_t peer,        \
                                         OTF2_CommRef comm, uint32_t tag, uint64_t len)         \
    {                                                                                          \
        (void)loc, (void)pos, (void)al;                                                        \
        sm_pf_message(u, t, is_send, peer, comm, tag, len);                                    \
        return OTF2_CALLBACK_SUCCESS;                                                          \
    }                                                                                          \
    static OTF2_CallbackCode sm_pf_i##dir(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, \
                                          void *u, OTF2_AttributeList *al, uint32_t peer,       \
                                          OTF2_CommRef comm, uint32_t tag, uint64_t len,        \
                                          uint64_t req)                                         \
    {                                                                                          \
        (void)req;                                                                             \
        return sm_pf_##dir(loc, t, pos, u, al, peer, comm, tag, len);                          \
    }

SM_PF_P2P_CALLBACKS(send, true)
SM_PF_P2P_CALLBACKS(recv, false)

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

OTF2_EvtReaderCallbacks *sm_pf_event_callbacks(void)
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
