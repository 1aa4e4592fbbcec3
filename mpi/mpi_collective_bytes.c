/* Bytes sent and received per collective family: the convention is in
 * mpi_collective_bytes.h.  A collective's buffers are described here as
 * "blocks", one per process of the group that exchanges data with this one
 * (the communicator, or the remote group of an intercommunicator), or one per
 * neighbour of a virtual topology. */
#include "mpi_collective_bytes.h"

/* count elements of type each (scalar), or counts[i] of type (v), or
 * counts[i] of types[i] or of the Fortran handle ftypes[i] (w). */
typedef struct blocks {
    int vector;
    int count;
    const int *counts; /* NULL in a v/w description: unknown, no bytes */
    MPI_Datatype type;
    const MPI_Datatype *types;
    const MPI_Fint *ftypes;
} blocks_t;

static uint64_t bytes(int count, MPI_Datatype type)
{
    return count > 0 && type != MPI_DATATYPE_NULL ? sm_mpi_type_bytes(count, type) : 0;
}

static blocks_t scalar(int count, MPI_Datatype type)
{
    blocks_t b = {0, count, NULL, type, NULL, NULL};
    return b;
}

static blocks_t vec(const int *counts, MPI_Datatype type)
{
    blocks_t b = {1, 0, counts, type, NULL, NULL};
    return b;
}

static blocks_t wvec(const int *counts, const MPI_Datatype *types, const MPI_Fint *ftypes)
{
    blocks_t b = {1, 0, types || ftypes ? counts : NULL, MPI_DATATYPE_NULL, types, ftypes};
    return b;
}

static uint64_t block(const blocks_t *b, int i)
{
    if (!b->vector)
        return bytes(b->count, b->type);
    if (!b->counts || i < 0)
        return 0;
    MPI_Datatype t = b->types ? b->types[i] : b->ftypes ? MPI_Type_f2c(b->ftypes[i]) : b->type;
    return bytes(b->counts[i], t);
}

/* Blocks 0..n-1 but skip (-1: none). */
static uint64_t sum(const blocks_t *b, int n, int skip)
{
    if (n <= 0)
        return 0;
    if (!b->vector)
        return block(b, 0) * (uint64_t)(n - (skip >= 0 && skip < n));
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        if (i != skip)
            s += block(b, i);
    return s;
}

/* The processes this one exchanges data with: blocks 0..nblocks-1, minus its
 * own block self (-1 on intercommunicators, where they are the remote group),
 * others of them. */
typedef struct group {
    int inter, size, rank;
    int nblocks, self, others;
} group_t;

static int group_of(MPI_Comm comm, group_t *g)
{
    if (comm == MPI_COMM_NULL)
        return 0;
    g->inter = sm_mpi_comm_is_inter(comm);
    g->size = sm_mpi_comm_size(comm);
    g->rank = sm_mpi_comm_rank(comm);
    g->nblocks = g->inter ? sm_mpi_comm_remote_size(comm) : g->size;
    g->self = g->inter ? -1 : g->rank;
    g->others = g->inter ? g->nblocks : g->size - 1;
    return g->size > 0 && g->nblocks > 0 && g->others >= 0;
}

/* This process in a rooted collective. */
enum { ROOT, LEAF, IDLE };
static int part(const group_t *g, int root)
{
    if (g->inter)
        return root == MPI_ROOT ? ROOT : root == MPI_PROC_NULL ? IDLE : LEAF;
    return root == g->rank ? ROOT : LEAF;
}

static sm_coll_bytes_t result(sm_coll_op_t op, int root)
{
    sm_coll_bytes_t r = {op, root, 0, 0};
    return r;
}

/* ---------------------------------------------------------------- rooted */

sm_coll_bytes_t sm_coll_bytes_barrier(MPI_Comm comm)
{
    (void)comm;
    return result(SM_COLL_BARRIER, SM_MPI_NO_ROOT);
}

/* Root sends (scatter-like) or receives (gather-like) the blocks of the
 * others; a leaf moves its one block. */
