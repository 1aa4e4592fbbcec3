/* CUPTI PM sampling on the core's sampler thread (cupti_pmsampling.h). */
#define _GNU_SOURCE
#include "cupti_pmsampling.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "cupti_host.h"
#include "../../src/util/gpu_sampling.h"
#include "../../src/core/compiler.h"
#include "../../src/util/log.h"

/* 1: sample.  0: --gpu-sampling is checked, then one line says this build
 * does not sample and the run is traced as usual (tests/gpu/
 * test_pmsampling.py with SM_GPU_SAMPLING_COLLECT=0 checks that).  It was
 * 0 while runs crashed at their end: the last decode came after CUPTI's
 * teardown at exit; sm_cupm_at_exit below now takes it before (manual 8d.3). */
#ifndef SM_CUPM_SAMPLE
#define SM_CUPM_SAMPLE 1
#endif

#define SM_CUPM_DEVICES 16
/* The GPU writes raw samples here between decodes: ~5-10 KB a sample, so
 * 64 MiB hold several decode periods of ~1000 samples. */
#define SM_CUPM_HW_BUFFER (64u << 20)

typedef struct sm_cupm_dev {
    uint32_t index;
    CUcontext ctx; /* the device's first context: current on the sampler
                    * thread while it calls CUPTI (some profiler calls use
                    * the current context) */
    int state; /* 0 unused, 1 registered, 2 sampling, 3 ended or failed */
    sm_cuh_t *host;
    CUpti_PmSampling_Object *obj;
    uint8_t *config;
    size_t config_size;
    uint8_t *image;
    size_t image_size;
    char chip[64];
    uint8_t *avail; /* counter availability image, read by the host object */
    const char *names[SM_GPU_SPEC_MAX_METRICS];
    uint32_t ids[SM_GPU_SPEC_MAX_METRICS];
    uint32_t n;
    sm_gpu_sample_tracker_t tracker;
    uint64_t decodes, full, overflows;
    uint64_t first_end, last_end; /* GPU ns of the samples kept */
    int final_done;
    /* The device's context is ending (set by its destroying thread): the
     * sampler thread makes no more CUPTI calls for it.  busy: the sampler
     * thread is inside CUPTI calls for it now. */
    int gone, busy;
    uint64_t gone_ns; /* CLOCK_MONOTONIC when sampling was stopped there */
} sm_cupm_dev_t;

static const sm_adapter_api_t *sm_cupm_api;
static int sm_cupm_on;
static uint64_t sm_cupm_interval;
static sm_gpu_spec_t sm_cupm_spec;
static sm_cupm_dev_t sm_cupm_devs[SM_CUPM_DEVICES];
/* Guards the devices' state; the sampler thread drops it around CUPTI
 * calls only where no other thread can touch the device (state 2 is the
 * sampler thread's own). */
static pthread_mutex_t sm_cupm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_cupm_cond = PTHREAD_COND_INITIALIZER;

static const char *sm_cupm_result(CUptiResult rc)
{
    const char *text = NULL;
    cuptiGetResultString(rc, &text);
    return text ? text : "unknown CUPTI error";
}

/* One line on stderr and in the summary. */
static void sm_cupm_say(const char *line)
{
    sm_warning("%s", line);
    sm_cupm_api->note(line);
}

