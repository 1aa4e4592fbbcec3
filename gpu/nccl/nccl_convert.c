/* The arguments of NCCL calls, converted (nccl_convert.h). */
#include "nccl_convert.h"

#include <stdio.h>
#include <string.h>

const sm_nccl_function_t sm_nccl_functions[SM_NCCL_FN_COUNT] = {
    [SM_NCCL_FN_ALL_REDUCE] = {"ncclAllReduce", SM_NCCL_KIND_COLLECTIVE, SM_COLL_ALLREDUCE,
                               SM_NCCL_SHAPE_ALL},
    [SM_NCCL_FN_BROADCAST] = {"ncclBroadcast", SM_NCCL_KIND_COLLECTIVE, SM_COLL_BCAST,
                              SM_NCCL_SHAPE_ROOT_SENDS},
    [SM_NCCL_FN_BCAST] = {"ncclBcast", SM_NCCL_KIND_COLLECTIVE, SM_COLL_BCAST,
                          SM_NCCL_SHAPE_ROOT_SENDS},
    [SM_NCCL_FN_REDUCE] = {"ncclReduce", SM_NCCL_KIND_COLLECTIVE, SM_COLL_REDUCE,
                           SM_NCCL_SHAPE_ROOT_GETS},
    [SM_NCCL_FN_ALL_GATHER] = {"ncclAllGather", SM_NCCL_KIND_COLLECTIVE, SM_COLL_ALLGATHER,
                               SM_NCCL_SHAPE_ALL},
    /* Equal blocks: MPI_Reduce_scatter_block's operation. */
    [SM_NCCL_FN_REDUCE_SCATTER] = {"ncclReduceScatter", SM_NCCL_KIND_COLLECTIVE,
                                   SM_COLL_REDUCE_SCATTER_BLOCK, SM_NCCL_SHAPE_ALL},
    [SM_NCCL_FN_ALLTOALL] = {"ncclAlltoAll", SM_NCCL_KIND_COLLECTIVE, SM_COLL_ALLTOALL,
                             SM_NCCL_SHAPE_ALL},
    [SM_NCCL_FN_ALL_TO_ALL] = {"ncclAllToAll", SM_NCCL_KIND_COLLECTIVE, SM_COLL_ALLTOALL,
                               SM_NCCL_SHAPE_ALL},
    /* Its bytes are summed from the counts by the wrapper. */
    [SM_NCCL_FN_ALL_TO_ALLV] = {"ncclAllToAllv", SM_NCCL_KIND_COLLECTIVE, SM_COLL_ALLTOALLV,
                                SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_GATHER] = {"ncclGather", SM_NCCL_KIND_COLLECTIVE, SM_COLL_GATHER,
                           SM_NCCL_SHAPE_ROOT_GETS},
    [SM_NCCL_FN_SCATTER] = {"ncclScatter", SM_NCCL_KIND_COLLECTIVE, SM_COLL_SCATTER,
                            SM_NCCL_SHAPE_ROOT_SENDS},
    [SM_NCCL_FN_SEND] = {"ncclSend", SM_NCCL_KIND_P2P, SM_COLL_BARRIER, SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_RECV] = {"ncclRecv", SM_NCCL_KIND_P2P, SM_COLL_BARRIER, SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_GROUP_START] = {"ncclGroupStart", SM_NCCL_KIND_GROUP, SM_COLL_BARRIER,
                                SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_GROUP_END] = {"ncclGroupEnd", SM_NCCL_KIND_GROUP, SM_COLL_BARRIER,
                              SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_INIT_RANK] = {"ncclCommInitRank", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                                   SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_INIT_RANK_CONFIG] = {"ncclCommInitRankConfig", SM_NCCL_KIND_COMM,
                                          SM_COLL_BARRIER, SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_INIT_RANK_SCALABLE] = {"ncclCommInitRankScalable", SM_NCCL_KIND_COMM,
                                            SM_COLL_BARRIER, SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_INIT_ALL] = {"ncclCommInitAll", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                                  SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_SPLIT] = {"ncclCommSplit", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                               SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_FINALIZE] = {"ncclCommFinalize", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                                  SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_DESTROY] = {"ncclCommDestroy", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                                 SM_NCCL_SHAPE_NONE},
    [SM_NCCL_FN_COMM_ABORT] = {"ncclCommAbort", SM_NCCL_KIND_COMM, SM_COLL_BARRIER,
                               SM_NCCL_SHAPE_NONE},
};

/* ---------------------------------------------------------------- types and operations */

