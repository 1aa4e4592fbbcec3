/* Per-kernel GPU counters on CUPTI's range profiler (cupti_counters.h). */
#define _GNU_SOURCE
#include "cupti_counters.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cupti_host.h"
#include "../../src/util/gpu_metrics.h"
#include "../../src/util/log.h"

#define SM_CUC_RANGES 64       /* launches between two decodes */
#define SM_CUC_CONTEXTS 32
#define SM_CUC_JOIN_SLOTS (1u << 16)
#define SM_CUC_KERNELS 4096

/* What the H100 (CUDA 13.0, driver 580) showed, and how this module
 * follows it (manual section 8d.2):
 * - Kernel records of launches replayed by the range profiler carry
 *   start = end = 0 (CUPTI does not time replayed kernels).  The kernel ran,
 *   replayed, inside its launch call, so such a record gets the launch
 *   call's interval (sm_cuc_launch_interval); its GPU duration is the
 *   metric gpu__time_duration.sum when asked for.
 * - Each batch of ranges runs one whole cycle Enable, counter data image
 *   initialise, SetConfig, Start ... Stop, DecodeData, Disable: the cycle
 *   that gave right values batch after batch in a standalone test.
 * - A batch ends when full (SM_CUC_RANGES launches), on a group change,
 *   before a launch the filters leave out, at the entry of a synchronising
 *   call (sm_cuc_sync), at context destruction and at the end of the run.
 *   Profiler calls are made in entry callbacks only.
 * - No lock of ours is held across a launch or during a profiler call, so
 *   a fatal signal inside one (the end-of-run flush then runs in the
 *   handler) cannot wait for the thread it interrupted. */
#define SM_CUC_COLLECT 1

enum { SM_CUC_KERNEL_MODE, SM_CUC_APPLICATION_MODE, SM_CUC_ROTATE_MODE };

typedef struct sm_cuc_group {
    const char *metrics[SM_GPU_SPEC_MAX_METRICS];
    uint32_t n;
    uint32_t ids[SM_GPU_SPEC_MAX_METRICS]; /* the core's counter numbers */
    sm_cuh_t *host;
    uint8_t *config;
    size_t config_size, passes;
} sm_cuc_group_t;

typedef struct sm_cuc_launch {
    uint64_t correlation;
    uint32_t group, covered;
    uint64_t enter_ns, exit_ns; /* the launch call, CLOCK_MONOTONIC */
    int ok;                     /* returned with success: AutoRange made a range */
} sm_cuc_launch_t;

typedef struct sm_cuc_ctx {
    CUcontext ctx;
    uint32_t device;
    int state; /* 0: not set up, 1: counting, -1: not counted */
    CUpti_RangeProfiler_Object *obj;
    uint8_t *data[SM_GPU_SPEC_MAX_GROUPS];
    size_t data_size[SM_GPU_SPEC_MAX_GROUPS];
    int running, group;
    int configured; /* the group SetConfig bound last; -1: none */
    sm_cuc_launch_t fifo[SM_CUC_RANGES];
    uint32_t n_fifo;
    uint32_t in_flight; /* launches between their enter and exit callbacks */
    int busy;           /* one thread is in profiler calls for this context */
    pthread_t owner;    /* that thread */
} sm_cuc_ctx_t;

/* A launch counted: its values and its kernel record meet here. */
typedef struct sm_cuc_join {
    uint64_t correlation; /* 0: free */
    uint32_t group, covered;
    uint64_t enter_ns, exit_ns;
    double *values;       /* NULL until decoded */
    int has_activity;
    sm_gpu_activity_t activity;
} sm_cuc_join_t;

static const sm_adapter_api_t *sm_cuc_api;
static sm_gpu_spec_t sm_cuc_spec;
static int sm_cuc_mode;
static sm_cuc_group_t sm_cuc_groups[SM_GPU_SPEC_MAX_GROUPS];
static uint32_t sm_cuc_n_groups;
static int sm_cuc_on;      /* asked for and not given up */
static int sm_cuc_ready;   /* groups configured for the chip */
/* sm_cuc_lock guards the contexts' bookkeeping only: it is never held
 * across a launch nor during a range profiler call (the H100 hung with it
 * held from a launch's entry to its exit callback).  A thread that makes
 * profiler calls for a context marks it busy and drops the lock; others
 * wait on sm_cuc_cond (no spinning). */
