/* The contract between the generated wrappers (mpi/gen_wrappers.py, from the
 * one list mpi/mpi_functions.list) and the hand-written MPI adapter
 * (mpi_adapter.c, mpi_comm.c, mpi_request.c).  Every hook takes C handles:
 * the Fortran wrappers convert (MPI_Comm_f2c, MPI_Type_f2c, MPI_Request_f2c,
 * MPI_Status_f2c) before calling them.
 *
 * A generated wrapper looks like
 *
 *     int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
 *     {
 *         sm_mpi_call_t call;
 *         if (!sm_mpi_call_begin(&call, SM_MPI_FN_MPI_Send))
 *             return PMPI_Send(buf, count, type, dest, tag, comm);
 *         sm_mpi_hook_send(count, type, dest, tag, comm);
 *         int rc = PMPI_Send(buf, count, type, dest, tag, comm);
 *         sm_mpi_call_end(&call);
 *         return rc;
 *     }
 *
 * The event hooks run between begin and end, so that the message or
 * collective events sit inside the call's region. */
#ifndef SM_MPI_HOOKS_H
#define SM_MPI_HOOKS_H

#include <mpi.h>
#include <stdint.h>
#include "core/adapter_api.h"
#include "core/compiler.h"
#include "causal/causal_api.h"
#include "util/mpi_groups.h"
#include "mpi_function_ids.h" /* generated: enum SM_MPI_FN_<name>, SM_MPI_FN_COUNT */

/* The core's entry points (set when the library loads). */
extern const sm_adapter_api_t *sm_mpi_api SM_HIDDEN;

/* Causal profiling's table (causal_api.h), set at MPI_Init when it runs,
 * else NULL: an MPI call may block on and wake other processes. */
extern const sm_causal_api_t *sm_mpi_causal SM_HIDDEN;

/* ---------------------------------------------------------------- calls */

typedef struct sm_mpi_call {
    uint32_t fn;     /* SM_MPI_FN_* */
    uint32_t region; /* sm_region_id_t entered, or SM_INVALID_ID */
} sm_mpi_call_t;

/* Name, region role and paradigm data of each function (generated). */
typedef struct sm_mpi_function_info {
    const char *name;  /* "MPI_Send" */
    uint8_t role;      /* sm_region_role_t */
    uint8_t group;     /* sm_mpi_group_t (util/mpi_groups.h) */
    uint8_t bookkeeping; /* its hooks keep the tables true: run even when its group is off */
} sm_mpi_function_info_t;
extern const sm_mpi_function_info_t sm_mpi_functions[] SM_HIDDEN;

/* The state the wrappers test on every call, inline (mpi_adapter.c owns
 * it): set while every wrapper calls straight through (no core, a process
 * group that could not be measured, after MPI_Finalize); the function + 1
 * whose wrapper runs on this thread (0: none); each function's region id
 * + 1 (0: not defined yet). */
extern int sm_mpi_pass SM_HIDDEN;
extern SM_TLS uint32_t sm_mpi_in_call SM_HIDDEN;
extern uint32_t sm_mpi_regions[SM_MPI_FN_COUNT] SM_HIDDEN;

/* sm_mpi_call_begin for a function whose region is not defined yet, or
 * filtered (its group left out). */
int sm_mpi_call_begin_slow(sm_mpi_call_t *call, uint32_t fn) SM_HIDDEN;

/* 1: this call goes through the hooks (its region is entered when the
 * thread measures; a thread that does not measure still keeps the
 * communicator and request tables up to date, and the core records
 * nothing); call sm_mpi_call_end after it.
 * 0: call straight through: sysmeasure is not active, or an MPI call of
 * ours is already running on this thread (a Fortran wrapper that reaches a
 * C wrapper, MPI calling itself): each application call is counted once.
 * Inline: a wrapper's own cost is these two tests, a thread-local store
 * and the core's enter. */
