/* libsysmeasure-nccl.so: NCCL (and RCCL) calls as regions on the calling
 * thread.  The launcher preloads it into every program, so that a program
 * whose libnccl.so.2 (or librccl.so.1) comes in later as a dependency of
 * another library (PyTorch's libtorch_cuda.so, loaded by Python) finds
 * these definitions first; each passes on to the real function.  A program
 * that never calls NCCL never enters this library, and it has no
 * constructor: it costs the program the loading of a small library.
 *
 * Each call is a region (paradigm nccl or rccl) entered with attributes:
 * the communicator's identity ("nccl comm", the same in every process of
 * the communicator: nccl_convert.h), this process's rank in it and its size,
 * the bytes (count x size of the type), the data type, the reduction, the
 * root or the peer, the stream, and the group it was issued in ("nccl
 * group": ncclGroupStart to ncclGroupEnd on this thread).  Collectives also
 * get OTF2's collective records (MpiCollectiveBegin/End: the only records
 * that carry a collective's operation, communicator, root and bytes) and
 * send/receive message records, on a communicator defined per NCCL
 * communicator (its members the processes, by NCCL rank; see
 * core/definitions.h, hashed communicators).  The kernels NCCL launches
 * inside the call (or inside ncclGroupEnd for the calls of a group) have
 * their launch on the CUDA backend's call path below this region, so the
 * correlation id links each kernel to it.
 *
 * Calls NCCL makes to its own API (ncclBcast calls ncclBroadcast through
 * the PLT) are passed on unrecorded: one region per call of the program. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/adapter_api.h"
#include "core/compiler.h"
#include "util/log.h"
#include "nccl_api.h"
#include "nccl_comms.h"
#include "nccl_convert.h"

SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

/* ---------------------------------------------------------------- the real library */

static void *sm_nccl_real[SM_NCCL_FN_COUNT]; /* atomic; NULL until found */
static sm_nccl_comm_int_fn sm_nccl_user_rank, sm_nccl_count; /* atomic */
static int sm_nccl_amd; /* the real library is RCCL (atomic) */

static int sm_nccl_ours(const void *p)
{
    Dl_info a, b;
    return dladdr(p, &a) && dladdr((const void *)&sm_nccl_ours, &b) &&
           a.dli_fbase == b.dli_fbase;
}

/* NCCL's and RCCL's libraries among the loaded objects (a library loaded
 * with RTLD_LOCAL, as Python loads extensions, is not in RTLD_NEXT's
 * scope). */
#define SM_NCCL_CANDIDATES 4
typedef struct sm_nccl_found {
    char path[SM_NCCL_CANDIDATES][512];
    int n;
} sm_nccl_found_t;

static int sm_nccl_list_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    sm_nccl_found_t *f = data;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && (!strncmp(base, "libnccl", 7) || !strncmp(base, "librccl", 7)) &&
        f->n < SM_NCCL_CANDIDATES && strlen(name) < sizeof f->path[0])
        strcpy(f->path[f->n++], name);
    return 0;
}

static void *sm_nccl_lookup(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p && !sm_nccl_ours(p))
        return p;
    sm_nccl_found_t f;
    f.n = 0;
    dl_iterate_phdr(sm_nccl_list_cb, &f); /* dlopen only after it: it holds a loader lock */
    for (int i = 0; i < f.n; i++) {
        void *h = dlopen(f.path[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        p = dlsym(h, name);
        dlclose(h);
        if (p && !sm_nccl_ours(p))
            return p;
    }
    return NULL;
}

/* The real function fn, found at its first call (the library is loaded by
 * then) and kept; NULL when none is loaded. */
static void *sm_nccl_resolve(sm_nccl_fn_t fn)
{
    void *p = __atomic_load_n(&sm_nccl_real[fn], __ATOMIC_ACQUIRE);
    if (SM_LIKELY(p != NULL))
        return p;
    int saved_errno = errno;
    p = sm_nccl_lookup(sm_nccl_functions[fn].name);
    if (p) {
        Dl_info info;
        if (dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "rccl"))
            __atomic_store_n(&sm_nccl_amd, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&sm_nccl_real[fn], p, __ATOMIC_RELEASE);
    }
    errno = saved_errno;
    return p;
}

/* ncclCommUserRank and ncclCommCount (not answered here): a split's place. */
static int sm_nccl_query(sm_nccl_comm_t comm, int *rank, int *nranks)
{
    sm_nccl_comm_int_fn r = __atomic_load_n(&sm_nccl_user_rank, __ATOMIC_ACQUIRE);
    sm_nccl_comm_int_fn n = __atomic_load_n(&sm_nccl_count, __ATOMIC_ACQUIRE);
    if (!r || !n) {
        void *pr = sm_nccl_lookup("ncclCommUserRank"), *pn = sm_nccl_lookup("ncclCommCount");
        memcpy(&r, &pr, sizeof r);
        memcpy(&n, &pn, sizeof n);
        if (!r || !n)
            return -1;
        __atomic_store_n(&sm_nccl_user_rank, r, __ATOMIC_RELEASE);
        __atomic_store_n(&sm_nccl_count, n, __ATOMIC_RELEASE);
    }
    return r(comm, rank) == SM_NCCL_SUCCESS && n(comm, nranks) == SM_NCCL_SUCCESS ? 0 : -1;
}