int sm_cupm_init(const sm_adapter_api_t *api)
{
    if (!SM_ADAPTER_API_HAS(api, sampler_finish_now))
        return 0;
    char list[4096] = "", interval[64] = "1ms", err[512];
    api->config_value("gpu_sampling", list, sizeof list);
    api->config_value("gpu_sampling_interval", interval, sizeof interval);
    if (!list[0])
        return 0;
    sm_cupm_api = api;
    sm_gpu_spec_init(&sm_cupm_spec);
    if (sm_gpu_sampling_list(list, &sm_cupm_spec, err, sizeof err) != 0 ||
        sm_cupm_spec.n_groups != 1) {
        sm_warning("GPU sampling off: %s", sm_cupm_spec.n_groups ? err : "no metric named");
        return 0;
    }
    if (sm_gpu_sampling_interval(interval, &sm_cupm_interval, err, sizeof err) != 0) {
        sm_warning("GPU sampling off: gpu_sampling_interval '%s': %s", interval, err);
        return 0;
    }
    /* The H100 refused the range profiler's start while PM sampling ran
     * (CUPTI_ERROR_HARDWARE_BUSY): one of them. */
    char counters[16] = "", file[16] = "";
    api->config_value("gpu_metrics", counters, sizeof counters);
    api->config_value("gpu_metrics_file", file, sizeof file);
    if (counters[0] || file[0]) {
        const char *line = "GPU sampling off: the GPU counts per-kernel metrics (--gpu-metrics) "
                           "or samples the device (--gpu-sampling), not both at once (CUPTI: "
                           "hardware busy); the per-kernel metrics are collected";
        sm_warning("%s", line);
        api->note(line);
        return 0;
    }
    if (!SM_CUPM_SAMPLE) {
        const char *line = "GPU sampling: this build checks the list but does not sample yet "
                           "(SM_CUPM_SAMPLE; manual section 8d.3 says why); the run is traced "
                           "as usual";
        sm_warning("%s", line);
        api->note(line);
        return 0;
    }
    sm_cupm_on = 1;
    sm_info(2, "GPU sampling: %u metrics every %" PRIu64 " ns", sm_cupm_spec.groups[0].n,
            sm_cupm_interval);
    return 1;
}

/* ---------------------------------------------------------------- on the sampler thread */

static void sm_cupm_release(sm_cupm_dev_t *d)
{
    if (d->obj) {
        CUpti_PmSampling_Disable_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
        p.pPmSamplingObject = d->obj;
        cuptiPmSamplingDisable(&p);
        d->obj = NULL;
    }
    free(d->image);
    d->image = NULL;
    free(d->config);
    d->config = NULL;
    /* The host object stays: nothing more is evaluated, and CUPTI's own
     * teardown at exit is not ours to race. */
}

static int sm_cupm_image_init(sm_cupm_dev_t *d)
{
    CUpti_PmSampling_CounterDataImage_Initialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    p.pPmSamplingObject = d->obj;
    p.counterDataSize = d->image_size;
    p.pCounterData = d->image;
    return cuptiPmSamplingCounterDataImageInitialize(&p) == CUPTI_SUCCESS ? 0 : -1;
}


static void sm_cupm_failed(sm_cupm_dev_t *d, const char *line)
{
    if (line[0])
        sm_cupm_say(line);
    sm_cupm_release(d);
    pthread_mutex_lock(&sm_cupm_lock);
    d->state = 3;
    d->final_done = 1;
    pthread_cond_broadcast(&sm_cupm_cond);
    pthread_mutex_unlock(&sm_cupm_lock);
}

static int sm_cupm_begin(sm_cupm_dev_t *d, char *line, size_t linelen);

/* The sampler's start, on the sampler thread: sampling begins (the
 * device's context current). */
static int sm_cupm_start(void *ctx)
{
    sm_cupm_dev_t *d = ctx;
    char line[1024];
    CUcontext popped;
    pthread_mutex_lock(&sm_cupm_lock);
    int gone = d->gone;
    pthread_mutex_unlock(&sm_cupm_lock);
    if (gone) { /* the context ended before sampling began */
        sm_cupm_failed(d, "");
        return -1;
    }
    sm_cu_own_calls(1); /* our CUDA calls here are not the program's */
    int pushed = d->ctx && cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS;
    int rc = sm_cupm_begin(d, line, sizeof line);
    if (pushed)
        cuCtxPopCurrent(&popped);
    sm_cu_own_calls(-1);
    if (rc == 0)
        return 0;
    sm_cupm_failed(d, line);
    return -1;
}

/* On the application's thread that ended the device's first context's
 * creation, with the context current (the H100 crashed in
 * a CUPTI call from the sampler thread, probably for the reason below):
 * profiler, support, chip, counter availability, names, config image.  0,
 * or -1 with the line to say in `line` (empty: said already). */
