/* Cost of one region enter+leave pair, against baselines measured in the same
 * run: an empty loop, two TSC reads, two clock_gettime calls.
 *
 * Modes: profile only, trace only, both; through the user API by name and by
 * handle; and with measurement stopped (the adapter path, which checks the
 * switch and records nothing).  Buffer chunks are recycled between
 * repetitions, as in a long run that spills; "fresh memory" gives the chunks
 * back to the system first, so that line includes first-touch page faults.  One thread, then all cores at once.  Output
 * is discarded: this measures the recording, not the writing.
 *
 *   bench-region [pairs-per-repetition] [1]      (make bench)
 * A second argument 1: the one-thread section only (bench_region.sh reads
 * no more; it halves the run).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sysmeasure.h"
#include "core/buffer.h"
#include "core/clock.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"

#define REPS 7

static long pairs = 2000000;
static sysmeasure_region_t handle;
static sm_region_id_t adapter_region;

typedef enum { LOOP_EMPTY, LOOP_TSC, LOOP_GETTIME, LOOP_NAME, LOOP_HANDLE, LOOP_ADAPTER, LOOP_CORE } loop_t;

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* One timed loop of `pairs` iterations; returns ns per iteration. */
static double run_loop(loop_t kind)
{
    uint64_t acc = 0;
    uint64_t t0 = wall_ns();
    switch (kind) {
    case LOOP_EMPTY:
        for (long i = 0; i < pairs; i++) {
            __asm__ volatile("" ::: "memory");
            acc += (uint64_t)i;
        }
        break;
    case LOOP_TSC:
        for (long i = 0; i < pairs; i++) {
            acc += sm_clock_now();
            acc += sm_clock_now();
        }
        break;
    case LOOP_GETTIME:
        for (long i = 0; i < pairs; i++) {
            acc += sm_clock_monotonic_ns();
            acc += sm_clock_monotonic_ns();
        }
        break;
    case LOOP_NAME:
        for (long i = 0; i < pairs; i++) {
            sysmeasure_push_region("bench region");
            sysmeasure_pop_region("bench region");
        }
        break;
    case LOOP_HANDLE:
        for (long i = 0; i < pairs; i++) {
            sysmeasure_region_enter(handle);
            sysmeasure_region_leave(handle);
        }
        break;
    case LOOP_ADAPTER:
        for (long i = 0; i < pairs; i++) {
            sm_adapter_enter(adapter_region);
            sm_adapter_leave(adapter_region);
        }
        break;
    case LOOP_CORE: {
        /* The core's own work, timestamps made up (times vary, like
         * real ones): what a pair costs beyond its two clock reads, and
         * steadier than them on a loaded virtual machine. */
        sm_location_t *loc = sm_location_current();
        uint64_t t = 1000;
        for (long i = 0; i < pairs; i++) {
            sm_event_enter(loc, adapter_region, t);
            t += 20 + ((uint64_t)i & 7);
            sm_event_leave(loc, adapter_region, t);
            t += 5;
        }
        acc = t;
        break;
    }
    }
    uint64_t t1 = wall_ns();
    sink = acc;
    return (double)(t1 - t0) / (double)pairs;
}

typedef struct {
    loop_t kind;
    int cold; /* give chunk memory back before each repetition: first-touch cost */
    double ns[REPS];
    uint64_t buffer_bytes; /* bytes of buffer the thread filled */
    uint64_t records;
} job_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *job_thread(void *arg)
{
    job_t *j = arg;
    sm_location_t *loc = sm_location_current();
    run_loop(j->kind); /* warm-up: creates the profile node, first chunk */
    for (int r = 0; r < REPS; r++) {
        sm_buffer_free(loc); /* keep memory flat: the bench never writes output */
        if (j->cold)
            sm_buffers_release();
        j->ns[r] = run_loop(j->kind);
        if (loc->buffer.first) {
            j->buffer_bytes = sm_buffer_memory(loc);
            j->records = sm_buffer_record_count(loc);
        }
    }
    sm_buffer_free(loc);
    return NULL;
}

/* Median over repetitions of each thread, then the mean over threads. */
static int cold_memory;

static double measure(loop_t kind, int tracing, int profiling, int threads, double *bytes_per_event)
{
    sm_locations_set_modes(tracing, profiling, 1);
    job_t *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    for (int i = 0; i < threads; i++) {
        jobs[i].kind = kind;
        jobs[i].cold = cold_memory;
        pthread_create(&tids[i], NULL, job_thread, &jobs[i]);
    }
    double total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        qsort(jobs[i].ns, REPS, sizeof(double), cmp_double);
        total += jobs[i].ns[REPS / 2];
    }
    if (bytes_per_event)
        *bytes_per_event = jobs[0].records ? (double)jobs[0].buffer_bytes / (double)jobs[0].records : 0;
    free(jobs);
    free(tids);
    return total / threads;
}