/* ---------------------------------------------------------------- the core */

enum {
    SM_NCCL_A_COMM,
    SM_NCCL_A_RANK,
    SM_NCCL_A_RANKS,
    SM_NCCL_A_BYTES,
    SM_NCCL_A_TYPE,
    SM_NCCL_A_OP,
    SM_NCCL_A_ROOT,
    SM_NCCL_A_PEER,
    SM_NCCL_A_STREAM,
    SM_NCCL_A_GROUP,
    SM_NCCL_A_COLOR,
    SM_NCCL_A_NEW_COMM,
    SM_NCCL_A_RESULT,
    SM_NCCL_A_COUNT
};

static const struct {
    const char *name;
    sm_attr_type_t type;
} sm_nccl_attr_defs[SM_NCCL_A_COUNT] = {
    [SM_NCCL_A_COMM] = {"nccl comm", SM_ATTR_INT64},
    [SM_NCCL_A_RANK] = {"nccl rank", SM_ATTR_INT64},
    [SM_NCCL_A_RANKS] = {"nccl ranks", SM_ATTR_INT64},
    [SM_NCCL_A_BYTES] = {"nccl bytes", SM_ATTR_INT64},
    [SM_NCCL_A_TYPE] = {"nccl datatype", SM_ATTR_STRING},
    [SM_NCCL_A_OP] = {"nccl op", SM_ATTR_STRING},
    [SM_NCCL_A_ROOT] = {"nccl root", SM_ATTR_INT64},
    [SM_NCCL_A_PEER] = {"nccl peer", SM_ATTR_INT64},
    [SM_NCCL_A_STREAM] = {"nccl stream", SM_ATTR_INT64},
    [SM_NCCL_A_GROUP] = {"nccl group", SM_ATTR_INT64},
    [SM_NCCL_A_COLOR] = {"nccl color", SM_ATTR_INT64},
    [SM_NCCL_A_NEW_COMM] = {"nccl new comm", SM_ATTR_INT64}, /* a split's child, on the leave */
    [SM_NCCL_A_RESULT] = {"nccl result", SM_ATTR_INT64},
};

static const sm_adapter_api_t *sm_nccl_api_table; /* NULL: no core, or one too old */
static sm_attribute_id_t sm_nccl_attr_ids[SM_NCCL_A_COUNT];
static uint32_t sm_nccl_type_str[SM_NCCL_TYPE_COUNT + 1]; /* the last: "unknown" */
static uint32_t sm_nccl_op_str[SM_NCCL_OP_COUNT + 2];     /* then "premulsum", "unknown" */
static sm_region_id_t sm_nccl_region_ids[SM_NCCL_FN_COUNT]; /* atomic; 0: not yet */
static pthread_once_t sm_nccl_once = PTHREAD_ONCE_INIT;
static int sm_nccl_defined; /* attributes and strings defined (atomic) */

static void sm_nccl_init(void)
{
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    /* The core measures this process when the launcher (or
     * SYSMEASURE_ENABLE) asked for it; we never start it. */
    if (api && SM_ADAPTER_API_HAS(api, string_define))
        sm_nccl_api_table = api;
}

/* Attributes and the strings of types and operations, once the core is up
 * (never on a call's path afterwards). */
