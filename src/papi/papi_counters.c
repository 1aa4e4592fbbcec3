/* PAPI counters per thread, read at region enter and leave (see the header). */
#include "papi_counters.h"

#include <papi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../core/event_record.h"
#include "../core/events.h"
#include "../core/metrics.h"
#include "../util/log.h"
#include "papi_events.h"
#include "papi_dl.h"

static sm_papi_names_t sm_counter_names; /* the events counted, in order */
static char sm_counter_dropped[1024];
static bool sm_counter_multiplex;
static uint32_t sm_counter_metric0 = SM_INVALID_ID;
static int sm_counter_codes[SM_PAPI_MAX_EVENTS];

uint32_t sm_counters_count(void)
{
    return sm_counter_metric0 == SM_INVALID_ID ? 0 : sm_counter_names.n;
}

const char *sm_counters_name(uint32_t i)
{
    return i < sm_counters_count() ? sm_counter_names.name[i] : NULL;
}

uint32_t sm_counters_first_metric(void)
{
    return sm_counter_metric0;
}

bool sm_counters_multiplexed(void)
{
    return sm_counter_multiplex;
}

const char *sm_counters_dropped(void)
{
    return sm_counter_dropped;
}

static unsigned long sm_counters_thread_id(void)
{
    return (unsigned long)pthread_self();
}

/* A fresh event set with the process's events; PAPI's status. */
static int sm_counters_make_set(int *set)
{
    return sm_papi_make_set(sm_counter_codes, sm_counter_names.n, sm_counter_multiplex, set);
}

/* In-process check of what the launcher could not check (software-defined
 * events exist only here) and of anything that changed since: the events
 * that cannot be counted go into `dropped`. */
static void sm_counters_resolve(sm_papi_names_t *dropped)
{
    sm_papi_names_t keep = {0};
    for (unsigned i = 0; i < sm_counter_names.n; i++) {
        int code;
        const char *name = sm_counter_names.name[i];
        if (PAPI_event_name_to_code(name, &code) == PAPI_OK &&
            sm_papi_try_set(&code, 1, false) == PAPI_OK) {
            sm_counter_codes[keep.n] = code;
            memcpy(keep.name[keep.n++], name, SM_PAPI_NAME_LEN);
        } else {
            memcpy(dropped->name[dropped->n++], name, SM_PAPI_NAME_LEN);
        }
    }
    sm_counter_names = keep;
}

int sm_counters_init(const sm_config_t *cfg)
{
    char err[1024];
    const char *list = cfg->papi_events;
    if (!list || !list[0])
        return 0;
    if (sm_papi_names_parse(list, &sm_counter_names, err, sizeof err) != 0) {
        sm_error("papi_events: %s; no PAPI events are counted", err);
        return -1;
    }
    if (sm_papi_init(err, sizeof err) != 0 ||
        PAPI_thread_init(sm_counters_thread_id) != PAPI_OK) {
        sm_error("%s; no PAPI events are counted", err[0] ? err : "PAPI_thread_init failed");
        sm_counter_names.n = 0;
        return -1;
    }
    sm_papi_names_t dropped = {0};
    sm_counters_resolve(&dropped);
    if (dropped.n) {
        char names[1024];
        sm_papi_names_join(&dropped, names, sizeof names);
        if (!cfg->papi_optional) {
            sm_error("PAPI event%s %s cannot be counted in this process%s; no PAPI events are "
                     "counted (papi_optional counts the others)",
                     dropped.n == 1 ? "" : "s", names,
                     sm_papi_name_is_sde(dropped.name[0])
                         ? " (a software-defined event needs the program's library to link libsde)"
                         : "");
            sm_counter_names.n = 0;
            snprintf(sm_counter_dropped, sizeof sm_counter_dropped, "%s", list);
            return -1;
        }
        snprintf(sm_counter_dropped, sizeof sm_counter_dropped, "%s", names);
        sm_warning("PAPI event%s %s cannot be counted in this process: left out",
                dropped.n == 1 ? "" : "s", names);
    }
    if (!sm_counter_names.n)
        return -1;
    /* All together, or multiplexed when the hardware cannot hold them all. */
    int set;
    if (sm_counters_make_set(&set) != PAPI_OK) {
        sm_counter_multiplex = PAPI_multiplex_init() == PAPI_OK;
        if (!sm_counter_multiplex || sm_counters_make_set(&set) != PAPI_OK) {
            char names[1024];
            sm_papi_names_join(&sm_counter_names, names, sizeof names);
            sm_error("PAPI events %s cannot be counted together, even multiplexed; no PAPI "
                     "events are counted", names);
            sm_counter_names.n = 0;
            return -1;
        }
    }
    sm_papi_free_set(&set);
    for (unsigned i = 0; i < sm_counter_names.n; i++) {
        uint32_t id = sm_metric_define_kind(sm_counter_names.name[i], "events", SM_METRIC_COUNTER);
        if (id == SM_INVALID_ID || (i && id != sm_counter_metric0 + i)) {
            sm_error("PAPI event %s: no room for its definition; no PAPI events are counted",
                     sm_counter_names.name[i]);
            sm_counter_metric0 = SM_INVALID_ID;
            return -1;
        }
        if (!i)
            sm_counter_metric0 = id;
    }
    return 0;
}

