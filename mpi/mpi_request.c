/* Point-to-point, collective and transfer hooks, and the request table.
 *
 * Requests: MPI_Request handle -> what its completion must record.  A
 * request may be created on one thread and completed on another, and every
 * operation on the table changes it (insert at the call, remove at the
 * completion), so readers gain nothing from being lock-free: the table is
 * split into 64 shards by the handle's hash, each an open-addressing index
 * (linear probing, backward-shift deletion) under a spinlock held for a few
 * instructions.  Slots and entries come from per-shard pools that grow
 * during warm-up; afterwards no allocation.
 *
 * One handle can stand for several requests at once, so a slot holds a list
 * of entries, oldest first:
 * - Open MPI returns one shared, already complete request
 *   (ompi_request_empty) for every Isend that completed inline;
 * - the completion hook runs after the PMPI call freed the handle, and in an
 *   MPI_THREAD_MULTIPLE program another thread may get the same handle for
 *   a new request and record it before the first thread's hook ran.
 * A completion takes the oldest entry of its handle (MPI can only have
 * handed the handle out again after the older request completed); Start,
 * Cancel and Request_free, called with a live handle before the PMPI call,
 * take the newest.
 *
 * Blocking Send/Recv and collectives do not touch the table. */
#define _GNU_SOURCE
#include "mpi_request.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_adapter.h"
#include "mpi_comm.h"
#include "mpi_hooks.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(uint64_t), "MPI_Request handles up to 64 bits");

enum { SM_REQ_SEND = 1, SM_REQ_RECV = 2, SM_REQ_COLL = 3 };

typedef struct sm_mpi_req {
    uint64_t id;                /* sysmeasure's request id of the current activation */
    const sm_mpi_comm_t *comm;  /* receives: referenced, for the source's ranks */
    uint64_t bytes;             /* send: bytes; collective: sent */
    uint64_t received;          /* collective */
    sm_comm_id_t comm_id;
    uint32_t peer;              /* send: peer as the events give it; collective: root */
    uint32_t tag;
    uint32_t peer_process;
    uint8_t kind;
    uint8_t persistent;
    uint8_t active;
    uint8_t cancel_requested;
    uint8_t op;                 /* sm_coll_op_t */
} sm_mpi_req_t;

typedef struct sm_req_node {
    sm_mpi_req_t r;
    struct sm_req_node *prev, *next;
} sm_req_node_t;

typedef struct sm_req_slot {
    uint64_t key;         /* 0: empty */
    sm_req_node_t *head;  /* oldest */
    sm_req_node_t *tail;  /* newest */
} sm_req_slot_t;

#define SM_REQ_SHARD_BITS 6
#define SM_REQ_SHARDS (1u << SM_REQ_SHARD_BITS)
#define SM_REQ_INITIAL_SLOTS 16
#define SM_REQ_NODE_BLOCK 32

typedef struct sm_req_shard {
    int lock;
    uint32_t mask; /* capacity - 1; 0 with slots NULL */
    uint32_t count;
    sm_req_slot_t *slots;
    sm_req_node_t *free_nodes;
} __attribute__((aligned(64))) sm_req_shard_t;

static sm_req_shard_t sm_req_shards[SM_REQ_SHARDS];
static uint64_t sm_req_freed_recvs;

/* ---------------------------------------------------------------- ids */

/* Process-wide unique: each thread takes blocks of 1024 from the counter. */
static uint64_t sm_req_next_block = 1;
static SM_TLS uint64_t sm_req_tls_next, sm_req_tls_end;

static inline uint64_t sm_req_new_id(void)
{
    if (SM_UNLIKELY(sm_req_tls_next == sm_req_tls_end)) {
        sm_req_tls_next = __atomic_fetch_add(&sm_req_next_block, 1024, __ATOMIC_RELAXED);
        sm_req_tls_end = sm_req_tls_next + 1024;
    }
    return sm_req_tls_next++;
}