static void sm_nccl_define_names(const sm_adapter_api_t *api)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (!__atomic_load_n(&sm_nccl_defined, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < SM_NCCL_A_COUNT; i++)
            sm_nccl_attr_ids[i] = api->attribute_define(sm_nccl_attr_defs[i].name,
                                                    sm_nccl_attr_defs[i].type);
        for (int t = 0; t <= SM_NCCL_TYPE_COUNT; t++)
            sm_nccl_type_str[t] = api->string_define(sm_nccl_type_name(t));
        for (int o = 0; o < SM_NCCL_OP_COUNT + 2; o++)
            sm_nccl_op_str[o] = api->string_define(sm_nccl_op_name(o <= SM_NCCL_OP_COUNT ? o : -1));
        __atomic_store_n(&sm_nccl_defined, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
}

static inline const sm_adapter_api_t *sm_nccl_core(void)
{
    pthread_once(&sm_nccl_once, sm_nccl_init);
    const sm_adapter_api_t *api = sm_nccl_api_table;
    if (!api || !api->runtime_active())
        return NULL;
    if (SM_UNLIKELY(!__atomic_load_n(&sm_nccl_defined, __ATOMIC_ACQUIRE)))
        sm_nccl_define_names(api);
    return api;
}

static sm_region_id_t sm_nccl_region(const sm_adapter_api_t *api, sm_nccl_fn_t fn)
{
    sm_region_id_t r = __atomic_load_n(&sm_nccl_region_ids[fn], __ATOMIC_ACQUIRE);
    if (SM_LIKELY(r != 0))
        return r - 1;
    static const sm_region_role_t roles[] = {[SM_NCCL_KIND_COLLECTIVE] = SM_ROLE_COLLECTIVE,
                                             [SM_NCCL_KIND_P2P] = SM_ROLE_POINT2POINT,
                                             [SM_NCCL_KIND_GROUP] = SM_ROLE_FUNCTION,
                                             [SM_NCCL_KIND_COMM] = SM_ROLE_FUNCTION};
    int amd = __atomic_load_n(&sm_nccl_amd, __ATOMIC_ACQUIRE);
    r = api->region_define(sm_nccl_functions[fn].name, NULL, 0,
                           amd ? SM_PARADIGM_RCCL : SM_PARADIGM_NCCL,
                           roles[sm_nccl_functions[fn].kind]);
    /* Same name, same id: a race defines it twice harmlessly. */
    __atomic_store_n(&sm_nccl_region_ids[fn], r + 1, __ATOMIC_RELEASE);
    return r;
}

/* ---------------------------------------------------------------- communicators */

static int sm_nccl_full_said;

/* The core's communicator for c, defined once its place is known: its
 * members are world ranks by NCCL rank, this process's own place known
 * here, the others filled in by the other processes' definitions. */
static void sm_nccl_define_comm(const sm_adapter_api_t *api, sm_nccl_entry_t *c)
{
    int rank = __atomic_load_n(&c->rank, __ATOMIC_ACQUIRE);
    int nranks = __atomic_load_n(&c->nranks, __ATOMIC_ACQUIRE);
    if (rank < 0 || nranks <= 0 || rank >= nranks)
        return;
    uint32_t *members = malloc(sizeof *members * (size_t)nranks);
    if (!members)
        return;
    for (int i = 0; i < nranks; i++)
        members[i] = SM_COMM_MEMBER_UNKNOWN;
    members[rank] = SM_COMM_MEMBER_SELF;
    char name[64];
    sm_nccl_comm_name(c->id, c->amd, name, sizeof name);
    uint32_t core = api->comm_define(sm_comm_key_hashed(c->id, c->amd), name, (uint32_t)nranks,
                                     members, c->parent);
    free(members);
    __atomic_store_n(&c->core, core, __ATOMIC_RELEASE);
}

/* A communicator was made: entered, and defined where its place is known. */
static void sm_nccl_made(const sm_adapter_api_t *api, sm_nccl_comm_t handle, uint64_t id, int rank,
                         int nranks, uint32_t parent)
{
    if (!handle)
        return;
    sm_nccl_entry_t *c = sm_nccl_comm_add(handle, id, rank, nranks, parent,
                                         __atomic_load_n(&sm_nccl_amd, __ATOMIC_ACQUIRE));
    if (!c) {
        if (!__atomic_exchange_n(&sm_nccl_full_said, 1, __ATOMIC_RELAXED)) {
            sm_warning("more than %d NCCL communicators: the calls on later ones are recorded "
                       "without their communicator", SM_NCCL_COMMS);
            api->note("NCCL: more communicators than sysmeasure follows; later ones unnamed");
        }
        return;
    }
    sm_nccl_define_comm(api, c);
}

/* What a call says about its communicator. */
typedef struct sm_nccl_where {
    sm_nccl_entry_t *c; /* NULL: unknown */
    int rank, nranks;
    uint32_t core;
} sm_nccl_where_t;

static sm_nccl_where_t sm_nccl_where(const sm_adapter_api_t *api, sm_nccl_comm_t handle)
{
    sm_nccl_where_t w = {sm_nccl_comm_find(handle), -1, -1, SM_COMM_NONE};
    if (!w.c)
        return w;
    w.rank = __atomic_load_n(&w.c->rank, __ATOMIC_ACQUIRE);
    if (SM_UNLIKELY(w.rank < 0)) {
        /* A split that returned before it was done: its place, now. */
        int rank, nranks;
        if (sm_nccl_query(handle, &rank, &nranks) == 0 && rank >= 0 && rank < nranks) {
            __atomic_store_n(&w.c->nranks, nranks, __ATOMIC_RELEASE);
            __atomic_store_n(&w.c->rank, rank, __ATOMIC_RELEASE);
            w.rank = rank;
        }
    }
    w.nranks = __atomic_load_n(&w.c->nranks, __ATOMIC_ACQUIRE);
    w.core = __atomic_load_n(&w.c->core, __ATOMIC_ACQUIRE);
    if (SM_UNLIKELY(w.core == SM_COMM_NONE && w.rank >= 0)) {
        sm_nccl_define_comm(api, w.c);
        w.core = __atomic_load_n(&w.c->core, __ATOMIC_ACQUIRE);
    }
    return w;
}

/* ---------------------------------------------------------------- calls */

static SM_TLS int sm_nccl_depth;          /* calls of ours open on this thread */
static SM_TLS int sm_nccl_group_depth;    /* ncclGroupStart without its End yet */
static SM_TLS uint64_t sm_nccl_group_id;  /* the open group's number; 0: none */
static uint64_t sm_nccl_groups;           /* groups numbered so far (atomic) */

typedef struct sm_nccl_call {
    const sm_adapter_api_t *api; /* the core: the program's call, in a measured process */
    int record;                  /* its region is recorded on this thread */
    sm_nccl_fn_t fn;
    sm_region_id_t region;
    void *real;
    int saved_errno;
    sm_adapter_attr_t attrs[SM_NCCL_A_COUNT];
    uint32_t n;
    sm_adapter_attr_t leave_attrs[2];
    uint32_t n_leave;
} sm_nccl_call_t;

/* The start of every answered call: the real function, and whether and how
 * the call is measured.  A call made from inside another (NCCL calling its
 * own API) is only passed on. */
static void sm_nccl_start(sm_nccl_call_t *c, sm_nccl_fn_t fn)
{
    c->saved_errno = errno;
    c->fn = fn;
    c->api = NULL;
    c->record = 0;
    c->n = c->n_leave = 0;
    c->real = sm_nccl_resolve(fn);
    if (sm_nccl_depth++ > 0)
        return;
    c->api = sm_nccl_core();
    if (c->api && c->api->measuring()) {
        c->region = sm_nccl_region(c->api, fn);
        c->record = 1;
    }
}

static inline void sm_nccl_attr(sm_nccl_call_t *c, int which, uint64_t raw)
{
    if (c->record && sm_nccl_attr_ids[which] != SM_INVALID_ID)
        c->attrs[c->n++] = (sm_adapter_attr_t){sm_nccl_attr_ids[which], raw};
}

static void sm_nccl_attr_where(sm_nccl_call_t *c, const sm_nccl_where_t *w)
{
    if (!w->c)
        return;
    sm_nccl_attr(c, SM_NCCL_A_COMM, w->c->id);
    if (w->rank >= 0) {
        sm_nccl_attr(c, SM_NCCL_A_RANK, (uint64_t)w->rank);
        sm_nccl_attr(c, SM_NCCL_A_RANKS, (uint64_t)w->nranks);
    }
}

static void sm_nccl_attr_data(sm_nccl_call_t *c, uint64_t bytes, sm_nccl_datatype_t type)
{
    sm_nccl_attr(c, SM_NCCL_A_BYTES, bytes);
    int t = type >= 0 && type < SM_NCCL_TYPE_COUNT ? type : SM_NCCL_TYPE_COUNT;
    if (sm_nccl_type_str[t] != SM_INVALID_ID)
        sm_nccl_attr(c, SM_NCCL_A_TYPE, sm_nccl_type_str[t]);
}

static void sm_nccl_attr_op(sm_nccl_call_t *c, sm_nccl_redop_t op)
{
    int o = op < 0 ? SM_NCCL_OP_COUNT + 1 : op < SM_NCCL_OP_COUNT ? op : SM_NCCL_OP_COUNT;
    if (sm_nccl_op_str[o] != SM_INVALID_ID)
        sm_nccl_attr(c, SM_NCCL_A_OP, sm_nccl_op_str[o]);
}

/* The region's enter, with the attributes gathered (and the group). */
static void sm_nccl_enter(sm_nccl_call_t *c, sm_nccl_stream_t stream, int has_stream)
{
    if (!c->record)
        return;
    if (has_stream)
        sm_nccl_attr(c, SM_NCCL_A_STREAM, (uint64_t)(uintptr_t)stream);
    if (sm_nccl_group_id)
        sm_nccl_attr(c, SM_NCCL_A_GROUP, sm_nccl_group_id);
    c->api->enter_attrs(c->region, c->attrs, c->n);
    errno = c->saved_errno;
}

static int sm_nccl_missing_said;

/* No real function to call: ncclSystemError, one line for the process, the
 * program's errno as it was. */
static sm_nccl_result_t sm_nccl_missing(const sm_nccl_call_t *c)
{
    if (!__atomic_exchange_n(&sm_nccl_missing_said, 1, __ATOMIC_RELAXED))
        sm_warning("%s was called, but no NCCL or RCCL library that defines it is loaded: it "
                   "returns ncclSystemError", sm_nccl_functions[c->fn].name);
    errno = c->saved_errno;
    return SM_NCCL_SYSTEM_ERROR;
}

static void sm_nccl_leave_attr(sm_nccl_call_t *c, int which, uint64_t raw)
{
    if (c->record && sm_nccl_attr_ids[which] != SM_INVALID_ID && c->n_leave < 2)
        c->leave_attrs[c->n_leave++] = (sm_adapter_attr_t){sm_nccl_attr_ids[which], raw};
}

/* After the real call: the region's leave (with the result when it is not
 * ncclSuccess), the program's errno as the call left it. */
static sm_nccl_result_t sm_nccl_finish(sm_nccl_call_t *c, sm_nccl_result_t rc)
{
    int call_errno = errno;
    if (c->record) {
        if (rc != SM_NCCL_SUCCESS)
            sm_nccl_leave_attr(c, SM_NCCL_A_RESULT, (uint64_t)(int64_t)rc);
        if (c->n_leave)
            c->api->leave_attrs(c->region, c->leave_attrs, c->n_leave);
        else
            c->api->leave(c->region);
    }
    sm_nccl_depth--;
    errno = call_errno;
    return rc;
}

/* Collectives: the region with its attributes, OTF2's collective records
 * around the call when the communicator is known. */
typedef struct sm_nccl_coll_args {
    uint64_t bytes;          /* per block: the count the call names, in bytes */
    sm_nccl_datatype_t type;
    sm_nccl_redop_t op;      /* < 0: none */
    int root;                /* < 0: none */
    sm_nccl_comm_t comm;
    sm_nccl_stream_t stream;
    uint64_t sent, received; /* ncclAllToAllv: from its counts (set have_bytes) */
    int have_bytes;
} sm_nccl_coll_args_t;

static int sm_nccl_coll_records(const sm_nccl_call_t *c, const sm_nccl_where_t *w)
{
    return c->record && w->core != SM_COMM_NONE && !sm_region_filtered(c->region);
}

static void sm_nccl_coll_enter(sm_nccl_call_t *c, sm_nccl_coll_args_t *a, sm_nccl_where_t *w)
{
    if (!c->record)
        return;
    *w = sm_nccl_where(c->api, a->comm);
    sm_nccl_attr_where(c, w);
    sm_nccl_attr_data(c, a->bytes, a->type);
    if (a->op >= 0)
        sm_nccl_attr_op(c, a->op);
    if (a->root >= 0)
        sm_nccl_attr(c, SM_NCCL_A_ROOT, (uint64_t)a->root);
    if (!a->have_bytes)
        sm_nccl_coll_bytes(c->fn, a->bytes, a->root, w->rank, w->nranks, &a->sent,
                           &a->received);
    sm_nccl_enter(c, a->stream, 1);
    if (sm_nccl_coll_records(c, w))
        c->api->coll_begin();
    errno = c->saved_errno;
}

static void sm_nccl_coll_leave(sm_nccl_call_t *c, const sm_nccl_coll_args_t *a,
                               const sm_nccl_where_t *w)
{
    if (!sm_nccl_coll_records(c, w))
        return;
    int saved = errno;
    uint32_t root = a->root >= 0 ? (uint32_t)a->root : SM_NO_ROOT;
    c->api->coll_end(sm_nccl_functions[c->fn].op, w->core, root, a->sent, a->received);
    errno = saved;
}

/* The real call, with the program's errno as it came. */
#define SM_NCCL_CALL(fnptr_type, args) (errno = c.saved_errno, ((fnptr_type)c.real) args)

/* One collective wrapper: the arguments described in `a`, the real call. */
#define SM_NCCL_COLLECTIVE(FN, TYPE, ARGS, ...)                                          \
    sm_nccl_call_t c;                                                                   \
    sm_nccl_where_t w = {NULL, -1, -1, SM_COMM_NONE};                                   \
    sm_nccl_start(&c, FN);                                                              \
    sm_nccl_coll_args_t a = {__VA_ARGS__};                                              \
    sm_nccl_coll_enter(&c, &a, &w);                                                     \
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(TYPE, ARGS) : sm_nccl_missing(&c);      \
    sm_nccl_coll_leave(&c, &a, &w);                                                     \
    return sm_nccl_finish(&c, rc)

typedef sm_nccl_result_t (*sm_all_reduce_fn)(const void *, void *, size_t, sm_nccl_datatype_t,
                                             sm_nccl_redop_t, sm_nccl_comm_t, sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_rooted_fn)(const void *, void *, size_t, sm_nccl_datatype_t, int,
                                         sm_nccl_comm_t, sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_bcast_fn)(void *, size_t, sm_nccl_datatype_t, int, sm_nccl_comm_t,
                                        sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_reduce_fn)(const void *, void *, size_t, sm_nccl_datatype_t,
                                         sm_nccl_redop_t, int, sm_nccl_comm_t, sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_all_fn)(const void *, void *, size_t, sm_nccl_datatype_t,
                                      sm_nccl_comm_t, sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_all_to_allv_fn)(const void *, const size_t *, const size_t *, void *,
                                              const size_t *, const size_t *, sm_nccl_datatype_t,
                                              sm_nccl_comm_t, sm_nccl_stream_t);

sm_nccl_result_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               sm_nccl_datatype_t datatype, sm_nccl_redop_t op, sm_nccl_comm_t comm,
                               sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_ALL_REDUCE, sm_all_reduce_fn,
                       (sendbuff, recvbuff, count, datatype, op, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = op,
                       .root = -1, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                               sm_nccl_datatype_t datatype, int root, sm_nccl_comm_t comm,
                               sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_BROADCAST, sm_rooted_fn,
                       (sendbuff, recvbuff, count, datatype, root, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = root, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclBcast(void *buff, size_t count, sm_nccl_datatype_t datatype, int root,
                           sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_BCAST, sm_bcast_fn, (buff, count, datatype, root, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = root, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                            sm_nccl_datatype_t datatype, sm_nccl_redop_t op, int root,
                            sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_REDUCE, sm_reduce_fn,
                       (sendbuff, recvbuff, count, datatype, op, root, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = op,
                       .root = root, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                               sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_ALL_GATHER, sm_all_fn,
                       (sendbuff, recvbuff, sendcount, datatype, comm, stream),
                       .bytes = sm_nccl_bytes(sendcount, datatype), .type = datatype, .op = -1,
                       .root = -1, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   sm_nccl_datatype_t datatype, sm_nccl_redop_t op,
                                   sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_REDUCE_SCATTER, sm_all_reduce_fn,
                       (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),
                       .bytes = sm_nccl_bytes(recvcount, datatype), .type = datatype, .op = op,
                       .root = -1, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                              sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_ALLTOALL, sm_all_fn,
                       (sendbuff, recvbuff, count, datatype, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = -1, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                              sm_nccl_datatype_t datatype, sm_nccl_comm_t comm,
                              sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_ALL_TO_ALL, sm_all_fn,
                       (sendbuff, recvbuff, count, datatype, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = -1, .comm = comm, .stream = stream);
}

/* The blocks to and from the other ranks, in bytes: the counts of all but
 * this rank's own (read only when the call is measured). */
static uint64_t sm_nccl_sum_others(const sm_nccl_call_t *c, const size_t *counts,
                                   sm_nccl_datatype_t type, sm_nccl_comm_t comm)
{
    if (!c->record || !counts)
        return 0;
    sm_nccl_where_t w = sm_nccl_where(c->api, comm);
    uint64_t sum = 0;
    for (int i = 0; i < w.nranks && w.rank >= 0; i++)
        if (i != w.rank)
            sum += sm_nccl_bytes(counts[i], type);
    return sum;
}

sm_nccl_result_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[],
                               const size_t sdispls[], void *recvbuff, const size_t recvcounts[],
                               const size_t rdispls[], sm_nccl_datatype_t datatype,
                               sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    sm_nccl_call_t c;
    sm_nccl_where_t w = {NULL, -1, -1, SM_COMM_NONE};
    sm_nccl_start(&c, SM_NCCL_FN_ALL_TO_ALLV);
    uint64_t sent = sm_nccl_sum_others(&c, sendcounts, datatype, comm);
    sm_nccl_coll_args_t a = {.bytes = sent, .type = datatype, .op = -1, .root = -1, .comm = comm,
                             .stream = stream, .sent = sent,
                             .received = sm_nccl_sum_others(&c, recvcounts, datatype, comm),
                             .have_bytes = 1};
    sm_nccl_coll_enter(&c, &a, &w);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_all_to_allv_fn,
                                                (sendbuff, sendcounts, sdispls, recvbuff,
                                                 recvcounts, rdispls, datatype, comm, stream))
                                 : sm_nccl_missing(&c);
    sm_nccl_coll_leave(&c, &a, &w);
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                            sm_nccl_datatype_t datatype, int root, sm_nccl_comm_t comm,
                            sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_GATHER, sm_rooted_fn,
                       (sendbuff, recvbuff, count, datatype, root, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = root, .comm = comm, .stream = stream);
}

sm_nccl_result_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                             sm_nccl_datatype_t datatype, int root, sm_nccl_comm_t comm,
                             sm_nccl_stream_t stream)
{
    SM_NCCL_COLLECTIVE(SM_NCCL_FN_SCATTER, sm_rooted_fn,
                       (sendbuff, recvbuff, count, datatype, root, comm, stream),
                       .bytes = sm_nccl_bytes(count, datatype), .type = datatype, .op = -1,
                       .root = root, .comm = comm, .stream = stream);
}

/* ---------------------------------------------------------------- send and receive */

typedef sm_nccl_result_t (*sm_send_fn)(const void *, size_t, sm_nccl_datatype_t, int,
                                       sm_nccl_comm_t, sm_nccl_stream_t);
typedef sm_nccl_result_t (*sm_recv_fn)(void *, size_t, sm_nccl_datatype_t, int, sm_nccl_comm_t,
                                       sm_nccl_stream_t);

/* A send or receive: the region, and a message record (peer: the rank in
 * the communicator; no tag) when the communicator is known.  NCCL moves
 * the data later, in the kernel: the records stand at the call. */
static void sm_nccl_p2p_enter(sm_nccl_call_t *c, sm_nccl_where_t *w, size_t count,
                              sm_nccl_datatype_t type, int peer, sm_nccl_comm_t comm,
                              sm_nccl_stream_t stream, uint64_t *bytes)
{
    *bytes = sm_nccl_bytes(count, type);
    if (!c->record)
        return;
    *w = sm_nccl_where(c->api, comm);
    sm_nccl_attr_where(c, w);
    sm_nccl_attr_data(c, *bytes, type);
    sm_nccl_attr(c, SM_NCCL_A_PEER, (uint64_t)(int64_t)peer);
    sm_nccl_enter(c, stream, 1);
    if (c->fn == SM_NCCL_FN_SEND && sm_nccl_coll_records(c, w) && peer >= 0)
        c->api->msg_send(w->core, (uint32_t)peer, 0, *bytes, UINT32_MAX);
    errno = c->saved_errno;
}

static void sm_nccl_p2p_leave(const sm_nccl_call_t *c, const sm_nccl_where_t *w, int peer,
                              uint64_t bytes)
{
    if (c->fn == SM_NCCL_FN_RECV && sm_nccl_coll_records(c, w) && peer >= 0) {
        int saved = errno;
        c->api->msg_recv(w->core, (uint32_t)peer, 0, bytes, UINT32_MAX);
        errno = saved;
    }
}

sm_nccl_result_t ncclSend(const void *sendbuff, size_t count, sm_nccl_datatype_t datatype,
                          int peer, sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    sm_nccl_call_t c;
    sm_nccl_where_t w = {NULL, -1, -1, SM_COMM_NONE};
    uint64_t bytes;
    sm_nccl_start(&c, SM_NCCL_FN_SEND);
    sm_nccl_p2p_enter(&c, &w, count, datatype, peer, comm, stream, &bytes);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_send_fn,
                                                (sendbuff, count, datatype, peer, comm, stream))
                                 : sm_nccl_missing(&c);
    sm_nccl_p2p_leave(&c, &w, peer, bytes);
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclRecv(void *recvbuff, size_t count, sm_nccl_datatype_t datatype, int peer,
                          sm_nccl_comm_t comm, sm_nccl_stream_t stream)
{
    sm_nccl_call_t c;
    sm_nccl_where_t w = {NULL, -1, -1, SM_COMM_NONE};
    uint64_t bytes;
    sm_nccl_start(&c, SM_NCCL_FN_RECV);
    sm_nccl_p2p_enter(&c, &w, count, datatype, peer, comm, stream, &bytes);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_recv_fn,
                                                (recvbuff, count, datatype, peer, comm, stream))
                                 : sm_nccl_missing(&c);
    sm_nccl_p2p_leave(&c, &w, peer, bytes);
    return sm_nccl_finish(&c, rc);
}

/* ---------------------------------------------------------------- groups */

typedef sm_nccl_result_t (*sm_void_fn)(void);

/* The program's groups on this thread: the outermost ncclGroupStart gets a
 * number that its calls and its ncclGroupEnd carry ("nccl group"), kept
 * whether or not the thread is measured right now.  Each ncclGroupStart
 * opens a level and each ncclGroupEnd closes one, as NCCL counts them,
 * whatever they return. */
sm_nccl_result_t ncclGroupStart(void)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_GROUP_START);
    int outer = sm_nccl_depth == 1;
    if (outer && sm_nccl_group_depth == 0)
        sm_nccl_group_id = __atomic_add_fetch(&sm_nccl_groups, 1, __ATOMIC_RELAXED);
    sm_nccl_enter(&c, NULL, 0);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_void_fn, ()) : sm_nccl_missing(&c);
    if (outer)
        sm_nccl_group_depth++;
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclGroupEnd(void)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_GROUP_END);
    int outer = sm_nccl_depth == 1;
    sm_nccl_enter(&c, NULL, 0);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_void_fn, ()) : sm_nccl_missing(&c);
    if (outer && sm_nccl_group_depth > 0 && --sm_nccl_group_depth == 0)
        sm_nccl_group_id = 0;
    return sm_nccl_finish(&c, rc);
}

