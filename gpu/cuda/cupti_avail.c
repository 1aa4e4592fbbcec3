/* sysmeasure-avail --gpu on NVIDIA: the devices, the metrics each can count
 * per kernel (CUPTI's profiler host API) and, for a metric list, how many
 * passes it needs.  sysmeasure-avail loads libsysmeasure-cuda.so and calls
 * sysmeasure_cuda_avail; nothing here runs inside a measured program. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "cupti_host.h"
#include "../../src/core/compiler.h"
#include "../../src/util/gpu_metrics.h"

SM_EXPORT int sysmeasure_cuda_avail(const char *metrics, const char *file, int list_all);

static void sm_cua_print(const char *name, const char *type, void *arg)
{
    (void)arg;
    printf("    %-70s %s\n", name, type);
}

static void sm_cua_count(const char *name, const char *type, void *arg)
{
    (void)name;
    size_t *n = arg;
    n[!strcmp(type, "counter") ? 0 : !strcmp(type, "ratio") ? 1 : 2]++;
}

/* 0: all went well; 1: a metric is unknown or a list cannot be configured;
 * 2: no CUDA device or CUPTI failed. */
int sysmeasure_cuda_avail(const char *metrics, const char *file, int list_all)
{
    static sm_gpu_spec_t spec;
    char err[1024];
    sm_gpu_spec_init(&spec);
    if (sm_gpu_spec_load(metrics, file, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "sysmeasure-avail: %s\n", err);
        return 1;
    }
    CUresult cr = cuInit(0);
    int n = 0;
    if (cr != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
        const char *why = NULL;
        cuGetErrorString(cr, &why);
        fprintf(stderr, "sysmeasure-avail: no CUDA device (%s)\n",
                cr != CUDA_SUCCESS && why ? why : "none found");
        return 2;
    }
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    if (cuptiProfilerInitialize(&ip) != CUPTI_SUCCESS) {
        fprintf(stderr, "sysmeasure-avail: cuptiProfilerInitialize failed\n");
        return 2;
    }
    int rc = 0;
    for (int d = 0; d < n; d++) {
        CUdevice dev;
        char name[128] = "?";
        if (cuDeviceGet(&dev, d) != CUDA_SUCCESS)
            continue;
        cuDeviceGetName(name, sizeof name, dev);
        CUpti_Device_GetChipName_Params cp;
        memset(&cp, 0, sizeof cp);
        cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
        cp.deviceIndex = (size_t)d;
        const char *chip = cuptiDeviceGetChipName(&cp) == CUPTI_SUCCESS ? cp.pChipName : NULL;
        CUpti_Profiler_DeviceSupported_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
        sp.cuDevice = dev;
        sp.api = CUPTI_PROFILER_RANGE_PROFILING;
        int supported = cuptiProfilerDeviceSupported(&sp) == CUPTI_SUCCESS &&
                        sp.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
        printf("GPU %d: %s (chip %s), per-kernel counters: %s\n", d, name, chip ? chip : "?",
               supported ? "supported" : "NOT supported (no counter access here)");
        if (!chip)
            continue;
        /* The counter availability image needs a context. */
        CUcontext ctx = NULL;
        uint8_t *avail = NULL;
        if (cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
            CUpti_Profiler_GetCounterAvailability_Params ap;
            memset(&ap, 0, sizeof ap);
            ap.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
            ap.ctx = ctx;
            if (cuptiProfilerGetCounterAvailability(&ap) == CUPTI_SUCCESS &&
                (avail = malloc(ap.counterAvailabilityImageSize))) {
                ap.pCounterAvailabilityImage = avail;
                if (cuptiProfilerGetCounterAvailability(&ap) != CUPTI_SUCCESS) {
                    free(avail);
                    avail = NULL;
                }
            }
        }
        sm_cuh_t *h = sm_cuh_open(chip, avail, 0, err, sizeof err);
        if (!h) {
            printf("  %s\n", err);
            rc = 2;
        } else {
            size_t counts[3] = {0, 0, 0};
            sm_cuh_list(h, sm_cua_count, counts);
            printf("  base metrics: %zu counters, %zu ratios, %zu throughputs (names take a "
                   "rollup: .sum .avg .min .max, and sub-metrics such as "
                   ".pct_of_peak_sustained_elapsed)\n",
                   counts[0], counts[1], counts[2]);
            if (list_all)
                sm_cuh_list(h, sm_cua_print, NULL);
            sm_cuh_close(h);
        }
        /* Each group of the list: its passes (a fresh host object each, as
         * a config image accumulates its metrics). */
        for (uint32_t g = 0; g < spec.n_groups; g++) {
            sm_cuh_t *hg = sm_cuh_open(chip, avail, 0, err, sizeof err);
            if (!hg)
                break;
            uint8_t *image = NULL;
            size_t size = 0, passes = 0;
            printf("  group %u (%u metrics): ", g, spec.groups[g].n);
            if (sm_cuh_config(hg, (const char *const *)spec.groups[g].metrics, spec.groups[g].n,
                              &image, &size, &passes, err, sizeof err) == 0) {
                printf("%zu pass%s\n", passes, passes == 1 ? "" : "es");
            } else if (!sm_cuh_known(hg, err)) {
                char near[512];
                sm_cuh_nearest(hg, err, near, sizeof near, 4);
                printf("'%s' is not a metric of this GPU; nearest: %s\n", err, near);
                rc = rc ? rc : 1;
            } else {
                printf("%s\n", err);
                rc = rc ? rc : 1;
            }
            free(image);
            sm_cuh_close(hg);
        }
        free(avail);
        if (ctx) {
            CUcontext popped;
            cuCtxPopCurrent(&popped);
            cuDevicePrimaryCtxRelease(dev);
        }
    }
    sm_gpu_spec_free(&spec);
    return rc;
}