static pthread_mutex_t sm_cuc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_cuc_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t sm_cuc_join_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_cuc_ctx_t sm_cuc_ctxs[SM_CUC_CONTEXTS];
static sm_cuc_join_t *sm_cuc_joins;
static uint64_t sm_cuc_lost; /* launches without values or record */
static uint64_t sm_cuc_counted;
/* Launches of each kernel name so far (filters, rotation). */
static struct {
    char *name;
    uint64_t count;
} sm_cuc_kernels[SM_CUC_KERNELS];
/* The launch between enter and exit on this thread (0: none). */
static __thread uint64_t sm_cuc_pending_correlation;
static __thread uint32_t sm_cuc_pending_slot;
static __thread sm_cuc_ctx_t *sm_cuc_pending_ctx;

static const char *sm_cuc_result(CUptiResult rc)
{
    const char *text = NULL;
    cuptiGetResultString(rc, &text);
    return text ? text : "unknown CUPTI error";
}

static void sm_cuc_give_up(const char *fmt, const char *a, const char *b)
{
    char line[2048];
    snprintf(line, sizeof line, fmt, a, b);
    sm_warning("%s", line);
    sm_cuc_api->note(line);
    sm_cuc_on = 0;
}

int sm_cuc_init(const sm_adapter_api_t *api)
{
    if (!SM_ADAPTER_API_HAS(api, gpu_counters))
        return 0;
    sm_cuc_api = api;
    char list[4096] = "", file[4096] = "", mode[32] = "kernel", pass[32] = "0";
    api->config_value("gpu_metrics", list, sizeof list);
    api->config_value("gpu_metrics_file", file, sizeof file);
    api->config_value("gpu_counter_mode", mode, sizeof mode);
    api->config_value("gpu_pass", pass, sizeof pass);
    if (!list[0] && !file[0])
        return 0;
    char err[1024];
    sm_gpu_spec_init(&sm_cuc_spec);
    if (sm_gpu_spec_load(list, file, &sm_cuc_spec, err, sizeof err) != 0) {
        sm_warning("GPU counters not collected: %s", err);
        return 0;
    }
    sm_cuc_mode = !strcmp(mode, "rotate")        ? SM_CUC_ROTATE_MODE
                  : !strcmp(mode, "application") ? SM_CUC_APPLICATION_MODE
                                                 : SM_CUC_KERNEL_MODE;
    const sm_gpu_spec_t *s = &sm_cuc_spec;
    if (sm_cuc_mode == SM_CUC_KERNEL_MODE) {
        sm_cuc_group_t *g = &sm_cuc_groups[0];
        g->n = sm_gpu_spec_all(s, g->metrics, SM_GPU_SPEC_MAX_METRICS);
        sm_cuc_n_groups = 1;
    } else if (sm_cuc_mode == SM_CUC_APPLICATION_MODE) {
        long k = strtol(pass, NULL, 10);
        if (k < 0 || (uint32_t)k >= s->n_groups) {
            sm_warning("GPU counters not collected: pass %ld of %u metric groups", k, s->n_groups);
            return 0;
        }
        sm_cuc_group_t *g = &sm_cuc_groups[0];
        for (uint32_t i = 0; i < s->groups[k].n; i++)
            g->metrics[g->n++] = s->groups[k].metrics[i];
        sm_cuc_n_groups = 1;
        char text[32];
        snprintf(text, sizeof text, "%u", s->n_groups);
        if (SM_CUC_COLLECT) /* else the pass driver stops after this run */
            api->metadata("gpu_passes", text);
        snprintf(text, sizeof text, "%ld", k);
        api->metadata("gpu_pass", text);
    } else {
        for (uint32_t k = 0; k < s->n_groups; k++) {
            sm_cuc_group_t *g = &sm_cuc_groups[k];
            for (uint32_t i = 0; i < s->groups[k].n; i++)
                g->metrics[g->n++] = s->groups[k].metrics[i];
        }
        sm_cuc_n_groups = s->n_groups;
    }
    sm_cuc_joins = calloc(SM_CUC_JOIN_SLOTS, sizeof *sm_cuc_joins);
    if (!sm_cuc_joins)
        return 0;
    /* cuptiProfilerInitialize waits for the first launch: called from
     * InitializeInjection it fails (CUPTI_ERROR_UNKNOWN on the H100). */
    sm_cuc_on = 1;
    api->metadata("gpu_counter_mode", mode);
    return 1;
}

/* ---------------------------------------------------------------- joining values and records */