/* ---------------------------------------------------------------- the table */

static inline uint64_t sm_req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r);
    return k;
}

static inline uint64_t sm_req_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static inline sm_req_shard_t *sm_req_shard(uint64_t h)
{
    return &sm_req_shards[h >> (64 - SM_REQ_SHARD_BITS)];
}

static inline void sm_spin_lock(int *lock)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
            if (++spins >= 256) {
                spins = 0;
                sched_yield();
            } else {
                sm_mpi_cpu_relax();
            }
        }
    }
}

static inline void sm_spin_unlock(int *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

static inline void sm_req_lock(sm_req_shard_t *s)
{
    sm_spin_lock(&s->lock);
}

static inline void sm_req_unlock(sm_req_shard_t *s)
{
    sm_spin_unlock(&s->lock);
}

/* Under the lock from here on. */

static inline sm_req_slot_t *sm_req_find(sm_req_shard_t *s, uint64_t k, uint64_t h)
{
    if (!s->slots)
        return NULL;
    for (uint32_t i = (uint32_t)h & s->mask;; i = (i + 1) & s->mask) {
        if (s->slots[i].key == k)
            return &s->slots[i];
        if (s->slots[i].key == 0)
            return NULL;
    }
}

static void sm_req_delete_slot(sm_req_shard_t *s, sm_req_slot_t *slot)
{
    uint32_t hole = (uint32_t)(slot - s->slots);
    for (uint32_t j = (hole + 1) & s->mask; s->slots[j].key != 0; j = (j + 1) & s->mask) {
        uint32_t home = (uint32_t)sm_req_hash(s->slots[j].key) & s->mask;
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        s->slots[hole] = s->slots[j];
        hole = j;
    }
    s->slots[hole].key = 0;
    s->slots[hole].head = s->slots[hole].tail = NULL;
    s->count--;
}

static int sm_req_grow(sm_req_shard_t *s)
{
    uint32_t cap = s->slots ? (s->mask + 1) * 2 : SM_REQ_INITIAL_SLOTS;
    sm_req_slot_t *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    if (s->slots) {
        for (uint32_t i = 0; i <= s->mask; i++) {
            if (!s->slots[i].key)
                continue;
            uint32_t j = (uint32_t)sm_req_hash(s->slots[i].key) & (cap - 1);
            while (n[j].key)
                j = (j + 1) & (cap - 1);
            n[j] = s->slots[i];
        }
        free(s->slots);
    }
    s->slots = n;
    s->mask = cap - 1;
    return 0;
}

static sm_req_node_t *sm_req_node_new(sm_req_shard_t *s)
{
    if (SM_UNLIKELY(!s->free_nodes)) {
        sm_req_node_t *b = malloc(sizeof *b * SM_REQ_NODE_BLOCK); /* pooled, never freed */
        if (!b)
            return NULL;
        for (int i = 0; i < SM_REQ_NODE_BLOCK; i++) {
            b[i].next = s->free_nodes;
            s->free_nodes = &b[i];
        }
    }
    sm_req_node_t *n = s->free_nodes;
    s->free_nodes = n->next;
    return n;
}

/* Unlinks node from slot (and the slot from the index when it empties). */
static void sm_req_unlink(sm_req_shard_t *s, sm_req_slot_t *slot, sm_req_node_t *node)
{
    if (node->prev)
        node->prev->next = node->next;
    else
        slot->head = node->next;
    if (node->next)
        node->next->prev = node->prev;
    else
        slot->tail = node->prev;
    node->next = s->free_nodes;
    s->free_nodes = node;
    if (!slot->head)
        sm_req_delete_slot(s, slot);
}

static void sm_req_put(MPI_Request request, const sm_mpi_req_t *r)
{
    uint64_t k = sm_req_key(request), h = sm_req_hash(k);
    sm_req_shard_t *s = sm_req_shard(h);
    sm_req_lock(s);
    sm_req_slot_t *slot = sm_req_find(s, k, h);
    sm_req_node_t *node = sm_req_node_new(s);
    if (!node)
        goto fail;
    if (!slot) {
        if ((!s->slots || (s->count + 1) * 2 > s->mask + 1) && sm_req_grow(s) != 0) {
            node->next = s->free_nodes;
            s->free_nodes = node;
            goto fail;
        }
        uint32_t i = (uint32_t)h & s->mask;
        while (s->slots[i].key)
            i = (i + 1) & s->mask;
        slot = &s->slots[i];
        slot->key = k;
        slot->head = slot->tail = NULL;
        s->count++;
    }
    node->r = *r;
    node->next = NULL;
    node->prev = slot->tail;
    if (slot->tail)
        slot->tail->next = node;
    else
        slot->head = node;
    slot->tail = node;
    sm_req_unlock(s);
    return;
fail:
    sm_req_unlock(s);
    sm_mpi_comm_unref(r->comm); /* not tracked: its completion is ignored */
}

/* ---------------------------------------------------------------- bytes */

/* Sizes of the predefined datatypes, filled at MPI_Init (they are never
 * freed, so a handle found here is that type): one probe instead of
 * PMPI_Type_size on most calls.  Open addressing, MPI_DATATYPE_NULL empty. */
#define SM_TYPE_SLOTS 128
typedef struct sm_type_slot {
    MPI_Datatype type;
    int size;
} sm_type_slot_t;
static sm_type_slot_t sm_type_cache[SM_TYPE_SLOTS];

static inline uint32_t sm_type_hash(MPI_Datatype t)
{
    uint64_t k = 0;
    memcpy(&k, &t, sizeof t < sizeof k ? sizeof t : sizeof k);
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 57); /* 7 bits: SM_TYPE_SLOTS */
}

