/* The table behind sysmeasure_adapter_api(): the core's entry points for the
 * adapter libraries (MPI, Kokkos).  Each event entry is gated like the
 * in-core adapters: nothing is recorded while the calling thread does not
 * measure. */
#include "adapter_api.h"

#include <string.h>

#include "async_ranges.h"
#include "clock.h"
#include "config.h"
#include "events.h"
#include "gpu.h"
#include "location.h"
#include "metrics.h"
#include "runtime.h"
#include "stacks.h"

/* The location of the calling thread when it records now, else NULL. */
static inline sm_location_t *sm_api_location(void)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return NULL;
    sm_location_t *loc = sm_location_current();
    return sm_measuring(loc) && !loc->closed ? loc : NULL;
}

static int sm_api_runtime_active(void)
{
    return sm_runtime_active;
}

static int sm_api_measuring(void)
{
    return sm_api_location() != NULL;
}

/* A call whose region the filter left out (an MPI function excluded by
 * name): no enter or leave, but the events inside it (a message, a
 * collective) are still recorded, so that the other side of a message or
 * collective still matches; they take the call's own times, not those of
 * the region around it. */
static SM_NOINLINE void sm_api_pass_enter(void)
{
    sm_location_t *loc = sm_api_location();
    if (loc) {
        loc->pass_frame = loc->sp;
        loc->pass_start = 0; /* read by the first event that needs it */
        loc->stamp_frame = NULL;
    }
}

static SM_NOINLINE void sm_api_pass_leave(void)
{
    sm_location_t *loc = sm_location_current();
    loc->pass_frame = NULL;
    loc->stamp_frame = NULL; /* an end time taken inside it is not the parent's */
}

/* The general enter and leave (sm_api_enter and sm_api_leave take the
 * common case inline, see sm_event_enter_fast). */
static SM_NOINLINE void sm_api_enter_slow(sm_region_id_t region)
{
    if (SM_UNLIKELY(sm_region_filtered(region))) {
        if (region != SM_INVALID_ID && sm_runtime_active)
            sm_api_pass_enter();
        return;
    }
    if (SM_LIKELY(sm_runtime_active))
        sm_adapter_enter(region);
}

/* Events inside an intercepted call share the call's timestamps: those
 * recorded at its start take its enter time, those at its end take one time
 * that the leave reuses.  One clock read at each end, however many events. */
static inline uint64_t sm_api_start_time(sm_location_t *loc)
{
    if (SM_UNLIKELY(loc->pass_frame == loc->sp)) {
        if (!loc->pass_start)
            loc->pass_start = sm_clock_now();
        return loc->pass_start;
    }
    return loc->sp != loc->stack ? loc->sp->start : sm_clock_now();
}

/* The stamp belongs to the open frame (not to an earlier one at the same
 * depth, left some other way). */
static inline bool sm_api_stamped(const sm_location_t *loc)
{
    return loc->stamp_frame == loc->sp && loc->stamp >= loc->sp->start;
}

static inline uint64_t sm_api_end_time(sm_location_t *loc)
{
    if (!sm_api_stamped(loc)) {
        loc->stamp = sm_clock_now();
        loc->stamp_frame = loc->sp;
    }
    return loc->stamp;
}

static SM_NOINLINE void sm_api_leave_slow(sm_region_id_t region)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    if (SM_UNLIKELY(sm_region_filtered(region))) {
        if (region != SM_INVALID_ID)
            sm_api_pass_leave();
        return;
    }
    sm_location_t *loc = sm_location_current();
    if (SM_LIKELY(loc->sp->region == region && loc->sp != loc->stack && !loc->closed)) {
        uint64_t t = sm_api_stamped(loc) ? loc->stamp : sm_clock_now();
        loc->stamp_frame = NULL;
        sm_event_leave_top(loc, t);
    }
}

static void sm_api_enter(sm_region_id_t region)
{
    sm_location_t *loc = sm_tls_location;
    if (SM_LIKELY(sm_runtime_active && loc && sm_measuring(loc) && sm_event_enter_fast(loc, region)))
        return;
    sm_api_enter_slow(region);
}

