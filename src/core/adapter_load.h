/* The MPI adapter library (libsysmeasure-mpi.so) for a process that loads
 * MPI where the launcher could not see it.
 *
 * The launcher preloads the wrappers when the program it starts is linked
 * with MPI.  A job script (`mpirun sysmeasure ./run.sh`, run.sh execs the
 * program), or any other chain of exec, hides the program from it; a tool
 * library that the program loads itself (KokkosP) brings the core up with
 * no launcher at all.  Without the wrappers each rank would write the
 * folder as if it were alone.  The core knows only the library's file name
 * (it sits beside libsysmeasure.so) and the one entry point below; what MPI
 * is stays in the adapter. */
#ifndef SM_ADAPTER_LOAD_H
#define SM_ADAPTER_LOAD_H

#include "compiler.h"

/* At the core's start in a process the launcher's environment measures,
 * before anything is measured or written: when the process has an MPI
 * library among its libraries but not the wrappers, it is started again
 * (the same executable, arguments and environment, the wrappers added to
 * LD_PRELOAD); exec keeps its pid.  Returns when no restart is needed or
 * possible (said in one line when it should have been). */
void sm_adapter_load_restart(int argc, char **argv) SM_HIDDEN;

/* For a core brought up without the launcher (KokkosP): when MPI is
 * initialized in this process and the wrappers are not loaded, loads them
 * and calls their sysmeasure_mpi_join (mpi_adapter.c), which makes the
 * ranks one job.  Collective over MPI_COMM_WORLD when it joins; every rank
 * of the job must call it at the same point (Kokkos::initialize). */
void sm_adapter_load_join(void) SM_HIDDEN;

#endif
