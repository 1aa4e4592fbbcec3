/* Another ROCTx library behind sysmeasure's, for the forwarding test (in
 * the place a real libroctx64 would have when another tool uses ROCTx):
 * counts the calls it gets, answers with ids and levels of its own, and
 * writes the counts to $ROCTX_NEXT_OUT at exit ("name count" lines). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* (the build compiles with -fvisibility=hidden) */
#define EXPORT __attribute__((visibility("default")))

enum { PUSH, POP, MARK, START, STOP, N };
static const char *const names[N] = {"push", "pop", "mark", "start", "stop"};
static unsigned long counts[N];
static __thread int level;
static uint64_t next_id = 1000;

EXPORT int roctxRangePushA(const char *message)
{
    (void)message;
    __atomic_fetch_add(&counts[PUSH], 1, __ATOMIC_RELAXED);
    return level++;
}

EXPORT int roctxRangePop(void)
{
    __atomic_fetch_add(&counts[POP], 1, __ATOMIC_RELAXED);
    return level > 0 ? --level : -1;
}

EXPORT void roctxMarkA(const char *message)
{
    (void)message;
    __atomic_fetch_add(&counts[MARK], 1, __ATOMIC_RELAXED);
}

EXPORT uint64_t roctxRangeStartA(const char *message)
{
    (void)message;
    __atomic_fetch_add(&counts[START], 1, __ATOMIC_RELAXED);
    return __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
}

EXPORT void roctxRangeStop(uint64_t id)
{
    (void)id;
    __atomic_fetch_add(&counts[STOP], 1, __ATOMIC_RELAXED);
}

__attribute__((destructor)) static void roctx_next_report(void)
{
    const char *path = getenv("ROCTX_NEXT_OUT");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    for (int i = 0; i < N; i++)
        fprintf(f, "%s %lu\n", names[i], counts[i]);
    fclose(f);
}