/* ---------------------------------------------------------------- communicators */

typedef sm_nccl_result_t (*sm_init_rank_fn)(sm_nccl_comm_t *, int, sm_nccl_unique_id_t, int);
typedef sm_nccl_result_t (*sm_init_rank_config_fn)(sm_nccl_comm_t *, int, sm_nccl_unique_id_t, int,
                                                   sm_nccl_config_t *);
typedef sm_nccl_result_t (*sm_init_scalable_fn)(sm_nccl_comm_t *, int, int, int,
                                                sm_nccl_unique_id_t *, sm_nccl_config_t *);
typedef sm_nccl_result_t (*sm_init_all_fn)(sm_nccl_comm_t *, int, const int *);
typedef sm_nccl_result_t (*sm_split_fn)(sm_nccl_comm_t, int, int, sm_nccl_comm_t *,
                                        sm_nccl_config_t *);
typedef sm_nccl_result_t (*sm_comm_fn)(sm_nccl_comm_t);

/* The region of a call that makes a communicator: its identity (known
 * before the call), this rank and the size. */
static void sm_nccl_init_enter(sm_nccl_call_t *c, uint64_t id, int rank, int nranks)
{
    sm_nccl_attr(c, SM_NCCL_A_COMM, id);
    sm_nccl_attr(c, SM_NCCL_A_RANK, (uint64_t)(int64_t)rank);
    sm_nccl_attr(c, SM_NCCL_A_RANKS, (uint64_t)(int64_t)nranks);
    sm_nccl_enter(c, NULL, 0);
}

