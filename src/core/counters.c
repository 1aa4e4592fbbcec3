/* Counters per region, read from the counter sources (counters.h). */
#include "counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_record.h"
#include "events.h"
#include "metrics.h"
#include "../util/log.h"

/* The sources that count, with their events' place in the list. */
static struct {
    const sm_counter_source_t *src;
    uint32_t first, n;
} sm_counting[SM_COUNTER_SOURCES_MAX];
static uint32_t sm_n_counting;
static const char *sm_counter_names[SM_COUNTERS_MAX];
static uint32_t sm_n_counters;
static uint32_t sm_counter_metric0 = SM_INVALID_ID;

int sm_counters_init(const sm_config_t *cfg)
{
    for (uint32_t s = 0; sm_counter_sources[s] && sm_n_counting < SM_COUNTER_SOURCES_MAX; s++) {
        const sm_counter_source_t *src = sm_counter_sources[s];
        uint32_t n = src->init(cfg, sm_counter_names + sm_n_counters,
                               SM_COUNTERS_MAX - sm_n_counters);
        if (!n)
            continue;
        sm_counting[sm_n_counting].src = src;
        sm_counting[sm_n_counting].first = sm_n_counters;
        sm_counting[sm_n_counting++].n = n;
        sm_n_counters += n;
    }
    for (uint32_t i = 0; i < sm_n_counters; i++) {
        const sm_counter_source_t *src = NULL;
        for (uint32_t s = 0; s < sm_n_counting; s++)
            if (i >= sm_counting[s].first)
                src = sm_counting[s].src;
        uint32_t id = sm_metric_define_kind(sm_counter_names[i], src->unit, SM_METRIC_COUNTER);
        if (id == SM_INVALID_ID || (i && id != sm_counter_metric0 + i)) {
            sm_error("%s event %s: no room for its definition; no counters are counted",
                     src->name, sm_counter_names[i]);
            sm_counter_metric0 = SM_INVALID_ID;
            sm_n_counters = 0;
            return -1;
        }
        if (!i)
            sm_counter_metric0 = id;
    }
    return 0;
}

void sm_counters_notes(void (*add)(const char *line))
{
    /* Every source: one that counts nothing may say why. */
    for (uint32_t s = 0; sm_counter_sources[s]; s++)
        if (sm_counter_sources[s]->notes)
            sm_counter_sources[s]->notes(add);
}

uint32_t sm_counters_count(void)
{
    return sm_counter_metric0 == SM_INVALID_ID ? 0 : sm_n_counters;
}

const char *sm_counters_name(uint32_t i)
{
    return i < sm_counters_count() ? sm_counter_names[i] : NULL;
}

uint32_t sm_counters_first_metric(void)
{
    return sm_counter_metric0;
}

void sm_counters_thread_start(sm_location_t *loc)
{
    uint32_t n = sm_counters_count();
    if (!n || loc->counters || loc->type != SM_LOCATION_CPU_THREAD)
        return;
    sm_counters_thread_t *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->n = n;
    c->frames = loc->stack_capacity;
    c->values = calloc((size_t)c->frames * 2u * n, sizeof *c->values);
    int started = 0;
    for (uint32_t s = 0; c->values && s < sm_n_counting; s++)
        started += (c->state[s] = sm_counting[s].src->thread_start(loc->name)) != NULL;
    if (!started) {
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
        return; /* only the thread itself can stop its counting */
    loc->counters = NULL;
    for (uint32_t s = 0; s < sm_n_counting; s++)
        if (c->state[s])
            sm_counting[s].src->thread_stop(c->state[s], loc->name);
    if (c->failed_reads)
        sm_warning("%s: %llu counter reads failed (counted as no change)", loc->name,
                   (unsigned long long)c->failed_reads);
    free(c->values);
    free(c);
}

/* The current values into c->read; false (and counted) when a source
 * refuses, or when another thread closes this one's regions (at finalize):
 * only the thread itself may read its counters. */
static bool sm_counters_read(const sm_location_t *loc, sm_counters_thread_t *c)
{
    if (sm_tls_location != loc) {
        c->failed_reads++;
        return false;
    }
    bool ok = true;
    for (uint32_t s = 0; s < sm_n_counting; s++) {
        uint64_t *slice = c->read + sm_counting[s].first;
        if (c->state[s]) /* (a source that did not start here stays at 0) */
            ok &= sm_counting[s].src->read(c->state[s], slice);
        else
            memset(slice, 0, sm_counting[s].n * sizeof *slice);
    }
    if (!ok)
        c->failed_reads++;
    return ok;
}

static void sm_counters_trace(sm_location_t *loc, sm_counters_thread_t *c, uint64_t t)
{
    if (loc->tracing)
        sm_event_record(loc, SM_REC_COUNTERS, sm_counter_metric0, 0, t, c->read, (uint8_t)c->n);
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
        start[i] = c->read[i];
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
        memcpy(c->read, start, n * sizeof *start);
    sm_stat_t *stats = loc->profiling && f->node ? f->node->counters : NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t now = c->read[i];
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
