/* The interface between the core (libsysmeasure.so) and the adapter libraries
 * built apart from it (libsysmeasure-mpi.so, libsysmeasure-kokkos.so): one
 * table of entry points, reached through the one exported symbol
 * sysmeasure_adapter_api().  The core's sm_* symbols stay hidden; a table
 * keeps the interface versioned and in one place.
 *
 * Adapters know their paradigm and this table, nothing else: no OTF2, no
 * files, no other adapters. */
#ifndef SM_ADAPTER_API_H
#define SM_ADAPTER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "definitions.h"
#include "../merge/procs.h"

#define SM_ADAPTER_API_VERSION 1

/* Communicator ids and keys: see definitions.h. */
#define SM_NO_ROOT UINT32_MAX

/* Collective operations, numbered as OTF2_CollectiveOp. */
typedef enum {
    SM_COLL_BARRIER = 0,
    SM_COLL_BCAST = 1,
    SM_COLL_GATHER = 2,
    SM_COLL_GATHERV = 3,
    SM_COLL_SCATTER = 4,
    SM_COLL_SCATTERV = 5,
    SM_COLL_ALLGATHER = 6,
    SM_COLL_ALLGATHERV = 7,
    SM_COLL_ALLTOALL = 8,
    SM_COLL_ALLTOALLV = 9,
    SM_COLL_ALLTOALLW = 10,
    SM_COLL_ALLREDUCE = 11,
    SM_COLL_REDUCE = 12,
    SM_COLL_REDUCE_SCATTER = 13,
    SM_COLL_SCAN = 14,
    SM_COLL_EXSCAN = 15,
    SM_COLL_REDUCE_SCATTER_BLOCK = 16,
    SM_COLL_CREATE_HANDLE = 17,
    SM_COLL_DESTROY_HANDLE = 18,
    SM_COLL_ALLOCATE = 19,
    SM_COLL_DEALLOCATE = 20,
    SM_COLL_CREATE_HANDLE_AND_ALLOCATE = 21,
    SM_COLL_DESTROY_HANDLE_AND_DEALLOCATE = 22
} sm_coll_op_t;

/* Data moved by calls that are neither messages nor collectives. */
typedef enum {
    SM_XFER_IO_READ,   /* MPI-IO */
    SM_XFER_IO_WRITE,
    SM_XFER_RMA_PUT,   /* one-sided; accumulate counts as put */
    SM_XFER_RMA_GET,
    SM_XFER_KIND_COUNT
} sm_transfer_kind_t;