static void sm_api_leave(sm_region_id_t region)
{
    sm_location_t *loc = sm_tls_location;
    if (SM_LIKELY(sm_runtime_active && loc && loc->sp->region == region && loc->sp != loc->stack &&
                  !loc->closed)) {
        uint64_t t = sm_api_stamped(loc) ? loc->stamp : sm_clock_tsc_or_zero();
        if (SM_LIKELY(t) && sm_event_leave_top_fast(loc, t)) {
            loc->stamp_frame = NULL;
            return;
        }
    }
    sm_api_leave_slow(region);
}

/* ---------------------------------------------------------------- messages */

static void sm_api_message(sm_record_kind_t kind, sm_comm_id_t comm, uint32_t peer, uint32_t tag,
                           uint64_t bytes, uint32_t peer_process, uint64_t request,
                           int with_request)
{
    sm_location_t *loc = sm_api_location();
    if (!loc)
        return;
    int sending = kind == SM_REC_MSG_SEND || kind == SM_REC_MSG_ISEND;
    uint64_t w[3] = {sm_msg_peer_tag(peer, tag), bytes, request};
    /* Sends are recorded as the call starts, receives as it ends. */
    uint64_t t = sending ? sm_api_start_time(loc) : sm_api_end_time(loc);
    sm_event_record(loc, kind, comm, 0, t, w, (uint8_t)(with_request ? 3 : 2));
    sm_event_bytes(loc, sending ? bytes : 0, sending ? 0 : bytes);
    if (sending && peer_process != UINT32_MAX)
        sm_event_matrix(loc, peer_process, sm_runtime_process_count(), bytes);
}

static void sm_api_msg_send(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                            uint32_t peer_process)
{
    sm_api_message(SM_REC_MSG_SEND, comm, peer, tag, bytes, peer_process, 0, 0);
}

static void sm_api_msg_recv(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                            uint32_t peer_process)
{
    sm_api_message(SM_REC_MSG_RECV, comm, peer, tag, bytes, peer_process, 0, 0);
}

static void sm_api_msg_isend(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                             uint32_t peer_process, uint64_t request)
{
    sm_api_message(SM_REC_MSG_ISEND, comm, peer, tag, bytes, peer_process, request, 1);
}

static void sm_api_msg_irecv(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                             uint32_t peer_process, uint64_t request)
{
    sm_api_message(SM_REC_MSG_IRECV, comm, peer, tag, bytes, peer_process, request, 1);
}

static void sm_api_request_event(sm_record_kind_t kind, uint64_t request)
{
    sm_location_t *loc = sm_api_location();
    if (!loc)
        return;
    /* Requests are made as the call starts; completions and cancels are
     * seen as it ends. */
    int at_start = kind == SM_REC_MSG_IRECV_REQUEST || kind == SM_REC_ICOLL_REQUEST;
    uint64_t t = at_start ? sm_api_start_time(loc) : sm_api_end_time(loc);
    sm_event_record(loc, kind, 0, 0, t, &request, 1);
}

static void sm_api_msg_isend_complete(uint64_t request)
{
    sm_api_request_event(SM_REC_MSG_ISEND_COMPLETE, request);
}

static void sm_api_msg_irecv_request(uint64_t request)
{
    sm_api_request_event(SM_REC_MSG_IRECV_REQUEST, request);
}

static void sm_api_request_cancelled(uint64_t request)
{
    sm_api_request_event(SM_REC_REQUEST_CANCELLED, request);
}

static void sm_api_icoll_request(uint64_t request)
{
    sm_api_request_event(SM_REC_ICOLL_REQUEST, request);
}

/* ---------------------------------------------------------------- collectives */

static void sm_api_coll_begin(void)
{
    sm_location_t *loc = sm_api_location();
    if (loc)
        sm_event_record(loc, SM_REC_COLL_BEGIN, 0, 0, sm_api_start_time(loc), NULL, 0);
}

static void sm_api_coll_end(sm_coll_op_t op, sm_comm_id_t comm, uint32_t root, uint64_t sent,
                            uint64_t received)
{
    sm_location_t *loc = sm_api_location();
    if (!loc)
        return;
    uint64_t w[3] = {root, sent, received};
    sm_event_record(loc, SM_REC_COLL_END, comm, (uint16_t)op, sm_api_end_time(loc), w, 3);
    sm_event_bytes(loc, sent, received);
}