static int sm_cupm_prepare(sm_cupm_dev_t *d, char *line, size_t linelen, char *err, size_t errlen)
{
    line[0] = '\0';
    sm_info(2, "GPU %u: PM sampling set-up (chip, names, config)", d->index);
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUptiResult rc = cuptiProfilerInitialize(&ip);
    if (rc != CUPTI_SUCCESS) {
        snprintf(line, linelen, "GPU %u sampling off: cuptiProfilerInitialize failed (%s); "
                 "the run goes on with tracing only", d->index, sm_cupm_result(rc));
        goto fail;
    }
    sm_info(2, "GPU %u: PM sampling: profiler initialised", d->index);
    CUdevice dev = (CUdevice)d->index;
    cuDeviceGet(&dev, (int)d->index);
    CUpti_Profiler_DeviceSupported_Params sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    sp.cuDevice = dev;
    sp.api = CUPTI_PROFILER_PM_SAMPLING;
    rc = cuptiProfilerDeviceSupported(&sp);
    if (rc != CUPTI_SUCCESS || sp.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        const char *why = rc != CUPTI_SUCCESS ? sm_cupm_result(rc)
                          : sp.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "virtual GPU without profiling"
                          : sp.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "confidential computing"
                          : sp.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "architecture without PM sampling"
                              : "not supported here";
        snprintf(line, linelen, "GPU %u sampling off: this GPU does not allow counter "
                 "access (%s); the run goes on with tracing only", d->index, why);
        goto fail;
    }
    sm_info(2, "GPU %u: PM sampling supported", d->index);
    CUpti_Device_GetChipName_Params cp;
    memset(&cp, 0, sizeof cp);
    cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cp.deviceIndex = d->index;
    if ((rc = cuptiDeviceGetChipName(&cp)) != CUPTI_SUCCESS) {
        snprintf(line, linelen, "GPU %u sampling off: cuptiDeviceGetChipName failed (%s)",
                 d->index, sm_cupm_result(rc));
        goto fail;
    }
    CUpti_PmSampling_GetCounterAvailability_Params ap;
    memset(&ap, 0, sizeof ap);
    ap.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
    ap.deviceIndex = d->index;
    uint8_t *avail = NULL;
    if (cuptiPmSamplingGetCounterAvailability(&ap) == CUPTI_SUCCESS &&
        ap.counterAvailabilityImageSize && (avail = malloc(ap.counterAvailabilityImageSize))) {
        ap.pCounterAvailabilityImage = avail;
        if (cuptiPmSamplingGetCounterAvailability(&ap) != CUPTI_SUCCESS) {
            free(avail);
            avail = NULL;
        }
    }
    sm_info(2, "GPU %u: PM sampling: chip %s, availability image %zu bytes", d->index,
            cp.pChipName, ap.counterAvailabilityImageSize);
    /* The host object keeps reading the availability image (freeing it
     * here crashed ConfigAddMetrics in libnvperf_host on the H100): it
     * lives as long as the host object, that is to the end. */
    d->avail = avail;
    d->host = sm_cuh_open(cp.pChipName, avail, 1, err, errlen);
    if (!d->host) {
        snprintf(line, linelen, "GPU %u sampling off: %s", d->index, err);
        goto fail;
    }
    /* Names the chip does not know: one line each, with the nearest. */
    const sm_gpu_group_t *g = &sm_cupm_spec.groups[0];
    d->n = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        if (sm_cuh_known(d->host, g->metrics[i])) {
            d->names[d->n++] = g->metrics[i];
            continue;
        }
        char near[512];
        sm_cuh_nearest(d->host, g->metrics[i], near, sizeof near, 4);
        snprintf(line, linelen, "GPU sampling: '%s' is not a metric of this GPU (%s), left "
                 "out; nearest: %s", g->metrics[i], cp.pChipName, near);
        sm_cupm_say(line);
    }
    if (!d->n) {
        line[0] = '\0'; /* said above */
        return -1;
    }
    sm_info(2, "GPU %u: PM sampling: %u metrics known", d->index, d->n);
    size_t passes = 0;
    if (sm_cuh_config(d->host, d->names, d->n, &d->config, &d->config_size, &passes, err,
                      errlen) != 0) {
        snprintf(line, linelen, "GPU %u sampling off: %s", d->index, err);
        goto fail;
    }
    if (passes > 1) {
        snprintf(line, linelen, "GPU %u sampling off: these %u metrics need %zu hardware "
                 "passes and PM sampling takes one; sample fewer (sysmeasure-avail --gpu "
                 "--gpu-metrics=LIST counts passes)", d->index, d->n, passes);
        goto fail;
    }
    snprintf(d->chip, sizeof d->chip, "%s", cp.pChipName);
    return 0;
