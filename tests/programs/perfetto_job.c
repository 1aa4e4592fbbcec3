/* The job that test_perfetto.py converts: MPI messages in a ring (blocking
 * and non-blocking, ROUNDS each), an OpenMP parallel region PARALLELS times,
 * and user regions with planted visit counts: "step" ROUNDS times with an
 * annotation "step" (its number) and "phase" (a string) at its start and
 * "received" (the value from the right-hand rank) at its end, and "inner"
 * 3 x ROUNDS times inside it; rank 0 does 2 extra "inner" visits.  With the
 * argument "nofinalize" it returns without MPI_Finalize (for
 * sysmeasure-merge --perfetto). */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "sysmeasure.h"

enum { ROUNDS = 5, PARALLELS = 4 };

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long sum = 0;
    for (int step = 0; step < ROUNDS; step++) {
        sysmeasure_annotation_t a[2] = {
            {"step", SYSMEASURE_ANNOTATION_INT64, {.int64 = step}},
            {"phase", SYSMEASURE_ANNOTATION_STRING, {.string = step % 2 ? "odd" : "even"}}};
        sysmeasure_push_annotated_region("step", a, 2);
        for (int k = 0; k < 3; k++) {
            sysmeasure_push_region("inner");
            sysmeasure_pop_region("inner");
        }
        int out = rank * 100 + step, in = -1;
        /* blocking ring: even ranks send first */
        if (rank % 2 == 0) {
            MPI_Send(&out, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&out, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
        }
        /* non-blocking the other way */
        MPI_Request rq[2];
        MPI_Irecv(&in, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&out, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        sysmeasure_annotation_t got = {"received", SYSMEASURE_ANNOTATION_INT64, {.int64 = in}};
        sysmeasure_pop_annotated_region("step", &got, 1);
    }
    if (rank == 0)
        for (int k = 0; k < 2; k++) {
            sysmeasure_push_region("inner");
            sysmeasure_pop_region("inner");
        }
    for (int p = 0; p < PARALLELS; p++) {
#pragma omp parallel reduction(+ : sum)
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