static void sm_api_icoll_complete(sm_coll_op_t op, sm_comm_id_t comm, uint32_t root, uint64_t sent,
                                  uint64_t received, uint64_t request)
{
    sm_location_t *loc = sm_api_location();
    if (!loc)
        return;
    uint64_t w[4] = {root, sent, received, request};
    sm_event_record(loc, SM_REC_ICOLL_COMPLETE, comm, (uint16_t)op, sm_api_end_time(loc), w, 4);
    sm_event_bytes(loc, sent, received);
}

/* ---------------------------------------------------------------- transfers */

static void sm_api_transfer(sm_transfer_kind_t kind, uint64_t bytes)
{
    sm_location_t *loc = sm_api_location();
    if (!loc || (unsigned)kind >= SM_XFER_KIND_COUNT)
        return;
    uint64_t total = loc->transfer_total[kind] += bytes;
    sm_event_record(loc, SM_REC_METRIC, (uint32_t)kind, 0, sm_api_end_time(loc), &total, 1);
    int outgoing = kind == SM_XFER_IO_WRITE || kind == SM_XFER_RMA_PUT;
    sm_event_bytes(loc, outgoing ? bytes : 0, outgoing ? 0 : bytes);
}

/* ---------------------------------------------------------------- bytes, metrics, metadata */

static void sm_api_bytes(uint64_t sent, uint64_t received)
{
    sm_location_t *loc = sm_api_location();
    if (loc)
        sm_event_bytes(loc, sent, received);
}

static uint32_t sm_api_metric_define(const char *name, const char *unit)
{
    return sm_runtime_active ? sm_metric_define(name, unit) : SM_INVALID_ID;
}

static void sm_api_metric(uint32_t metric, uint64_t value)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_metric_def_t m;
    if (sm_metric_get(metric, &m) != 0)
        return;
    /* The high-water mark is the process's, measured or not. */
    sm_metric_sample(metric, value);
    sm_location_t *loc = sm_api_location();
    if (loc) {
        uint64_t w[2] = {value, m.unit};
        sm_event_record(loc, SM_REC_METRIC_NAMED, m.name, 0, sm_clock_now(), w, 2);
    }
}

static void sm_api_metadata(const char *key, const char *value)
{
    sm_runtime_metadata_set(key, value);
}

static int sm_api_config_value(const char *name, char *buf, size_t len)
{
    const sm_config_t *cfg = sm_runtime_active ? sm_runtime_config() : NULL;
    const sm_config_var_t *var = cfg ? sm_config_find(name) : NULL;
    if (!var || !len)
        return -1;
    sm_config_format(cfg, var, buf, len);
    return 0;
}

static void sm_api_note(const char *text)
{
    if (sm_runtime_active)
        sm_runtime_add_note(text);
}

/* ---------------------------------------------------------------- attributes, marks, async ranges */

_Static_assert(sizeof(sm_adapter_attr_t) == sizeof(sm_attr_value_t) &&
                   offsetof(sm_adapter_attr_t, attribute) == offsetof(sm_attr_value_t, attribute) &&
                   offsetof(sm_adapter_attr_t, raw) == offsetof(sm_attr_value_t, raw),
               "the adapter's attribute value is the core's");

static sm_attribute_id_t sm_api_attribute_define(const char *name, sm_attr_type_t type)
{
    return sm_runtime_active ? sm_attribute_define(name, type) : SM_INVALID_ID;
}

static void sm_api_enter_attrs(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n)
{
    sm_location_t *loc = sm_api_location();
    if (loc)
        sm_event_enter_attrs(loc, region, sm_clock_now(), (const sm_attr_value_t *)attrs, n);
}

static void sm_api_leave_attrs(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_location_t *loc = sm_location_current();
    /* As leave: only the region on top, whose enter was recorded. */
    if (loc->sp->region == region && loc->sp != loc->stack && !loc->closed)
        sm_event_leave_attrs(loc, region, sm_clock_now(), (const sm_attr_value_t *)attrs, n);
}

static void sm_api_mark(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n)
{
    sm_location_t *loc = sm_api_location();
    if (!loc)
        return;
    uint64_t t = sm_clock_now();
    sm_event_enter_attrs(loc, region, t, (const sm_attr_value_t *)attrs, n);
    sm_event_leave_top(loc, t);
}