/* A communicator is the program's once the call returns success, or
 * ncclInProgress for a nonblocking one. */
static int sm_nccl_made_ok(const sm_nccl_call_t *c, sm_nccl_result_t rc)
{
    return c->api && (rc == SM_NCCL_SUCCESS || rc == SM_NCCL_IN_PROGRESS);
}

static void sm_nccl_after_init(sm_nccl_call_t *c, sm_nccl_result_t rc, sm_nccl_comm_t *comm,
                               uint64_t id, int rank, int nranks)
{
    if (sm_nccl_made_ok(c, rc) && comm) {
        int saved = errno;
        sm_nccl_made(c->api, *comm, id, rank, nranks, SM_COMM_NONE);
        errno = saved;
    }
}

sm_nccl_result_t ncclCommInitRank(sm_nccl_comm_t *comm, int nranks, sm_nccl_unique_id_t commId,
                                  int rank)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_COMM_INIT_RANK);
    uint64_t id = sm_nccl_id_of_unique(&commId, 1);
    sm_nccl_init_enter(&c, id, rank, nranks);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_init_rank_fn, (comm, nranks, commId, rank))
                                 : sm_nccl_missing(&c);
    sm_nccl_after_init(&c, rc, comm, id, rank, nranks);
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclCommInitRankConfig(sm_nccl_comm_t *comm, int nranks,
                                        sm_nccl_unique_id_t commId, int rank,
                                        sm_nccl_config_t *config)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_COMM_INIT_RANK_CONFIG);
    uint64_t id = sm_nccl_id_of_unique(&commId, 1);
    sm_nccl_init_enter(&c, id, rank, nranks);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_init_rank_config_fn,
                                                (comm, nranks, commId, rank, config))
                                 : sm_nccl_missing(&c);
    sm_nccl_after_init(&c, rc, comm, id, rank, nranks);
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclCommInitRankScalable(sm_nccl_comm_t *newcomm, int nranks, int myrank,
                                          int nId, sm_nccl_unique_id_t *commIds,
                                          sm_nccl_config_t *config)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_COMM_INIT_RANK_SCALABLE);
    uint64_t id = sm_nccl_id_of_unique(commIds, nId);
    sm_nccl_init_enter(&c, id, myrank, nranks);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_init_scalable_fn,
                                                (newcomm, nranks, myrank, nId, commIds, config))
                                 : sm_nccl_missing(&c);
    sm_nccl_after_init(&c, rc, newcomm, id, myrank, nranks);
    return sm_nccl_finish(&c, rc);
}

