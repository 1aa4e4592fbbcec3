/* A C library routine that a Fortran MPI program calls: its MPI calls go
 * through the C interface while the program's go through Fortran's, and
 * each must be counted once. */
#include <mpi.h>

void c_side_allreduce_(void);

void c_side_allreduce_(void)
{
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}
