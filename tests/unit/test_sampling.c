/* Sampling's core parts: calling contexts unify across two processes'
 * definition sets (parents first, regions and modules mapped), and the
 * sampler thread calls a registered sampler at its period, records its
 * values (min/mean/max/last) and takes a last sample at stop, without
 * spinning. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/contexts.h"
#include "core/definitions.h"
#include "core/location.h"
#include "core/metrics.h"
#include "core/runtime.h"
#include "core/sampler.h"
#include "merge/unify.h"
#include "unit.h"

static sm_metric_id_t counter_metric;
static volatile int reads, started, stopped;

static int counter_start(void *ctx)
{
    (void)ctx;
    counter_metric = sm_metric_define("test counter", "1");
    started++;
    return 0;
}

static void counter_read(void *ctx, sm_sample_sink_t *sink)
{
    (void)ctx;
    reads++;
    sm_sample_put(sink, counter_metric, (uint64_t)reads * 10u);
}

/* A sampler ended early by sm_sampler_finish_now (a GPU library torn down
 * at exit before the runtime ends): its last read and its stop run on the
 * caller, once, and the sampler thread reads it no more. */
typedef struct early_sampler {
    volatile int reads, last_reads, stops;
    pthread_t last_thread;
    int inside, overlaps; /* reads under way now; reads that began during another */
    long read_ns;         /* how long a read takes */
} early_sampler_t;

static void early_read(void *ctx, sm_sample_sink_t *sink)
{
    early_sampler_t *e = ctx;
    if (__atomic_add_fetch(&e->inside, 1, __ATOMIC_ACQ_REL) > 1)
        __atomic_add_fetch(&e->overlaps, 1, __ATOMIC_ACQ_REL);
    e->reads++;
    if (sm_sample_last(sink)) {
        e->last_reads++;
        e->last_thread = pthread_self();
    }
    struct timespec ts = {0, e->read_ns ? e->read_ns : 2000000}; /* a read that takes a while */
    nanosleep(&ts, NULL);
    __atomic_sub_fetch(&e->inside, 1, __ATOMIC_ACQ_REL);
}

static void early_stop(void *ctx)
{
    ((early_sampler_t *)ctx)->stops++;
}

/* The last read on the caller of sm_sampler_finish_now while the sampler
 * is overdue on the sampler thread (a 1 ms period, reads of 3 ms: CUPTI's
 * PM decodes at 100 us): the sampler thread must not start a read of its
 * own during it.  Two reads at once of one GPU's counter image crashed
 * every program ended with PM sampling at 100 us on the H100. */
static void test_finish_now_while_overdue(void)
{
    static early_sampler_t busy = {.read_ns = 3000000};
    sm_sampler_t bs = {.name = "overdue", .period_ns = 1000000u, .ctx = &busy,
                       .read = early_read, .stop = early_stop};
    CHECK(sm_sampler_register(&bs) == 0);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    CHECK(sm_sampler_finish_now(&busy) == 0);
    nanosleep(&ts, NULL);
    CHECK_EQ_U(busy.overlaps, 0);
    CHECK_EQ_U(busy.last_reads, 1);
    CHECK_EQ_U(busy.stops, 1);
    CHECK(busy.reads >= 3);
}

static void counter_stop(void *ctx)
{
    (void)ctx;
    stopped++;
}

