/* The user API (include/sysmeasure.h): regions by name or handle, annotated
 * regions, measurement start/stop, and the replaceable callback table. */
#define _GNU_SOURCE
#include "sysmeasure.h"

#include <link.h>
#include <stdint.h>
#include <string.h>

#include "core/clock.h"
#include "core/compiler.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "core/sig_hold.h"
#include "causal/causal.h"

#define SM_API SM_EXPORT

/* ---------------------------------------------------------------- name -> region */

typedef struct {
    const void *p;
    int readonly;
} sm_addr_query_t;

static int sm_addr_readonly_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sm_addr_query_t *q = arg;
    uintptr_t a = (uintptr_t)q->p;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (a >= lo && a < lo + ph->p_memsz) {
            q->readonly = !(ph->p_flags & PF_W);
            return 1;
        }
    }
    return 0;
}

/* A name in a read-only segment (a string literal) cannot change, so a cache
 * hit on its address needs no string comparison. */
static int sm_address_is_readonly(const void *p)
{
    sm_addr_query_t q = {p, 0};
    dl_iterate_phdr(sm_addr_readonly_cb, &q);
    return q.readonly;
}

/* The definition's lock and the loader's (dl_iterate_phdr): no signal
 * handler of the program may jump out of them (sig_hold.h). */
static SM_NOINLINE sm_region_id_t sm_user_region_miss(sm_location_t *loc, const char *name,
                                                      unsigned slot)
{
    sm_sig_hold(SM_SIG_LOCKS);
    sm_region_id_t r = sm_region_define(name, NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    if (r != SM_INVALID_ID) {
        loc->name_cache[slot].name = name;
        loc->name_cache[slot].region = r;
        loc->name_cache[slot].immutable = (uint32_t)sm_address_is_readonly(name);
    }
    sm_sig_release();
    return r;
}

static inline sm_region_id_t sm_user_region(sm_location_t *loc, const char *name)
{
    uintptr_t a = (uintptr_t)name;
    unsigned slot = (unsigned)((a >> 3) ^ (a >> 9)) & 63u;
    if (SM_LIKELY(loc->name_cache[slot].name == name) &&
        (loc->name_cache[slot].immutable ||
         strcmp(sm_region_name(loc->name_cache[slot].region), name) == 0))
        return loc->name_cache[slot].region;
    return sm_user_region_miss(loc, name, slot);
}

/* ---------------------------------------------------------------- built-in callbacks */

/* User API regions are recorded while the process is measured, except
 * while a --dormant process has no window open (events.h). */
static SM_ALWAYS_INLINE int sm_user_recording(void)
{
    return sm_runtime_active && !sm_dormant_idle;
}

static int sm_user_push(const char *name)
{
    if (SM_UNLIKELY(!sm_user_recording()))
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    if (SM_UNLIKELY(!name))
        return SYSMEASURE_ERROR_BAD_VALUE;
    sm_location_t *loc = sm_location_current();
    sm_region_id_t r = sm_user_region(loc, name);
    if (SM_UNLIKELY(r == SM_INVALID_ID))
        return SYSMEASURE_ERROR_INTERNAL;
    sm_event_enter(loc, r, sm_clock_now());
    return SYSMEASURE_SUCCESS;
}

/* The leave's clock is read right after the active check, never before it:
 * without the launcher a pair costs two calls and two loads. */
static int sm_user_pop(const char *name)
{
    if (SM_UNLIKELY(!sm_user_recording()))
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    uint64_t t = sm_clock_now();
    if (SM_UNLIKELY(!name))
        return SYSMEASURE_ERROR_BAD_VALUE;
    sm_location_t *loc = sm_location_current();
    sm_region_id_t r = sm_user_region(loc, name);
    if (SM_UNLIKELY(sm_causal_running))
        sm_causal_region_end(r);
    if (SM_LIKELY(loc->sp != loc->stack && loc->sp->region == r && !loc->closed &&
                  !sm_region_filtered(r))) {
        sm_event_leave_top(loc, t);
        return SYSMEASURE_SUCCESS;
    }
    uint64_t unmatched = loc->unmatched_leaves;
    sm_event_leave(loc, r, t);
    return loc->unmatched_leaves == unmatched ? SYSMEASURE_SUCCESS : SYSMEASURE_ERROR_NO_REGION;
}

#define SM_MAX_ANNOTATIONS 64

/* Annotations to attribute values; -1 on a bad annotation. */
static int sm_user_attrs(const sysmeasure_annotation_t *a, size_t n, sm_attr_value_t *out)
{
    if (n > SM_MAX_ANNOTATIONS || (n && !a))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!a[i].name)
            return -1;
        switch (a[i].type) {
        case SYSMEASURE_ANNOTATION_INT64:
            out[i].attribute = sm_attribute_define(a[i].name, SM_ATTR_INT64);
            out[i].raw = (uint64_t)a[i].value.int64;
            break;
        case SYSMEASURE_ANNOTATION_DOUBLE:
            out[i].attribute = sm_attribute_define(a[i].name, SM_ATTR_DOUBLE);
            memcpy(&out[i].raw, &a[i].value.real, sizeof(double));
            break;
        case SYSMEASURE_ANNOTATION_STRING:
            out[i].attribute = sm_attribute_define(a[i].name, SM_ATTR_STRING);
            out[i].raw = sm_string_intern(a[i].value.string ? a[i].value.string : "");
            break;
        default:
            return -1;
        }
        if (out[i].attribute == SM_INVALID_ID)
            return -1;
    }
    return 0;
}