/* ncclCommInitAll: all ranks in this process, no unique id to share; the
 * identity is this process's own (host, pid, time of the first such call)
 * and its count of such calls. */
static uint64_t sm_nccl_local_token(void)
{
    static uint64_t token; /* atomic */
    uint64_t t = __atomic_load_n(&token, __ATOMIC_ACQUIRE);
    if (t)
        return t;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sm_nccl_unique_id_t seed;
    memset(&seed, 0, sizeof seed);
    snprintf(seed.internal, sizeof seed.internal, "%s %ld %lld.%09ld", host, (long)getpid(),
             (long long)now.tv_sec, now.tv_nsec);
    t = sm_nccl_id_of_unique(&seed, 1) | 1u;
    __atomic_store_n(&token, t, __ATOMIC_RELEASE);
    return t;
}

sm_nccl_result_t ncclCommInitAll(sm_nccl_comm_t *comms, int ndev, const int *devlist)
{
    static uint32_t calls; /* atomic */
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_COMM_INIT_ALL);
    uint64_t id = c.api ? sm_nccl_id_of_local(sm_nccl_local_token(),
                                              __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED))
                        : 0;
    if (c.api)
        sm_nccl_attr(&c, SM_NCCL_A_COMM, id);
    sm_nccl_attr(&c, SM_NCCL_A_RANKS, (uint64_t)(int64_t)ndev);
    sm_nccl_enter(&c, NULL, 0);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_init_all_fn, (comms, ndev, devlist))
                                 : sm_nccl_missing(&c);
    if (sm_nccl_made_ok(&c, rc) && comms) {
        int saved = errno;
        for (int i = 0; i < ndev; i++)
            sm_nccl_made(c.api, comms[i], id, i, ndev, SM_COMM_NONE);
        errno = saved;
    }
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclCommSplit(sm_nccl_comm_t comm, int color, int key, sm_nccl_comm_t *newcomm,
                               sm_nccl_config_t *config)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, SM_NCCL_FN_COMM_SPLIT);
    sm_nccl_where_t w = {NULL, -1, -1, SM_COMM_NONE};
    uint32_t seq = 0;
    if (c.api) {
        w = sm_nccl_where(c.api, comm);
        /* Splits are collective over the parent: each rank counts alike. */
        if (w.c)
            seq = __atomic_fetch_add(&w.c->splits, 1, __ATOMIC_ACQ_REL);
        sm_nccl_attr_where(&c, &w);
        sm_nccl_attr(&c, SM_NCCL_A_COLOR, (uint64_t)(int64_t)color);
    }
    sm_nccl_enter(&c, NULL, 0);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_split_fn, (comm, color, key, newcomm, config))
                                 : sm_nccl_missing(&c);
    if (sm_nccl_made_ok(&c, rc) && w.c && newcomm && *newcomm &&
        color != SM_NCCL_SPLIT_NOCOLOR) {
        int saved = errno, rank = -1, nranks = -1;
        /* Its place: now if the split is done, else at its first use. */
        if (rc == SM_NCCL_SUCCESS && sm_nccl_query(*newcomm, &rank, &nranks) != 0)
            rank = nranks = -1;
        uint64_t child = sm_nccl_id_of_split(w.c->id, seq, color);
        sm_nccl_made(c.api, *newcomm, child, rank, nranks, w.core);
        sm_nccl_leave_attr(&c, SM_NCCL_A_NEW_COMM, child);
        errno = saved;
    }
    return sm_nccl_finish(&c, rc);
}

