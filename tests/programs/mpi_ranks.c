/* Planted per-rank values for the job's profile at scale
 * (test_profile_scale.py).  Every rank runs 4 steps: "work" sleeps 20 ms
 * (rank SLOW 60 ms: 3 x as long), then "exchange" sends r % 64 + 1 ints to
 * the next rank and receives from the previous one (MPI_Send, MPI_Recv).  With
 * THREADS > 0 each rank then starts THREADS threads; thread t enters
 * "helper" t + 1 times, 1 ms each.  Then MPI_Finalize, or with "nofinalize"
 * the program returns without it (the processes' files are merged after).
 *
 *   mpi-ranks THREADS SLOW [nofinalize] */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sysmeasure.h>

static void sm_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *helper(void *arg)
{
    intptr_t t = (intptr_t)arg;
    for (intptr_t i = 0; i <= t; i++) {
        sysmeasure_push_region("helper");
        sm_sleep_ms(1);
        sysmeasure_pop_region("helper");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0, slow = argc > 2 ? atoi(argv[2]) : 5;
    int finalize = !(argc > 3 && !strcmp(argv[3], "nofinalize"));
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int out[64] = {0}, in[64];
    for (int step = 0; step < 4; step++) {
        sysmeasure_push_region("work");
        sm_sleep_ms(rank == slow ? 60 : 20);
        sysmeasure_pop_region("work");
        sysmeasure_push_region("exchange");
        if (rank % 2 == 0) {
            MPI_Send(out, rank % 64 + 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
            MPI_Recv(in, 64, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, 64, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(out, rank % 64 + 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
        sysmeasure_pop_region("exchange");
    }
    pthread_t tid[64];
    if (threads > 64)
        threads = 64;
    for (int t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, helper, (void *)(intptr_t)t);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (finalize)
        MPI_Finalize();
    return 0;
}
