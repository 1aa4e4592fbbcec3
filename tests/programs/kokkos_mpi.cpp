// A Kokkos + MPI program: each rank runs (rank + 1) labelled kernels inside a
// profile region with an MPI_Allreduce in it, so that MPI calls nest under
// Kokkos regions and the counts differ per rank.
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    Kokkos::initialize(argc, argv);
    {
        Kokkos::View<double *> v("rank_view", 1024 * (rank + 1));
        Kokkos::Profiling::pushRegion("rank_work");
        double local = 0, global = 0;
        for (int it = 0; it <= rank; it++)
            Kokkos::parallel_for("mpi_kernel", v.extent(0), KOKKOS_LAMBDA(int i) { v(i) = i; });
        Kokkos::parallel_reduce("mpi_reduce", v.extent(0),
                                KOKKOS_LAMBDA(int i, double &s) { s += v(i); }, local);
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        Kokkos::Profiling::popRegion();
        if (rank == 0)
            std::printf("global %.0f\n", global);
    }
    Kokkos::finalize();
    MPI_Finalize();
    return 0;
}
