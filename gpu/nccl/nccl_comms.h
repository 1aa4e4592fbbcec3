/* The NCCL communicators of this process, by handle (ncclComm_t): what each
 * call needs to name its communicator (identity, rank, size, the core's
 * communicator).  Entered when a communicator is made, under a lock;
 * looked up by every call without one (a fixed open-addressed table whose
 * slots are never emptied: a destroyed communicator's slot is marked dead
 * and taken again by a new one at the same address). */
#ifndef SM_NCCL_COMMS_H
#define SM_NCCL_COMMS_H

#include <stdint.h>
#include "core/compiler.h"

#define SM_NCCL_COMMS 1024 /* communicators per process, made over the whole run */

typedef struct sm_nccl_entry {
    void *handle;      /* ncclComm_t; NULL: an empty slot (atomic) */
    uint32_t dead;     /* destroyed (atomic) */
    uint32_t core;     /* the core's communicator; SM_COMM_NONE until defined (atomic) */
    uint64_t id;       /* identity (nccl_convert.h) */
    int32_t rank;      /* -1 until known (a split still under way) (atomic) */
    int32_t nranks;    /* -1 until known (atomic) */
    uint32_t splits;   /* splits made on it so far (atomic) */
    uint32_t parent;   /* the parent's core communicator, or SM_COMM_NONE */
    uint8_t amd;       /* RCCL's */
} sm_nccl_entry_t;

/* The live communicator of handle; NULL when unknown or destroyed. */
sm_nccl_entry_t *sm_nccl_comm_find(const void *handle) SM_HIDDEN;
/* Enters handle (again, if its address was used before): its entry with
 * core = SM_COMM_NONE and the values given, or NULL when the table is full
 * (its calls then name no communicator; the caller says so once). */
sm_nccl_entry_t *sm_nccl_comm_add(const void *handle, uint64_t id, int rank, int nranks,
                                 uint32_t parent, int amd) SM_HIDDEN;
/* The communicator is being destroyed: later calls with handle find nothing. */
void sm_nccl_comm_forget(const void *handle) SM_HIDDEN;
/* Empties the table (unit tests only; no call may be under way). */
void sm_nccl_comms_reset(void) SM_HIDDEN;

#endif