fail:
    return -1;
}

/* On the sampler thread: Enable, SetConfig, image, Start.  0, or -1 with
 * the line to say in `line`. */
static int sm_cupm_begin(sm_cupm_dev_t *d, char *line, size_t linelen)
{
    CUptiResult rc;
    line[0] = '\0';
    CUpti_PmSampling_Enable_Params ep;
    memset(&ep, 0, sizeof ep);
    ep.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
    ep.deviceIndex = d->index;
    if ((rc = cuptiPmSamplingEnable(&ep)) != CUPTI_SUCCESS) {
        snprintf(line, linelen, "GPU %u sampling off: %s (%s); the run goes on with tracing "
                 "only", d->index,
                 rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "this GPU does not allow counter "
                                                            "access to this user"
                                                          : "cuptiPmSamplingEnable failed",
                 sm_cupm_result(rc));
        goto fail;
    }
    d->obj = ep.pPmSamplingObject;
    sm_info(2, "GPU %u: PM sampling enabled", d->index);
    CUpti_PmSampling_SetConfig_Params sc;
    memset(&sc, 0, sizeof sc);
    sc.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
    sc.pPmSamplingObject = d->obj;
    sc.configSize = d->config_size;
    sc.pConfig = d->config;
    sc.hardwareBufferSize = SM_CUPM_HW_BUFFER;
    sc.samplingInterval = sm_cupm_interval;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if ((rc = cuptiPmSamplingSetConfig(&sc)) != CUPTI_SUCCESS) {
        snprintf(line, linelen, "GPU %u sampling off: cuptiPmSamplingSetConfig failed (%s)%s",
                 d->index, sm_cupm_result(rc),
                 rc == CUPTI_ERROR_NOT_SUPPORTED ? ": the metrics need several passes" : "");
        goto fail;
    }
    /* One size query only: another maxSamples later breaks image
     * initialisation. */
    CUpti_PmSampling_GetCounterDataSize_Params gs;
    memset(&gs, 0, sizeof gs);
    gs.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
    gs.pPmSamplingObject = d->obj;
    gs.pMetricNames = d->names;
    gs.numMetrics = d->n;
    gs.maxSamples = sm_gpu_sampling_image_samples(sm_cupm_interval);
    if ((rc = cuptiPmSamplingGetCounterDataSize(&gs)) != CUPTI_SUCCESS ||
        !(d->image = malloc(gs.counterDataSize))) {
        snprintf(line, linelen, "GPU %u sampling off: no counter data image (%s)", d->index,
                 rc != CUPTI_SUCCESS ? sm_cupm_result(rc) : "out of memory");
        goto fail;
    }
    d->image_size = gs.counterDataSize;
    if (sm_cupm_image_init(d) != 0) {
        snprintf(line, linelen, "GPU %u sampling off: the counter data image cannot be "
                 "initialised", d->index);
        goto fail;
    }
    for (uint32_t i = 0; i < d->n; i++) {
        char name[256];
        snprintf(name, sizeof name, "GPU %u %s", d->index, d->names[i]);
        d->ids[i] = sm_cupm_api->metric_define(name, sm_cuh_unit(d->host, d->names[i]));
    }
    sm_gpu_sample_tracker_init(&d->tracker, sm_cupm_interval);
    CUpti_PmSampling_Start_Params st;
    memset(&st, 0, sizeof st);
    st.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
    st.pPmSamplingObject = d->obj;
    if ((rc = cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS) {
        snprintf(line, linelen, "GPU %u sampling off: cuptiPmSamplingStart failed (%s)",
                 d->index, sm_cupm_result(rc));
        goto fail;
    }
    pthread_mutex_lock(&sm_cupm_lock);
    d->state = 2;
    pthread_mutex_unlock(&sm_cupm_lock);
    sm_info(1, "GPU %u: PM sampling of %u metrics every %" PRIu64 " ns on %s (%zu-byte image "
            "for %u samples)", d->index, d->n, sm_cupm_interval, d->chip, d->image_size,
            gs.maxSamples);
    return 0;
fail:
    return -1;
}

/* Decodes what the GPU has buffered: every completed sample's values to the
 * core at the sample's end.  -1 when the hardware buffer overflowed or the
 * decode failed (sampling stops then: CUPTI samples no more until it is
 * enabled again). */
static int sm_cupm_decode(sm_cupm_dev_t *d, sm_sample_sink_t *sink)
{
    double values[SM_GPU_SPEC_MAX_METRICS];
    for (int round = 0; round < 16; round++) {
        CUpti_PmSampling_DecodeData_Params dp;
        memset(&dp, 0, sizeof dp);
        dp.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
        dp.pPmSamplingObject = d->obj;
        dp.pCounterDataImage = d->image;
        dp.counterDataImageSize = d->image_size;
        CUptiResult rc = cuptiPmSamplingDecodeData(&dp);
        d->decodes++;
        if (rc != CUPTI_SUCCESS || dp.overflow) {
            d->overflows++;
            char line[400];
            snprintf(line, sizeof line, "GPU %u sampling stopped: %s (%s); the samples so far "
                     "are kept", d->index,
                     dp.overflow ? "the hardware buffer overflowed" : "decoding failed",
                     sm_cupm_result(rc));
            sm_cupm_say(line);
            return -1;
        }
        CUpti_PmSampling_GetCounterDataInfo_Params ip;
        memset(&ip, 0, sizeof ip);
        ip.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
        ip.pCounterDataImage = d->image;
        ip.counterDataImageSize = d->image_size;
        if (cuptiPmSamplingGetCounterDataInfo(&ip) != CUPTI_SUCCESS)
            ip.numCompletedSamples = 0;
        for (size_t k = 0; k < ip.numCompletedSamples; k++) {
            CUpti_PmSampling_CounterData_GetSampleInfo_Params si;
            memset(&si, 0, sizeof si);
            si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
            si.pPmSamplingObject = d->obj;
            si.pCounterDataImage = d->image;
            si.counterDataImageSize = d->image_size;
            si.sampleIndex = k;
            if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS)
                continue;
            if (!sm_gpu_sample_tracker_take(&d->tracker, si.startTimestamp, si.endTimestamp))
                continue;
            if (sm_cuh_evaluate(d->host, d->image, d->image_size, k, d->names, d->n, values) != 0)
                continue;
            /* Sample times are on CUPTI's activity clock (our CLOCK_MONOTONIC). */
            uint64_t t = sm_cupm_api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, si.endTimestamp);
            for (uint32_t i = 0; i < d->n; i++)
                if (d->ids[i] != SM_INVALID_ID)
                    sm_cupm_api->sample_put_at(sink, d->ids[i], sm_gpu_sample_value(values[i]), t);
            if (!d->first_end)
                d->first_end = si.endTimestamp;
            d->last_end = si.endTimestamp;
        }
        if (sm_cupm_image_init(d) != 0)
            return -1;
        if (dp.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
            break;
        d->full++; /* the samples beyond it may be lost: the tracker counts gaps */
    }
    return 0;
}

