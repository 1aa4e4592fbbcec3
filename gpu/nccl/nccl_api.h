/* The NCCL API as the wrappers of gpu/nccl/nccl_adapter.c see it, declared
 * here because no nccl.h is needed to build them (nor present on the build
 * machines): our own declarations of what NCCL's public API documents
 * (docs.nvidia.com/deeplearning/nccl, "NCCL API", NCCL 2.18 to 2.28): the
 * result codes, the data types and reduction operations by number, the
 * 128-byte unique id passed by value, the signatures.  RCCL (ROCm 5 and 6,
 * rccl.h) has the same names, numbers and signatures, with hipStream_t for
 * cudaStream_t (both opaque pointers), plus ncclAllToAll, ncclAllToAllv,
 * ncclGather and ncclScatter; NCCL 2.28 added ncclAlltoAll, ncclGather and
 * ncclScatter.  Opaque handles (communicators, streams, configurations) are
 * only passed on, never looked into. */
#ifndef SM_NCCL_API_H
#define SM_NCCL_API_H

#include <stddef.h>
#include <stdint.h>
#include "core/compiler.h"

/* ncclResult_t (an int-sized enum): the values we name. */
typedef int sm_nccl_result_t;
enum {
    SM_NCCL_SUCCESS = 0,
    SM_NCCL_SYSTEM_ERROR = 2,   /* ncclSystemError: what a call gets when no NCCL is loaded */
    SM_NCCL_IN_PROGRESS = 7     /* ncclInProgress: a nonblocking communicator still busy */
};

/* ncclDataType_t, by number (ncclInt8 = 0 ... ncclFloat8e5m2 = 11). */
typedef int sm_nccl_datatype_t;
enum {
    SM_NCCL_INT8 = 0,
    SM_NCCL_UINT8 = 1,
    SM_NCCL_INT32 = 2,
    SM_NCCL_UINT32 = 3,
    SM_NCCL_INT64 = 4,
    SM_NCCL_UINT64 = 5,
    SM_NCCL_FLOAT16 = 6,
    SM_NCCL_FLOAT32 = 7,
    SM_NCCL_FLOAT64 = 8,
    SM_NCCL_BFLOAT16 = 9,
    SM_NCCL_FLOAT8E4M3 = 10,
    SM_NCCL_FLOAT8E5M2 = 11,
    SM_NCCL_TYPE_COUNT = 12
};

/* ncclRedOp_t, by number; values from SM_NCCL_OP_COUNT on are operations
 * the program made (ncclRedOpCreatePreMulSum). */
typedef int sm_nccl_redop_t;
enum {
    SM_NCCL_SUM = 0,
    SM_NCCL_PROD = 1,
    SM_NCCL_MAX = 2,
    SM_NCCL_MIN = 3,
    SM_NCCL_AVG = 4,
    SM_NCCL_OP_COUNT = 5
};

#define SM_NCCL_SPLIT_NOCOLOR (-1)
#define SM_NCCL_UNIQUE_ID_BYTES 128

typedef struct sm_nccl_comm_opaque *sm_nccl_comm_t;
typedef void *sm_nccl_stream_t; /* cudaStream_t, hipStream_t */
typedef struct sm_nccl_config_opaque sm_nccl_config_t;
typedef struct {
    char internal[SM_NCCL_UNIQUE_ID_BYTES];
} sm_nccl_unique_id_t;

/* The calls answered by libsysmeasure-nccl.so (each passes on to the real
 * one in libnccl.so / librccl.so). */
#define SM_NCCL_API SM_EXPORT
SM_NCCL_API sm_nccl_result_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                           sm_nccl_datatype_t datatype, sm_nccl_redop_t op,
                                           sm_nccl_comm_t comm, sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                           sm_nccl_datatype_t datatype, int root,
                                           sm_nccl_comm_t comm, sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclBcast(void *buff, size_t count, sm_nccl_datatype_t datatype,
                                       int root, sm_nccl_comm_t comm, sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                        sm_nccl_datatype_t datatype, sm_nccl_redop_t op, int root,
                                        sm_nccl_comm_t comm, sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                           sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                                           sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                               size_t recvcount, sm_nccl_datatype_t datatype,
                                               sm_nccl_redop_t op, sm_nccl_comm_t comm,
                                               sm_nccl_stream_t stream);
/* NCCL 2.28 */
SM_NCCL_API sm_nccl_result_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                          sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                                          sm_nccl_stream_t stream);
/* RCCL */
SM_NCCL_API sm_nccl_result_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                                          sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                                          sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[],
                                           const size_t sdispls[], void *recvbuff,
                                           const size_t recvcounts[], const size_t rdispls[],
                                           sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                                           sm_nccl_stream_t stream);
/* RCCL, NCCL 2.28 */
SM_NCCL_API sm_nccl_result_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                        sm_nccl_datatype_t datatype, int root, sm_nccl_comm_t comm,
                                        sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                         sm_nccl_datatype_t datatype, int root, sm_nccl_comm_t comm,
                                         sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclSend(const void *sendbuff, size_t count,
                                      sm_nccl_datatype_t datatype, int peer, sm_nccl_comm_t comm,
                                      sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclRecv(void *recvbuff, size_t count, sm_nccl_datatype_t datatype,
                                      int peer, sm_nccl_comm_t comm, sm_nccl_stream_t stream);
SM_NCCL_API sm_nccl_result_t ncclGroupStart(void);
SM_NCCL_API sm_nccl_result_t ncclGroupEnd(void);
SM_NCCL_API sm_nccl_result_t ncclCommInitRank(sm_nccl_comm_t *comm, int nranks,
                                              sm_nccl_unique_id_t commId, int rank);
SM_NCCL_API sm_nccl_result_t ncclCommInitRankConfig(sm_nccl_comm_t *comm, int nranks,
                                                    sm_nccl_unique_id_t commId, int rank,
                                                    sm_nccl_config_t *config);
/* NCCL 2.23 */
SM_NCCL_API sm_nccl_result_t ncclCommInitRankScalable(sm_nccl_comm_t *newcomm, int nranks,
                                                      int myrank, int nId,
                                                      sm_nccl_unique_id_t *commIds,
                                                      sm_nccl_config_t *config);
SM_NCCL_API sm_nccl_result_t ncclCommInitAll(sm_nccl_comm_t *comms, int ndev, const int *devlist);
SM_NCCL_API sm_nccl_result_t ncclCommSplit(sm_nccl_comm_t comm, int color, int key,
                                           sm_nccl_comm_t *newcomm, sm_nccl_config_t *config);
SM_NCCL_API sm_nccl_result_t ncclCommFinalize(sm_nccl_comm_t comm);
SM_NCCL_API sm_nccl_result_t ncclCommDestroy(sm_nccl_comm_t comm);
SM_NCCL_API sm_nccl_result_t ncclCommAbort(sm_nccl_comm_t comm);

/* Not answered, only called: the communicator's place and size. */
typedef sm_nccl_result_t (*sm_nccl_comm_int_fn)(const sm_nccl_comm_t comm, int *value);

#endif
