/* Internal state of the MPI adapter shared by mpi_adapter.c, mpi_comm.c,
 * mpi_request.c and mpi_procs.c (not part of the wrapper contract, which is
 * mpi_hooks.h). */
#ifndef SM_MPI_ADAPTER_H
#define SM_MPI_ADAPTER_H

#include <mpi.h>
#include <stdint.h>
#include "core/adapter_api.h"
#include "core/compiler.h"

/* Hooks record: between sm_mpi_hook_initialized (all ranks measured) and
 * sm_mpi_hook_finalizing.  Read on every hook (acquire: what the
 * initialisation set up before, e.g. MPI_COMM_WORLD's entry, is seen). */
extern int sm_mpi_on SM_HIDDEN;
#define SM_MPI_ON() __atomic_load_n(&sm_mpi_on, __ATOMIC_ACQUIRE)

/* This process in MPI_COMM_WORLD, and a number rank 0 drew at MPI_Init that
 * tells this job's processes from those of another MPI_COMM_WORLD (spawned
 * or connected jobs). */
extern uint32_t sm_mpi_world_rank SM_HIDDEN;
extern uint32_t sm_mpi_world_size SM_HIDDEN;
extern uint32_t sm_mpi_world_token SM_HIDDEN;

/* sysmeasure's own duplicate of MPI_COMM_WORLD (errors return). */
extern MPI_Comm sm_mpi_private_comm SM_HIDDEN;

/* The SM_MPI_FN_* of the outermost MPI call running on this thread. */
uint32_t sm_mpi_current_fn(void) SM_HIDDEN;
const char *sm_mpi_function_name(uint32_t fn) SM_HIDDEN;


static inline void sm_mpi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