typedef struct sm_adapter_api {
    uint32_t version; /* SM_ADAPTER_API_VERSION */
    uint32_t size;    /* sizeof(sm_adapter_api_t) */

    /* ---- runtime ---- */
    /* Brings the core up if SYSMEASURE_ENABLE asked for it (idempotent).
     * 0 when this process is measured. */
    int (*runtime_init)(void);
    /* Non-zero while measuring (after init, before finalize). */
    int (*runtime_active)(void);
    /* The processes of the job: from now on finalize is collective over
     * them.  The table must stay valid until finalize returns. */
    void (*set_process_group)(const sm_procs_t *procs);
    /* The output folder of the job, agreed by all processes (rank 0 chose
     * it); call before anything is written.  0, or -1 with a message printed. */
    int (*set_output_dir)(const char *dir);
    const char *(*output_dir)(void);
    /* This process's clock against rank 0's, measured at MPI_Init (which 0)
     * and at MPI_Finalize (which 1): rank 0's CLOCK_MONOTONIC ns equal
     * local_ns + offset_ns at local CLOCK_MONOTONIC time local_ns. */
    void (*clock_offset)(int which, uint64_t local_ns, int64_t offset_ns);
    /* Writes the job's output, collectively over the process group when one
     * is set.  Idempotent; returns the number of outputs that failed. */
    int (*finalize)(void);
    /* The process is about to end abnormally (MPI_Abort): put what was
     * measured on disk now, for sysmeasure-merge. */
    void (*emergency_write)(const char *reason);

    /* ---- definitions ---- */
    sm_region_id_t (*region_define)(const char *name, const char *file, uint32_t line,
                                    sm_paradigm_t paradigm, sm_region_role_t role);
    /* Same key gives the same id.  world_ranks: the members' world ranks in
     * communicator rank order, or NULL for MPI_COMM_WORLD / MPI_COMM_SELF. */
    sm_comm_id_t (*comm_define)(sm_comm_key_t key, const char *name, uint32_t size,
                                const uint32_t *world_ranks, sm_comm_id_t parent);

    /* ---- events on the calling thread ----
     * All are no-ops while the calling thread is not measuring. */
    int (*measuring)(void); /* the calling thread records events now */
    void (*enter)(sm_region_id_t region);
    void (*leave)(sm_region_id_t region);

    /* Point-to-point.  peer: rank in comm; peer_process: its world rank (for
     * the communication matrix), or UINT32_MAX when unknown.  The bytes also
     * go to the profile of the innermost open region. */
    void (*msg_send)(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                     uint32_t peer_process);
    void (*msg_recv)(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                     uint32_t peer_process);
    void (*msg_isend)(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                      uint32_t peer_process, uint64_t request);
    void (*msg_isend_complete)(uint64_t request);
    void (*msg_irecv_request)(uint64_t request);
    void (*msg_irecv)(sm_comm_id_t comm, uint32_t peer, uint32_t tag, uint64_t bytes,
                      uint32_t peer_process, uint64_t request);
    void (*request_cancelled)(uint64_t request);

    /* Collectives: begin right after the region's enter, end right before
     * its leave.  root: rank in comm, or SM_NO_ROOT. */
    void (*coll_begin)(void);
    void (*coll_end)(sm_coll_op_t op, sm_comm_id_t comm, uint32_t root, uint64_t sent,
                     uint64_t received);
    /* Nonblocking collectives: the request at the call, the rest when a
     * Wait/Test completes it. */
    void (*icoll_request)(uint64_t request);
    void (*icoll_complete)(sm_coll_op_t op, sm_comm_id_t comm, uint32_t root, uint64_t sent,
                           uint64_t received, uint64_t request);

    /* MPI-IO and one-sided bytes: a counter metric in the trace, and the
     * bytes in the profile of the innermost open region. */
    void (*transfer)(sm_transfer_kind_t kind, uint64_t bytes);

    /* ---- added for the Kokkos library; still version 1: entries are only
     * ever added at the end, and an adapter that needs them checks that
     * `size` covers them (SM_ADAPTER_API_HAS). ---- */
    /* runtime_init for a library the program loads itself, without the
     * launcher: brings the core up without SYSMEASURE_ENABLE (an explicit
     * SYSMEASURE_ENABLE=no still wins).  0 when this process is measured. */
    int (*runtime_init_forced)(void);
    /* Bytes moved inside the innermost open region, for its profile only
     * (a Kokkos deep copy's bytes). */
    void (*bytes)(uint64_t sent, uint64_t received);
    /* A named counter metric of the process (a memory space's bytes in use):
     * defined once (same name, same id; SM_INVALID_ID when the core is not
     * up), then each sample is a metric event on the calling thread while it
     * measures, and the last and largest sample go into metadata.json. */
    uint32_t (*metric_define)(const char *name, const char *unit);
    void (*metric)(uint32_t metric, uint64_t value);
    /* A key/value pair for metadata.json's "metadata" (Kokkos
     * declare_metadata); a key set again takes the new value. */
    void (*metadata)(const char *key, const char *value);

    /* ---- added for MPI function groups (check with
     * SM_ADAPTER_API_HAS(api, config_value)) ---- */
    /* The run's value of a configuration variable ("mpi_groups"), as text;
     * 0, or -1 when the core is not up or the name is unknown. */
    int (*config_value)(const char *name, char *buf, size_t len);
} sm_adapter_api_t;

/* Whether a table the core handed out has the entry `field`. */
#define SM_ADAPTER_API_HAS(api, field)                                                    \
    ((api)->size >= offsetof(sm_adapter_api_t, field) + sizeof((api)->field))

#endif