static int sm_user_push_annotated(const char *name, const sysmeasure_annotation_t *a, size_t n)
{
    if (!sm_user_recording())
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    sm_attr_value_t attrs[SM_MAX_ANNOTATIONS];
    if (!name || sm_user_attrs(a, n, attrs) != 0)
        return SYSMEASURE_ERROR_BAD_VALUE;
    sm_location_t *loc = sm_location_current();
    sm_region_id_t r = sm_user_region(loc, name);
    if (r == SM_INVALID_ID)
        return SYSMEASURE_ERROR_INTERNAL;
    sm_event_enter_attrs(loc, r, sm_clock_now(), attrs, (uint32_t)n);
    return SYSMEASURE_SUCCESS;
}

static int sm_user_pop_annotated(const char *name, const sysmeasure_annotation_t *a, size_t n)
{
    if (!sm_user_recording())
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    uint64_t t = sm_clock_now();
    sm_attr_value_t attrs[SM_MAX_ANNOTATIONS];
    if (!name || sm_user_attrs(a, n, attrs) != 0)
        return SYSMEASURE_ERROR_BAD_VALUE;
    sm_location_t *loc = sm_location_current();
    sm_region_id_t r = sm_user_region(loc, name);
    uint64_t unmatched = loc->unmatched_leaves;
    sm_event_leave_attrs(loc, r, t, attrs, (uint32_t)n);
    return loc->unmatched_leaves == unmatched ? SYSMEASURE_SUCCESS : SYSMEASURE_ERROR_NO_REGION;
}

static int sm_user_switch(int whole_process, int on)
{
    /* --dormant: the windows of sysmeasure-attach decide, not the program. */
    if (!sm_runtime_active || sm_runtime_config()->dormant)
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    sm_location_t *loc = sm_location_current();
    if (whole_process)
        sm_measurement_on = (uint8_t)on;
    loc->thread_enabled = (uint8_t)on;
    sm_event_measurement(loc, on, sm_clock_now());
    return SYSMEASURE_SUCCESS;
}

static int sm_user_start(void) { return sm_user_switch(1, 1); }
static int sm_user_stop(void) { return sm_user_switch(1, 0); }
static int sm_user_start_thread(void) { return sm_user_switch(0, 1); }
static int sm_user_stop_thread(void) { return sm_user_switch(0, 0); }

static sysmeasure_callbacks_t sm_user_callbacks = {
    .start = sm_user_start,
    .stop = sm_user_stop,
    .start_thread = sm_user_start_thread,
    .stop_thread = sm_user_stop_thread,
    .push_region = sm_user_push,
    .pop_region = sm_user_pop,
    .push_annotated_region = sm_user_push_annotated,
    .pop_annotated_region = sm_user_pop_annotated,
};

/* ---------------------------------------------------------------- public entry points */

SM_API int sysmeasure_configure(const sysmeasure_callbacks_t *replacement,
                                sysmeasure_callbacks_t *previous)
{
    if (previous)
        *previous = sm_user_callbacks;
    if (!replacement)
        return SYSMEASURE_SUCCESS;
#define SM_REPLACE(f)                                                                   \
    if (replacement->f)                                                                 \
    sm_user_callbacks.f = replacement->f
    SM_REPLACE(start);
    SM_REPLACE(stop);
    SM_REPLACE(start_thread);
    SM_REPLACE(stop_thread);
    SM_REPLACE(push_region);
    SM_REPLACE(pop_region);
    SM_REPLACE(push_annotated_region);
    SM_REPLACE(pop_annotated_region);
#undef SM_REPLACE
    return SYSMEASURE_SUCCESS;
}

SM_API int sysmeasure_start(void) { return sm_user_callbacks.start(); }
SM_API int sysmeasure_stop(void) { return sm_user_callbacks.stop(); }
SM_API int sysmeasure_start_thread(void) { return sm_user_callbacks.start_thread(); }
SM_API int sysmeasure_stop_thread(void) { return sm_user_callbacks.stop_thread(); }
SM_API int sysmeasure_push_region(const char *name) { return sm_user_callbacks.push_region(name); }
SM_API int sysmeasure_pop_region(const char *name) { return sm_user_callbacks.pop_region(name); }

