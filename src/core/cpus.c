/* CPU sets for the writer thread's place (see cpus.h). */
#define _GNU_SOURCE
#include "cpus.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sm_cpus_parse_list(const char *text, cpu_set_t *set)
{
    CPU_ZERO(set);
    const char *p = text;
    int any = 0;
    while (*p && *p != '\n') {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return -1;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a)
                return -1;
            p = end;
        }
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        any = 1;
        if (*p == ',')
            p++;
        else if (*p && *p != '\n')
            return -1;
    }
    return any ? 0 : -1;
}

void sm_cpus_format(const cpu_set_t *set, char *out, size_t len)
{
    size_t n = 0;
    if (len)
        out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && n < len; c++) {
        if (!CPU_ISSET(c, set) || (c > 0 && CPU_ISSET(c - 1, set)))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
            e++;
        int w = e > c ? snprintf(out + n, len - n, "%s%d-%d", n ? "," : "", c, e)
                      : snprintf(out + n, len - n, "%s%d", n ? "," : "", c);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

long sm_cpus_slurm_tasks(const char *per_node, long node_id)
{
    const char *p = per_node;
    long node = 0;
    while (p && *p && node_id >= 0) {
        char *end;
        long n = strtol(p, &end, 10), times = 1;
        if (end == p || n < 0)
            return 0;
        p = end;
        if (strncmp(p, "(x", 2) == 0) {
            times = strtol(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || times < 1)
                return 0;
            p = end + 1;
        }
        if (node_id < node + times)
            return n;
        node += times;
        if (*p == ',')
            p++;
        else if (*p)
            return 0;
    }
    return 0;
}

static int sm_cpus_read(const char *path, cpu_set_t *set)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[4096];
    int rc = fgets(line, sizeof line, f) ? sm_cpus_parse_list(line, set) : -1;
    fclose(f);
    return rc;
}

/* The cpuset of this process's cgroup: v2 (cpuset.cpus.effective of the
 * "0::" path) or v1 (the cpuset hierarchy's effective_cpus). */
static int sm_cpus_cgroup(cpu_set_t *set, const char **source)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char line[4096], path[4200];
    int rc = -1;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctl = c1 + 1, *cg = c2 + 1;
        if (strcmp(line, "0") == 0 && !*ctl) {
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.cpus.effective", cg);
            rc = sm_cpus_read(path, set);
            if (rc == 0)
                *source = "cgroup cpuset.cpus.effective";
        } else if (strstr(ctl, "cpuset")) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/cpuset%s/cpuset.effective_cpus", cg);
            rc = sm_cpus_read(path, set);
            if (rc == 0)
                *source = "cgroup cpuset.effective_cpus";
        }
    }
    fclose(f);
    return rc;
}

int sm_cpus_node(cpu_set_t *set, const char **source)
{
    cpu_set_t online;
    if (sm_cpus_read("/sys/devices/system/cpu/online", &online) != 0) {
        CPU_ZERO(&online);
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &online);
    }
    *source = "online CPUs";
    if (sm_cpus_cgroup(set, source) == 0) {
        CPU_AND(set, set, &online);
        if (CPU_COUNT(set) > 0)
            return 0;
        *source = "online CPUs";
    }
    *set = online;
    return CPU_COUNT(set) > 0 ? 0 : -1;
}

int sm_cpus_writer_place(const cpu_set_t *own, const cpu_set_t *node, long need,
                         cpu_set_t *writer)
{
    *writer = *own;
    if (CPU_COUNT(own) > need)
        return 1;
    /* The program fills its own CPUs; the writer may take the node's spare
     * ones, never the program's (other processes' CPUs are in that set too:
     * the kernel places the writer on an idle one). */
    cpu_set_t all;
    CPU_OR(&all, own, node);
    if (CPU_COUNT(&all) <= need)
        return 0;
    CPU_XOR(writer, &all, own);
    return CPU_COUNT(writer) > 0 ? 2 : 0;
}

static cpu_set_t sm_writer_cpus;
static int sm_writer_cpus_set;

void sm_cpus_set_writer(const cpu_set_t *set)
{
    sm_writer_cpus = *set;
    sm_writer_cpus_set = 1;
}

void sm_cpus_bind_writer(void)
{
    /* (A thread starts with its creator's mask: the program's core.) */
    if (sm_writer_cpus_set)
        (void)pthread_setaffinity_np(pthread_self(), sizeof sm_writer_cpus, &sm_writer_cpus);
}

int sm_cpus_end_share(const cpu_set_t *own, const cpu_set_t *node, long local, int known,
                      cpu_set_t *set)
{
    *set = *own;
    if (known)
        CPU_OR(set, own, node);
    long n = CPU_COUNT(set) / (known && local > 1 ? local : 1);
    return n < 1 ? 1 : n > SM_CPUS_END_MAX ? SM_CPUS_END_MAX : (int)n;
}

static cpu_set_t sm_end_cpus;
static int sm_end_threads; /* 0: not set */

void sm_cpus_set_end(const cpu_set_t *set, int threads)
{
    sm_end_cpus = *set;
    sm_end_threads = threads;
}

int sm_cpus_end_threads(void)
{
    if (sm_end_threads > 0)
        return sm_end_threads;
    cpu_set_t own;
    if (sched_getaffinity(0, sizeof own, &own) != 0)
        return 1;
    return sm_cpus_end_share(&own, &own, 1, 0, &own);
}

void sm_cpus_bind_end(void)
{
    if (sm_end_threads > 0)
        (void)pthread_setaffinity_np(pthread_self(), sizeof sm_end_cpus, &sm_end_cpus);
}
