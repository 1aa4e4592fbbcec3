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
#include "sampler.h"
#include "gpu.h"
#include "gpu_counters.h"
#include "gpu_memory.h"
#include "procs.h"

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

/* An attribute value: an int64, a double's bits or a string id, by the
 * attribute's type (definitions.h). */
typedef struct sm_adapter_attr {
    sm_attribute_id_t attribute;
    uint64_t raw;
} sm_adapter_attr_t;

/* What a thread waits in, for sysmeasure-stacks (stacks.h). */
typedef enum sm_call_peer {
    SM_CALL_PEER_NONE,
    SM_CALL_PEER_SOURCE,
    SM_CALL_PEER_DEST,
    SM_CALL_PEER_ROOT
} sm_call_peer_t;

typedef struct sm_call_note {
    const char *function; /* static text ("MPI_Recv") */
    const char *comm;     /* static text ("MPI_COMM_WORLD"), or NULL: another */
    uint64_t comm_handle; /* the communicator's handle, when comm is NULL */
    int32_t peer, tag;    /* as the call was given (MPI_ANY_SOURCE: -1 in Open MPI) */
    sm_call_peer_t peer_kind;
    int has_tag;
} sm_call_note_t;
typedef int (*sm_call_note_fn)(sm_call_note_t *note);

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
     * SYSMEASURE_ENABLE=no still wins).  0 when this process is measured.
     * In a process whose MPI is initialized, the first call also joins the
     * ranks into one job (adapter_load.h): collective, so every rank must
     * make it at the same point (KokkosP: Kokkos::initialize). */
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
    /* MPI_Finalize, before any step that waits on other processes: ends the
     * measurement and puts this process's data on disk (as for a process
     * that ends alone), so that a job torn down meanwhile keeps it; then
     * finalize writes the job's output as usual.  0 or 1. */
    int (*save_before_finalize)(void);
    /* ---- added for the GPU backends (gpu.h explains the model; check with
     * SM_ADAPTER_API_HAS(api, gpu_activities)).  Definitions and batches
     * may come from any thread, the vendor's own included. ---- */
    /* A device; same (vendor, ordinal) gives the same id; SM_GPU_NONE when
     * the core is not up. */
    sm_gpu_device_t (*gpu_device_define)(const sm_gpu_device_info_t *info);
    /* A stream (queue) of a device: a location of its own.  key: the
     * vendor's stream id; same (device, key) gives the same id. */
    sm_gpu_stream_t (*gpu_stream_define)(sm_gpu_device_t device, uint64_t key, const char *name);
    /* Vendor timestamps (ns on one of the host's clocks) to core ticks. */
    uint64_t (*gpu_ticks)(sm_gpu_clock_t clock, uint64_t ns);
    /* Finished device work, n activities `stride` (the caller's
     * sizeof(sm_gpu_activity_t)) bytes apart; returns how many were kept. */
    size_t (*gpu_activities)(const sm_gpu_activity_t *a, size_t n, size_t stride);
    /* An API call that issues device work, on the calling thread: its
     * region entered with the correlation id (0: none) that the work's
     * activity will carry; left with the call's error code (0: success). */
    void (*gpu_api_enter)(sm_region_id_t region, uint64_t correlation);
    void (*gpu_api_leave)(sm_region_id_t region, int64_t error);
    /* Activities the backend lost (reported, never silent). */
    void (*gpu_dropped)(uint64_t n);
    /* The backend's flush, called before the end-of-run output is written
     * (finalize, exit from any thread, fatal signal, MPI_Abort). */
    int (*gpu_on_flush)(sm_gpu_flush_fn fn);
    /* A line for the summary's header and metadata.json's notes (the
     * backend says it on stderr itself). */
    void (*note)(const char *text);

    /* ---- added for the GPU tool libraries (ROCTx, HIP, HSA) ---- */
    /* Same (name, type) gives the same id; SM_INVALID_ID when the core is
     * not up. */
    sm_attribute_id_t (*attribute_define)(const char *name, sm_attr_type_t type);
    /* enter/leave with attributes on the record (an error code, a range id). */
    void (*enter_attrs)(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n);
    void (*leave_attrs)(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n);
    /* A point in time on the calling thread (a ROCTx/NVTX mark): an enter
     * and a leave of region at one timestamp, attributes on the enter. */
    void (*mark)(sm_region_id_t region, const sm_adapter_attr_t *attrs, uint32_t n);
    /* The core's clock, for times handed back to async_range. */
    uint64_t (*now)(void);
    /* An interval that belongs to no thread's stack (a range started on one
     * thread and stopped on another), start and end from now(): written
     * whole on an "async ranges" lane of the process (async_ranges.h). */
    void (*async_range)(sm_region_id_t region, uint64_t start, uint64_t end,
                        const sm_adapter_attr_t *attrs, uint32_t n);
    /* A sampler on the core's sampler thread (sampler.h: rocm-smi, NVML):
     * 0, or -1 (said on stderr).  Its read function reports each value with
     * sample_put, its metrics defined with metric_define. */
    int (*sampler_register)(const sm_sampler_t *s);
    void (*sample_put)(sm_sample_sink_t *sink, uint32_t metric, uint64_t value);

    /* ---- added for GPU counters (gpu_counters.h; check with
     * SM_ADAPTER_API_HAS(api, gpu_counters)) ---- */
    /* A per-kernel metric's number (same name, same number); UINT32_MAX
     * when the core is not up. */
    uint32_t (*gpu_counter_define)(const char *name, const char *unit);
    /* Values of finished kernels, n of them `stride` bytes apart, any
     * thread; returns how many were taken. */
    size_t (*gpu_counters)(const sm_gpu_counter_value_t *v, size_t n, size_t stride);

    /* ---- added for device-level GPU sampling (check with
     * SM_ADAPTER_API_HAS(api, sample_last)) ---- */
    /* A value that the device measured over a span ending at `time` (core
     * ticks, from gpu_ticks), on the sampler's metric location. */
    void (*sample_put_at)(sm_sample_sink_t *sink, uint32_t metric, uint64_t value, uint64_t time);
    /* Non-zero in the sampler's last read (the end of the run). */
    int (*sample_last)(const sm_sample_sink_t *sink);

    /* ---- added for samplers whose library ends before the run (check
     * with SM_ADAPTER_API_HAS(api, sampler_finish_now)) ---- */
    /* The last read and stop of the sampler registered with ctx, now, on
     * the calling thread (sampler.h: sm_sampler_finish_now).  0 or -1. */
    int (*sampler_finish_now)(const void *ctx);

    /* ---- added for the NCCL library (check with SM_ADAPTER_API_HAS(api,
     * string_define)) ---- */
    /* A string's id, for attributes of type SM_ATTR_STRING (a data type's
     * name); same text, same id; SM_INVALID_ID when the core is not up. */
    uint32_t (*string_define)(const char *text);
    /* ---- added for GPU memory (gpu_memory.h; check with
     * SM_ADAPTER_API_HAS(api, gpu_memory)) ---- */
    /* Allocations and frees, n of them `stride` bytes apart (the caller's
     * sizeof(sm_gpu_mem_op_t)), in the order they happened, any thread;
     * returns how many were accounted. */
    size_t (*gpu_memory)(const sm_gpu_mem_op_t *ops, size_t n, size_t stride);
    /* This backend reports vendor's memory at its API layer (HIP): that
     * vendor's lower layer (HSA) is ignored from now on. */
    void (*gpu_memory_api_source)(uint32_t vendor);
    /* The size of the block allocated at address; 0 when none is known
     * (a free's bytes for its API call's leave). */
    uint64_t (*gpu_memory_block_bytes)(uint64_t address);
    /* ---- added for sysmeasure-stacks (stacks.h; check with
     * SM_ADAPTER_API_HAS(api, stack_call_note)) ---- */
    /* fn, called in a signal handler on a thread whose stack is taken,
     * says the call the thread is in (an MPI call: its peer, tag,
     * communicator); returns 0 when it is in none. */
    void (*stack_call_note)(sm_call_note_fn fn);
} sm_adapter_api_t;

/* Whether a table the core handed out has the entry `field`. */
#define SM_ADAPTER_API_HAS(api, field)                                                    \
    ((api)->size >= offsetof(sm_adapter_api_t, field) + sizeof((api)->field))

#endif
