/* NVML on the core's sampler thread (nvml_sampler.h). */
#define _GNU_SOURCE
#include "nvml_sampler.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "../../src/util/log.h"

/* NVML's ABI, as documented: return codes (0 success), opaque device
 * handles, and the two structs read here. */
typedef int sm_nvml_ret_t;
typedef struct sm_nvml_device *sm_nvml_device_t;
typedef struct {
    unsigned int gpu, memory; /* % of the last sample period */
} sm_nvml_utilization_t;
typedef struct {
    unsigned long long total, free, used; /* bytes */
} sm_nvml_memory_t;
enum { SM_NVML_TEMPERATURE_GPU = 0, SM_NVML_CLOCK_SM = 1, SM_NVML_CLOCK_MEM = 2 };

#define SM_NVML_MAX_DEVICES 16
enum {
    SM_NVML_POWER,
    SM_NVML_ENERGY,
    SM_NVML_TEMPERATURE,
    SM_NVML_UTILIZATION,
    SM_NVML_MEM_UTILIZATION,
    SM_NVML_SM_CLOCK,
    SM_NVML_MEM_CLOCK,
    SM_NVML_MEMORY_USED,
    SM_NVML_N
};
static const char *const sm_nvml_what[SM_NVML_N] = {
    "power", "energy", "temperature", "utilization", "memory utilization",
    "SM clock", "memory clock", "memory used"};
static const char *const sm_nvml_unit[SM_NVML_N] = {"mW", "mJ", "C", "%", "%", "MHz", "MHz",
                                                    "bytes"};

static struct {
    void *lib;
    const sm_adapter_api_t *api;
    unsigned devices;
    sm_nvml_device_t dev[SM_NVML_MAX_DEVICES];
    uint32_t metric[SM_NVML_MAX_DEVICES][SM_NVML_N];
    /* Energy counts from the first sample: the energy of the run so far. */
    unsigned long long energy0[SM_NVML_MAX_DEVICES];
    int have_energy0[SM_NVML_MAX_DEVICES];
    sm_nvml_ret_t (*init)(void);
    sm_nvml_ret_t (*shutdown)(void);
    const char *(*error_string)(sm_nvml_ret_t);
    sm_nvml_ret_t (*count)(unsigned *);
    sm_nvml_ret_t (*handle)(unsigned, sm_nvml_device_t *);
    sm_nvml_ret_t (*power)(sm_nvml_device_t, unsigned *);
    sm_nvml_ret_t (*energy)(sm_nvml_device_t, unsigned long long *);
    sm_nvml_ret_t (*temperature)(sm_nvml_device_t, int, unsigned *);
    sm_nvml_ret_t (*utilization)(sm_nvml_device_t, sm_nvml_utilization_t *);
    sm_nvml_ret_t (*clock)(sm_nvml_device_t, int, unsigned *);
    sm_nvml_ret_t (*memory)(sm_nvml_device_t, sm_nvml_memory_t *);
} sm_nvml;

#define SM_NVML_SYM(field, name)                                                          \
    do {                                                                                  \
        void *s_ = dlsym(sm_nvml.lib, name);                                              \
        memcpy(&sm_nvml.field, &s_, sizeof s_);                                           \
    } while (0)

static int sm_nvml_sampler_start(void *ctx)
{
    (void)ctx;
    for (unsigned d = 0; d < sm_nvml.devices; d++)
        for (int k = 0; k < SM_NVML_N; k++) {
            char name[64];
            snprintf(name, sizeof name, "NVIDIA GPU %u %s", d, sm_nvml_what[k]);
            sm_nvml.metric[d][k] = sm_nvml.api->metric_define(name, sm_nvml_unit[k]);
        }
    return 0;
}

static void sm_nvml_put(sm_sample_sink_t *sink, unsigned d, int k, uint64_t v)
{
    if (sm_nvml.metric[d][k] != SM_INVALID_ID)
        sm_nvml.api->sample_put(sink, sm_nvml.metric[d][k], v);
}