static void sm_cuc_emit(const sm_cuc_join_t *j)
{
    const sm_cuc_group_t *g = &sm_cuc_groups[j->group];
    sm_gpu_counter_value_t v[SM_GPU_SPEC_MAX_METRICS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        if (g->ids[i] == UINT32_MAX)
            continue;
        sm_gpu_counter_value_t *x = &v[n++];
        memset(x, 0, sizeof *x);
        x->correlation = j->correlation;
        x->start = j->activity.start;
        x->end = j->activity.end;
        x->region = j->activity.region;
        x->stream = j->activity.stream;
        x->metric = g->ids[i];
        x->covered = j->covered;
        x->group = sm_cuc_mode == SM_CUC_APPLICATION_MODE ? 0 : j->group;
        x->value = j->values[i];
        x->launch = j->activity.launch;
    }
    if (n)
        sm_cuc_api->gpu_counters(v, n, sizeof v[0]);
}

static sm_cuc_join_t *sm_cuc_join_find(uint64_t correlation, int create)
{
    uint32_t h0 = (uint32_t)((correlation * 0x9E3779B97F4A7C15ull) >> 48) & (SM_CUC_JOIN_SLOTS - 1);
    sm_cuc_join_t *free_slot = NULL;
    for (uint32_t probe = 0; probe < 64; probe++) {
        sm_cuc_join_t *j = &sm_cuc_joins[(h0 + probe) & (SM_CUC_JOIN_SLOTS - 1)];
        if (j->correlation == correlation)
            return j;
        if (!j->correlation && !free_slot)
            free_slot = j;
    }
    if (!create || !free_slot)
        return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->correlation = correlation;
    return free_slot;
}

/* Free a slot; later entries of its probe run stay reachable because the
 * lookup probes a fixed window rather than stopping at a hole. */
static void sm_cuc_join_free(sm_cuc_join_t *j)
{
    free(j->values);
    memset(j, 0, sizeof *j);
}

static void sm_cuc_join_counted(const sm_cuc_launch_t *l)
{
    pthread_mutex_lock(&sm_cuc_join_lock);
    sm_cuc_join_t *j = sm_cuc_join_find(l->correlation, 1);
    if (j) {
        j->group = l->group;
        j->covered = l->covered;
        j->enter_ns = l->enter_ns;
        j->exit_ns = l->exit_ns;
    } else {
        sm_cuc_lost++;
    }
    pthread_mutex_unlock(&sm_cuc_join_lock);
}

static void sm_cuc_join_values(const sm_cuc_launch_t *l, double *values)
{
    pthread_mutex_lock(&sm_cuc_join_lock);
    sm_cuc_join_t *j = sm_cuc_join_find(l->correlation, 1);
    if (!j) {
        free(values);
        sm_cuc_lost++;
    } else {
        free(j->values);
        j->values = values;
        j->group = l->group;
        j->covered = l->covered;
        if (j->has_activity) {
            sm_cuc_emit(j);
            sm_cuc_join_free(j);
        }
    }
    pthread_mutex_unlock(&sm_cuc_join_lock);
}

int sm_cuc_launch_interval(uint64_t correlation, uint64_t *start_ns, uint64_t *end_ns)
{
    if (!sm_cuc_joins || !correlation)
        return -1;
    int rc = -1;
    pthread_mutex_lock(&sm_cuc_join_lock);
    sm_cuc_join_t *j = sm_cuc_join_find(correlation, 0);
    if (j && j->exit_ns) {
        *start_ns = j->enter_ns;
        *end_ns = j->exit_ns;
        rc = 0;
    }
    pthread_mutex_unlock(&sm_cuc_join_lock);
    return rc;
}

static uint64_t sm_cuc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of the activity records */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sm_cuc_kernel_done(const sm_gpu_activity_t *a)
{
    if (!sm_cuc_joins || !a->correlation)
        return;
    pthread_mutex_lock(&sm_cuc_join_lock);
    sm_cuc_join_t *j = sm_cuc_join_find(a->correlation, 0);
    if (j) {
        j->activity = *a;
        j->has_activity = 1;
        if (j->values) {
            sm_cuc_emit(j);
            sm_cuc_join_free(j);
        }
    }
    pthread_mutex_unlock(&sm_cuc_join_lock);
}

/* ---------------------------------------------------------------- setting up */

