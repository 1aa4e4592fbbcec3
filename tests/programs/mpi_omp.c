/* MPI + OpenMP: each rank runs a parallel region 10 times on 2 threads
 * (OMP_NUM_THREADS), then the ranks reduce their sums.  With the argument
 * "nofinalize" they return without MPI_Finalize, for sysmeasure-merge. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long sum = 0;
    for (int round = 0; round < 10; round++) {
#pragma omp parallel reduction(+ : sum) /* srcloc: parallel */
        sum += omp_get_thread_num() + 1;
    }
    long total = 0;
    MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("total %ld\n", total);
    if (argc > 1 && !strcmp(argv[1], "nofinalize"))
        return 0;
    MPI_Finalize();
    return 0;
}
