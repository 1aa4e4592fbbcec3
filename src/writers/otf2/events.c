/* The OTF2 writer's events: one location's records, as its image gives
 * them, encoded into its event file on the job's ids and clock (rank 0's),
 * and binned into the timeline as they pass. */
#include "sm_build.h" /* from configure: _GNU_SOURCE, before any other */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otf2_internal.h"
#include "../../core/clock.h"
#include "../../util/grow.h"

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

/* Fills w->attrs from the attribute pairs of a payload from word first_word
 * on (0: an enter or leave); returns the list, or NULL when
 * it stays empty.  Attributes that are unknown, of an unknown type or repeated
 * in one event are skipped (counted) rather than failing the archive. */
static OTF2_AttributeList *sm_otf2_attributes_at(sm_otf2_writer_t *w, const sm_record_t *rec,
                                                 uint32_t first_word, OTF2_ErrorCode *rc)
{
    uint32_t n = rec->aux;
    const sm_id_maps_t *maps = w->img->maps;
    uint32_t n_attributes = maps->n_attributes;
    uint32_t n_strings = maps->n_strings;
    bool any = false;

    *rc = OTF2_SUCCESS;
    if (first_word > rec->words)
        first_word = rec->words;
    if (n > (rec->words - first_word) / 2u)
        n = (rec->words - first_word) / 2u;
    const unsigned char *p = (const unsigned char *)sm_record_payload(rec) + 8u * first_word;
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

static OTF2_AttributeList *sm_otf2_attributes(sm_otf2_writer_t *w, const sm_record_t *rec,
                                              OTF2_ErrorCode *rc)
{
    return sm_otf2_attributes_at(w, rec, 0, rc);
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
    case SM_REC_METRIC_NAMED:
    case SM_REC_METRIC_NAMED_ATTRS: {
        const sm_id_maps_t *m = w->img->maps;
        uint32_t name = rec->ref < m->n_strings ? m->strings[rec->ref] : SM_INVALID_ID;
        if (name >= w->n_named_strings || w->named_metric[name] == SM_INVALID_ID)
            return OTF2_SUCCESS;
        OTF2_Type type = OTF2_TYPE_UINT64;
        OTF2_MetricValue v;
        v.unsigned_int = pt;
        OTF2_AttributeList *al = NULL;
        if (rec->kind == SM_REC_METRIC_NAMED_ATTRS) {
            OTF2_ErrorCode rc;
            al = sm_otf2_attributes_at(w, rec, 2, &rc); /* after the value and the unit */
            if (rc != OTF2_SUCCESS)
                return rc;
        }
        w->metric_events = true;
        sm_otf2_tl_metric(w, t, w->named_metric[name], pt);
        return OTF2_EvtWriter_Metric(e, al, t, SM_XFER_KIND_COUNT + w->named_metric[name], 1,
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

/* Location i of the current image into w->loc. */
bool sm_otf2_read_location(sm_otf2_writer_t *w, uint32_t i)
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
bool sm_otf2_move_in(const sm_otf2_writer_t *w, const char *from, const char *ext)
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
bool sm_otf2_encode_location(sm_otf2_writer_t *w, uint32_t i, uint64_t *n_events)
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
bool sm_otf2_write_location_events(sm_otf2_writer_t *w, uint32_t i, uint64_t *n_events)
{
    if (!sm_otf2_read_location(w, i))
        return false;
    if (sm_otf2_bg_take(w, n_events))
        return true; /* encoded during the run */
    return sm_otf2_encode_location(w, i, n_events);
}