static SM_ALWAYS_INLINE int sm_mpi_call_begin(sm_mpi_call_t *call, uint32_t fn)
{
    if (SM_UNLIKELY(__atomic_load_n(&sm_mpi_pass, __ATOMIC_RELAXED) | (int)sm_mpi_in_call))
        return 0;
    uint32_t r = __atomic_load_n(&sm_mpi_regions[fn], __ATOMIC_RELAXED) - 1;
    if (SM_UNLIKELY(sm_region_filtered(r))) /* also SM_INVALID_ID: not defined yet */
        return sm_mpi_call_begin_slow(call, fn);
    sm_mpi_in_call = fn + 1;
    call->fn = fn;
    call->region = r;
    sm_mpi_api->enter(r); /* the core's entries leave errno alone */
    const sm_causal_api_t *causal = __atomic_load_n(&sm_mpi_causal, __ATOMIC_RELAXED);
    if (SM_UNLIKELY(causal != NULL)) {
        causal->catch_up(SM_CAUSAL_MPI); /* before it wakes another rank */
        causal->block_begin();
    }
    return 1;
}

/* The communicator, peer and tag of the call this thread is in, for
 * sysmeasure-stacks (the core's stack note, stacks.h): a few stores per
 * call, no lock.  fn says which call they belong to (a call without a
 * communicator leaves the previous call's). */
typedef struct sm_mpi_where {
    uint32_t fn;
    int32_t peer, tag;
    uint8_t peer_kind, has_tag;
    MPI_Comm comm;
} sm_mpi_where_t;
extern SM_TLS sm_mpi_where_t sm_mpi_where SM_HIDDEN;

static SM_ALWAYS_INLINE void sm_mpi_call_where(uint32_t fn, MPI_Comm comm, int peer,
                                                int peer_kind, int tag, int has_tag)
{
    sm_mpi_where.fn = fn;
    sm_mpi_where.comm = comm;
    sm_mpi_where.peer = peer;
    sm_mpi_where.tag = tag;
    sm_mpi_where.peer_kind = (uint8_t)peer_kind;
    sm_mpi_where.has_tag = (uint8_t)has_tag;
}

static SM_ALWAYS_INLINE void sm_mpi_call_end(sm_mpi_call_t *call)
{
    const sm_causal_api_t *causal = __atomic_load_n(&sm_mpi_causal, __ATOMIC_RELAXED);
    if (SM_UNLIKELY(causal != NULL)) {
        causal->block_end(SM_CAUSAL_MPI); /* (nothing when it did not begin) */
        if (call->region != SM_INVALID_ID)
            causal->region_end(call->region); /* --causal-progress MPI_Allreduce */
    }
    if (SM_LIKELY(call->region != SM_INVALID_ID))
        sm_mpi_api->leave(call->region);
    sm_mpi_in_call = 0;
}

/* ---------------------------------------------------------------- helpers */

/* count elements of type in bytes (0 for MPI_DATATYPE_NULL or errors). */
uint64_t sm_mpi_type_bytes(int count, MPI_Datatype type) SM_HIDDEN;
/* Cached: size and own rank of comm (local group for intercommunicators),
 * remote group size for intercommunicators (else the size). */
int sm_mpi_comm_size(MPI_Comm comm) SM_HIDDEN;
int sm_mpi_comm_rank(MPI_Comm comm) SM_HIDDEN;
int sm_mpi_comm_remote_size(MPI_Comm comm) SM_HIDDEN;
int sm_mpi_comm_is_inter(MPI_Comm comm) SM_HIDDEN;

/* Per-thread scratch arrays for the wrappers (valid until the next call on
 * the thread): statuses to stand in for MPI_STATUS(ES)_IGNORE, and copies of
 * request arrays taken before a Wait/Test overwrites them. */
MPI_Status *sm_mpi_scratch_statuses(int n) SM_HIDDEN;
MPI_Request *sm_mpi_scratch_requests(int n) SM_HIDDEN;
MPI_Fint *sm_mpi_scratch_fint(int n) SM_HIDDEN; /* Fortran statuses/requests */

/* ---------------------------------------------------------------- point-to-point */

/* Blocking sends (Send, Bsend, Ssend, Rsend, the send half of Sendrecv):
 * before the PMPI call. */
void sm_mpi_hook_send(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) SM_HIDDEN;
/* Blocking receives (Recv, the receive half of Sendrecv*), after the call,
 * with a real status (never MPI_STATUS_IGNORE: the wrapper substitutes one).
 * rc: the PMPI return code (nothing is recorded on failure). */
