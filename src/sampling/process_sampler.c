/* The process sampler: memory, CPU utilization (process and each measured
 * thread), CPU frequency of the cores the process runs on, page faults,
 * context switches, I/O bytes and network bytes.  All reads are plain
 * open/read of small /proc and /sys files on the sampler thread.
 *
 * Counters that only grow (faults, switches, bytes) are sampled as running
 * totals: the trace shows their rate, the summary's last value is the
 * total.  Network bytes are those of the process's network namespace
 * (Linux keeps no per-process count), loopback left out. */
#define _GNU_SOURCE
#include "process_sampler.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../core/location.h"
#include "../core/sampler.h"

enum {
    M_RSS, M_VSZ, M_HWM, M_CPU, M_FREQ, M_MINFLT, M_MAJFLT, M_VCSW, M_IVCSW,
    M_IO_READ, M_IO_WRITE, M_NET_RX, M_NET_TX, M_COUNT
};

static const char *const sm_ps_names[M_COUNT][2] = {
    {"memory resident", "B"},
    {"memory virtual", "B"},
    {"memory high-water mark", "B"},
    {"cpu utilization process", "%"},
    {"cpu frequency", "Hz"},
    {"page faults minor", "1"},
    {"page faults major", "1"},
    {"context switches voluntary", "1"},
    {"context switches involuntary", "1"},
    {"io read bytes", "B"},
    {"io written bytes", "B"},
    {"network received bytes", "B"},
    {"network sent bytes", "B"},
};

#define SM_PS_THREADS 128

typedef struct sm_ps {
    sm_metric_id_t id[M_COUNT];
    int have_io, have_net;
    uint64_t last_wall_ns, last_cpu_ns;
    /* Per measured thread: its location, metric, and CPU time at the last read. */
    struct {
        uint32_t location;
        pid_t tid;
        sm_metric_id_t id;
        uint64_t cpu_ns;
    } threads[SM_PS_THREADS];
    uint32_t n_threads;
    char buf[16384];
} sm_ps_t;

static sm_ps_t sm_ps;