static int sm_cuc_setup_groups(CUcontext ctx, uint32_t device)
{
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUptiResult irc = cuptiProfilerInitialize(&ip);
    if (irc != CUPTI_SUCCESS) {
        sm_cuc_give_up("GPU counters not collected: cuptiProfilerInitialize failed (%s)%s; the run "
                       "goes on with tracing only",
                       sm_cuc_result(irc), "");
        return -1;
    }
    CUpti_Profiler_DeviceSupported_Params sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    CUdevice dev;
    if (cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        dev = (CUdevice)device;
    sp.cuDevice = dev;
    sp.api = CUPTI_PROFILER_RANGE_PROFILING;
    CUptiResult rc = cuptiProfilerDeviceSupported(&sp);
    if (rc != CUPTI_SUCCESS || sp.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        const char *why = rc != CUPTI_SUCCESS ? sm_cuc_result(rc)
                          : sp.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "virtual GPU without profiling"
                          : sp.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "confidential computing"
                          : sp.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                              ? "architecture older than compute capability 7.0"
                              : "not supported here";
        sm_cuc_give_up("GPU counters not collected: this GPU does not allow counter access "
                       "(%s%s); the run goes on with tracing only",
                       why, "");
        return -1;
    }
    CUpti_Device_GetChipName_Params cp;
    memset(&cp, 0, sizeof cp);
    cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cp.deviceIndex = device;
    if ((rc = cuptiDeviceGetChipName(&cp)) != CUPTI_SUCCESS) {
        sm_cuc_give_up("GPU counters not collected: cuptiDeviceGetChipName failed (%s)%s",
                       sm_cuc_result(rc), "");
        return -1;
    }
    CUpti_Profiler_GetCounterAvailability_Params ap;
    memset(&ap, 0, sizeof ap);
    ap.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    ap.ctx = ctx;
    uint8_t *avail = NULL;
    if (cuptiProfilerGetCounterAvailability(&ap) == CUPTI_SUCCESS && ap.counterAvailabilityImageSize) {
        avail = malloc(ap.counterAvailabilityImageSize);
        ap.pCounterAvailabilityImage = avail;
        if (avail && cuptiProfilerGetCounterAvailability(&ap) != CUPTI_SUCCESS) {
            free(avail);
            avail = NULL;
        }
    }
    size_t most = 0;
    for (uint32_t k = 0; k < sm_cuc_n_groups; k++) {
        sm_cuc_group_t *g = &sm_cuc_groups[k];
        char err[512];
        g->host = sm_cuh_open(cp.pChipName, avail, 0, err, sizeof err);
        if (!g->host) {
            sm_cuc_give_up("GPU counters not collected: %s%s", err, "");
            free(avail);
            return -1;
        }
        if (sm_cuh_config(g->host, g->metrics, g->n, &g->config, &g->config_size, &g->passes, err,
                          sizeof err) != 0) {
            if (sm_cuh_known(g->host, err) == 0 && sm_gpu_metric_name_ok(err)) {
                char near[512], what[1200];
                sm_cuh_nearest(g->host, err, near, sizeof near, 4);
                snprintf(what, sizeof what, "'%s' is not a metric of this GPU (%s)", err,
                         cp.pChipName);
                sm_cuc_give_up("GPU counters not collected: %s; nearest: %s", what, near);
            } else {
                sm_cuc_give_up("GPU counters not collected: %s%s", err, "");
            }
            free(avail);
            return -1;
        }
        for (uint32_t i = 0; i < g->n; i++)
            g->ids[i] = sm_cuc_api->gpu_counter_define(g->metrics[i],
                                                       sm_cuh_unit(g->host, g->metrics[i]));
        if (g->passes > most)
            most = g->passes;
    }
    free(avail);
    char note[300], text[32];
    static const char *const modes[] = {"kernel", "application", "rotate"};
    uint32_t metrics = 0;
    for (uint32_t k = 0; k < sm_cuc_n_groups; k++)
        metrics += sm_cuc_groups[k].n;
    snprintf(note, sizeof note,
             "GPU counters: %s mode, %u metrics in %u group%s on %s; up to %zu hardware pass%s "
             "per kernel (kernels serialised and replayed by the profiler)",
             modes[sm_cuc_mode], metrics, sm_cuc_n_groups, sm_cuc_n_groups == 1 ? "" : "s",
             cp.pChipName, most, most == 1 ? "" : "es");
    sm_cuc_api->note(note);
    sm_info(1, "%s", note);
    snprintf(text, sizeof text, "%zu", most);
    sm_cuc_api->metadata("gpu_counter_passes", text);
    sm_cuc_api->metadata("gpu_chip", cp.pChipName);
    return 0;
}


static int sm_cuc_setup_ctx(sm_cuc_ctx_t *c)
{
    if (!sm_cuc_ready) {
        if (sm_cuc_setup_groups(c->ctx, c->device) != 0)
            return -1;
        sm_cuc_ready = 1;
    }
    if (!SM_CUC_COLLECT) {
        sm_cuc_give_up("GPU counters: the metrics are valid here, but per-kernel collection is "
                       "disabled in this build (SM_CUC_COLLECT)%s%s; the run goes on with tracing only",
                       "", "");
        return -1;
    }
    c->group = -1;
    c->configured = -1;
    return 0;
}

/* Enables the range profiler on c and binds a fresh image for group. */
static int sm_cuc_enable(sm_cuc_ctx_t *c, uint32_t group)
{
    CUpti_RangeProfiler_Enable_Params ep;
    memset(&ep, 0, sizeof ep);
    ep.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    ep.ctx = c->ctx;
    CUptiResult rc = cuptiRangeProfilerEnable(&ep);
    if (rc != CUPTI_SUCCESS) {
        sm_cuc_give_up("GPU counters not collected: cuptiRangeProfilerEnable failed (%s)%s",
                       sm_cuc_result(rc), rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                                              ? " (counters need admin rights: "
                                                "NVreg_RestrictProfilingToAdminUsers=0)"
                                              : "");
        return -1;
    }
    c->obj = ep.pRangeProfilerObject;
    sm_cuc_group_t *g = &sm_cuc_groups[group];
    /* Every new profiler object needs GetCounterDataSize before its image is
     * initialised: that call gives the object its metrics.  Without it,
     * CounterDataImageInitialize on the second Enable crashed the program
     * on the H100 (SIGSEGV-like fatal signal in the enter callback of the
     * 65th launch; the signal handler's flush then waited for our lock:
     * the "hang" of the previous build). */
    {
        CUpti_RangeProfiler_GetCounterDataSize_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
        sp.pRangeProfilerObject = c->obj;
        sp.pMetricNames = g->metrics;
        sp.numMetrics = g->n;
        sp.maxNumOfRanges = SM_CUC_RANGES;
        sp.maxNumRangeTreeNodes = SM_CUC_RANGES;
        if ((rc = cuptiRangeProfilerGetCounterDataSize(&sp)) == CUPTI_SUCCESS) {
            free(c->data[group]); /* a fresh image for each object */
            c->data[group] = malloc(sp.counterDataSize);
        }
        if (rc != CUPTI_SUCCESS || !c->data[group]) {
            sm_cuc_give_up("GPU counters not collected: counter data image (%s)%s",
                           rc != CUPTI_SUCCESS ? sm_cuc_result(rc) : "out of memory", "");
            return -1;
        }
        c->data_size[group] = sp.counterDataSize;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ip;
    memset(&ip, 0, sizeof ip);
    ip.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ip.pRangeProfilerObject = c->obj;
    ip.counterDataSize = c->data_size[group];
    ip.pCounterData = c->data[group];
    if ((rc = cuptiRangeProfilerCounterDataImageInitialize(&ip)) != CUPTI_SUCCESS) {
        sm_cuc_give_up("GPU counters not collected: counter data image (%s)%s",
                       sm_cuc_result(rc), "");
        return -1;
    }
    return 0;
}

static void sm_cuc_disable(sm_cuc_ctx_t *c)
{
    if (!c->obj)
        return;
    CUpti_RangeProfiler_Disable_Params dp;
    memset(&dp, 0, sizeof dp);
    dp.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
    dp.pRangeProfilerObject = c->obj;
    cuptiRangeProfilerDisable(&dp);
    c->obj = NULL;
}

static sm_cuc_ctx_t *sm_cuc_context(CUcontext ctx, uint32_t device, int create)
{
    for (uint32_t i = 0; i < SM_CUC_CONTEXTS; i++)
        if (sm_cuc_ctxs[i].ctx == ctx)
            return &sm_cuc_ctxs[i];
    if (!create)
        return NULL;
    for (uint32_t i = 0; i < SM_CUC_CONTEXTS; i++)
        if (!sm_cuc_ctxs[i].ctx) {
            sm_cuc_ctx_t *c = &sm_cuc_ctxs[i];
            memset(c, 0, sizeof *c);
            c->ctx = ctx;
            c->device = device;
            c->state = 0; /* set up by the caller, outside sm_cuc_lock */
            return c;
        }
    return NULL;
}

/* ---------------------------------------------------------------- ranges */

/* Stops the profiler of c and hands the values of its ranges over. */
static void sm_cuc_decode(sm_cuc_ctx_t *c)
{
    if (!c->running)
        return;
    c->running = 0;
    CUpti_RangeProfiler_Stop_Params st;
    memset(&st, 0, sizeof st);
    st.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    st.pRangeProfilerObject = c->obj;
    CUptiResult rc = cuptiRangeProfilerStop(&st);
    CUpti_RangeProfiler_DecodeData_Params dp;
    memset(&dp, 0, sizeof dp);
    dp.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dp.pRangeProfilerObject = c->obj;
    if (rc == CUPTI_SUCCESS)
        rc = cuptiRangeProfilerDecodeData(&dp);
    int k = c->group;
    size_t ranges = 0;
    if (rc == CUPTI_SUCCESS) {
        CUpti_RangeProfiler_GetCounterDataInfo_Params ip;
        memset(&ip, 0, sizeof ip);
        ip.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
        ip.pCounterDataImage = c->data[k];
        ip.counterDataImageSize = c->data_size[k];
        if (cuptiRangeProfilerGetCounterDataInfo(&ip) == CUPTI_SUCCESS)
            ranges = ip.numTotalRanges;
    } else {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            sm_warning("GPU counters: decoding the range profiler's data failed (%s); those "
                       "launches have no values (counted in the summary's notes)",
                       sm_cuc_result(rc));
    }
    /* Range r is the r-th launch counted since the start: when CUPTI kept
     * fewer (dropped ranges), the pairing is unknown and none is used. */
    const sm_cuc_group_t *g = &sm_cuc_groups[k];
    uint32_t used = 0, made = 0;
    for (uint32_t r = 0; r < c->n_fifo; r++)
        made += c->fifo[r].ok != 0;
    if (ranges == made && dp.numOfRangeDropped == 0) {
        for (uint32_t r = 0, f = 0; r < made; r++, f++) {
            while (!c->fifo[f].ok)
                f++;
            double *values = calloc(g->n ? g->n : 1, sizeof *values);
            int bad = !values || sm_cuh_evaluate(g->host, c->data[k], c->data_size[k], r,
                                                 g->metrics, g->n, values) != 0;
            for (uint32_t i = 0; !bad && i < g->n; i++)
                bad = values[i] != values[i]; /* NaN: the range has no data */
            if (bad) {
                free(values);
                continue;
            }
            sm_cuc_join_values(&c->fifo[f], values);
            used++;
        }
    }
    __atomic_fetch_add(&sm_cuc_lost, made - used, __ATOMIC_RELAXED);
    sm_info(1, "GPU counters: batch of %u launches (group %d): %s, %zu ranges, %zu dropped, %u "
            "with values", made, k, sm_cuc_result(rc), ranges, (size_t)dp.numOfRangeDropped, used);
    c->n_fifo = 0;
    sm_cuc_disable(c);
}

static int sm_cuc_start(sm_cuc_ctx_t *c, uint32_t group)
{
    if (sm_cuc_enable(c, group) != 0) {
        sm_cuc_disable(c);
        c->state = -1;
        return -1;
    }
    CUpti_RangeProfiler_SetConfig_Params sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sp.pRangeProfilerObject = c->obj;
    sp.configSize = sm_cuc_groups[group].config_size;
    sp.pConfig = sm_cuc_groups[group].config;
    sp.counterDataImageSize = c->data_size[group];
    sp.pCounterDataImage = c->data[group];
    sp.range = CUPTI_AutoRange;
    sp.replayMode = CUPTI_KernelReplay;
    sp.maxRangesPerPass = SM_CUC_RANGES;
    sp.numNestingLevels = 1;
    sp.minNestingLevel = 1;
    sp.passIndex = 0;
    sp.targetNestingLevel = 1;
    CUptiResult rc = cuptiRangeProfilerSetConfig(&sp);
    if (rc == CUPTI_SUCCESS) {
        c->configured = (int)group;
        CUpti_RangeProfiler_Start_Params st;
        memset(&st, 0, sizeof st);
        st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
        st.pRangeProfilerObject = c->obj;
        rc = cuptiRangeProfilerStart(&st);
    }
    if (rc != CUPTI_SUCCESS) {
        sm_cuc_give_up("GPU counters: starting the range profiler failed (%s)%s; the run goes on "
                       "with tracing only",
                       sm_cuc_result(rc), "");
        sm_cuc_disable(c);
        c->state = -1;
        return -1;
    }
    c->group = (int)group;
    c->running = 1;
    return 0;
}

static uint64_t sm_cuc_nth(const char *kernel)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = kernel; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (uint32_t probe = 0; probe < SM_CUC_KERNELS; probe++) {
        uint32_t i = (uint32_t)((h + probe) % SM_CUC_KERNELS);
        if (!sm_cuc_kernels[i].name) {
            sm_cuc_kernels[i].name = strdup(kernel);
            if (!sm_cuc_kernels[i].name)
                return 1;
        }
        if (!strcmp(sm_cuc_kernels[i].name, kernel))
            return ++sm_cuc_kernels[i].count;
    }
    return 1;
}

/* With sm_cuc_lock held: waits until no other thread makes profiler calls
 * for c and no launch on c is between its callbacks, claims c and drops the
 * lock.  The caller then makes its profiler calls with no lock of ours held
 * and ends with sm_cuc_release. */
static void sm_cuc_claim(sm_cuc_ctx_t *c)
{
    while (c->busy || c->in_flight)
        pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
    c->busy = 1;
    c->owner = pthread_self();
    pthread_mutex_unlock(&sm_cuc_lock);
}

/* Gives c back; returns with sm_cuc_lock held. */
static void sm_cuc_release(sm_cuc_ctx_t *c)
{
    pthread_mutex_lock(&sm_cuc_lock);
    c->busy = 0;
    pthread_cond_broadcast(&sm_cuc_cond);
}

static pthread_mutex_t sm_cuc_setup_lock = PTHREAD_MUTEX_INITIALIZER; /* the chip's configs, once */

void sm_cuc_launch_enter(CUcontext ctx, uint32_t device, uint64_t correlation, const char *kernel)
{
    if (!sm_cuc_on || !ctx)
        return;
    pthread_mutex_lock(&sm_cuc_lock);
    sm_cuc_ctx_t *c = sm_cuc_context(ctx, device, 1);
    while (c && c->state == 0 && c->busy) /* another thread sets it up */
        pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
    if (c && c->state == 0) {
        sm_cuc_claim(c);
        pthread_mutex_lock(&sm_cuc_setup_lock);
        int rc = sm_cuc_setup_ctx(c);
        pthread_mutex_unlock(&sm_cuc_setup_lock);
        sm_cuc_release(c);
        if (c->state == 0)
            c->state = rc == 0 ? 1 : -1;
    }
    if (!c || c->state != 1 || !sm_cuc_on) {
        pthread_mutex_unlock(&sm_cuc_lock);
        return;
    }
    const char *name = kernel ? kernel : "";
    uint64_t nth = sm_cuc_nth(name);
    int selected = sm_gpu_spec_selects(&sm_cuc_spec, name, nth);
    uint32_t group = 0, covered = 1;
    if (selected && sm_cuc_mode == SM_CUC_ROTATE_MODE) {
        uint32_t interval = sm_cuc_spec.interval ? sm_cuc_spec.interval : 1;
        group = (uint32_t)(((nth - 1) / interval) % sm_cuc_n_groups);
        covered = sm_cuc_n_groups;
    }
    /* Profiler calls happen here, before the launch, never in an exit
     * callback: a batch ends (Stop, Decode, Disable) when it is full, on a
     * group change and before a launch the filters leave out (and at the
     * entry of a synchronising call: sm_cuc_sync); the next one starts
     * (Enable, SetConfig, Start) at a counted launch. */
    for (;;) {
        if (c->state != 1 || !sm_cuc_on) {
            pthread_mutex_unlock(&sm_cuc_lock);
            return;
        }
        if (c->busy) {
            pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
            continue;
        }
        /* n_fifo counts the launches in flight too (slots taken at entry). */
        int end = c->running && (!selected || c->group != (int)group || c->n_fifo >= SM_CUC_RANGES);
        int start = selected && !c->running && !end;
        if (!end && !start) {
            /* Counted launches of several threads go one at a time: AutoRange
             * numbers ranges in the order the driver takes the launches,
             * which for two threads between their callbacks need not be the
             * order of their slots (values would swap between launches). */
            if (selected && c->running && c->in_flight) {
                pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
                continue;
            }
            break;
        }
        if (c->in_flight) {
            pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
            continue;
        }
        sm_cuc_claim(c);
        if (end) {
            sm_cuc_decode(c);
        } else {
            sm_cuc_start(c, group);
        }
        sm_cuc_release(c);
    }
    if (!selected || !c->running) {
        pthread_mutex_unlock(&sm_cuc_lock);
        return;
    }
    /* The slot is taken at entry: ranges are numbered in launch order. */
    uint32_t slot = c->n_fifo++;
    c->fifo[slot] = (sm_cuc_launch_t){correlation, group, covered, sm_cuc_now(), 0, 0};
    c->in_flight++;
    pthread_mutex_unlock(&sm_cuc_lock);
    sm_cuc_pending_correlation = correlation;
    sm_cuc_pending_slot = slot;
    sm_cuc_pending_ctx = c;
}

void sm_cuc_launch_exit(CUcontext ctx, uint64_t correlation, int failed)
{
    (void)ctx;
    if (!sm_cuc_pending_correlation)
        return;
    sm_cuc_ctx_t *c = sm_cuc_pending_ctx;
    uint64_t now = sm_cuc_now();
    pthread_mutex_lock(&sm_cuc_lock);
    sm_cuc_launch_t *l = &c->fifo[sm_cuc_pending_slot];
    if (correlation == sm_cuc_pending_correlation && !failed) {
        l->exit_ns = now;
        l->ok = 1;
        sm_cuc_join_counted(l);
        sm_cuc_counted++;
    }
    c->in_flight--;
    if (!c->in_flight)
        pthread_cond_broadcast(&sm_cuc_cond);
    pthread_mutex_unlock(&sm_cuc_lock);
    sm_cuc_pending_correlation = 0;
    sm_cuc_pending_ctx = NULL;
}

/* Ends counting on c: the last batch decoded, the profiler disabled, and
 * with forget the context's slot freed.  Called without sm_cuc_lock. */
static void sm_cuc_end(CUcontext ctx, int forget)
{
    pthread_mutex_lock(&sm_cuc_lock);
    sm_cuc_ctx_t *c = sm_cuc_context(ctx, 0, 0);
    if (!c || c->state != 1) {
        if (c && forget && !c->busy)
            memset(c, 0, sizeof *c);
        pthread_mutex_unlock(&sm_cuc_lock);
        return;
    }
    /* A fatal signal inside a profiler call of this thread (the end of the
     * run then comes from the signal handler): waiting for c would wait for
     * ourselves.  That batch is lost (counted). */
    if (c->busy && pthread_equal(c->owner, pthread_self())) {
        __atomic_fetch_add(&sm_cuc_lost, c->n_fifo, __ATOMIC_RELAXED);
        c->state = -1;
        pthread_mutex_unlock(&sm_cuc_lock);
        return;
    }
    sm_cuc_claim(c);
    sm_cuc_decode(c);
    sm_cuc_disable(c);
    sm_cuc_release(c);
    if (forget) {
        for (uint32_t k = 0; k < sm_cuc_n_groups; k++)
            free(c->data[k]);
        memset(c, 0, sizeof *c);
    }
    pthread_mutex_unlock(&sm_cuc_lock);
}

void sm_cuc_context_end(CUcontext ctx)
{
    if (sm_cuc_joins)
        sm_cuc_end(ctx, 1);
}

/* At the entry of a synchronising call (an entry callback, like the
 * launches' profiler calls): the batch so far is decoded.  Values must not
 * wait for the end of the run: there the context may already be gone. */
void sm_cuc_sync(CUcontext ctx)
{
    if (!sm_cuc_on || !ctx)
        return;
    pthread_mutex_lock(&sm_cuc_lock);
    sm_cuc_ctx_t *c = sm_cuc_context(ctx, 0, 0);
    while (c && c->state == 1 && c->running && (c->busy || c->in_flight))
        pthread_cond_wait(&sm_cuc_cond, &sm_cuc_lock);
    if (c && c->state == 1 && c->running) {
        sm_cuc_claim(c);
        sm_cuc_decode(c);
        sm_cuc_release(c);
    }
    pthread_mutex_unlock(&sm_cuc_lock);
}

void sm_cuc_flush_context(CUcontext ctx)
{
    if (sm_cuc_joins)
        sm_cuc_end(ctx, 0);
}

void sm_cuc_finish(void)
{
    if (!sm_cuc_joins)
        return;
    pthread_mutex_lock(&sm_cuc_join_lock);
    uint64_t unmatched = 0;
    for (uint32_t i = 0; i < SM_CUC_JOIN_SLOTS; i++)
        if (sm_cuc_joins[i].correlation) {
            unmatched++;
            sm_cuc_join_free(&sm_cuc_joins[i]);
        }
    pthread_mutex_unlock(&sm_cuc_join_lock);
    uint64_t lost = __atomic_load_n(&sm_cuc_lost, __ATOMIC_RELAXED) + unmatched;
    char text[64];
    snprintf(text, sizeof text, "%" PRIu64, sm_cuc_counted);
    sm_cuc_api->metadata("gpu_counted_launches", text);
    if (lost) {
        char note[200];
        snprintf(note, sizeof note,
                 "GPU counters: %" PRIu64 " of %" PRIu64 " counted launches have no values (the "
                 "profiler or the activity record did not deliver them)",
                 lost, sm_cuc_counted);
        sm_cuc_api->note(note);
        sm_warning("%s", note);
    }
}