/* Finalize, destroy, abort: the region names the communicator; destroy and
 * abort forget it first (its address may serve a new one afterwards). */
static sm_nccl_result_t sm_nccl_comm_call(sm_nccl_fn_t fn, sm_nccl_comm_t comm, int forget)
{
    sm_nccl_call_t c;
    sm_nccl_start(&c, fn);
    if (c.record) {
        sm_nccl_where_t w = sm_nccl_where(c.api, comm);
        sm_nccl_attr_where(&c, &w);
    }
    sm_nccl_enter(&c, NULL, 0);
    if (forget && c.api)
        sm_nccl_comm_forget(comm);
    sm_nccl_result_t rc = c.real ? SM_NCCL_CALL(sm_comm_fn, (comm)) : sm_nccl_missing(&c);
    return sm_nccl_finish(&c, rc);
}

sm_nccl_result_t ncclCommFinalize(sm_nccl_comm_t comm)
{
    return sm_nccl_comm_call(SM_NCCL_FN_COMM_FINALIZE, comm, 0);
}

sm_nccl_result_t ncclCommDestroy(sm_nccl_comm_t comm)
{
    return sm_nccl_comm_call(SM_NCCL_FN_COMM_DESTROY, comm, 1);
}

sm_nccl_result_t ncclCommAbort(sm_nccl_comm_t comm)
{
    return sm_nccl_comm_call(SM_NCCL_FN_COMM_ABORT, comm, 1);
}