/* The file's first len-1 bytes, NUL-terminated; length or -1. */
static ssize_t sm_ps_read(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = 0, r;
    while ((size_t)n < len - 1 && (r = read(fd, buf + n, len - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    buf[n < 0 ? 0 : n] = '\0';
    return n;
}

/* The number after "key" in a "key: value" file; 0 when missing. */
static uint64_t sm_ps_field(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static uint64_t sm_ps_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sm_ps_start(void *ctx)
{
    sm_ps_t *ps = ctx;
    ps->have_io = sm_ps_read("/proc/self/io", ps->buf, sizeof ps->buf) > 0;
    ps->have_net = sm_ps_read("/proc/self/net/dev", ps->buf, sizeof ps->buf) > 0;
    for (int i = 0; i < M_COUNT; i++) {
        ps->id[i] = SM_INVALID_ID;
        if ((i == M_IO_READ || i == M_IO_WRITE) && !ps->have_io)
            continue;
        if ((i == M_NET_RX || i == M_NET_TX) && !ps->have_net)
            continue;
        ps->id[i] = sm_metric_define(sm_ps_names[i][0], sm_ps_names[i][1]);
    }
    ps->last_wall_ns = sm_ps_ns(CLOCK_MONOTONIC);
    ps->last_cpu_ns = sm_ps_ns(CLOCK_PROCESS_CPUTIME_ID);
    return 0;
}

static void sm_ps_put(sm_ps_t *ps, sm_sample_sink_t *sink, int m, uint64_t v)
{
    if (ps->id[m] != SM_INVALID_ID)
        sm_sample_put(sink, ps->id[m], v);
}

/* ns the thread spent on a CPU (schedstat's first field), or -1. */
static int64_t sm_ps_thread_cpu(sm_ps_t *ps, pid_t tid, int *cpu)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    if (sm_ps_read(path, ps->buf, sizeof ps->buf) <= 0)
        return -1;
    int64_t ns = strtoll(ps->buf, NULL, 10);
    /* The CPU it last ran on: field 39 of stat, after the name's ')'. */
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    if (cpu && sm_ps_read(path, ps->buf, sizeof ps->buf) > 0) {
        const char *p = strrchr(ps->buf, ')');
        int field = 2;
        while (p && *p && field < 39)
            if (*p++ == ' ')
                field++;
        if (p && field == 39)
            *cpu = atoi(p);
    }
    return ns;
}

/* kHz of one CPU: cpufreq where the kernel has it, else /proc/cpuinfo. */
static uint64_t sm_ps_cpu_khz(sm_ps_t *ps, int cpu, const char *cpuinfo)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
    char small[64];
    if (sm_ps_read(path, small, sizeof small) > 0)
        return strtoull(small, NULL, 10);
    (void)ps;
    if (!cpuinfo)
        return 0;
    char key[32];
    snprintf(key, sizeof key, "processor\t: %d\n", cpu);
    const char *p = strstr(cpuinfo, key);
    p = p ? strstr(p, "cpu MHz") : NULL;
    p = p ? strchr(p, ':') : NULL;
    return p ? (uint64_t)(strtod(p + 1, NULL) * 1000.0) : 0;
}

static void sm_ps_read_all(void *ctx, sm_sample_sink_t *sink)
{
    sm_ps_t *ps = ctx;
    if (sm_ps_read("/proc/self/status", ps->buf, sizeof ps->buf) > 0) {
        sm_ps_put(ps, sink, M_RSS, sm_ps_field(ps->buf, "VmRSS:") * 1024u);
        sm_ps_put(ps, sink, M_VSZ, sm_ps_field(ps->buf, "VmSize:") * 1024u);
        sm_ps_put(ps, sink, M_HWM, sm_ps_field(ps->buf, "VmHWM:") * 1024u);
    }
    uint64_t wall = sm_ps_ns(CLOCK_MONOTONIC), cpu = sm_ps_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t dwall = wall - ps->last_wall_ns;
    if (dwall > 0)
        sm_ps_put(ps, sink, M_CPU, (cpu - ps->last_cpu_ns) * 100u / dwall);

    /* Each measured thread that runs: its utilization, and where it ran. */
    uint8_t cpus[1024] = {0};
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (!loc || loc->type != SM_LOCATION_CPU_THREAD || loc->tid <= 0 ||
            __atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE))
            continue;
        uint32_t k = 0;
        while (k < ps->n_threads && ps->threads[k].location != loc->id)
            k++;
        int where = -1;
        int64_t ns = sm_ps_thread_cpu(ps, loc->tid, &where);
        if (ns < 0)
            continue;
        if (where >= 0 && where < (int)sizeof cpus)
            cpus[where] = 1;
        if (k == ps->n_threads) {
            if (k == SM_PS_THREADS)
                continue;
            char name[96];
            snprintf(name, sizeof name, "cpu utilization %s", loc->name);
            ps->threads[k].location = loc->id;
            ps->threads[k].tid = loc->tid;
            ps->threads[k].id = sm_metric_define(name, "%");
            ps->threads[k].cpu_ns = (uint64_t)ns;
            ps->n_threads++;
            continue; /* a first reading: no interval yet */
        }
        if (dwall > 0 && ps->threads[k].id != SM_INVALID_ID)
            sm_sample_put(sink, ps->threads[k].id,
                          ((uint64_t)ns - ps->threads[k].cpu_ns) * 100u / dwall);
        ps->threads[k].cpu_ns = (uint64_t)ns;
    }
    ps->last_wall_ns = wall;
    ps->last_cpu_ns = cpu;

    /* The mean frequency of the cores the threads last ran on. */
    static char cpuinfo[65536];
    const char *info = NULL;
    uint64_t khz = 0, nf = 0;
    for (int c = 0; c < (int)sizeof cpus; c++) {
        if (!cpus[c])
            continue;
        char path[96], small[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c);
        if (!info && sm_ps_read(path, small, sizeof small) <= 0 &&
            sm_ps_read("/proc/cpuinfo", cpuinfo, sizeof cpuinfo) > 0)
            info = cpuinfo;
        uint64_t f = sm_ps_cpu_khz(ps, c, info);
        if (f) {
            khz += f;
            nf++;
        }
    }
    if (nf)
        sm_ps_put(ps, sink, M_FREQ, khz / nf * 1000u);

    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        sm_ps_put(ps, sink, M_MINFLT, (uint64_t)ru.ru_minflt);
        sm_ps_put(ps, sink, M_MAJFLT, (uint64_t)ru.ru_majflt);
        sm_ps_put(ps, sink, M_VCSW, (uint64_t)ru.ru_nvcsw);
        sm_ps_put(ps, sink, M_IVCSW, (uint64_t)ru.ru_nivcsw);
    }
    if (ps->have_io && sm_ps_read("/proc/self/io", ps->buf, sizeof ps->buf) > 0) {
        sm_ps_put(ps, sink, M_IO_READ, sm_ps_field(ps->buf, "rchar:"));
        sm_ps_put(ps, sink, M_IO_WRITE, sm_ps_field(ps->buf, "wchar:"));
    }
    if (ps->have_net && sm_ps_read("/proc/self/net/dev", ps->buf, sizeof ps->buf) > 0) {
        uint64_t rx = 0, tx = 0;
        /* "  eth0: rx_bytes p e d f fr c m tx_bytes ..." after two header lines */
        for (char *line = strchr(ps->buf, '\n'); line && (line = strchr(line + 1, '\n'));) {
            char *colon = strchr(line, ':');
            if (!colon)
                break;
            char *name = line + 1;
            while (*name == ' ')
                name++;
            if (strncmp(name, "lo:", 3) == 0)
                continue;
            unsigned long long v[9] = {0};
            if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
                rx += v[0];
                tx += v[8];
            }
        }
        sm_ps_put(ps, sink, M_NET_RX, rx);
        sm_ps_put(ps, sink, M_NET_TX, tx);
    }
}

int sm_process_sampler_init(const sm_config_t *cfg)
{
    /* The interval serves every sampler (GPU power too), sampling or not. */
    sm_samplers_set_default_period((uint64_t)cfg->sampling_interval * 1000000u);
    if (!cfg->process_sampling)
        return 0;
    sm_sampler_t s = {
        .name = "process",
        .period_ns = 0,
        .ctx = &sm_ps,
        .start = sm_ps_start,
        .read = sm_ps_read_all,
    };
    return sm_sampler_register(&s);
}

const sm_subsystem_t sm_process_sampler_subsystem = {
    .name = "process sampling",
    .init = sm_process_sampler_init,
};
