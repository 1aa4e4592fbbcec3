/* The less frequent events and the slow paths of enter/leave. */
#include "events.h"

#include <stdlib.h>
#include <string.h>

volatile uint8_t sm_measurement_on = 1;
volatile uint8_t sm_dormant_idle;

void sm_event_leave_mismatch(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (loc->closed || sm_region_filtered(region))
        return;
    if (loc->deep_open) { /* beyond the depth limit: matched by the count */
        sm_location_leave_deep(loc);
        return;
    }
    /* Close everything above the innermost open frame of this region: the
     * program left it without leaving what it entered inside. */
    for (sm_frame_t *f = loc->sp; f > loc->stack; f--) {
        if (f->region != region)
            continue;
        while (loc->sp >= f)
            sm_event_leave_top(loc, t);
        return;
    }
    loc->unmatched_leaves++;
}

static void sm_trace_attrs(sm_location_t *loc, sm_record_kind_t kind, sm_region_id_t region,
                           uint64_t t, const sm_attr_value_t *attrs, uint32_t n)
{
    if (n > 64)
        n = 64;
    size_t bytes = sizeof(sm_record_t) + n * sizeof(sm_record_attr_t);
    sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, bytes);
    r->time = t;
    r->kind = (uint8_t)kind;
    r->words = (uint8_t)(2 * n);
    r->aux = (uint16_t)n;
    r->ref = region;
    sm_record_attr_t *a = (sm_record_attr_t *)(r + 1);
    for (uint32_t i = 0; i < n; i++) {
        a[i].attribute = attrs[i].attribute;
        a[i].value.raw = attrs[i].raw;
    }
    SM_BUFFER_COMMIT(loc, a + n);
}

void sm_event_enter_attrs(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                          const sm_attr_value_t *attrs, uint32_t n)
{
    if (n && !loc->closed && !sm_region_filtered(region))
        sm_event_count(loc, SM_REC_ENTER, n > 64 ? 64 : n); /* enters with attributes */
    if (!n || !loc->tracing || loc->closed || sm_region_filtered(region)) {
        sm_event_enter(loc, region, t);
        return;
    }
    if (sm_event_push_frame(loc, region, t))
        sm_trace_attrs(loc, SM_REC_ENTER, region, t, attrs, n);
}

void sm_event_leave_attrs(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                          const sm_attr_value_t *attrs, uint32_t n)
{
    if (n && !loc->closed && !sm_region_filtered(region))
        sm_event_count(loc, SM_REC_LEAVE, n > 64 ? 64 : n); /* leaves with attributes */
    if (!n || !loc->tracing || loc->closed || sm_region_filtered(region)) {
        sm_event_leave(loc, region, t);
        return;
    }
    if (loc->deep_open) {
        sm_location_leave_deep(loc);
        return;
    }
    if (loc->sp == loc->stack || loc->sp->region != region) {
        /* Close the inner regions first, so the attributes go on this leave. */
        sm_frame_t *target = NULL;
        for (sm_frame_t *f = loc->sp; f > loc->stack && !target; f--)
            if (f->region == region)
                target = f;
        if (!target) {
            loc->unmatched_leaves++;
            return;
        }
        while (loc->sp > target)
            sm_event_leave_top(loc, t);
    }
    sm_event_pop_frame(loc, t);
    sm_trace_attrs(loc, SM_REC_LEAVE, region, t, attrs, n);
}

void sm_event_measurement(sm_location_t *loc, bool on, uint64_t t)
{
    if (!loc->tracing || loc->closed)
        return;
    sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof(sm_record_t));
    r->time = t;
    r->kind = SM_REC_MEASUREMENT;
    r->words = 0;
    r->aux = on ? 1 : 0;
    r->ref = 0;
    SM_BUFFER_COMMIT(loc, r + 1);
}

void sm_event_thread_create(sm_location_t *loc, uint32_t created, uint64_t t)
{
    if (loc->tracing && !loc->closed && !sm_dormant_idle)
        sm_trace_record(loc, SM_REC_THREAD_CREATE, created, t);
}

void sm_event_record(sm_location_t *loc, sm_record_kind_t kind, uint32_t ref, uint16_t aux,
                     uint64_t t, const uint64_t *words, uint8_t n)
{
    if (loc->closed)
        return;
    sm_event_count(loc, kind, n);
    if (!loc->tracing)
        return;
    sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof(sm_record_t) + 8u * n);
    r->time = t;
    r->kind = (uint8_t)kind;
    r->words = n;
    r->aux = aux;
    r->ref = ref;
    if (n) /* (words may be NULL then) */
        memcpy(r + 1, words, 8u * n);
    SM_BUFFER_COMMIT(loc, (uint8_t *)(r + 1) + 8u * n);
}

void sm_event_bytes(sm_location_t *loc, uint64_t sent, uint64_t received)
{
    if (!loc->profiling || loc->closed)
        return;
    sm_profile_node_t *n = loc->sp->node;
    if (n) {
        n->bytes_sent += sent;
        n->bytes_received += received;
    }
}

void sm_event_matrix(sm_location_t *loc, uint32_t to, uint32_t n_processes, uint64_t bytes)
{
    if (to >= n_processes || loc->closed)
        return;
    if (SM_UNLIKELY(!loc->msg_matrix)) {
        /* Once per thread; the size is the job's, fixed at MPI_Init. */
        loc->msg_matrix = calloc(2u * (size_t)n_processes, sizeof *loc->msg_matrix);
        if (!loc->msg_matrix)
            return;
        loc->msg_matrix_n = n_processes;
    }
    if (to >= loc->msg_matrix_n)
        return;
    loc->msg_matrix[2u * to]++;
    loc->msg_matrix[2u * to + 1] += bytes;
}

uint64_t sm_record_count_bytes(const uint64_t *count, const uint64_t *words)
{
    uint64_t bytes = 0;
    for (int k = 0; k < SM_REC_KIND_COUNT; k++) {
        if (k == SM_REC_ENTER || k == SM_REC_LEAVE)
            bytes += words[k] * sizeof(sm_record_attr_t); /* beyond the plain record */
        else
            bytes += count[k] * sizeof(sm_record_t) + 8u * words[k];
    }
    return bytes;
}

const char *sm_record_kind_name(sm_record_kind_t kind)
{
    static const char *const names[SM_REC_KIND_COUNT] = {
#define SM_RECORD_KIND(id, name, family, fixed, per_word, own_time) [SM_REC_##id] = name,
#include "record_kinds.def"
#undef SM_RECORD_KIND
    };
    return (unsigned)kind < SM_REC_KIND_COUNT && names[kind] ? names[kind] : "unknown";
}