SM_API int sysmeasure_push_annotated_region(const char *name, const sysmeasure_annotation_t *a,
                                            size_t n)
{
    return sm_user_callbacks.push_annotated_region(name, a, n);
}

SM_API int sysmeasure_pop_annotated_region(const char *name, const sysmeasure_annotation_t *a,
                                           size_t n)
{
    return sm_user_callbacks.pop_annotated_region(name, a, n);
}

SM_API sysmeasure_region_t sysmeasure_region_define(const char *name, const char *file, int line)
{
    if (!sm_runtime_active || !name)
        return 0;
    sm_region_id_t r = sm_region_define(name, file, line > 0 ? (uint32_t)line : 0,
                                        SM_PARADIGM_USER, SM_ROLE_CODE);
    return r == SM_INVALID_ID ? 0 : r + 1;
}

/* The general enter and leave of a handle (the fast paths below hand
 * everything but the common case to them). */
static SM_NOINLINE int sm_user_enter_slow(sysmeasure_region_t region)
{
    if (SM_UNLIKELY(!sm_user_recording()))
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    if (SM_UNLIKELY(region == 0 || region > sm_region_count()))
        return SYSMEASURE_ERROR_BAD_VALUE;
    sm_event_enter(sm_location_current(), region - 1, sm_clock_now());
    return SYSMEASURE_SUCCESS;
}

static SM_NOINLINE int sm_user_leave_slow(sysmeasure_region_t region, uint64_t t)
{
    if (!t)
        t = sm_clock_now();
    sm_location_t *loc = sm_location_current();
    /* The region on top, entered (so defined): leave it. */
    if (region != 0 && loc->sp != loc->stack && loc->sp->region == region - 1 && !loc->closed) {
        sm_event_leave_top(loc, t);
        return SYSMEASURE_SUCCESS;
    }
    if (SM_UNLIKELY(region == 0 || region > sm_region_count()))
        return SYSMEASURE_ERROR_BAD_VALUE;
    uint64_t unmatched = loc->unmatched_leaves;
    sm_event_leave(loc, region - 1, t);
    return loc->unmatched_leaves == unmatched ? SYSMEASURE_SUCCESS : SYSMEASURE_ERROR_NO_REGION;
}

/* A handle is its region id + 1 (0: none), so region - 1 < count is a
 * defined region. */
SM_API int sysmeasure_region_enter(sysmeasure_region_t region)
{
    sm_location_t *loc = sm_tls_location;
    if (SM_LIKELY(sm_user_recording() && loc && region - 1 < sm_region_count() &&
                  sm_event_enter_fast(loc, region - 1)))
        return SYSMEASURE_SUCCESS;
    return sm_user_enter_slow(region);
}

SM_API int sysmeasure_region_leave(sysmeasure_region_t region)
{
    if (SM_UNLIKELY(!sm_user_recording()))
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    if (SM_UNLIKELY(sm_causal_running) && region != 0)
        sm_causal_region_end(region - 1);
    /* The clock after the loads of the checks: on the Xeon host work that
     * waits for the TSC read overlaps it little, work before it does. */
    uint64_t t = 0;
    sm_location_t *loc = sm_tls_location;
    if (SM_LIKELY(loc && region != 0 && loc->sp != loc->stack &&
                  loc->sp->region == region - 1 && !loc->closed)) {
        t = sm_clock_tsc_or_zero();
        if (SM_LIKELY(t && sm_event_leave_top_fast(loc, t)))
            return SYSMEASURE_SUCCESS;
    }
    return sm_user_leave_slow(region, t);
}

static int sm_user_progress(const char *name, sm_progress_kind_t kind)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return SYSMEASURE_ERROR_NOT_ACTIVE;
    if (SM_UNLIKELY(!name || !name[0]))
        return SYSMEASURE_ERROR_BAD_VALUE;
    return sm_causal_progress(name, kind) == 0 ? SYSMEASURE_SUCCESS : SYSMEASURE_ERROR_INTERNAL;
}

SM_API int sysmeasure_progress(const char *name)
{
    return sm_user_progress(name, SM_PROGRESS_THROUGHPUT);
}

SM_API int sysmeasure_progress_begin(const char *name)
{
    return sm_user_progress(name, SM_PROGRESS_BEGIN);
}

SM_API int sysmeasure_progress_end(const char *name)
{
    return sm_user_progress(name, SM_PROGRESS_END);
}

SM_API int sysmeasure_is_active(void)
{
    return sm_runtime_active ? 1 : 0;
}

SM_API const char *sysmeasure_error_string(int error)
{
    switch (error) {
    case SYSMEASURE_SUCCESS: return "success";
    case SYSMEASURE_ERROR_NOT_ACTIVE: return "this process is not measured";
    case SYSMEASURE_ERROR_BAD_VALUE: return "bad value";
    case SYSMEASURE_ERROR_NO_REGION: return "no such region is open";
    case SYSMEASURE_ERROR_INTERNAL: return "internal error";
    default: return "unknown error";
    }
}
