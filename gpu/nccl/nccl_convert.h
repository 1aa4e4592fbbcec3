/* What an NCCL call's arguments become in the measurement, without the
 * core or NCCL: the functions answered, the size and name of a data type,
 * the name of a reduction, the bytes a collective moves, and a
 * communicator's identity (every process computes the same one from what
 * all ranks of the communicator share).  Pure functions, so that
 * tests/unit/test_nccl.c checks them on recorded inputs. */
#ifndef SM_NCCL_CONVERT_H
#define SM_NCCL_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include "core/adapter_api.h"
#include "nccl_api.h"

/* The functions answered, in the order of sm_nccl_functions. */
typedef enum {
    SM_NCCL_FN_ALL_REDUCE,
    SM_NCCL_FN_BROADCAST,
    SM_NCCL_FN_BCAST,
    SM_NCCL_FN_REDUCE,
    SM_NCCL_FN_ALL_GATHER,
    SM_NCCL_FN_REDUCE_SCATTER,
    SM_NCCL_FN_ALLTOALL,     /* NCCL's ncclAlltoAll */
    SM_NCCL_FN_ALL_TO_ALL,   /* RCCL's ncclAllToAll */
    SM_NCCL_FN_ALL_TO_ALLV,
    SM_NCCL_FN_GATHER,
    SM_NCCL_FN_SCATTER,
    SM_NCCL_FN_SEND,
    SM_NCCL_FN_RECV,
    SM_NCCL_FN_GROUP_START,
    SM_NCCL_FN_GROUP_END,
    SM_NCCL_FN_COMM_INIT_RANK,
    SM_NCCL_FN_COMM_INIT_RANK_CONFIG,
    SM_NCCL_FN_COMM_INIT_RANK_SCALABLE,
    SM_NCCL_FN_COMM_INIT_ALL,
    SM_NCCL_FN_COMM_SPLIT,
    SM_NCCL_FN_COMM_FINALIZE,
    SM_NCCL_FN_COMM_DESTROY,
    SM_NCCL_FN_COMM_ABORT,
    SM_NCCL_FN_COUNT
} sm_nccl_fn_t;

typedef enum {
    SM_NCCL_KIND_COLLECTIVE,
    SM_NCCL_KIND_P2P,
    SM_NCCL_KIND_GROUP,
    SM_NCCL_KIND_COMM
} sm_nccl_kind_t;

/* How a rooted or all-to-all collective moves its blocks (the bytes). */
typedef enum {
    SM_NCCL_SHAPE_NONE,
    SM_NCCL_SHAPE_ALL,         /* each rank its block to and from every other */
    SM_NCCL_SHAPE_ROOT_SENDS,  /* broadcast, scatter */
    SM_NCCL_SHAPE_ROOT_GETS    /* reduce, gather */
} sm_nccl_shape_t;

typedef struct sm_nccl_function {
    const char *name;
    sm_nccl_kind_t kind;
    sm_coll_op_t op;       /* collectives: the OTF2 operation */
    sm_nccl_shape_t shape; /* collectives */
} sm_nccl_function_t;

extern const sm_nccl_function_t sm_nccl_functions[SM_NCCL_FN_COUNT] SM_HIDDEN;

/* Bytes of one element; 0 for a type we do not know. */
size_t sm_nccl_type_size(sm_nccl_datatype_t type) SM_HIDDEN;
/* "float32", ...; "unknown" for a type we do not know. */
const char *sm_nccl_type_name(sm_nccl_datatype_t type) SM_HIDDEN;
/* "sum", ..., "premulsum" for the program's own operations (the only kind
 * NCCL lets it make), "unknown" below 0. */
const char *sm_nccl_op_name(sm_nccl_redop_t op) SM_HIDDEN;

/* count elements of type (0 when the product overflows or the type is
 * unknown). */
uint64_t sm_nccl_bytes(size_t count, sm_nccl_datatype_t type) SM_HIDDEN;

/* What this rank sends to and receives from the other ranks in collective
 * fn of `bytes` per block (the count the call names), by the convention of
 * mpi/mpi_collective_bytes.h (only data between different ranks, one block
 * per pair); zeros when the rank or size is unknown (< 0). */
void sm_nccl_coll_bytes(sm_nccl_fn_t fn, uint64_t bytes, int root, int rank, int nranks,
                        uint64_t *sent, uint64_t *received) SM_HIDDEN;

/* Communicator identities, 63 bits (never negative as an int64 attribute):
 *   from the unique id(s) the ranks were created with (ncclCommInitRank*);
 *   of the child of a split (the parent's identity, the number of splits made
 *   on the parent before this one, the color: alike in every rank of the
 *   child, since splits are collective over the parent);
 *   of a clique made in one process (ncclCommInitAll: the process's own
 *   token and its count of such calls). */
uint64_t sm_nccl_id_of_unique(const sm_nccl_unique_id_t *ids, int n) SM_HIDDEN;
uint64_t sm_nccl_id_of_split(uint64_t parent, uint32_t seq, int color) SM_HIDDEN;
uint64_t sm_nccl_id_of_local(uint64_t token, uint32_t seq) SM_HIDDEN;

/* "NCCL communicator 1a2b...": the name of the communicator of id. */
void sm_nccl_comm_name(uint64_t id, int amd, char *buf, size_t len) SM_HIDDEN;

#endif
