/* The communicator table: MPI_Comm handle -> what the events need (the
 * core's communicator id, sizes, own rank, the world ranks of the peers).
 *
 * Lookups run on every message and collective, from any thread, and take no
 * lock: an open-addressing table (linear probing, backward-shift deletion)
 * read under a sequence counter, changed under a mutex on communicator
 * creation and free only.  MPI_COMM_WORLD is answered before the table. */
#ifndef SM_MPI_COMM_H
#define SM_MPI_COMM_H

#include <mpi.h>
#include <stdint.h>
#include "core/adapter_api.h"
#include "core/compiler.h"

typedef struct sm_mpi_comm {
    sm_comm_id_t id;      /* the core's id, or SM_COMM_NONE */
    int32_t size;         /* local group */
    int32_t rank;         /* in the local group */
    int32_t remote_size;  /* remote group for intercommunicators, else size */
    uint8_t is_inter;
    uint8_t permanent;    /* MPI_COMM_WORLD / MPI_COMM_SELF: never freed, no counting */
    uint8_t same_world;   /* all members are processes of this MPI_COMM_WORLD */
    /* Ranks as the events give them (ranks in the communicator's definition,
     * which for an intercommunicator is the union of both groups):
     * peer r -> peer_offset + r, this process -> self_offset + rank. */
    uint32_t peer_offset;
    uint32_t self_offset;
    /* World ranks of the peers (the remote group of an intercommunicator),
     * peer_count of them; NULL with peer_count > 0: identity. */
    uint32_t peer_count;
    const uint32_t *peers;

    /* The definition, kept for MPI_Comm_set_name (re-defined by key). */
    sm_comm_key_t key;
    uint32_t def_size;
    uint32_t *def_members; /* NULL: identity 0..def_size-1 */
    uint8_t def_null;      /* pass NULL (MPI_COMM_WORLD, MPI_COMM_SELF) */
    sm_comm_id_t parent;
    char *name;            /* under the table's mutex */
    uint32_t refs;         /* the table's reference + one per pending receive */
} sm_mpi_comm_t;

/* After MPI_Init, world rank/size known: defines MPI_COMM_WORLD and
 * MPI_COMM_SELF.  0 or -1. */
int sm_mpi_comm_init(void) SM_HIDDEN;
void sm_mpi_comm_fini(void) SM_HIDDEN;

extern sm_mpi_comm_t sm_mpi_comm_world_rec SM_HIDDEN;
const sm_mpi_comm_t *sm_mpi_comm_lookup_table(MPI_Comm comm) SM_HIDDEN;

/* NULL for communicators sysmeasure has not seen created. */
static inline const sm_mpi_comm_t *sm_mpi_comm_lookup(MPI_Comm comm)
{
    if (SM_LIKELY(comm == MPI_COMM_WORLD))
        return sm_mpi_comm_world_rec.id != SM_COMM_NONE ? &sm_mpi_comm_world_rec : NULL;
    return sm_mpi_comm_lookup_table(comm);
}

static inline sm_comm_id_t sm_mpi_comm_id(const sm_mpi_comm_t *c)
{
    return c ? c->id : SM_COMM_NONE;
}

/* A peer rank of comm (point-to-point partner): as the events give it. */
static inline uint32_t sm_mpi_comm_peer_rank(const sm_mpi_comm_t *c, int peer)
{
    return c ? c->peer_offset + (uint32_t)peer : (uint32_t)peer;
}

/* Its world rank, UINT32_MAX when unknown. */
static inline uint32_t sm_mpi_comm_peer_world(const sm_mpi_comm_t *c, int peer)
{
    if (!c || peer < 0 || (uint32_t)peer >= c->peer_count)
        return UINT32_MAX;
    return c->peers ? c->peers[peer] : (uint32_t)peer;
}

/* A collective's root argument as the events give it: SM_NO_ROOT for
 * collectives without one (negative values other than MPI_ROOT) and for
 * MPI_PROC_NULL (intercommunicator: the root is another process of this
 * group); MPI_ROOT: this process. */
static inline uint32_t sm_mpi_comm_root(const sm_mpi_comm_t *c, int root)
{
    if (root >= 0)
        return sm_mpi_comm_peer_rank(c, root);
    if (root == MPI_ROOT && c && c->is_inter)
        return c->self_offset + (uint32_t)c->rank;
    return SM_NO_ROOT;
}

/* A pending receive keeps the entry alive past MPI_Comm_free. */
void sm_mpi_comm_ref(const sm_mpi_comm_t *c) SM_HIDDEN;
void sm_mpi_comm_unref(const sm_mpi_comm_t *c) SM_HIDDEN;

#endif