static void sm_cupm_stop(sm_cupm_dev_t *d)
{
    CUpti_PmSampling_Stop_Params sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
    sp.pPmSamplingObject = d->obj;
    cuptiPmSamplingStop(&sp);
}

/* Sampling has stopped: the summary's note.  The PM sampling object is not
 * disabled: this runs at the end of the run or of the context, and
 * cuptiPmSamplingDisable called from the end of the run (the library
 * destructors) crashed in libnvperf_host on the H100, as cuptiFinalize
 * does for other tools; the driver releases it with the process. */
static void sm_cupm_finish(sm_cupm_dev_t *d, int stopped)
{
    if (!stopped)
        sm_cupm_stop(d);
    const sm_gpu_sample_tracker_t *t = &d->tracker;
    char line[600], key[64], text[32];
    double span = d->last_end > d->first_end ? (double)(d->last_end - d->first_end) * 1e-9 : 0;
    snprintf(line, sizeof line,
             "GPU %u PM sampling: %" PRIu64 " samples of %u metrics every %.0f us over %.3f s "
             "(first %s dropped: it began before the start); %" PRIu64 " lost in %" PRIu64
             " gaps, %" PRIu64 " hardware-buffer overflows, %" PRIu64 " decodes",
             d->index, t->kept, d->n, (double)sm_cupm_interval * 1e-3, span,
             t->first == 1 ? "sample" : "samples", t->lost, t->gaps, d->overflows, d->decodes);
    sm_cupm_api->note(line);
    sm_info(1, "%s", line);
    if (t->lost || d->overflows)
        sm_warning("%s", line);
    static const char *const what[] = {"samples", "lost", "overflows", "interval_ns"};
    uint64_t v[] = {t->kept, t->lost, d->overflows, sm_cupm_interval};
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "gpu%u_sampling_%s", d->index, what[i]);
        snprintf(text, sizeof text, "%" PRIu64, v[i]);
        sm_cupm_api->metadata(key, text);
    }
}

