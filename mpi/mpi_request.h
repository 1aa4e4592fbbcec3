/* Request tracking for the point-to-point and nonblocking-collective hooks
 * (the hooks themselves are declared in mpi_hooks.h). */
#ifndef SM_MPI_REQUEST_H
#define SM_MPI_REQUEST_H

#include <mpi.h>
#include <stdint.h>
#include "core/compiler.h"

/* After MPI_Init: sizes of the predefined datatypes. */
void sm_mpi_types_init(void) SM_HIDDEN;

/* Active receive requests freed with MPI_Request_free: their message
 * cannot be matched to a completion (the irecv stays open in the trace). */
uint64_t sm_mpi_request_freed_recvs(void) SM_HIDDEN;

/* Bytes a completed receive brought (status from a receive). */
uint64_t sm_mpi_status_bytes(const MPI_Status *status, MPI_Datatype type) SM_HIDDEN;

#endif