void sm_mpi_types_init(void)
{
    const MPI_Datatype types[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT,
        MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_INT8_T,
        MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_PACKED, MPI_AINT,
        MPI_OFFSET, MPI_COUNT, MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
        MPI_SHORT_INT, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX,
        MPI_DOUBLE_COMPLEX, MPI_LOGICAL, MPI_CHARACTER,
    };
    for (size_t i = 0; i < SM_TYPE_SLOTS; i++)
        sm_type_cache[i].type = MPI_DATATYPE_NULL;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        int size = 0;
        if (types[i] == MPI_DATATYPE_NULL || PMPI_Type_size(types[i], &size) != MPI_SUCCESS ||
            size <= 0)
            continue; /* e.g. Fortran types of an MPI built without Fortran */
        uint32_t j = sm_type_hash(types[i]);
        for (uint32_t n = 0; n < SM_TYPE_SLOTS; n++, j = (j + 1) % SM_TYPE_SLOTS) {
            if (sm_type_cache[j].type == types[i])
                break;
            if (sm_type_cache[j].type == MPI_DATATYPE_NULL) {
                sm_type_cache[j].type = types[i];
                sm_type_cache[j].size = size;
                break;
            }
        }
    }
}

uint64_t sm_mpi_type_bytes(int count, MPI_Datatype type)
{
    if (count <= 0 || type == MPI_DATATYPE_NULL)
        return 0;
    if (SM_LIKELY(SM_MPI_ON())) { /* the cache is filled */
        for (uint32_t j = sm_type_hash(type);; j = (j + 1) % SM_TYPE_SLOTS) {
            if (sm_type_cache[j].type == type)
                return (uint64_t)count * (uint64_t)sm_type_cache[j].size;
            if (sm_type_cache[j].type == MPI_DATATYPE_NULL)
                break;
        }
    }
    int size = 0;
    if (SM_UNLIKELY(PMPI_Type_size(type, &size) != MPI_SUCCESS || size == MPI_UNDEFINED)) {
        MPI_Count big = 0;
        if (PMPI_Type_size_x(type, &big) != MPI_SUCCESS || big <= 0)
            return 0;
        return (uint64_t)count * (uint64_t)big;
    }
    return size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

uint64_t sm_mpi_status_bytes(const MPI_Status *status, MPI_Datatype type)
{
    if (!status)
        return 0;
#if defined(OPEN_MPI) && OPEN_MPI
    /* Open MPI's status holds the bytes received: what the calls below
     * give (whole elements times their size, or else the bytes), without
     * a call into MPI on every receive. */
    (void)type;
    return (uint64_t)status->_ucount;
#else
    int n = 0;
    if (type != MPI_DATATYPE_NULL && PMPI_Get_count(status, type, &n) == MPI_SUCCESS &&
        n != MPI_UNDEFINED)
        return sm_mpi_type_bytes(n, type);
    /* Not a whole number of elements, more than INT_MAX of them, or the type
     * is no longer known (a request's): the bytes, counted as MPI_BYTEs. */
    MPI_Count c = 0;
    if (PMPI_Get_elements_x(status, MPI_BYTE, &c) == MPI_SUCCESS && c != MPI_UNDEFINED && c > 0)
        return (uint64_t)c;
    return 0;
#endif
}

/* ---------------------------------------------------------------- point-to-point */

void sm_mpi_hook_send(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    if (SM_UNLIKELY(!SM_MPI_ON()) || dest == MPI_PROC_NULL)
        return;
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    sm_mpi_api->msg_send(sm_mpi_comm_id(c), sm_mpi_comm_peer_rank(c, dest), (uint32_t)tag,
                         sm_mpi_type_bytes(count, type), sm_mpi_comm_peer_world(c, dest));
}

void sm_mpi_hook_recv(MPI_Datatype type, MPI_Comm comm, const MPI_Status *status, int rc)
{
    if (SM_UNLIKELY(!SM_MPI_ON()) || rc != MPI_SUCCESS || !status ||
        status->MPI_SOURCE == MPI_PROC_NULL)
        return;
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    int src = status->MPI_SOURCE;
    sm_mpi_api->msg_recv(sm_mpi_comm_id(c), sm_mpi_comm_peer_rank(c, src),
                         (uint32_t)status->MPI_TAG, sm_mpi_status_bytes(status, type),
                         sm_mpi_comm_peer_world(c, src));
}

/* Whether a request just made is one to track: the call succeeded, it
 * talks to a process, and measurement is on. */
static inline bool sm_req_tracked(int rc, int peer, MPI_Request request)
{
    return SM_MPI_ON() && rc == MPI_SUCCESS && peer != MPI_PROC_NULL &&
           request != MPI_REQUEST_NULL;
}

/* A send request as the table keeps it (nonblocking or persistent). */
static sm_mpi_req_t sm_req_send(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    sm_mpi_req_t r = {
        .comm_id = sm_mpi_comm_id(c),
        .peer = sm_mpi_comm_peer_rank(c, dest),
        .tag = (uint32_t)tag,
        .bytes = sm_mpi_type_bytes(count, type),
        .peer_process = sm_mpi_comm_peer_world(c, dest),
        .kind = SM_REQ_SEND,
    };
    return r;
}

/* A receive request: source, tag and bytes come from the status at
 * completion; the communicator is held until then (it may be freed
 * before). */
static sm_mpi_req_t sm_req_recv(MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    sm_mpi_comm_ref(c);
    sm_mpi_req_t r = {
        .comm = c,
        .comm_id = sm_mpi_comm_id(c),
        .kind = SM_REQ_RECV,
    };
    return r;
}

void sm_mpi_hook_isend(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                       MPI_Request request, int rc)
{
    if (!sm_req_tracked(rc, dest, request))
        return;
    sm_mpi_req_t r = sm_req_send(count, type, dest, tag, comm);
    r.id = sm_req_new_id();
    r.active = 1;
    sm_mpi_api->msg_isend(r.comm_id, r.peer, r.tag, r.bytes, r.peer_process, r.id);
    sm_req_put(request, &r);
}

void sm_mpi_hook_irecv(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Request request, int rc)
{
    (void)count;
    (void)type;
    (void)tag;
    if (!sm_req_tracked(rc, source, request))
        return;
    sm_mpi_req_t r = sm_req_recv(comm);
    r.id = sm_req_new_id();
    r.active = 1;
    sm_mpi_api->msg_irecv_request(r.id);
    sm_req_put(request, &r);
}

void sm_mpi_hook_send_init(int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                           MPI_Request request, int rc)
{
    if (!sm_req_tracked(rc, dest, request))
        return;
    sm_mpi_req_t r = sm_req_send(count, type, dest, tag, comm);
    r.persistent = 1;
    sm_req_put(request, &r);
}

void sm_mpi_hook_recv_init(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                           MPI_Request request, int rc)
{
    (void)count;
    (void)type;
    (void)tag;
    if (!sm_req_tracked(rc, source, request))
        return;
    sm_mpi_req_t r = sm_req_recv(comm);
    r.persistent = 1;
    sm_req_put(request, &r);
}

void sm_mpi_hook_start(MPI_Request request)
{
    if (!SM_MPI_ON() || request == MPI_REQUEST_NULL)
        return;
    uint64_t k = sm_req_key(request), h = sm_req_hash(k);
    sm_req_shard_t *s = sm_req_shard(h);
    sm_mpi_req_t r = {0};
    int found = 0;
    sm_req_lock(s);
    sm_req_slot_t *slot = sm_req_find(s, k, h);
    if (slot && slot->tail->r.persistent) {
        sm_mpi_req_t *e = &slot->tail->r;
        e->active = 1;
        e->cancel_requested = 0;
        e->id = sm_req_new_id();
        r = *e;
        found = 1;
    }
    sm_req_unlock(s);
    if (!found)
        return;
    if (r.kind == SM_REQ_SEND)
        sm_mpi_api->msg_isend(r.comm_id, r.peer, r.tag, r.bytes, r.peer_process, r.id);
    else if (r.kind == SM_REQ_RECV)
        sm_mpi_api->msg_irecv_request(r.id);
}

void sm_mpi_hook_completed(MPI_Request request_before, const MPI_Status *status)
{
    if (!SM_MPI_ON() || request_before == MPI_REQUEST_NULL)
        return;
    uint64_t k = sm_req_key(request_before), h = sm_req_hash(k);
    sm_req_shard_t *s = sm_req_shard(h);
    sm_mpi_req_t r = {0};
    int found = 0;
    sm_req_lock(s);
    sm_req_slot_t *slot = sm_req_find(s, k, h);
    if (slot) {
        sm_req_node_t *oldest = slot->head;
        r = oldest->r;
        found = 1;
        if (r.persistent) {
            oldest->r.active = 0;
            oldest->r.cancel_requested = 0;
        } else {
            sm_req_unlink(s, slot, oldest);
        }
    }
    sm_req_unlock(s);
    if (!found)
        return;
    if (r.active) {
        int cancelled = 0;
        if (r.cancel_requested && status && PMPI_Test_cancelled(status, &cancelled) != MPI_SUCCESS)
            cancelled = 0;
        const sm_adapter_api_t *api = sm_mpi_api;
        if (cancelled) {
            api->request_cancelled(r.id);
        } else if (r.kind == SM_REQ_SEND) {
            api->msg_isend_complete(r.id);
        } else if (r.kind == SM_REQ_RECV) {
            if (status && status->MPI_SOURCE != MPI_PROC_NULL && status->MPI_SOURCE >= 0) {
                int src = status->MPI_SOURCE;
                api->msg_irecv(r.comm_id, sm_mpi_comm_peer_rank(r.comm, src),
                               (uint32_t)status->MPI_TAG,
                               sm_mpi_status_bytes(status, MPI_DATATYPE_NULL),
                               sm_mpi_comm_peer_world(r.comm, src), r.id);
            }
        } else if (r.kind == SM_REQ_COLL) {
            api->icoll_complete((sm_coll_op_t)r.op, r.comm_id, r.peer, r.bytes, r.received, r.id);
        }
    }
    if (!r.persistent)
        sm_mpi_comm_unref(r.comm);
}

void sm_mpi_hook_cancel(MPI_Request request)
{
    if (!SM_MPI_ON() || request == MPI_REQUEST_NULL)
        return;
    uint64_t k = sm_req_key(request), h = sm_req_hash(k);
    sm_req_shard_t *s = sm_req_shard(h);
    sm_req_lock(s);
    sm_req_slot_t *slot = sm_req_find(s, k, h);
    if (slot && slot->tail->r.active)
        slot->tail->r.cancel_requested = 1;
    sm_req_unlock(s);
}

void sm_mpi_hook_request_free(MPI_Request request)
{
    if (!SM_MPI_ON() || request == MPI_REQUEST_NULL)
        return;
    uint64_t k = sm_req_key(request), h = sm_req_hash(k);
    sm_req_shard_t *s = sm_req_shard(h);
    sm_mpi_req_t r = {0};
    int found = 0;
    sm_req_lock(s);
    sm_req_slot_t *slot = sm_req_find(s, k, h);
    if (slot) {
        r = slot->tail->r;
        found = 1;
        sm_req_unlink(s, slot, slot->tail);
    }
    sm_req_unlock(s);
    if (!found)
        return;
    if (r.active) {
        /* A freed send still completes in MPI: close it now.  A freed
         * receive's message cannot be matched to a completion. */
        if (r.kind == SM_REQ_SEND)
            sm_mpi_api->msg_isend_complete(r.id);
        else if (r.kind == SM_REQ_RECV)
            __atomic_fetch_add(&sm_req_freed_recvs, 1, __ATOMIC_RELAXED);
    }
    sm_mpi_comm_unref(r.comm);
}

/* ---------------------------------------------------------------- matched probes */

/* MPI_Message -> the communicator it was probed on, from Mprobe/Improbe to
 * the Mrecv/Imrecv that takes it (and forgets it, before MPI frees the
 * handle).  Rare: one table under one spinlock. */
typedef struct sm_msg_slot {
    uint64_t key; /* 0: empty */
    MPI_Comm comm;
} sm_msg_slot_t;

static struct {
    int lock;
    uint32_t mask, count;
    sm_msg_slot_t *slots;
} sm_msgs;

_Static_assert(sizeof(MPI_Message) <= sizeof(uint64_t), "MPI_Message handles up to 64 bits");

static inline uint64_t sm_msg_key(MPI_Message m)
{
    uint64_t k = 0;
    memcpy(&k, &m, sizeof m);
    return k;
}

void sm_mpi_hook_message_matched(MPI_Message message, MPI_Comm comm)
{
    uint64_t k = sm_msg_key(message), h = sm_req_hash(k);
    if (!SM_MPI_ON() || k == 0 || message == MPI_MESSAGE_NULL)
        return;
    sm_spin_lock(&sm_msgs.lock);
    if (!sm_msgs.slots || (sm_msgs.count + 1) * 2 > sm_msgs.mask + 1) {
        uint32_t cap = sm_msgs.slots ? (sm_msgs.mask + 1) * 2 : 16;
        sm_msg_slot_t *n = calloc(cap, sizeof *n);
        if (!n)
            goto out;
        for (uint32_t i = 0; sm_msgs.slots && i <= sm_msgs.mask; i++) {
            if (!sm_msgs.slots[i].key)
                continue;
            uint32_t j = (uint32_t)sm_req_hash(sm_msgs.slots[i].key) & (cap - 1);
            while (n[j].key)
                j = (j + 1) & (cap - 1);
            n[j] = sm_msgs.slots[i];
        }
        free(sm_msgs.slots);
        sm_msgs.slots = n;
        sm_msgs.mask = cap - 1;
    }
    uint32_t i = (uint32_t)h & sm_msgs.mask;
    while (sm_msgs.slots[i].key && sm_msgs.slots[i].key != k)
        i = (i + 1) & sm_msgs.mask;
    if (!sm_msgs.slots[i].key)
        sm_msgs.count++;
    sm_msgs.slots[i].key = k;
    sm_msgs.slots[i].comm = comm;
out:
    sm_spin_unlock(&sm_msgs.lock);
}

MPI_Comm sm_mpi_message_comm(MPI_Message message)
{
    uint64_t k = sm_msg_key(message), h = sm_req_hash(k);
    MPI_Comm comm = MPI_COMM_NULL;
    if (!SM_MPI_ON() || k == 0 || message == MPI_MESSAGE_NULL)
        return comm;
    sm_spin_lock(&sm_msgs.lock);
    if (sm_msgs.slots) {
        uint32_t i = (uint32_t)h & sm_msgs.mask;
        while (sm_msgs.slots[i].key && sm_msgs.slots[i].key != k)
            i = (i + 1) & sm_msgs.mask;
        if (sm_msgs.slots[i].key == k) {
            comm = sm_msgs.slots[i].comm;
            /* backward-shift deletion */
            uint32_t hole = i;
            for (uint32_t j = (hole + 1) & sm_msgs.mask; sm_msgs.slots[j].key;
                 j = (j + 1) & sm_msgs.mask) {
                uint32_t home = (uint32_t)sm_req_hash(sm_msgs.slots[j].key) & sm_msgs.mask;
                int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (stays)
                    continue;
                sm_msgs.slots[hole] = sm_msgs.slots[j];
                hole = j;
            }
            sm_msgs.slots[hole].key = 0;
            sm_msgs.count--;
        }
    }
    sm_spin_unlock(&sm_msgs.lock);
    return comm;
}

uint64_t sm_mpi_request_freed_recvs(void)
{
    return __atomic_load_n(&sm_req_freed_recvs, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- collectives */

void sm_mpi_hook_coll_begin(void)
{
    if (SM_LIKELY(SM_MPI_ON()))
        sm_mpi_api->coll_begin();
}

void sm_mpi_hook_coll_end(sm_coll_op_t op, MPI_Comm comm, int root, uint64_t sent,
                          uint64_t received, int rc)
{
    (void)rc; /* ended also on failure: every begin has its end */
    if (SM_UNLIKELY(!SM_MPI_ON()))
        return;
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    sm_mpi_api->coll_end(op, sm_mpi_comm_id(c), sm_mpi_comm_root(c, root), sent, received);
}

void sm_mpi_hook_icoll(sm_coll_op_t op, MPI_Comm comm, int root, uint64_t sent,
                       uint64_t received, MPI_Request request, int rc)
{
    if (!SM_MPI_ON() || rc != MPI_SUCCESS || request == MPI_REQUEST_NULL)
        return;
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    sm_mpi_req_t r = {
        .id = sm_req_new_id(),
        .comm_id = sm_mpi_comm_id(c),
        .peer = sm_mpi_comm_root(c, root),
        .bytes = sent,
        .received = received,
        .kind = SM_REQ_COLL,
        .active = 1,
        .op = (uint8_t)op,
    };
    sm_mpi_api->icoll_request(r.id);
    sm_req_put(request, &r);
}

/* ---------------------------------------------------------------- I/O, one-sided */

void sm_mpi_hook_transfer(sm_transfer_kind_t kind, int count, MPI_Datatype type, int rc)
{
    if (!SM_MPI_ON() || rc != MPI_SUCCESS)
        return;
    sm_mpi_api->transfer(kind, sm_mpi_type_bytes(count, type));
}
