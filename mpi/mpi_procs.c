/* The process group of an MPI job for the merge step: PMPI_* on
 * sysmeasure's private duplicate of MPI_COMM_WORLD (its error handler
 * returns), never the wrapped MPI_* functions.  Also the OTF2 collective
 * callbacks for writing one archive in parallel, written here rather than
 * taken from OTF2_MPI_Collectives.h, which calls MPI_* (our own wrappers). */
#define _GNU_SOURCE
#include "mpi_procs.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <otf2/otf2.h>

#define SM_PROCS_TAG_LEN 7201
#define SM_PROCS_TAG_DATA 7202

_Static_assert(SM_MPI_PIECE > 0 && SM_MPI_PIECE <= INT_MAX, "pieces are MPI counts");

typedef struct sm_mpi_procs_ctx {
    MPI_Comm comm;
    int rank;
    int size;
} sm_mpi_procs_ctx_t;

static sm_mpi_procs_ctx_t sm_procs_ctx;

static inline MPI_Comm sm_comm_of(void *ctx)
{
    return ((sm_mpi_procs_ctx_t *)ctx)->comm;
}

/* After MPI_Finalize the group is gone: every operation fails. */
#define SM_PROCS_LIVE(ctx)                                                                        \
    do {                                                                                          \
        if (sm_comm_of(ctx) == MPI_COMM_NULL)                                                     \
            return -1;                                                                            \
    } while (0)

/* ---------------------------------------------------------------- waiting */

/* Waits for r without holding the CPU: at the end of the run ranks wait for
 * one another's writing (a rank's save or encoding, rank 0's summaries),
 * and a blocking collective polls all the while (Open MPI), on the core
 * that another rank's writing, the launcher or other jobs could use (ranks
 * are often bound one per core or oversubscribed).  Tests with sleeps of 10
 * microseconds at first, growing to 250: a step ends at most about 0.25 ms
 * late per stage of the collective's tree (a sleeping rank forwards late). */
