/* "The other processes of the job", as the end of the run sees them: a rank, a
 * size and a few blocking operations on byte strings.  The MPI adapter
 * provides an implementation over PMPI_* on a private duplicate of
 * MPI_COMM_WORLD; without MPI the core uses a group of one.
 *
 * Every operation returns 0, or -1 when the transport failed (the merge then
 * gives up on the collective output and says so). */
#ifndef SM_PROCS_H
#define SM_PROCS_H

#include <stdint.h>

typedef struct sm_procs {
    uint32_t rank;
    uint32_t size;
    void *ctx; /* the implementation's own state */

    /* Point-to-point, blocking.  recv returns a malloc'd buffer (free()). */
    int (*send)(void *ctx, uint32_t dest, const void *buf, uint64_t len);
    int (*recv)(void *ctx, uint32_t src, void **buf, uint64_t *len);
    /* Root's (*buf, *len) to everyone; on the others *buf is malloc'd. */
    int (*bcast)(void *ctx, uint32_t root, void **buf, uint64_t *len);
    int (*barrier)(void *ctx);
    /* Fixed-size contributions, in rank order, into recvbuf (root only). */
    int (*gather)(void *ctx, uint32_t root, const void *sendbuf, uint64_t len, void *recvbuf);
    /* Element-wise over all processes, result everywhere. */
    int (*allreduce_max_u64)(void *ctx, uint64_t *values, uint32_t n);
    int (*allreduce_sum_u64)(void *ctx, uint64_t *values, uint32_t n);
    /* Installs OTF2 collective callbacks for writing one archive in
     * parallel (the argument is an OTF2_Archive *). */
    int (*otf2_collectives)(void *ctx, void *otf2_archive);
} sm_procs_t;

#endif