static uint64_t sm_cupm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sm_cupm_read(void *ctx, sm_sample_sink_t *sink)
{
    sm_cupm_dev_t *d = ctx;
    pthread_mutex_lock(&sm_cupm_lock);
    if (d->state != 2) {
        pthread_mutex_unlock(&sm_cupm_lock);
        return;
    }
    if (d->gone) {
        /* Stopped at its context's end; what the GPU buffered since the
         * last decode cannot be decoded without the context: counted. */
        d->state = 3;
        d->final_done = 1;
        pthread_cond_broadcast(&sm_cupm_cond);
        pthread_mutex_unlock(&sm_cupm_lock);
        if (d->last_end && d->gone_ns > d->last_end && sm_cupm_interval)
            d->tracker.lost += (d->gone_ns - d->last_end) / sm_cupm_interval;
        sm_cupm_finish(d, 1);
        return;
    }
    int last = sm_cupm_api->sample_last(sink);
    d->busy = 1;
    pthread_mutex_unlock(&sm_cupm_lock);
    if (d->decodes < 2 || last)
        sm_info(2, "GPU %u: PM decode %" PRIu64 "%s", d->index, d->decodes, last ? " (last)" : "");
    if (last) /* the samples up to now: stop, then the rest of the buffer */
        sm_cupm_stop(d);
    int bad = sm_cupm_decode(d, sink);
    if (last || bad)
        sm_cupm_finish(d, last);
    pthread_mutex_lock(&sm_cupm_lock);
    d->busy = 0;
    if (last || bad) {
        d->state = 3;
        d->final_done = 1;
    }
    pthread_cond_broadcast(&sm_cupm_cond);
    pthread_mutex_unlock(&sm_cupm_lock);
}

/* ---------------------------------------------------------------- at exit */

/* exit() runs the atexit handlers in reverse order, then the libraries'
 * destructors (libsysmeasure's end among them, which used to take the last
 * PM decode on the sampler thread).  By then the CUDA runtime's handler and
 * CUPTI's and libnvperf's teardown had run: the H100 crashed (heap
 * corruption, 1 run in 2) in that last decode, and earlier in
 * cuptiPmSamplingDisable.  This handler is registered after the device's
 * first context exists, so after the CUDA runtime's own (and after
 * cuptiProfilerInitialize): it runs before their teardown and ends each
 * device's sampler here, on the exiting thread, while CUPTI still works.
 * The sampler thread leaves those samplers alone afterwards (core). */
static void sm_cupm_at_exit(void)
{
    sm_cu_own_calls(1);
    for (uint32_t device = 0; device < SM_CUPM_DEVICES; device++) {
        sm_cupm_dev_t *d = &sm_cupm_devs[device];
        pthread_mutex_lock(&sm_cupm_lock);
        int registered = d->state == 1 || d->state == 2;
        pthread_mutex_unlock(&sm_cupm_lock);
        if (registered)
            sm_cupm_api->sampler_finish_now(d);
    }
    sm_cu_own_calls(-1);
}

