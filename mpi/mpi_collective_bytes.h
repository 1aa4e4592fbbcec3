/* Bytes a process sends and receives in a collective, per family, and the
 * OTF2 operation each family is recorded as (neighborhood collectives as
 * ALLGATHER(V) / ALLTOALL(V/W)).  The generated wrappers call these before
 * the PMPI call (the arguments are input-only; MPI_IN_PLACE needs the
 * caller's pointers) and pass the result to the collective hooks.
 *
 * Convention: only data that goes to or comes from OTHER processes counts,
 * one transfer per pair.  Rooted: the root sends (scatter, bcast) or receives
 * (gather, reduce) one block per other process, every other process receives
 * or sends its one block.  All-to-all families: each process sends its block(s)
 * to every other and receives theirs; allreduce counts as allgather,
 * reduce_scatter as alltoall of the result blocks, scan/exscan: rank r
 * receives from the r lower ranks, sends to the n-1-r higher ones.  So for
 * each collective, the sum of sent over its members equals the sum received.
 * Intercommunicators: "other processes" are the remote group (root MPI_ROOT
 * sends/receives, MPI_PROC_NULL moves nothing); neighborhood collectives count
 * the topology's neighbours that are not MPI_PROC_NULL. */
#ifndef SM_MPI_COLLECTIVE_BYTES_H
#define SM_MPI_COLLECTIVE_BYTES_H

#include "mpi_hooks.h"

/* The root the hooks get for collectives that have none. */
#define SM_MPI_NO_ROOT (-1)

typedef struct sm_coll_bytes {
    sm_coll_op_t op;
    int root; /* as the caller gave it (a rank, MPI_ROOT, MPI_PROC_NULL), or SM_MPI_NO_ROOT */
    uint64_t sent;
    uint64_t received;
} sm_coll_bytes_t;

sm_coll_bytes_t sm_coll_bytes_barrier(MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_bcast(int count, MPI_Datatype type, int root,
                                    MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_gather(int sendcount, MPI_Datatype sendtype, int recvcount,
                                     MPI_Datatype recvtype, int root, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_gatherv(int sendcount, MPI_Datatype sendtype, const int *recvcounts,
                                      MPI_Datatype recvtype, int root, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_scatter(int sendcount, MPI_Datatype sendtype, int recvcount,
                                      MPI_Datatype recvtype, int root, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_scatterv(const int *sendcounts, MPI_Datatype sendtype, int recvcount,
                                       MPI_Datatype recvtype, int root, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         const int *recvcounts, MPI_Datatype recvtype,
                                         MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_alltoallv(const void *sendbuf, const int *sendcounts,
                                        MPI_Datatype sendtype, const int *recvcounts,
                                        MPI_Datatype recvtype, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_alltoallw(const void *sendbuf, const int *sendcounts,
                                        const MPI_Datatype *sendtypes, const int *recvcounts,
                                        const MPI_Datatype *recvtypes, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_reduce(int count, MPI_Datatype type, int root,
                                     MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_allreduce(int count, MPI_Datatype type, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_reduce_scatter(const int *recvcounts, MPI_Datatype type,
                                             MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_reduce_scatter_block(int recvcount, MPI_Datatype type,
                                                   MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_scan(int count, MPI_Datatype type, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_exscan(int count, MPI_Datatype type, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_allgather(int sendcount, MPI_Datatype sendtype,
                                                 int recvcount, MPI_Datatype recvtype,
                                                 MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_allgatherv(int sendcount, MPI_Datatype sendtype,
                                                  const int *recvcounts, MPI_Datatype recvtype,
                                                  MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_alltoall(int sendcount, MPI_Datatype sendtype,
                                                int recvcount, MPI_Datatype recvtype,
                                                MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallv(const int *sendcounts, MPI_Datatype sendtype,
                                                 const int *recvcounts, MPI_Datatype recvtype,
                                                 MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallw(const int *sendcounts,
                                                 const MPI_Datatype *sendtypes,
                                                 const int *recvcounts,
                                                 const MPI_Datatype *recvtypes,
                                                 MPI_Comm comm) SM_HIDDEN;

/* The w families from Fortran: datatype arrays of Fortran handles. */
sm_coll_bytes_t sm_coll_bytes_alltoallw_f(const void *sendbuf, const int *sendcounts,
                                          const MPI_Fint *sendtypes, const int *recvcounts,
                                          const MPI_Fint *recvtypes, MPI_Comm comm) SM_HIDDEN;
sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallw_f(const int *sendcounts,
                                                   const MPI_Fint *sendtypes,
                                                   const int *recvcounts,
                                                   const MPI_Fint *recvtypes,
                                                   MPI_Comm comm) SM_HIDDEN;

#endif