static int sm_mpi_wait_idle(MPI_Request *r)
{
    long ns = 10000;
    for (;;) {
        int done = 0;
        if (PMPI_Test(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns < 125000 ? 2 * ns : 250000;
    }
}

/* The result of starting a request (rc) and then waiting for it. */
static int sm_mpi_idle(int rc, MPI_Request *r)
{
    return rc == MPI_SUCCESS && sm_mpi_wait_idle(r) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* ---------------------------------------------------------------- pieces */

static int sm_send_pieces(const char *p, uint64_t len, int dest, MPI_Comm comm)
{
    while (len > 0) {
        int n = len > SM_MPI_PIECE ? SM_MPI_PIECE : (int)len;
        if (PMPI_Send(p, n, MPI_BYTE, dest, SM_PROCS_TAG_DATA, comm) != MPI_SUCCESS)
            return -1;
        p += n;
        len -= (uint64_t)n;
    }
    return 0;
}

/* buf NULL: consume the pieces without keeping them. */
static int sm_recv_pieces(char *p, uint64_t len, int src, MPI_Comm comm)
{
    int rc = 0;
    while (len > 0) {
        int n = len > SM_MPI_PIECE ? SM_MPI_PIECE : (int)len;
        if (PMPI_Recv(p, p ? n : 0, MPI_BYTE, src, SM_PROCS_TAG_DATA, comm, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            rc = -1; /* truncated when draining: still consumed */
        if (p)
            p += n;
        len -= (uint64_t)n;
        if (rc && p)
            return rc;
    }
    return rc;
}

/* ---------------------------------------------------------------- sm_procs_t */

static int sm_procs_send(void *ctx, uint32_t dest, const void *buf, uint64_t len)
{
    SM_PROCS_LIVE(ctx);
    MPI_Comm comm = sm_comm_of(ctx);
    if (PMPI_Send(&len, 1, MPI_UINT64_T, (int)dest, SM_PROCS_TAG_LEN, comm) != MPI_SUCCESS)
        return -1;
    return sm_send_pieces(buf, len, (int)dest, comm);
}

static int sm_procs_recv(void *ctx, uint32_t src, void **buf, uint64_t *len)
{
    MPI_Request req;
    SM_PROCS_LIVE(ctx);
    MPI_Comm comm = sm_comm_of(ctx);
    uint64_t n = 0;
    *buf = NULL;
    *len = 0;
    if (sm_mpi_idle(PMPI_Irecv(&n, 1, MPI_UINT64_T, (int)src, SM_PROCS_TAG_LEN, comm,
                               &req), &req) != MPI_SUCCESS)
        return -1;
    char *b = n <= SIZE_MAX - 1 ? malloc(n ? (size_t)n : 1) : NULL;
    if (!b) {
        sm_recv_pieces(NULL, n, (int)src, comm); /* keep the sender going */
        return -1;
    }
    if (sm_recv_pieces(b, n, (int)src, comm) != 0) {
        free(b);
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

static int sm_procs_bcast(void *ctx, uint32_t root, void **buf, uint64_t *len)
{
    MPI_Request req;
    SM_PROCS_LIVE(ctx);
    sm_mpi_procs_ctx_t *c = ctx;
    int is_root = (uint32_t)c->rank == root;
    uint64_t n = is_root ? *len : 0;
    if (sm_mpi_idle(PMPI_Ibcast(&n, 1, MPI_UINT64_T, (int)root, c->comm, &req), &req) != MPI_SUCCESS)
        return -1;
    char *b = is_root ? *buf : (n <= SIZE_MAX - 1 ? malloc(n ? (size_t)n : 1) : NULL);
    /* Everyone takes part in every piece or nobody does. */
    int failed = !b && (n > 0 || !is_root), any_failed = 0;
    if (PMPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, c->comm) != MPI_SUCCESS ||
        any_failed) {
        if (!is_root)
            free(b);
        return -1;
    }
    for (uint64_t off = 0; off < n;) {
        int piece = n - off > SM_MPI_PIECE ? SM_MPI_PIECE : (int)(n - off);
        if (PMPI_Bcast(b + off, piece, MPI_BYTE, (int)root, c->comm) != MPI_SUCCESS) {
            if (!is_root)
                free(b);
            return -1;
        }
        off += (uint64_t)piece;
    }
    if (!is_root) {
        *buf = b;
        *len = n;
    }
    return 0;
}

static int sm_procs_barrier(void *ctx)
{
    MPI_Request req;
    SM_PROCS_LIVE(ctx);
    return sm_mpi_idle(PMPI_Ibarrier(sm_comm_of(ctx), &req), &req) == MPI_SUCCESS ? 0 : -1;
}

static int sm_procs_gather(void *ctx, uint32_t root, const void *sendbuf, uint64_t len,
                           void *recvbuf)
{
    MPI_Request req;
    SM_PROCS_LIVE(ctx);
    sm_mpi_procs_ctx_t *c = ctx;
    int is_root = (uint32_t)c->rank == root;
    if (len <= (uint64_t)SM_MPI_PIECE) {
        const void *sb = sendbuf;
        if (is_root && (const char *)sendbuf == (char *)recvbuf + (size_t)root * len)
            sb = MPI_IN_PLACE;
        return sm_mpi_idle(PMPI_Igather(sb, (int)len, MPI_BYTE, recvbuf, (int)len, MPI_BYTE,
                                        (int)root, c->comm, &req), &req) == MPI_SUCCESS
                   ? 0
                   : -1;
    }
    /* Contributions larger than one message: point-to-point, in pieces. */
    if (!is_root)
        return sm_send_pieces(sendbuf, len, (int)root, c->comm);
    int rc = 0;
    for (int r = 0; r < c->size; r++) {
        char *dst = (char *)recvbuf + (size_t)r * len;
        if ((uint32_t)r == root) {
            if (dst != (const char *)sendbuf)
                memmove(dst, sendbuf, len);
        } else if (sm_recv_pieces(dst, len, r, c->comm) != 0) {
            rc = -1;
        }
    }
    return rc;
}

static int sm_procs_allreduce(void *ctx, uint64_t *values, uint32_t n, MPI_Op op)
{
    MPI_Request req;
    SM_PROCS_LIVE(ctx);
    for (uint32_t off = 0; off < n;) {
        int m = n - off > (uint32_t)INT_MAX ? INT_MAX : (int)(n - off);
        if (sm_mpi_idle(PMPI_Iallreduce(MPI_IN_PLACE, values + off, m, MPI_UINT64_T, op,
                                        sm_comm_of(ctx), &req), &req) != MPI_SUCCESS)
            return -1;
        off += (uint32_t)m;
    }
    return 0;
}

static int sm_procs_allreduce_max_u64(void *ctx, uint64_t *values, uint32_t n)
{
    return sm_procs_allreduce(ctx, values, n, MPI_MAX);
}

static int sm_procs_allreduce_sum_u64(void *ctx, uint64_t *values, uint32_t n)
{
    return sm_procs_allreduce(ctx, values, n, MPI_SUM);
}

/* ---------------------------------------------------------------- OTF2 collectives */

struct OTF2_CollectiveContext {
    MPI_Comm comm;
    int rank;
    int size;
    int owned; /* comm is ours to free */
};

static MPI_Datatype sm_otf2_mpi_type(OTF2_Type type)
{
    switch (type) {
    case OTF2_TYPE_UINT8:
        return MPI_UINT8_T;
    case OTF2_TYPE_INT8:
        return MPI_INT8_T;
    case OTF2_TYPE_UINT16:
        return MPI_UINT16_T;
    case OTF2_TYPE_INT16:
        return MPI_INT16_T;
    case OTF2_TYPE_UINT32:
        return MPI_UINT32_T;
    case OTF2_TYPE_INT32:
        return MPI_INT32_T;
    case OTF2_TYPE_UINT64:
        return MPI_UINT64_T;
    case OTF2_TYPE_INT64:
        return MPI_INT64_T;
    case OTF2_TYPE_FLOAT:
        return MPI_FLOAT;
    case OTF2_TYPE_DOUBLE:
        return MPI_DOUBLE;
    default:
        return MPI_DATATYPE_NULL;
    }
}

static inline OTF2_CallbackCode sm_otf2_rc(int mpi_rc)
{
    return mpi_rc == MPI_SUCCESS ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR;
}

static OTF2_CollectiveContext *sm_otf2_context(MPI_Comm comm, int owned)
{
    OTF2_CollectiveContext *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->comm = comm;
    c->owned = owned;
    if (PMPI_Comm_rank(comm, &c->rank) != MPI_SUCCESS ||
        PMPI_Comm_size(comm, &c->size) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    return c;
}

static void sm_otf2_context_free(OTF2_CollectiveContext *c)
{
    if (!c)
        return;
    if (c->owned && c->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&c->comm);
    free(c);
}

static OTF2_CallbackCode sm_otf2_get_size(void *ud, OTF2_CollectiveContext *c, uint32_t *size)
{
    (void)ud;
    *size = (uint32_t)c->size;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_otf2_get_rank(void *ud, OTF2_CollectiveContext *c, uint32_t *rank)
{
    (void)ud;
    *rank = (uint32_t)c->rank;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_otf2_create_local_comm(void *ud, OTF2_CollectiveContext **local,
                                                   OTF2_CollectiveContext *global,
                                                   uint32_t global_rank, uint32_t global_size,
                                                   uint32_t local_rank, uint32_t local_size,
                                                   uint32_t file_number, uint32_t n_files)
{
    (void)ud;
    (void)global_rank;
    (void)global_size;
    (void)local_size;
    (void)n_files;
    MPI_Comm comm = MPI_COMM_NULL;
    *local = NULL;
    if (PMPI_Comm_split(global->comm, (int)file_number, (int)local_rank, &comm) != MPI_SUCCESS)
        return OTF2_CALLBACK_ERROR;
    *local = sm_otf2_context(comm, 1);
    if (!*local) {
        PMPI_Comm_free(&comm);
        return OTF2_CALLBACK_ERROR;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_otf2_free_local_comm(void *ud, OTF2_CollectiveContext *local)
{
    (void)ud;
    sm_otf2_context_free(local);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_otf2_barrier(void *ud, OTF2_CollectiveContext *c)
{
    MPI_Request req;
    (void)ud;
    return sm_otf2_rc(sm_mpi_idle(PMPI_Ibarrier(c->comm, &req), &req));
}

static OTF2_CallbackCode sm_otf2_bcast(void *ud, OTF2_CollectiveContext *c, void *data,
                                       uint32_t n, OTF2_Type type, uint32_t root)
{
    MPI_Request req;
    (void)ud;
    MPI_Datatype t = sm_otf2_mpi_type(type);
    if (t == MPI_DATATYPE_NULL || n > INT_MAX)
        return OTF2_CALLBACK_ERROR;
    return sm_otf2_rc(sm_mpi_idle(PMPI_Ibcast(data, (int)n, t, (int)root, c->comm, &req), &req));
}

static OTF2_CallbackCode sm_otf2_gather(void *ud, OTF2_CollectiveContext *c, const void *in,
                                        void *out, uint32_t n, OTF2_Type type, uint32_t root)
{
    MPI_Request req;
    (void)ud;
    MPI_Datatype t = sm_otf2_mpi_type(type);
    if (t == MPI_DATATYPE_NULL || n > INT_MAX)
        return OTF2_CALLBACK_ERROR;
    return sm_otf2_rc(
        sm_mpi_idle(PMPI_Igather(in, (int)n, t, out, (int)n, t, (int)root, c->comm, &req), &req));
}

/* counts and displacements as ints (root only); 0, or -1 when they do not
 * fit. */
static int sm_otf2_counts(const OTF2_CollectiveContext *c, const uint32_t *elements, int **counts,
                          int **displs)
{
    *counts = malloc(sizeof **counts * (size_t)c->size);
    *displs = malloc(sizeof **displs * (size_t)c->size);
    if (!*counts || !*displs)
        return -1;
    uint64_t off = 0;
    for (int i = 0; i < c->size; i++) {
        if (elements[i] > INT_MAX || off > INT_MAX)
            return -1;
        (*counts)[i] = (int)elements[i];
        (*displs)[i] = (int)off;
        off += elements[i];
    }
    return 0;
}

static OTF2_CallbackCode sm_otf2_gatherv(void *ud, OTF2_CollectiveContext *c, const void *in,
                                         uint32_t in_n, void *out, const uint32_t *out_n,
                                         OTF2_Type type, uint32_t root)
{
    MPI_Request req;
    (void)ud;
    MPI_Datatype t = sm_otf2_mpi_type(type);
    int *counts = NULL, *displs = NULL, bad = t == MPI_DATATYPE_NULL || in_n > INT_MAX;
    if (!bad && (uint32_t)c->rank == root)
        bad = sm_otf2_counts(c, out_n, &counts, &displs) != 0;
    OTF2_CallbackCode rc = OTF2_CALLBACK_ERROR;
    if (!bad)
        rc = sm_otf2_rc(sm_mpi_idle(PMPI_Igatherv(in, (int)in_n, t, out, counts, displs, t,
                                                  (int)root, c->comm, &req), &req));
    free(counts);
    free(displs);
    return rc;
}

static OTF2_CallbackCode sm_otf2_scatter(void *ud, OTF2_CollectiveContext *c, const void *in,
                                         void *out, uint32_t n, OTF2_Type type, uint32_t root)
{
    (void)ud;
    MPI_Datatype t = sm_otf2_mpi_type(type);
    if (t == MPI_DATATYPE_NULL || n > INT_MAX)
        return OTF2_CALLBACK_ERROR;
    return sm_otf2_rc(PMPI_Scatter(in, (int)n, t, out, (int)n, t, (int)root, c->comm));
}

static OTF2_CallbackCode sm_otf2_scatterv(void *ud, OTF2_CollectiveContext *c, const void *in,
                                          const uint32_t *in_n, void *out, uint32_t out_n,
                                          OTF2_Type type, uint32_t root)
{
    (void)ud;
    MPI_Datatype t = sm_otf2_mpi_type(type);
    int *counts = NULL, *displs = NULL, bad = t == MPI_DATATYPE_NULL || out_n > INT_MAX;
    if (!bad && (uint32_t)c->rank == root)
        bad = sm_otf2_counts(c, in_n, &counts, &displs) != 0;
    OTF2_CallbackCode rc = OTF2_CALLBACK_ERROR;
    if (!bad)
        rc = sm_otf2_rc(
            PMPI_Scatterv(in, counts, displs, t, out, (int)out_n, t, (int)root, c->comm));
    free(counts);
    free(displs);
    return rc;
}

static void sm_otf2_release(void *ud, OTF2_CollectiveContext *global, OTF2_CollectiveContext *local)
{
    (void)ud;
    sm_otf2_context_free(local);
    sm_otf2_context_free(global);
}

static const OTF2_CollectiveCallbacks sm_otf2_callbacks = {
    .otf2_release = sm_otf2_release,
    .otf2_get_size = sm_otf2_get_size,
    .otf2_get_rank = sm_otf2_get_rank,
    .otf2_create_local_comm = sm_otf2_create_local_comm,
    .otf2_free_local_comm = sm_otf2_free_local_comm,
    .otf2_barrier = sm_otf2_barrier,
    .otf2_bcast = sm_otf2_bcast,
    .otf2_gather = sm_otf2_gather,
    .otf2_gatherv = sm_otf2_gatherv,
    .otf2_scatter = sm_otf2_scatter,
    .otf2_scatterv = sm_otf2_scatterv,
};

static int sm_procs_otf2_collectives(void *ctx, void *archive)
{
    SM_PROCS_LIVE(ctx);
    if (!archive)
        return -1;
    /* The private communicator itself (not ours to free at release). */
    OTF2_CollectiveContext *global = sm_otf2_context(sm_comm_of(ctx), 0);
    if (!global)
        return -1;
    if (OTF2_Archive_SetCollectiveCallbacks((OTF2_Archive *)archive, &sm_otf2_callbacks, NULL,
                                            global, NULL) != OTF2_SUCCESS) {
        sm_otf2_context_free(global);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- setup */

void sm_mpi_procs_teardown(void)
{
    sm_procs_ctx.comm = MPI_COMM_NULL;
}

void sm_mpi_procs_setup(sm_procs_t *procs, MPI_Comm comm)
{
    sm_procs_ctx.comm = comm;
    PMPI_Comm_rank(comm, &sm_procs_ctx.rank);
    PMPI_Comm_size(comm, &sm_procs_ctx.size);
    *procs = (sm_procs_t){
        .rank = (uint32_t)sm_procs_ctx.rank,
        .size = (uint32_t)sm_procs_ctx.size,
        .ctx = &sm_procs_ctx,
        .send = sm_procs_send,
        .recv = sm_procs_recv,
        .bcast = sm_procs_bcast,
        .barrier = sm_procs_barrier,
        .gather = sm_procs_gather,
        .allreduce_max_u64 = sm_procs_allreduce_max_u64,
        .allreduce_sum_u64 = sm_procs_allreduce_sum_u64,
        .otf2_collectives = sm_procs_otf2_collectives,
    };
}
