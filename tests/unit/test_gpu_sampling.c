/* Device-level GPU sampling without a GPU (src/util/gpu_sampling.c and the
 * core's sampler thread): the interval and list as the configuration takes
 * them, the decode sizing, the sample tracker on samples recorded from CUPTI
 * PM sampling on the H100 (the first one spanning back before the start,
 * then back-to-back 100 us samples, a hole, the zero-length ones after the
 * stop), and their way into metric records at each sample's own time on a
 * metric location, with min/mean/max for the summary. */
#include <stdlib.h>
#include <time.h>

#include "core/location.h"
#include "core/metrics.h"
#include "core/runtime.h"
#include "core/sampler.h"
#include "util/gpu_sampling.h"
#include "unit.h"

/* From the H100 run (pmexp, 100 us, CLOCK_MONOTONIC ns): sample 0 began
 * 675 ms before the start; then samples back to back, 100002 ns or so. */
typedef struct {
    uint64_t start, end;
    double value; /* sm__cycles_active.avg */
} rec_t;
static const rec_t recorded[] = {
    {25815290626u, 26490184486u, 0.0},        /* spans back: dropped */
    {26490184486u, 26490284488u, 0.0},
    {26490284488u, 26490384490u, 0.0},
    {26490384490u, 26490484492u, 0.4},
    {26490484492u, 26490584494u, 197959.5},   /* a kernel runs */
    {26490584494u, 26490684496u, 197960.49},
    {26490684496u, 26490784498u, 197958.7},
    /* three samples missing here (a full decode image) */
    {26491084504u, 26491184506u, 98000.2},
    {26491184506u, 26491284508u, 0.0},
    {26491284508u, 26491284508u, 0.0},       /* after the stop: zero length */
};
#define N_RECORDED (sizeof recorded / sizeof recorded[0])

static sm_metric_id_t metric;
static sm_gpu_sample_tracker_t tracker;
static volatile int replayed, saw_last;

static int replay_start(void *ctx)
{
    (void)ctx;
    metric = sm_metric_define("GPU 0 sm__cycles_active.avg", "gpc_cycle");
    sm_gpu_sample_tracker_init(&tracker, 100000u);
    return 0;
}

/* Like the backend's decode: every recorded sample once, each kept one at
 * its end time (here the ns are taken as ticks). */
static void replay_read(void *ctx, sm_sample_sink_t *sink)
{
    (void)ctx;
    if (sm_sample_last(sink))
        saw_last = 1;
    if (replayed)
        return;
    replayed = 1;
    for (size_t i = 0; i < N_RECORDED; i++)
        if (sm_gpu_sample_tracker_take(&tracker, recorded[i].start, recorded[i].end))
            sm_sample_put_at(sink, metric, sm_gpu_sample_value(recorded[i].value),
                             recorded[i].end);
}

int main(void)
{
    char err[256];
    uint64_t ns = 0;
    /* ---- the interval */
    CHECK(sm_gpu_sampling_interval("100us", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 100000);
    CHECK(sm_gpu_sampling_interval("1ms", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 1000000);
    CHECK(sm_gpu_sampling_interval("0.5ms", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 500000);
    CHECK(sm_gpu_sampling_interval("50us", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 50000);
    CHECK(sm_gpu_sampling_interval("1s", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 1000000000u);
    CHECK(sm_gpu_sampling_interval("250000ns", &ns, err, sizeof err) == 0);
    CHECK_EQ_U(ns, 250000);
    const char *bad[] = {"", "100", "10us", "49us", "2s", "-1ms", "1 ms", "1msx", "us", "0us", "1h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(sm_gpu_sampling_interval(bad[i], &ns, err, sizeof err) != 0);
        CHECK(strstr(err, "50us to 1s") != NULL);
    }
    /* ---- the list: one group only */
    static sm_gpu_spec_t spec;
    sm_gpu_spec_init(&spec);
    CHECK(sm_gpu_sampling_list("sm__cycles_active.avg, gr__cycles_active.avg", &spec, err,
                               sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 1);
    CHECK_EQ_U(spec.groups[0].n, 2);
    CHECK_STR(spec.groups[0].metrics[1], "gr__cycles_active.avg");
    sm_gpu_spec_free(&spec);
    sm_gpu_spec_init(&spec);
    CHECK(sm_gpu_sampling_list("a__b.sum;c__d.sum", &spec, err, sizeof err) != 0);
    CHECK(strstr(err, "not groups") != NULL);
    sm_gpu_spec_free(&spec);
    sm_gpu_spec_init(&spec);
    CHECK(sm_gpu_sampling_list("a__b.sum,b@d", &spec, err, sizeof err) != 0);
    sm_gpu_spec_free(&spec);

    /* ---- decode sizing: 10-100 ms, about 1000 samples, twice in the image */
    CHECK_EQ_U(sm_gpu_sampling_decode_period(100000u), 100000000u);
    CHECK_EQ_U(sm_gpu_sampling_decode_period(10000u), 10000000u);
    CHECK_EQ_U(sm_gpu_sampling_decode_period(1000000000u), 100000000u);
    CHECK_EQ_U(sm_gpu_sampling_image_samples(100000u), 2016);
    CHECK_EQ_U(sm_gpu_sampling_image_samples(50000u), 2016);
    CHECK_EQ_U(sm_gpu_sampling_image_samples(1000000u), 216);

    /* ---- values as the trace takes them */
    CHECK_EQ_U(sm_gpu_sample_value(197959.5), 197960);
    CHECK_EQ_U(sm_gpu_sample_value(0.49), 0);
    CHECK_EQ_U(sm_gpu_sample_value(-3.0), 0);
    CHECK_EQ_U(sm_gpu_sample_value(0.0 / 0.0), 0);

    /* ---- the recorded samples through the sampler thread */
    sm_definitions_init();
    sm_locations_init();
    sm_runtime_active = 1;
    sm_sampler_t s = {.name = "GPU 0 PM sampling", .period_ns = 10000000u,
                      .start = replay_start, .read = replay_read};
    CHECK(sm_sampler_register(&s) == 0);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    sm_samplers_stop();
    CHECK(replayed);
    CHECK(saw_last);
    /* Kept: 8 (the first and the zero-length one dropped); 3 lost in 1 gap. */
    CHECK_EQ_U(tracker.kept, 8);
    CHECK_EQ_U(tracker.first, 1);
    CHECK_EQ_U(tracker.empty, 1);
    CHECK_EQ_U(tracker.lost, 3);
    CHECK_EQ_U(tracker.gaps, 1);
    sm_metric_def_t m;
    CHECK(sm_metric_get(metric, &m) == 0);
    CHECK_EQ_U(m.samples, 8);
    CHECK_EQ_U(m.min, 0);
    CHECK_EQ_U(m.max, 197960);
    CHECK_EQ_U(m.sum, 0 + 0 + 0 + 197960 + 197960 + 197959 + 98000 + 0);
    CHECK_EQ_U(m.last, 0);
    /* One metric location, holding the 8 values. */
    uint32_t metric_locs = 0;
    uint64_t records = 0;
    for (uint32_t i = 0; i < sm_location_count(); i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc->type != SM_LOCATION_METRIC)
            continue;
        metric_locs++;
        records += loc->record_count[SM_REC_METRIC_NAMED];
    }
    CHECK_EQ_U(metric_locs, 1);
    CHECK_EQ_U(records, 8);
    return unit_failures;
}