void sm_counters_thread_start(sm_location_t *loc)
{
    uint32_t n = sm_counters_count();
    if (!n || loc->counters || loc->type != SM_LOCATION_CPU_THREAD)
        return;
    sm_counters_thread_t *c = calloc(1, sizeof *c + n * sizeof c->read[0]);
    if (!c)
        return;
    c->n = n;
    c->frames = loc->stack_capacity;
    c->values = calloc((size_t)c->frames * 2u * n, sizeof *c->values);
    int rc = PAPI_register_thread();
    if (rc == PAPI_OK)
        rc = c->values ? sm_counters_make_set(&c->eventset) : PAPI_ENOMEM;
    if (rc == PAPI_OK)
        rc = PAPI_start(c->eventset);
    if (rc != PAPI_OK) {
        sm_warning("%s: PAPI counters do not start (%s); its regions have no counter values",
                loc->name, PAPI_strerror(rc));
        free(c->values);
        free(c);
        return;
    }
    /* Counting starts at 0 now: the frames open so far began before it. */
    for (sm_frame_t *f = loc->stack; f <= loc->sp; f++)
        memset(c->values + (size_t)(f - loc->stack) * 2u * n, 0, 2u * n * sizeof *c->values);
    /* Nodes made from now on get counter statistics, from a fresh block. */
    loc->profile.n_counters = n;
    loc->profile.free_in_block = 0;
    loc->counters = c;
}

void sm_counters_thread_stop(sm_location_t *loc)
{
    sm_counters_thread_t *c = loc->counters;
    if (!c || sm_tls_location != loc)
        return; /* only the thread itself can stop its event set */
    loc->counters = NULL;
    long long v[SM_PAPI_MAX_EVENTS];
    PAPI_stop(c->eventset, v);
    sm_papi_free_set(&c->eventset);
    PAPI_unregister_thread();
    if (c->failed_reads)
        sm_warning("%s: %llu PAPI reads failed (counted as no change)", loc->name,
                (unsigned long long)c->failed_reads);
    free(c->values);
    free(c);
}

/* The current values into c->read; false (and counted) when PAPI refuses,
 * or when another thread closes this one's regions (at finalize): only the
 * thread itself may read its event set. */
static bool sm_counters_read(const sm_location_t *loc, sm_counters_thread_t *c)
{
    if (sm_tls_location == loc && PAPI_read(c->eventset, c->read) == PAPI_OK)
        return true;
    c->failed_reads++;
    return false;
}

static void sm_counters_trace(sm_location_t *loc, sm_counters_thread_t *c, uint64_t t)
{
    if (loc->tracing)
        sm_event_record(loc, SM_REC_COUNTERS, sm_counter_metric0, 0, t,
                        (const uint64_t *)c->read, (uint8_t)c->n);
    else
        sm_event_count(loc, SM_REC_COUNTERS, c->n); /* for sysmeasure-score */
}

void sm_counters_enter(sm_location_t *loc, sm_frame_t *f, uint64_t t)
{
    sm_counters_thread_t *c = loc->counters;
    uint32_t n = c->n, depth = (uint32_t)(f - loc->stack);
    if (SM_UNLIKELY(depth >= c->frames)) {
        uint32_t frames = loc->stack_capacity > depth ? loc->stack_capacity : 2 * depth;
        uint64_t *v = realloc(c->values, (size_t)frames * 2u * n * sizeof *v);
        if (!v)
            abort(); /* like the frame stack: the leave would have nothing to match */
        c->values = v;
        c->frames = frames;
    }
    uint64_t *start = c->values + (size_t)depth * 2u * n;
    if (!sm_counters_read(loc, c)) {
        /* Keep the parent's view: the region then counts what the parent
         * frame saw at its start (no change is the safe guess). */
        const uint64_t *prev = depth ? start - 2u * n : start;
        memcpy(c->read, prev, n * sizeof *prev);
    }
    for (uint32_t i = 0; i < n; i++) {
        start[i] = (uint64_t)c->read[i];
        start[n + i] = 0;
    }
    sm_counters_trace(loc, c, t);
}

void sm_counters_leave(sm_location_t *loc, sm_frame_t *f, uint64_t t)
{
    sm_counters_thread_t *c = loc->counters;
    uint32_t n = c->n, depth = (uint32_t)(f - loc->stack);
    uint64_t *start = c->values + (size_t)depth * 2u * n;
    uint64_t *parent_children = start - n; /* the parent frame's children's sums */
    if (!sm_counters_read(loc, c))
        for (uint32_t i = 0; i < n; i++)
            c->read[i] = (long long)start[i];
    sm_stat_t *stats = loc->profiling && f->node ? f->node->counters : NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t now = (uint64_t)c->read[i];
        /* Counters only grow; a multiplexed estimate can step back a little:
         * no change then rather than a huge unsigned difference. */
        uint64_t incl = now > start[i] ? now - start[i] : 0;
        uint64_t children = start[n + i];
        parent_children[i] += incl;
        if (stats) {
            sm_stat_add(&stats[i], incl);
            sm_stat_add(&stats[n + i], incl > children ? incl - children : 0);
        }
    }
    sm_counters_trace(loc, c, t);
}
