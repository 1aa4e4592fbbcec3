/* How a TSC read overlaps with the work around it on this CPU, in ns per
 * loop iteration (two reads, as in a region pair): ALU work that does not
 * use the reads, work that waits for their result, loads, stores to L1 and
 * stores streaming through 64 MB (with prefetchw, non-temporal).  Each
 * line is the median of ROUNDS runs of 2,000,000 iterations; compare each
 * with "two rdtsc" and with the work alone.  It told why a region pair
 * costs more than its two reads on the H100 host's Xeon, where work that
 * waits for a read's result hardly overlaps it (events.h,
 * sm_event_enter_fast).
 *   bench/bench-tsc-overlap [ROUNDS]      (x86-64 only) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>

#define N 2000000L

static volatile uint64_t sink;
static uint64_t small[1024] __attribute__((aligned(64)));
static uint64_t *big; /* N * 4 words, mapped before timing, larger than the caches */

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Four chains of 8 multiply-adds each: ALU work of about 10 ns. */
#define MIX(x) ((x) = (x) * 0x9E3779B97F4A7C15ull + 1)
#define MIX8(x) MIX(x); MIX(x); MIX(x); MIX(x); MIX(x); MIX(x); MIX(x); MIX(x)
#define WORK(x, y, z, w)                                                                \
    do {                                                                                \
        __asm__ volatile("" : "+r"(x), "+r"(y), "+r"(z), "+r"(w));                      \
        MIX8(x); MIX8(y); MIX8(z); MIX8(w);                                             \
    } while (0)

static __attribute__((noinline)) uint64_t rdtsc_call(void)
{
    return __rdtsc();
}

/* One timed loop of N iterations of BODY; ns per iteration. */
#define LOOP(name, body)                                                                \
    static double name(void)                                                            \
    {                                                                                   \
        uint64_t acc = 0, x = 1, y = 2, z = 3, w = 4, *p = big;                         \
        unsigned aux;                                                                   \
        (void)p;                                                                        \
        (void)aux;                                                                      \
        double t0 = now_ns();                                                           \
        for (long i = 0; i < N; i++) {                                                  \
            body                                                                        \
        }                                                                               \
        double t1 = now_ns();                                                           \
        sink = acc + x + y + z + w;                                                     \
        return (t1 - t0) / N;                                                           \
    }

LOOP(two_rdtsc, acc += __rdtsc(); acc += __rdtsc();)
LOOP(two_rdtsc_calls, acc += rdtsc_call(); acc += rdtsc_call();)
LOOP(two_lfence_rdtsc, _mm_lfence(); acc += __rdtsc(); _mm_lfence(); acc += __rdtsc();)
LOOP(two_rdtscp, acc += __rdtscp(&aux); acc += __rdtscp(&aux);)
LOOP(work_alone, WORK(x, y, z, w); WORK(x, y, z, w);)
LOOP(rdtsc_work, acc += __rdtsc(); WORK(x, y, z, w); acc += __rdtsc(); WORK(x, y, z, w);)
/* the work starts from the read's result */
LOOP(rdtsc_dependent_work, x ^= __rdtsc(); WORK(x, y, z, w); y ^= __rdtsc(); WORK(x, y, z, w);)
LOOP(rdtsc_stores_l1,
     uint64_t a = __rdtsc(); small[(i * 4) & 1023] = a; small[(i * 4 + 1) & 1023] = (uint64_t)i;
     uint64_t b = __rdtsc(); small[(i * 4 + 2) & 1023] = b; small[(i * 4 + 3) & 1023] = (uint64_t)i;)
LOOP(stores_stream_alone,
     p[i * 4] = (uint64_t)i; p[i * 4 + 1] = (uint64_t)i; p[i * 4 + 2] = (uint64_t)i;
     p[i * 4 + 3] = (uint64_t)i; __asm__ volatile("" ::: "memory");)
LOOP(rdtsc_stores_stream,
     uint64_t a = __rdtsc(); p[i * 4] = a; p[i * 4 + 1] = (uint64_t)i;
     uint64_t b = __rdtsc(); p[i * 4 + 2] = b; p[i * 4 + 3] = (uint64_t)i;)
LOOP(rdtsc_stores_stream_prefetchw,
     if (!(i & 1)) __asm__ volatile("prefetchw %0" ::"m"(p[i * 4 + 64]));
     uint64_t a = __rdtsc(); p[i * 4] = a; p[i * 4 + 1] = (uint64_t)i;
     uint64_t b = __rdtsc(); p[i * 4 + 2] = b; p[i * 4 + 3] = (uint64_t)i;)
LOOP(rdtsc_stores_stream_nt,
     uint64_t a = __rdtsc(); _mm_stream_si64((long long *)&p[i * 4], (long long)a);
     _mm_stream_si64((long long *)&p[i * 4 + 1], i);
     uint64_t b = __rdtsc(); _mm_stream_si64((long long *)&p[i * 4 + 2], (long long)b);
     _mm_stream_si64((long long *)&p[i * 4 + 3], i);)
/* a chain of loads (as thread-local pointer, location, frame) */
LOOP(loads_alone,
     acc += small[acc & 7]; acc += small[8 + (acc & 7)]; acc += small[16 + (acc & 7)];
     __asm__ volatile("" ::: "memory");)
LOOP(rdtsc_dependent_loads,
     acc += __rdtsc(); acc += small[acc & 7]; acc += small[8 + (acc & 7)];
     acc += __rdtsc(); acc += small[16 + (acc & 7)];)

static const struct {
    const char *name;
    double (*fn)(void);
} loops[] = {
    {"two rdtsc", two_rdtsc},
    {"two rdtsc, noinline calls", two_rdtsc_calls},
    {"two lfence;rdtsc", two_lfence_rdtsc},
    {"two rdtscp", two_rdtscp},
    {"work alone (ALU, 32 imul+add x2)", work_alone},
    {"two rdtsc + indep. work", rdtsc_work},
    {"two rdtsc + dependent work", rdtsc_dependent_work},
    {"two rdtsc + 4 stores L1", rdtsc_stores_l1},
    {"4 stores streaming (64MB ring) alone", stores_stream_alone},
    {"two rdtsc + 4 stores streaming", rdtsc_stores_stream},
    {"two rdtsc + 4 stores streaming, prefetchw", rdtsc_stores_stream_prefetchw},
    {"two rdtsc + 4 NT stores streaming", rdtsc_stores_stream_nt},
    {"dependent loads alone", loads_alone},
    {"two rdtsc + dependent loads", rdtsc_dependent_loads},
};
#define N_LOOPS (sizeof loops / sizeof loops[0])
#define MAX_ROUNDS 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    if (rounds < 1 || rounds > MAX_ROUNDS)
        rounds = 9;
    static double ns[N_LOOPS][MAX_ROUNDS];
    big = malloc(N * 4 * sizeof *big);
    if (!big)
        return 1;
    for (long i = 0; i < N * 4; i++)
        big[i] = (uint64_t)i;
    /* rounds outermost: each loop sees the machine's load of every round */
    for (int r = 0; r < rounds; r++)
        for (size_t j = 0; j < N_LOOPS; j++)
            ns[j][r] = loops[j].fn();
    for (size_t j = 0; j < N_LOOPS; j++) {
        qsort(ns[j], (size_t)rounds, sizeof(double), cmp_double);
        printf("%-42s %7.2f ns (min %.2f)\n", loops[j].name, ns[j][rounds / 2], ns[j][0]);
    }
    free(big);
    return 0;
}
#else
int main(void)
{
    puts("bench-tsc-overlap: x86-64 only");
    return 0;
}
#endif
