/* rocm-smi through dlopen (see rsmi_sampler.h).  The header gives the types
 * and constants; the library is never linked, so a machine without it runs
 * on with one line. */
#define _GNU_SOURCE
#include "rsmi_sampler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rocm_smi/rocm_smi.h>

#include "util/log.h"

static struct {
    void *lib;
    uint32_t devices;
    rsmi_status_t (*init)(uint64_t);
    rsmi_status_t (*shut_down)(void);
    rsmi_status_t (*num_devices)(uint32_t *);
    rsmi_status_t (*status_string)(rsmi_status_t, const char **);
    rsmi_status_t (*power)(uint32_t, uint32_t, uint64_t *);
    rsmi_status_t (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
    rsmi_status_t (*temp)(uint32_t, uint32_t, rsmi_temperature_metric_t, int64_t *);
    rsmi_status_t (*busy)(uint32_t, uint32_t *);
    rsmi_status_t (*mem)(uint32_t, rsmi_memory_type_t, uint64_t *);
} sm_rsmi;

#define SM_RSMI_SYM(field, name)                                                          \
    do {                                                                                  \
        void *s = dlsym(sm_rsmi.lib, name);                                               \
        memcpy(&sm_rsmi.field, &s, sizeof s);                                             \
    } while (0)

uint32_t sm_rsmi_open(int quiet)
{
    sm_rsmi.lib = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!sm_rsmi.lib) {
        if (!quiet)
            sm_warning("rocm-smi not available (%s): no AMD GPU power, energy, temperature, "
                       "utilization or memory samples", dlerror());
        return 0;
    }
    SM_RSMI_SYM(init, "rsmi_init");
    SM_RSMI_SYM(shut_down, "rsmi_shut_down");
    SM_RSMI_SYM(num_devices, "rsmi_num_monitor_devices");
    SM_RSMI_SYM(status_string, "rsmi_status_string");
    SM_RSMI_SYM(power, "rsmi_dev_power_ave_get");
    SM_RSMI_SYM(energy, "rsmi_dev_energy_count_get");
    SM_RSMI_SYM(temp, "rsmi_dev_temp_metric_get");
    SM_RSMI_SYM(busy, "rsmi_dev_busy_percent_get");
    SM_RSMI_SYM(mem, "rsmi_dev_memory_usage_get");
    if (!sm_rsmi.init || !sm_rsmi.num_devices) {
        if (!quiet)
            sm_warning("rocm-smi library without rsmi_init: no AMD GPU samples");
        dlclose(sm_rsmi.lib);
        sm_rsmi.lib = NULL;
        return 0;
    }
    /* rsmi_init reports its failures on stderr itself (two lines when no
     * GPU is there); ours is the one line, so its own go to /dev/null. */
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0)
        dup2(null, 2);
    rsmi_status_t rc = sm_rsmi.init(0);
    if (saved >= 0 && null >= 0)
        dup2(saved, 2);
    if (saved >= 0)
        close(saved);
    if (null >= 0)
        close(null);
    uint32_t n = 0;
    if (rc == RSMI_STATUS_SUCCESS && sm_rsmi.num_devices(&n) == RSMI_STATUS_SUCCESS && n > 0) {
        sm_rsmi.devices = n < SM_RSMI_MAX_DEVICES ? n : SM_RSMI_MAX_DEVICES;
        return sm_rsmi.devices;
    }
    if (!quiet) {
        const char *why = NULL;
        if (rc != RSMI_STATUS_SUCCESS && sm_rsmi.status_string)
            sm_rsmi.status_string(rc, &why);
        if (rc != RSMI_STATUS_SUCCESS)
            sm_warning("rocm-smi: rsmi_init failed (%d: %s): no AMD GPU power, energy, "
                       "temperature, utilization or memory samples", (int)rc, why ? why : "?");
        else
            sm_warning("rocm-smi: no AMD GPU found: no GPU power, energy, temperature, "
                       "utilization or memory samples");
    }
    if (rc == RSMI_STATUS_SUCCESS && sm_rsmi.shut_down)
        sm_rsmi.shut_down();
    dlclose(sm_rsmi.lib);
    sm_rsmi.lib = NULL;
    return 0;
}

uint32_t sm_rsmi_read(sm_rsmi_sample_t *out, uint32_t n)
{
    if (!sm_rsmi.lib)
        return 0;
    if (n > sm_rsmi.devices)
        n = sm_rsmi.devices;
    for (uint32_t d = 0; d < n; d++) {
        sm_rsmi_sample_t *s = &out[d];
        uint64_t v;
        uint32_t u;
        int64_t t;
        float res;
        uint64_t stamp;
        memset(s, 0xff, sizeof *s);
        if (sm_rsmi.power && sm_rsmi.power(d, 0, &v) == RSMI_STATUS_SUCCESS)
            s->power_uw = v;
        /* The counter counts in units of `res` microjoules. */
        if (sm_rsmi.energy && sm_rsmi.energy(d, &v, &res, &stamp) == RSMI_STATUS_SUCCESS)
            s->energy_uj = (uint64_t)((double)v * (double)res);
        if (sm_rsmi.temp &&
            sm_rsmi.temp(d, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &t) == RSMI_STATUS_SUCCESS &&
            t >= 0)
            s->temperature_mc = (uint64_t)t;
        if (sm_rsmi.busy && sm_rsmi.busy(d, &u) == RSMI_STATUS_SUCCESS)
            s->busy_percent = u;
        if (sm_rsmi.mem && sm_rsmi.mem(d, RSMI_MEM_TYPE_VRAM, &v) == RSMI_STATUS_SUCCESS)
            s->memory_used = v;
    }
    return n;
}

void sm_rsmi_close(void)
{
    if (!sm_rsmi.lib)
        return;
    if (sm_rsmi.shut_down)
        sm_rsmi.shut_down();
    /* Left loaded: a sampler may still be between two reads at exit. */
    sm_rsmi.devices = 0;
}