int main(void)
{
    sm_definitions_init();
    sm_locations_init();

    /* ---- contexts: a process's set, merged into a set that has others */
    sm_region_id_t compute = sm_region_define("compute", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t hot =
        sm_region_define("hot", "/src/a.c", 12, SM_PARADIGM_SAMPLING, SM_ROLE_FUNCTION);
    sm_string_id_t exe = sm_string_intern("a.out");
    sm_context_id_t c0 = sm_context_define(compute, SM_INVALID_ID, SM_INVALID_ID);
    sm_context_id_t c1 = sm_context_define(hot, c0, exe);
    CHECK_EQ_U(sm_context_define(hot, c0, exe), c1);
    CHECK(c1 != c0);
    CHECK_EQ_U(sm_context_count(), 2);
    CHECK_EQ_U(sm_context_get(c1)->parent, c0);

    sm_defset_t *mine = sm_defset_from_process(0);
    CHECK_EQ_U(sm_defset_context_count(mine), 2);
    uint64_t len = 0;
    void *blob = sm_defset_serialize(mine, &len);

    sm_defset_t *job = sm_defset_new();
    uint32_t other = sm_defset_region(job, "other", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    uint32_t other_ctx = sm_defset_context(job, other, SM_INVALID_ID, SM_INVALID_ID);
    sm_id_maps_t maps;
    CHECK(sm_defset_merge_blob(job, blob, len, &maps) == 0);
    CHECK_EQ_U(maps.n_contexts, 2);
    CHECK_EQ_U(sm_defset_context_count(job), 3);
    const sm_context_def_t *g1 = sm_defset_context_get(job, maps.contexts[c1]);
    CHECK(g1 && maps.contexts[c0] != other_ctx);
    CHECK_EQ_U(g1->parent, maps.contexts[c0]);
    CHECK_EQ_U(g1->region, maps.regions[hot]);
    CHECK_STR(sm_defset_string_get(job, g1->module), "a.out");
    CHECK_STR(sm_defset_region_name(job, g1->region), "hot");
    /* The same blob again: nothing new. */
    sm_id_maps_t again;
    CHECK(sm_defset_merge_blob(job, blob, len, &again) == 0);
    CHECK_EQ_U(sm_defset_context_count(job), 3);
    /* A truncated blob is refused. */
    CHECK(sm_defset_merge_blob(job, blob, len - 4, NULL) != 0);
    sm_id_maps_free(&maps);
    sm_id_maps_free(&again);
    free(blob);
    sm_defset_free(job);
    sm_defset_free(mine);

    /* ---- the sampler thread: 20 ms period for about 200 ms */
    sm_runtime_active = 1;
    sm_samplers_set_default_period(20000000u);
    sm_sampler_t s = {.name = "test", .start = counter_start, .read = counter_read,
                      .stop = counter_stop};
    CHECK(sm_sampler_register(&s) == 0);
    static early_sampler_t early;
    sm_sampler_t es = {.name = "early", .period_ns = 5000000u, .ctx = &early, .read = early_read,
                       .stop = early_stop};
    CHECK(sm_sampler_register(&es) == 0);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    CHECK(sm_sampler_finish_now(&early) == 0);
    CHECK_EQ_U(early.last_reads, 1);
    CHECK_EQ_U(early.stops, 1);
    CHECK(pthread_equal(early.last_thread, pthread_self()));
    CHECK(early.reads >= 3);
    int early_reads = early.reads;
    CHECK(sm_sampler_finish_now(&early) == 0); /* ended: nothing more */
    CHECK(sm_sampler_finish_now(&ts) == -1);   /* no such sampler */
    CHECK(sm_sampler_finish_now(NULL) == -1);
    CHECK_EQ_U(early.overlaps, 0);
    test_finish_now_while_overdue();
    nanosleep(&ts, NULL);
    uint64_t cpu = sm_samplers_cpu_ns();
    sm_samplers_stop();
    sm_samplers_stop(); /* idempotent */
    CHECK_EQ_U(started, 1);
    CHECK_EQ_U(stopped, 1);
    CHECK(reads >= 4 && reads <= 18); /* ~15 periods and the last one */
    sm_metric_def_t m;
    CHECK(sm_metric_get(counter_metric, &m) == 0);
    CHECK_EQ_U(m.samples, (uint64_t)reads);
    CHECK_EQ_U(m.min, 10);
    CHECK_EQ_U(m.max, (uint64_t)reads * 10u);
    CHECK_EQ_U(m.last, (uint64_t)reads * 10u);
    CHECK_EQ_U(m.sum, (uint64_t)reads * (reads + 1) / 2 * 10u);
    /* Sleeping, not spinning: far below 50 ms of CPU in 200 ms. */
    CHECK(cpu < 50000000u);
    /* The early one: no read after its end, none at stop either. */
    CHECK_EQ_U(early.reads, (uint64_t)early_reads);
    CHECK_EQ_U(early.last_reads, 1);
    CHECK_EQ_U(early.stops, 1);
    /* Its values went to a metric location of its own, none to a thread. */
    uint32_t metric_locs = 0, threads = 0;
    for (uint32_t i = 0; i < sm_location_count(); i++) {
        sm_location_t *loc = sm_location_get(i);
        metric_locs += loc->type == SM_LOCATION_METRIC;
        threads += loc->type == SM_LOCATION_CPU_THREAD;
    }
    CHECK_EQ_U(metric_locs, 3);
    CHECK_EQ_U(threads, 0);
    CHECK(sm_sampler_register(&s) != 0); /* stopped: no new sampler */
    return unit_failures;
}