/* Median of REPS loops on this thread, before the runtime exists. */
static double run_inactive(loop_t kind)
{
    double ns[REPS];
    for (int r = 0; r < REPS; r++)
        ns[r] = run_loop(kind);
    qsort(ns, REPS, sizeof(double), cmp_double);
    return ns[REPS / 2];
}

int main(int argc, char **argv)
{
    if (argc > 1)
        pairs = atol(argv[1]);
    int passes = argc > 2 && atoi(argv[2]) == 1 ? 1 : 2;
    char dir[] = "/tmp/sysmeasure-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* The user API in a program that links sysmeasure but runs without the
     * launcher: nothing is measured, every call returns at once. */
    handle = 1;
    double inactive_name = run_inactive(LOOP_NAME);
    double inactive_handle = run_inactive(LOOP_HANDLE);

    setenv("SYSMEASURE_ENABLE", "yes", 1);
    setenv("SYSMEASURE_OUTPUT", dir, 1);
    setenv("SYSMEASURE_BUFFER_SIZE", "4G", 1); /* no spill while timing */
    setenv("SYSMEASURE_INIT_ENABLED", "yes", 1);
    if (sm_runtime_init() != 0)
        return 1;
    sm_runtime_discard_output();
    handle = sysmeasure_region_define("bench handle region", __FILE__, __LINE__);
    adapter_region = sm_region_define("bench adapter region", NULL, 0, SM_PARADIGM_USER, SM_ROLE_WRAPPER);

    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    printf("sysmeasure bench-region: ns per enter+leave pair (median of %d x %ld pairs), clock %s\n",
           REPS, pairs, sm_clock_source_name());
    printf("\nnot measured (no launcher), 1 thread:\n");
    printf("  %-44s %8.2f ns\n", "user API pair, by name", inactive_name);
    printf("  %-44s %8.2f ns\n", "user API pair, by handle", inactive_handle);
    for (int pass = 0; pass < passes; pass++) {
        int threads = pass == 0 ? 1 : cores;
        printf("\n%d thread%s:\n", threads, threads == 1 ? "" : "s (all cores, per thread)");
        printf("  %-44s %8.2f ns\n", "baseline: empty loop iteration",
               measure(LOOP_EMPTY, 0, 0, threads, NULL));
        double tsc = measure(LOOP_TSC, 0, 0, threads, NULL);
        printf("  %-44s %8.2f ns\n", "baseline: two TSC reads", tsc);
        printf("  %-44s %8.2f ns\n", "baseline: two clock_gettime(MONOTONIC)",
               measure(LOOP_GETTIME, 0, 0, threads, NULL));
        static const struct { const char *name; int trace, profile; } modes[] = {
            {"profile", 0, 1}, {"trace", 1, 0}, {"trace+profile", 1, 1}};
        for (int m = 0; m < 3; m++) {
            double bpe = 0;
            double by_name = measure(LOOP_NAME, modes[m].trace, modes[m].profile, threads, NULL);
            double by_handle = measure(LOOP_HANDLE, modes[m].trace, modes[m].profile, threads, &bpe);
            char label[80];
            snprintf(label, sizeof label, "%s, by name", modes[m].name);
            printf("  %-44s %8.2f ns\n", label, by_name);
            snprintf(label, sizeof label, "%s, by handle", modes[m].name);
            if (modes[m].trace)
                printf("  %-44s %8.2f ns   (%.2f bytes per event; %.2fx two TSC reads)\n", label,
                       by_handle, bpe, by_handle / tsc);
            else
                printf("  %-44s %8.2f ns\n", label, by_handle);
        }
        for (int m = 0; m < 3; m++) {
            char label[80];
            snprintf(label, sizeof label, "%s, core only (no clock read)", modes[m].name);
            printf("  %-44s %8.2f ns\n", label,
                   measure(LOOP_CORE, modes[m].trace, modes[m].profile, threads, NULL));
        }
        cold_memory = 1;
        printf("  %-44s %8.2f ns\n", "trace+profile, by handle, fresh memory",
               measure(LOOP_HANDLE, 1, 1, threads, NULL));
        cold_memory = 0;
        sm_measurement_on = 0;
        printf("  %-44s %8.2f ns\n", "measurement stopped (adapter path)",
               measure(LOOP_ADAPTER, 1, 1, threads, NULL));
        sm_measurement_on = 1;
    }
    rmdir(dir);
    return 0;
}