static const struct {
    const char *name;
    uint8_t size;
} sm_nccl_types[SM_NCCL_TYPE_COUNT] = {
    [SM_NCCL_INT8] = {"int8", 1},         [SM_NCCL_UINT8] = {"uint8", 1},
    [SM_NCCL_INT32] = {"int32", 4},       [SM_NCCL_UINT32] = {"uint32", 4},
    [SM_NCCL_INT64] = {"int64", 8},       [SM_NCCL_UINT64] = {"uint64", 8},
    [SM_NCCL_FLOAT16] = {"float16", 2},   [SM_NCCL_FLOAT32] = {"float32", 4},
    [SM_NCCL_FLOAT64] = {"float64", 8},   [SM_NCCL_BFLOAT16] = {"bfloat16", 2},
    [SM_NCCL_FLOAT8E4M3] = {"float8e4m3", 1}, [SM_NCCL_FLOAT8E5M2] = {"float8e5m2", 1},
};

size_t sm_nccl_type_size(sm_nccl_datatype_t type)
{
    return type >= 0 && type < SM_NCCL_TYPE_COUNT ? sm_nccl_types[type].size : 0;
}

const char *sm_nccl_type_name(sm_nccl_datatype_t type)
{
    return type >= 0 && type < SM_NCCL_TYPE_COUNT ? sm_nccl_types[type].name : "unknown";
}

const char *sm_nccl_op_name(sm_nccl_redop_t op)
{
    static const char *const names[SM_NCCL_OP_COUNT] = {
        [SM_NCCL_SUM] = "sum", [SM_NCCL_PROD] = "prod", [SM_NCCL_MAX] = "max",
        [SM_NCCL_MIN] = "min", [SM_NCCL_AVG] = "avg"};
    if (op < 0)
        return "unknown";
    return op < SM_NCCL_OP_COUNT ? names[op] : "premulsum";
}

uint64_t sm_nccl_bytes(size_t count, sm_nccl_datatype_t type)
{
    uint64_t size = sm_nccl_type_size(type), bytes;
    if (__builtin_mul_overflow((uint64_t)count, size, &bytes))
        return 0;
    return bytes;
}

void sm_nccl_coll_bytes(sm_nccl_fn_t fn, uint64_t bytes, int root, int rank, int nranks,
                        uint64_t *sent, uint64_t *received)
{
    *sent = *received = 0;
    if (fn < 0 || fn >= SM_NCCL_FN_COUNT || rank < 0 || nranks <= 0 || rank >= nranks)
        return;
    uint64_t others = (uint64_t)nranks - 1;
    switch (sm_nccl_functions[fn].shape) {
    case SM_NCCL_SHAPE_ALL:
        *sent = *received = bytes * others;
        break;
    case SM_NCCL_SHAPE_ROOT_SENDS:
        if (rank == root)
            *sent = bytes * others;
        else if (root >= 0 && root < nranks)
            *received = bytes;
        break;
    case SM_NCCL_SHAPE_ROOT_GETS:
        if (rank == root)
            *received = bytes * others;
        else if (root >= 0 && root < nranks)
            *sent = bytes;
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- identities */

/* FNV-1a over bytes, then a finalizer that spreads every input bit over the
 * 64 (splitmix64's), so that the key's bits (definitions.h) are all live. */
static uint64_t sm_nccl_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t sm_nccl_finish(uint64_t h)
{
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h & UINT64_C(0x7fffffffffffffff);
}

#define SM_NCCL_FNV_START UINT64_C(0xcbf29ce484222325)

uint64_t sm_nccl_id_of_unique(const sm_nccl_unique_id_t *ids, int n)
{
    uint64_t h = sm_nccl_fnv(SM_NCCL_FNV_START, "unique", 6);
    for (int i = 0; ids && i < n; i++)
        h = sm_nccl_fnv(h, ids[i].internal, sizeof ids[i].internal);
    return sm_nccl_finish(h);
}

uint64_t sm_nccl_id_of_split(uint64_t parent, uint32_t seq, int color)
{
    uint64_t h = sm_nccl_fnv(SM_NCCL_FNV_START, "split", 5);
    h = sm_nccl_fnv(h, &parent, sizeof parent);
    h = sm_nccl_fnv(h, &seq, sizeof seq);
    h = sm_nccl_fnv(h, &color, sizeof color);
    return sm_nccl_finish(h);
}

uint64_t sm_nccl_id_of_local(uint64_t token, uint32_t seq)
{
    uint64_t h = sm_nccl_fnv(SM_NCCL_FNV_START, "local", 5);
    h = sm_nccl_fnv(h, &token, sizeof token);
    h = sm_nccl_fnv(h, &seq, sizeof seq);
    return sm_nccl_finish(h);
}

void sm_nccl_comm_name(uint64_t id, int amd, char *buf, size_t len)
{
    snprintf(buf, len, "%s communicator %016llx", amd ? "RCCL" : "NCCL", (unsigned long long)id);
}