static uint32_t sm_api_string_define(const char *text)
{
    return sm_runtime_active && text ? sm_string_intern(text) : SM_INVALID_ID;
}

static uint64_t sm_api_now(void)
{
    return sm_clock_now();
}

static void sm_api_async_range(sm_region_id_t region, uint64_t start, uint64_t end,
                               const sm_adapter_attr_t *attrs, uint32_t n)
{
    if (SM_LIKELY(sm_runtime_active) && sm_measurement_on)
        sm_async_range(region, start, end, (const sm_attr_value_t *)attrs, n);
}

static void sm_api_sample_put_at(sm_sample_sink_t *sink, uint32_t metric, uint64_t value,
                                 uint64_t time)
{
    sm_sample_put_at(sink, (sm_metric_id_t)metric, value, time);
}

static void sm_api_sample_put(sm_sample_sink_t *sink, uint32_t metric, uint64_t value)
{
    sm_sample_put(sink, (sm_metric_id_t)metric, value);
}

/* ---------------------------------------------------------------- the table */

static const sm_adapter_api_t sm_adapter_api_v1 = {
    .version = SM_ADAPTER_API_VERSION,
    .size = sizeof(sm_adapter_api_t),
    .runtime_init = sm_runtime_init,
    .runtime_active = sm_api_runtime_active,
    .set_process_group = sm_runtime_set_process_group,
    .set_output_dir = sm_runtime_set_output_dir,
    .output_dir = sm_runtime_output_dir,
    .clock_offset = sm_runtime_clock_offset,
    .finalize = sm_runtime_finalize_job,
    .emergency_write = sm_runtime_emergency_write,
    .region_define = sm_region_define,
    .comm_define = sm_comm_define,
    .measuring = sm_api_measuring,
    .enter = sm_api_enter,
    .leave = sm_api_leave,
    .msg_send = sm_api_msg_send,
    .msg_recv = sm_api_msg_recv,
    .msg_isend = sm_api_msg_isend,
    .msg_isend_complete = sm_api_msg_isend_complete,
    .msg_irecv_request = sm_api_msg_irecv_request,
    .msg_irecv = sm_api_msg_irecv,
    .request_cancelled = sm_api_request_cancelled,
    .coll_begin = sm_api_coll_begin,
    .coll_end = sm_api_coll_end,
    .icoll_request = sm_api_icoll_request,
    .icoll_complete = sm_api_icoll_complete,
    .transfer = sm_api_transfer,
    .runtime_init_forced = sm_runtime_init_forced,
    .bytes = sm_api_bytes,
    .metric_define = sm_api_metric_define,
    .metric = sm_api_metric,
    .metadata = sm_api_metadata,
    .config_value = sm_api_config_value,
    .save_before_finalize = sm_runtime_save_before_finalize,
    .gpu_device_define = sm_gpu_device_define,
    .gpu_stream_define = sm_gpu_stream_define,
    .gpu_ticks = sm_gpu_ticks,
    .gpu_activities = sm_gpu_activities,
    .gpu_api_enter = sm_gpu_api_enter,
    .gpu_api_leave = sm_gpu_api_leave,
    .gpu_dropped = sm_gpu_dropped,
    .gpu_on_flush = sm_gpu_on_flush,
    .note = sm_api_note,
    .attribute_define = sm_api_attribute_define,
    .enter_attrs = sm_api_enter_attrs,
    .leave_attrs = sm_api_leave_attrs,
    .mark = sm_api_mark,
    .now = sm_api_now,
    .async_range = sm_api_async_range,
    .sampler_register = sm_sampler_register,
    .sample_put = sm_api_sample_put,
    .gpu_counter_define = sm_gpu_counter_define,
    .gpu_counters = sm_gpu_counters,
    .sample_put_at = sm_api_sample_put_at,
    .sample_last = sm_sample_last,
    .sampler_finish_now = sm_sampler_finish_now,
    .string_define = sm_api_string_define,
    .gpu_memory = sm_gpu_memory,
    .gpu_memory_api_source = sm_gpu_memory_api_source,
    .gpu_memory_block_bytes = sm_gpu_memory_block_bytes,
    .stack_call_note = sm_stacks_set_call_note,
};

SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version)
{
    return version == SM_ADAPTER_API_VERSION ? &sm_adapter_api_v1 : NULL;
}
