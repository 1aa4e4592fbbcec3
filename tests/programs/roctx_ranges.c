/* ROCTx as a real application uses it: declared as ROCm's roctx.h declares
 * it and linked with -lroctx64 (here sysmeasure's libroctx64.so.4, since
 * Debian has no roctracer).  Planted, on each MPI rank:
 *   main thread:  "outer" 1x, inside it "inner" 3x, each with mark "tick"
 *                 and an MPI_Barrier; user region "user" with ROCTx range
 *                 "in user" inside it; start/stop range "local" 1x;
 *                 start of "handoff" 2x (both open at once)
 *   worker:       stop of both "handoff" ranges; names itself "worker"
 * It checks the levels roctx returns and prints "roctx ok" or fails. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysmeasure.h>

/* As in ROCm's roctx.h. */
typedef uint64_t roctx_range_id_t;
int roctxRangePushA(const char *message);
int roctxRangePop(void);
void roctxMarkA(const char *message);
roctx_range_id_t roctxRangeStartA(const char *message);
void roctxRangeStop(roctx_range_id_t id);
int roctxNameOsThread(const char *name);

static roctx_range_id_t handoff[2];
static int failed;

static void expect(int got, int want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "%s returned %d, expected %d\n", what, got, want);
        failed = 1;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    roctxNameOsThread("worker");
    roctxRangeStop(handoff[1]);
    roctxRangeStop(handoff[0]);
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    expect(roctxRangePushA("outer"), 0, "push outer");
    for (int i = 0; i < 3; i++) {
        expect(roctxRangePushA("inner"), 1, "push inner");
        roctxMarkA("tick");
        MPI_Barrier(MPI_COMM_WORLD);
        expect(roctxRangePop(), 1, "pop inner");
    }
    expect(roctxRangePop(), 0, "pop outer");
    expect(roctxRangePop(), -1, "pop without push");

    sysmeasure_push_region("user");
    expect(roctxRangePushA("in user"), 0, "push in user");
    expect(roctxRangePop(), 0, "pop in user");
    sysmeasure_pop_region("user");

    roctx_range_id_t local = roctxRangeStartA("local");
    roctxRangeStop(local);
    handoff[0] = roctxRangeStartA("handoff");
    handoff[1] = roctxRangeStartA("handoff");
    if (!local || !handoff[0] || !handoff[1] || handoff[0] == handoff[1] || local == handoff[0]) {
        fprintf(stderr, "range ids not unique: %llu %llu %llu\n", (unsigned long long)local,
                (unsigned long long)handoff[0], (unsigned long long)handoff[1]);
        failed = 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        failed = 1;
    MPI_Finalize();
    if (!failed)
        printf("roctx ok\n");
    return failed;
}
