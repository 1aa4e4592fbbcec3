/* A process to be killed with SIGKILL (test_crash_safe.py).
 *
 *   crash-victim[-mpi] COUNTER VICTIM STEPS
 *
 * The victim (rank VICTIM; the process itself without MPI) records STEPS
 * "step" regions (each tenth with an "inner" region inside), pausing 1 ms
 * every 100 steps, and after each step's leave stores the number of steps
 * completed in the file COUNTER (mapped shared: the count survives the kill
 * in the page cache, like sysmeasure's crash-safe files).  Word 0 of COUNTER
 * is its pid, written once it has begun.  The other ranks record a few
 * "other" regions, then wait in a region until the job is torn down. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifdef SM_WITH_MPI
#include <mpi.h>
#endif

#include <sysmeasure.h>

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int rank = 0;
#ifdef SM_WITH_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
    int victim = atoi(argv[2]);
    long steps = atol(argv[3]);
    if (rank != victim) {
        for (int i = 0; i < 10; i++) {
            sysmeasure_push_region("other");
            sysmeasure_pop_region("other");
        }
        sysmeasure_push_region("waiting");
        for (int i = 0; i < 600; i++)
            sleep(1); /* torn down when the victim dies */
        sysmeasure_pop_region("waiting");
#ifdef SM_WITH_MPI
        MPI_Finalize();
#endif
        return 0;
    }
    int fd = open(argv[1], O_RDWR);
    volatile uint64_t *counter =
        fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (counter == MAP_FAILED) {
        perror(argv[1]);
        return 3;
    }
    __atomic_store_n(&counter[0], (uint64_t)getpid(), __ATOMIC_RELEASE);
    struct timespec ms = {0, 1000000};
    for (long i = 0; i < steps; i++) {
        sysmeasure_push_region("step");
        if (i % 10 == 0) {
            sysmeasure_push_region("inner");
            sysmeasure_pop_region("inner");
        }
        sysmeasure_pop_region("step");
        __atomic_store_n(&counter[1], (uint64_t)(i + 1), __ATOMIC_RELEASE);
        if (i % 100 == 99)
            nanosleep(&ms, NULL);
    }
#ifdef SM_WITH_MPI
    MPI_Finalize();
#endif
    return 0;
}
