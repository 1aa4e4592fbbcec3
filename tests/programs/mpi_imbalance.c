/* Planted load imbalance for the HTML report: rank r sleeps (r + 1) x 30 ms
 * in "solve", 4 times (rank 3 of 4 works longest, rank 0 shortest), inside
 * "timestep"; then every rank meets in MPI_Barrier (rank 0 waits longest)
 * and sends r + 1 ints to the next rank in a ring.  A region name with HTML
 * in it checks that the report escapes what the program names. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <sysmeasure.h>

static void sm_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int buf[64] = {0}, in[64];
    for (int step = 0; step < 4; step++) {
        sysmeasure_push_region("timestep");
        sysmeasure_push_region("solve");
        sm_sleep_ms(30L * (rank + 1));
        sysmeasure_pop_region("solve");
        sysmeasure_push_region("<b>halo&exchange</b>");
        MPI_Request rq;
        MPI_Irecv(in, 64, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &rq);
        MPI_Send(buf, rank + 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        sysmeasure_pop_region("<b>halo&exchange</b>");
        MPI_Barrier(MPI_COMM_WORLD);
        sysmeasure_pop_region("timestep");
    }
    MPI_Finalize();
    return 0;
}