/* ---------------------------------------------------------------- from CUDA's callbacks */

/* Devices whose first context was created and whose sampler waits to be
 * registered (bit per device): not from inside the context's creation,
 * where the sampler thread's CUPTI calls would race the half-made context. */
static uint32_t sm_cupm_pending;

void sm_cupm_context(uint32_t device, CUcontext ctx)
{
    if (!sm_cupm_on || device >= SM_CUPM_DEVICES)
        return;
    sm_cupm_dev_t *d = &sm_cupm_devs[device];
    pthread_mutex_lock(&sm_cupm_lock);
    if (d->state == 0) {
        d->state = 1;
        d->index = device;
        d->ctx = ctx;
        __atomic_or_fetch(&sm_cupm_pending, 1u << device, __ATOMIC_RELEASE);
        sm_info(2, "GPU %u: first context; its PM sampler waits for the API call's end", device);
    }
    pthread_mutex_unlock(&sm_cupm_lock);
}

void sm_cupm_api_exit(void)
{
    if (SM_LIKELY(!__atomic_load_n(&sm_cupm_pending, __ATOMIC_ACQUIRE)))
        return;
    uint32_t devices = __atomic_exchange_n(&sm_cupm_pending, 0, __ATOMIC_ACQ_REL);
    for (uint32_t device = 0; device < SM_CUPM_DEVICES; device++) {
        if (!(devices & (1u << device)))
            continue;
        sm_cupm_dev_t *d = &sm_cupm_devs[device];
        char line[2048], err[512];
        CUcontext popped;
        sm_cu_own_calls(1);
        int pushed = d->ctx && cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS;
        int rc = sm_cupm_prepare(d, line, sizeof line, err, sizeof err);
        if (pushed)
            cuCtxPopCurrent(&popped);
        sm_cu_own_calls(-1);
        if (rc != 0) {
            sm_cupm_failed(d, line);
            continue;
        }
        static char names[SM_CUPM_DEVICES][32];
        snprintf(names[device], sizeof names[device], "GPU %u PM sampling", device);
        sm_info(2, "GPU %u: registering the PM sampler", device);
        sm_sampler_t s = {names[device], sm_gpu_sampling_decode_period(sm_cupm_interval), d,
                          sm_cupm_start, sm_cupm_read, NULL};
        if (sm_cupm_api->sampler_register(&s) != 0) {
            pthread_mutex_lock(&sm_cupm_lock);
            d->state = 3;
            d->final_done = 1;
            pthread_mutex_unlock(&sm_cupm_lock);
            sm_warning("GPU %u sampling off: the sampler thread did not take it", device);
            continue;
        }
        static int at_exit_registered;
        if (!at_exit_registered && atexit(sm_cupm_at_exit) == 0)
            at_exit_registered = 1;
        if (!at_exit_registered) { /* its last decode would come after CUPTI's end */
            sm_warning("GPU %u sampling off: no exit handler could be registered", device);
            sm_cupm_api->sampler_finish_now(d);
        }
    }
}

void sm_cupm_context_end(uint32_t device)
{
    if (!sm_cupm_on || device >= SM_CUPM_DEVICES)
        return;
    sm_cupm_dev_t *d = &sm_cupm_devs[device];
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&sm_cupm_lock);
    int stop = 0;
    if (d->state == 1 || d->state == 2) {
        /* No request to the sampler thread (its CUPTI calls could wait for
         * this thread, which holds the context): a decode already under
         * way may end (at most 1 s), then sampling stops here and the
         * sampler thread leaves the device alone. */
        while (d->busy && pthread_cond_timedwait(&sm_cupm_cond, &sm_cupm_lock, &until) == 0) {
        }
        stop = d->state == 2 && !d->busy;
        if (d->busy)
            sm_info(1, "GPU %u: the context ends during a PM sampling decode", device);
        d->gone = 1;
        d->gone_ns = sm_cupm_now_ns();
    }
    pthread_mutex_unlock(&sm_cupm_lock);
    if (stop) {
        sm_cu_own_calls(1);
        sm_cupm_stop(d);
        sm_cu_own_calls(-1);
    }
}