static sm_coll_bytes_t rooted(sm_coll_op_t op, int root, MPI_Comm comm, int root_sends,
                              const blocks_t *root_blocks, uint64_t leaf_bytes)
{
    sm_coll_bytes_t r = result(op, root);
    group_t g;
    if (!group_of(comm, &g))
        return r;
    switch (part(&g, root)) {
    case ROOT:
        *(root_sends ? &r.sent : &r.received) = sum(root_blocks, g.nblocks, g.self);
        break;
    case LEAF:
        *(root_sends ? &r.received : &r.sent) = leaf_bytes;
        break;
    default:
        break;
    }
    return r;
}

sm_coll_bytes_t sm_coll_bytes_bcast(int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    blocks_t b = scalar(count, type);
    return rooted(SM_COLL_BCAST, root, comm, 1, &b, bytes(count, type));
}

sm_coll_bytes_t sm_coll_bytes_gather(int sendcount, MPI_Datatype sendtype, int recvcount,
                                     MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    blocks_t b = scalar(recvcount, recvtype);
    return rooted(SM_COLL_GATHER, root, comm, 0, &b, bytes(sendcount, sendtype));
}

sm_coll_bytes_t sm_coll_bytes_gatherv(int sendcount, MPI_Datatype sendtype, const int *recvcounts,
                                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    blocks_t b = vec(recvcounts, recvtype);
    return rooted(SM_COLL_GATHERV, root, comm, 0, &b, bytes(sendcount, sendtype));
}

sm_coll_bytes_t sm_coll_bytes_scatter(int sendcount, MPI_Datatype sendtype, int recvcount,
                                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    blocks_t b = scalar(sendcount, sendtype);
    return rooted(SM_COLL_SCATTER, root, comm, 1, &b, bytes(recvcount, recvtype));
}

sm_coll_bytes_t sm_coll_bytes_scatterv(const int *sendcounts, MPI_Datatype sendtype, int recvcount,
                                       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    blocks_t b = vec(sendcounts, sendtype);
    return rooted(SM_COLL_SCATTERV, root, comm, 1, &b, bytes(recvcount, recvtype));
}

sm_coll_bytes_t sm_coll_bytes_reduce(int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    blocks_t b = scalar(count, type);
    return rooted(SM_COLL_REDUCE, root, comm, 0, &b, bytes(count, type));
}

/* ---------------------------------------------------------------- all to all */

/* Allgather(v): this process's one block to every other, theirs back.  With
 * MPI_IN_PLACE its block is its slot of the receive description. */
static sm_coll_bytes_t allgather(sm_coll_op_t op, const void *sendbuf, uint64_t send_bytes,
                                 const blocks_t *recv, MPI_Comm comm)
{
    sm_coll_bytes_t r = result(op, SM_MPI_NO_ROOT);
    group_t g;
    if (!group_of(comm, &g))
        return r;
    uint64_t own = !g.inter && sendbuf == MPI_IN_PLACE ? block(recv, g.rank) : send_bytes;
    r.sent = own * (uint64_t)g.others;
    r.received = sum(recv, g.nblocks, g.self);
    return r;
}

sm_coll_bytes_t sm_coll_bytes_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    blocks_t rb = scalar(recvcount, recvtype);
    return allgather(SM_COLL_ALLGATHER, sendbuf, bytes(sendcount, sendtype), &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         const int *recvcounts, MPI_Datatype recvtype,
                                         MPI_Comm comm)
{
    blocks_t rb = vec(recvcounts, recvtype);
    return allgather(SM_COLL_ALLGATHERV, sendbuf, bytes(sendcount, sendtype), &rb, comm);
}

/* Alltoall(v/w): one block to and from every other process; with
 * MPI_IN_PLACE the send blocks are the receive blocks. */
static sm_coll_bytes_t alltoall(sm_coll_op_t op, const void *sendbuf, const blocks_t *send,
                                const blocks_t *recv, MPI_Comm comm)
{
    sm_coll_bytes_t r = result(op, SM_MPI_NO_ROOT);
    group_t g;
    if (!group_of(comm, &g))
        return r;
    if (!g.inter && sendbuf == MPI_IN_PLACE)
        send = recv;
    r.sent = sum(send, g.nblocks, g.self);
    r.received = sum(recv, g.nblocks, g.self);
    return r;
}

