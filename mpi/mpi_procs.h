/* sm_procs_t over PMPI_* on sysmeasure's private communicator (see
 * src/merge/procs.h), and OTF2 collective callbacks over the same. */
#ifndef SM_MPI_PROCS_H
#define SM_MPI_PROCS_H

#include <mpi.h>
#include "core/compiler.h"
#include "core/procs.h"

/* Byte strings travel in messages of at most this many bytes. */
#ifndef SM_MPI_PIECE
#define SM_MPI_PIECE 2147483647 /* INT_MAX */
#endif

/* Fills procs for comm (which must outlive its use; errors should return). */
void sm_mpi_procs_setup(sm_procs_t *procs, MPI_Comm comm) SM_HIDDEN;
/* Before comm is freed: from then on every operation returns -1. */
void sm_mpi_procs_teardown(void) SM_HIDDEN;

#endif