static void sm_nvml_read(void *ctx, sm_sample_sink_t *sink)
{
    (void)ctx;
    for (unsigned d = 0; d < sm_nvml.devices; d++) {
        sm_nvml_device_t dev = sm_nvml.dev[d];
        unsigned u;
        unsigned long long e;
        sm_nvml_utilization_t ut;
        sm_nvml_memory_t mem;
        if (sm_nvml.power && sm_nvml.power(dev, &u) == 0)
            sm_nvml_put(sink, d, SM_NVML_POWER, u);
        if (sm_nvml.energy && sm_nvml.energy(dev, &e) == 0) {
            if (!sm_nvml.have_energy0[d]) {
                sm_nvml.energy0[d] = e;
                sm_nvml.have_energy0[d] = 1;
            }
            sm_nvml_put(sink, d, SM_NVML_ENERGY, e >= sm_nvml.energy0[d] ? e - sm_nvml.energy0[d] : 0);
        }
        if (sm_nvml.temperature && sm_nvml.temperature(dev, SM_NVML_TEMPERATURE_GPU, &u) == 0)
            sm_nvml_put(sink, d, SM_NVML_TEMPERATURE, u);
        if (sm_nvml.utilization && sm_nvml.utilization(dev, &ut) == 0) {
            sm_nvml_put(sink, d, SM_NVML_UTILIZATION, ut.gpu);
            sm_nvml_put(sink, d, SM_NVML_MEM_UTILIZATION, ut.memory);
        }
        if (sm_nvml.clock && sm_nvml.clock(dev, SM_NVML_CLOCK_SM, &u) == 0)
            sm_nvml_put(sink, d, SM_NVML_SM_CLOCK, u);
        if (sm_nvml.clock && sm_nvml.clock(dev, SM_NVML_CLOCK_MEM, &u) == 0)
            sm_nvml_put(sink, d, SM_NVML_MEM_CLOCK, u);
        if (sm_nvml.memory && sm_nvml.memory(dev, &mem) == 0)
            sm_nvml_put(sink, d, SM_NVML_MEMORY_USED, mem.used);
    }
}

static void sm_nvml_stop(void *ctx)
{
    (void)ctx;
    /* NVML stays loaded and initialised: the driver's own threads may
     * still use it at exit. */
}

int sm_nvml_start(const sm_adapter_api_t *api)
{
    sm_nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!sm_nvml.lib) {
        sm_warning("NVML not available (%s): no GPU power, energy, temperature, utilization, "
                   "clock or memory samples; the run goes on",
                   dlerror());
        return -1;
    }
    SM_NVML_SYM(init, "nvmlInit_v2");
    SM_NVML_SYM(shutdown, "nvmlShutdown");
    SM_NVML_SYM(error_string, "nvmlErrorString");
    SM_NVML_SYM(count, "nvmlDeviceGetCount_v2");
    SM_NVML_SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SM_NVML_SYM(power, "nvmlDeviceGetPowerUsage");
    SM_NVML_SYM(energy, "nvmlDeviceGetTotalEnergyConsumption");
    SM_NVML_SYM(temperature, "nvmlDeviceGetTemperature");
    SM_NVML_SYM(utilization, "nvmlDeviceGetUtilizationRates");
    SM_NVML_SYM(clock, "nvmlDeviceGetClockInfo");
    SM_NVML_SYM(memory, "nvmlDeviceGetMemoryInfo");
    if (!sm_nvml.init || !sm_nvml.count || !sm_nvml.handle) {
        sm_warning("NVML library without nvmlInit_v2: no GPU power or energy samples");
        return -1;
    }
    sm_nvml_ret_t rc = sm_nvml.init();
    unsigned n = 0;
    if (rc != 0 || sm_nvml.count(&n) != 0 || n == 0) {
        sm_warning("NVML: %s: no GPU power or energy samples; the run goes on",
                   rc != 0 ? (sm_nvml.error_string ? sm_nvml.error_string(rc) : "nvmlInit failed")
                           : "no device");
        if (rc == 0 && sm_nvml.shutdown)
            sm_nvml.shutdown();
        return -1;
    }
    if (n > SM_NVML_MAX_DEVICES)
        n = SM_NVML_MAX_DEVICES;
    for (unsigned d = 0; d < n; d++)
        if (sm_nvml.handle(d, &sm_nvml.dev[d]) == 0)
            sm_nvml.devices = d + 1;
        else
            break;
    sm_nvml.api = api;
    sm_sampler_t s = {"NVML", 0, NULL, sm_nvml_sampler_start, sm_nvml_read, sm_nvml_stop};
    return api->sampler_register(&s);
}