sm_coll_bytes_t sm_coll_bytes_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    blocks_t sb = scalar(sendcount, sendtype), rb = scalar(recvcount, recvtype);
    return alltoall(SM_COLL_ALLTOALL, sendbuf, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_alltoallv(const void *sendbuf, const int *sendcounts,
                                        MPI_Datatype sendtype, const int *recvcounts,
                                        MPI_Datatype recvtype, MPI_Comm comm)
{
    blocks_t sb = vec(sendcounts, sendtype), rb = vec(recvcounts, recvtype);
    return alltoall(SM_COLL_ALLTOALLV, sendbuf, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_alltoallw(const void *sendbuf, const int *sendcounts,
                                        const MPI_Datatype *sendtypes, const int *recvcounts,
                                        const MPI_Datatype *recvtypes, MPI_Comm comm)
{
    blocks_t sb = wvec(sendcounts, sendtypes, NULL), rb = wvec(recvcounts, recvtypes, NULL);
    return alltoall(SM_COLL_ALLTOALLW, sendbuf, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_alltoallw_f(const void *sendbuf, const int *sendcounts,
                                          const MPI_Fint *sendtypes, const int *recvcounts,
                                          const MPI_Fint *recvtypes, MPI_Comm comm)
{
    blocks_t sb = wvec(sendcounts, NULL, sendtypes), rb = wvec(recvcounts, NULL, recvtypes);
    return alltoall(SM_COLL_ALLTOALLW, sendbuf, &sb, &rb, comm);
}

/* ---------------------------------------------------------------- reductions */

sm_coll_bytes_t sm_coll_bytes_allreduce(int count, MPI_Datatype type, MPI_Comm comm)
{
    sm_coll_bytes_t r = result(SM_COLL_ALLREDUCE, SM_MPI_NO_ROOT);
    group_t g;
    if (group_of(comm, &g))
        r.sent = r.received = bytes(count, type) * (uint64_t)g.others;
    return r;
}

/* Reduce_scatter(_block): the vector of all result blocks goes out (block i
 * to process i of the other side), this process's block comes back from each
 * other process.  recv describes the blocks of the local group. */
static sm_coll_bytes_t reduce_scatter(sm_coll_op_t op, const blocks_t *recv, MPI_Comm comm)
{
    sm_coll_bytes_t r = result(op, SM_MPI_NO_ROOT);
    group_t g;
    if (!group_of(comm, &g))
        return r;
    r.sent = sum(recv, g.size, g.self);
    r.received = block(recv, g.rank) * (uint64_t)g.others;
    return r;
}

sm_coll_bytes_t sm_coll_bytes_reduce_scatter(const int *recvcounts, MPI_Datatype type,
                                             MPI_Comm comm)
{
    blocks_t b = vec(recvcounts, type);
    return reduce_scatter(SM_COLL_REDUCE_SCATTER, &b, comm);
}

sm_coll_bytes_t sm_coll_bytes_reduce_scatter_block(int recvcount, MPI_Datatype type, MPI_Comm comm)
{
    blocks_t b = scalar(recvcount, type);
    return reduce_scatter(SM_COLL_REDUCE_SCATTER_BLOCK, &b, comm);
}

/* Scan/exscan (intracommunicators only): from the r lower ranks, to the
 * n-1-r higher ones. */
static sm_coll_bytes_t scan(sm_coll_op_t op, int count, MPI_Datatype type, MPI_Comm comm)
{
    sm_coll_bytes_t r = result(op, SM_MPI_NO_ROOT);
    group_t g;
    if (!group_of(comm, &g) || g.inter)
        return r;
    uint64_t b = bytes(count, type);
    r.sent = b * (uint64_t)(g.size - 1 - g.rank);
    r.received = b * (uint64_t)g.rank;
    return r;
}

sm_coll_bytes_t sm_coll_bytes_scan(int count, MPI_Datatype type, MPI_Comm comm)
{
    return scan(SM_COLL_SCAN, count, type, comm);
}

sm_coll_bytes_t sm_coll_bytes_exscan(int count, MPI_Datatype type, MPI_Comm comm)
{
    return scan(SM_COLL_EXSCAN, count, type, comm);
}

/* ---------------------------------------------------------------- neighborhood */

/* The neighbour slots of comm's virtual topology: in (sources) and out
 * (destinations).  A Cartesian topology has 2 per dimension, the -1 and the
 * +1 neighbour, either of which may be MPI_PROC_NULL (no data moves). */
typedef struct topo {
    int kind, ndims, in, out;
} topo_t;

static int topology(MPI_Comm comm, topo_t *t)
{
    int weighted;
    t->ndims = t->in = t->out = 0;
    if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &t->kind) != MPI_SUCCESS)
        return 0;
    if (t->kind == MPI_CART) {
        if (PMPI_Cartdim_get(comm, &t->ndims) != MPI_SUCCESS)
            return 0;
        t->in = t->out = 2 * t->ndims;
    } else if (t->kind == MPI_GRAPH) {
        if (PMPI_Graph_neighbors_count(comm, sm_mpi_comm_rank(comm), &t->in) != MPI_SUCCESS)
            return 0;
        t->out = t->in;
    } else if (t->kind == MPI_DIST_GRAPH) {
        if (PMPI_Dist_graph_neighbors_count(comm, &t->in, &t->out, &weighted) != MPI_SUCCESS)
            return 0;
    } else {
        return 0;
    }
    return 1;
}

static uint64_t neighbor_sum(MPI_Comm comm, const topo_t *t, const blocks_t *b, int n)
{
    if (t->kind != MPI_CART)
        return sum(b, n, -1);
    uint64_t s = 0;
    for (int d = 0; d < t->ndims; d++) {
        int minus, plus;
        if (PMPI_Cart_shift(comm, d, 1, &minus, &plus) != MPI_SUCCESS)
            continue;
        if (minus != MPI_PROC_NULL)
            s += block(b, 2 * d);
        if (plus != MPI_PROC_NULL)
            s += block(b, 2 * d + 1);
    }
    return s;
}

static sm_coll_bytes_t neighbor(sm_coll_op_t op, const blocks_t *send, const blocks_t *recv,
                                MPI_Comm comm)
{
    sm_coll_bytes_t r = result(op, SM_MPI_NO_ROOT);
    topo_t t;
    if (!topology(comm, &t))
        return r;
    r.sent = neighbor_sum(comm, &t, send, t.out);
    r.received = neighbor_sum(comm, &t, recv, t.in);
    return r;
}

sm_coll_bytes_t sm_coll_bytes_neighbor_allgather(int sendcount, MPI_Datatype sendtype,
                                                 int recvcount, MPI_Datatype recvtype,
                                                 MPI_Comm comm)
{
    blocks_t sb = scalar(sendcount, sendtype), rb = scalar(recvcount, recvtype);
    return neighbor(SM_COLL_ALLGATHER, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_neighbor_allgatherv(int sendcount, MPI_Datatype sendtype,
                                                  const int *recvcounts, MPI_Datatype recvtype,
                                                  MPI_Comm comm)
{
    blocks_t sb = scalar(sendcount, sendtype), rb = vec(recvcounts, recvtype);
    return neighbor(SM_COLL_ALLGATHERV, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_neighbor_alltoall(int sendcount, MPI_Datatype sendtype,
                                                int recvcount, MPI_Datatype recvtype,
                                                MPI_Comm comm)
{
    blocks_t sb = scalar(sendcount, sendtype), rb = scalar(recvcount, recvtype);
    return neighbor(SM_COLL_ALLTOALL, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallv(const int *sendcounts, MPI_Datatype sendtype,
                                                 const int *recvcounts, MPI_Datatype recvtype,
                                                 MPI_Comm comm)
{
    blocks_t sb = vec(sendcounts, sendtype), rb = vec(recvcounts, recvtype);
    return neighbor(SM_COLL_ALLTOALLV, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallw(const int *sendcounts,
                                                 const MPI_Datatype *sendtypes,
                                                 const int *recvcounts,
                                                 const MPI_Datatype *recvtypes, MPI_Comm comm)
{
    blocks_t sb = wvec(sendcounts, sendtypes, NULL), rb = wvec(recvcounts, recvtypes, NULL);
    return neighbor(SM_COLL_ALLTOALLW, &sb, &rb, comm);
}

sm_coll_bytes_t sm_coll_bytes_neighbor_alltoallw_f(const int *sendcounts,
                                                   const MPI_Fint *sendtypes,
                                                   const int *recvcounts,
                                                   const MPI_Fint *recvtypes, MPI_Comm comm)
{
    blocks_t sb = wvec(sendcounts, NULL, sendtypes), rb = wvec(recvcounts, NULL, recvtypes);
    return neighbor(SM_COLL_ALLTOALLW, &sb, &rb, comm);
}