void sm_mpi_hook_recv(MPI_Datatype type, MPI_Comm comm, const MPI_Status *status, int rc) SM_HIDDEN;
/* Isend/Ibsend/Issend/Irsend and Irecv, after the call (the request exists). */
void sm_mpi_hook_isend(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                       MPI_Request request, int rc) SM_HIDDEN;
void sm_mpi_hook_irecv(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Request request, int rc) SM_HIDDEN;
/* Persistent: Send_init/Bsend_init/Ssend_init/Rsend_init and Recv_init,
 * after the call; Start/Startall before the call, one hook per request. */
void sm_mpi_hook_send_init(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                           MPI_Request request, int rc) SM_HIDDEN;
void sm_mpi_hook_recv_init(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                           MPI_Request request, int rc) SM_HIDDEN;
void sm_mpi_hook_start(MPI_Request request) SM_HIDDEN;
/* Wait/Test families: for each request the call completed, after the call,
 * with the handle as it was BEFORE the call (the wrapper copies the array
 * first) and its real status.  Handles sysmeasure does not track (generalized
 * or I/O requests, MPI_REQUEST_NULL) are ignored. */
void sm_mpi_hook_completed(MPI_Request request_before, const MPI_Status *status) SM_HIDDEN;
/* MPI_Cancel and MPI_Request_free, before the call. */
void sm_mpi_hook_cancel(MPI_Request request) SM_HIDDEN;
void sm_mpi_hook_request_free(MPI_Request request) SM_HIDDEN;

/* ---------------------------------------------------------------- collectives */

/* Blocking collectives: begin before the PMPI call, end after it with the
 * bytes this process sent and received (see mpi_collective_bytes.c). */
void sm_mpi_hook_coll_begin(void) SM_HIDDEN;
void sm_mpi_hook_coll_end(sm_coll_op_t op, MPI_Comm comm, int root, uint64_t sent,
                          uint64_t received, int rc) SM_HIDDEN;
/* Nonblocking collectives (I*), after the call: tracked until a Wait/Test
 * completes the request (sm_mpi_hook_completed). */
void sm_mpi_hook_icoll(sm_coll_op_t op, MPI_Comm comm, int root, uint64_t sent,
                       uint64_t received, MPI_Request request, int rc) SM_HIDDEN;

/* ---------------------------------------------------------------- communicators */

/* After a call that created newcomm from parent (dup, split, create,
 * create_group, intercomm create/merge, cart/graph/dist_graph create,
 * cart_sub, split_type, spawn/connect/accept/join): collective over the new
 * communicator's members, so it is called on every member, and only there
 * (newcomm == MPI_COMM_NULL: nothing). */
void sm_mpi_hook_comm_created(MPI_Comm parent, MPI_Comm newcomm, int rc) SM_HIDDEN;
/* MPI_Comm_free / MPI_Comm_disconnect, before the call. */
void sm_mpi_hook_comm_free(MPI_Comm comm) SM_HIDDEN;
/* MPI_Comm_set_name, after the call (the definition takes the name). */
void sm_mpi_hook_comm_named(MPI_Comm comm) SM_HIDDEN;

/* ---------------------------------------------------------------- I/O, one-sided */

/* MPI-IO reads/writes (count elements of type), after a successful call
 * (nonblocking I/O: at the call); RMA put/get/accumulate at the call. */
void sm_mpi_hook_transfer(sm_transfer_kind_t kind, int count, MPI_Datatype type, int rc) SM_HIDDEN;

/* ---------------------------------------------------------------- life cycle */

/* MPI_Init/MPI_Init_thread, after the PMPI call succeeded (from C or
 * Fortran): brings the adapter up, agrees on the output folder, defines
 * MPI_COMM_WORLD and MPI_COMM_SELF, measures clock offsets. */
void sm_mpi_hook_initialized(void) SM_HIDDEN;
/* MPI_Finalize, before the PMPI call: clock offsets, then the job's output
 * written collectively (the core's finalize). */
void sm_mpi_hook_finalizing(void) SM_HIDDEN;
/* MPI_Abort, before the PMPI call. */
void sm_mpi_hook_aborting(MPI_Comm comm, int errorcode) SM_HIDDEN;

#endif
