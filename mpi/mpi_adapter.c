/* The MPI adapter: the link to the core (sm_mpi_api), the begin/end of every
 * wrapped call, the wrappers' scratch arrays, and the life cycle
 * (MPI_Init: process group, output folder, MPI_COMM_WORLD/SELF, clock
 * offsets; MPI_Finalize: clock offsets, the core's collective finalize).
 *
 * sysmeasure's own MPI traffic goes through PMPI_* on a private duplicate of
 * MPI_COMM_WORLD, so the wrappers never see it. */
#define _GNU_SOURCE
#include "mpi_adapter.h"
#include "util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_comm.h"
#include "mpi_hooks.h"
#include "mpi_procs.h"
#include "mpi_request.h"

/* Exported by libsysmeasure.so: NULL for a version it does not serve. */
SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

const sm_adapter_api_t *sm_mpi_api;

int sm_mpi_on;
uint32_t sm_mpi_world_rank;
uint32_t sm_mpi_world_size = 1;
uint32_t sm_mpi_world_token;
MPI_Comm sm_mpi_private_comm = MPI_COMM_NULL;

/* Set: every wrapper calls straight through (no core, a process group that
 * could not be measured, after MPI_Finalize). */
int sm_mpi_pass = 1;
static int sm_mpi_init_done;
const sm_causal_api_t *sm_mpi_causal;

static sm_procs_t sm_mpi_procs;

#define SM_MPI_TAG_CLOCK 7101
#ifndef SM_MPI_CLOCK_ROUNDS
#define SM_MPI_CLOCK_ROUNDS 10
#endif


static int sm_mpi_call_note(sm_call_note_t *note);

__attribute__((constructor)) static void sm_mpi_adapter_load(void)
{
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!api || api->version != SM_ADAPTER_API_VERSION || api->size < sizeof(sm_adapter_api_t))
        return;
    sm_mpi_api = api;
    if (SM_ADAPTER_API_HAS(api, stack_call_note))
        api->stack_call_note(sm_mpi_call_note);
    __atomic_store_n(&sm_mpi_pass, 0, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- calls */

SM_TLS uint32_t sm_mpi_in_call;
SM_TLS sm_mpi_where_t sm_mpi_where;

/* The core's stack note (stacks.h), in a signal handler on the thread:
 * reads this thread's own records, nothing else. */
static int sm_mpi_call_note(sm_call_note_t *note)
{
    uint32_t in = sm_mpi_in_call;
    if (!in || in - 1 >= SM_MPI_FN_COUNT)
        return 0;
    note->function = sm_mpi_functions[in - 1].name;
    if (sm_mpi_where.fn != in - 1)
        return 1; /* (no communicator: a wait, a test) */
    MPI_Comm c = sm_mpi_where.comm;
    note->comm = c == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : c == MPI_COMM_SELF ? "MPI_COMM_SELF" : NULL;
    note->comm_handle = (uint64_t)(uintptr_t)c;
    note->peer = sm_mpi_where.peer;
    note->peer_kind = (sm_call_peer_t)sm_mpi_where.peer_kind;
    note->tag = sm_mpi_where.tag;
    note->has_tag = sm_mpi_where.has_tag;
    return 1;
}
uint32_t sm_mpi_regions[SM_MPI_FN_COUNT];

uint32_t sm_mpi_current_fn(void)
{
    return sm_mpi_in_call ? sm_mpi_in_call - 1 : UINT32_MAX;
}

const char *sm_mpi_function_name(uint32_t fn)
{
    return fn < SM_MPI_FN_COUNT ? sm_mpi_functions[fn].name : NULL;
}

/* The groups measured (--mpi-groups), read with the first region. */
static uint32_t sm_mpi_groups = SM_MPI_GROUPS_ALL;
static int sm_mpi_groups_known;

static int sm_mpi_group_off(uint32_t fn)
{
    return !(sm_mpi_groups & (1u << sm_mpi_functions[fn].group));
}

static uint32_t sm_mpi_region_define(uint32_t fn)
{
    /* Before the core is up (calls before MPI_Init): nothing to enter. */
    if (!sm_mpi_api->runtime_active())
        return SM_INVALID_ID;
    if (!__atomic_load_n(&sm_mpi_groups_known, __ATOMIC_ACQUIRE)) {
        char text[256], err[512];
        uint32_t mask = SM_MPI_GROUPS_ALL;
        if (SM_ADAPTER_API_HAS(sm_mpi_api, config_value) &&
            sm_mpi_api->config_value("mpi_groups", text, sizeof text) == 0 &&
            sm_mpi_groups_parse(text, &mask, err, sizeof err) != 0)
            mask = SM_MPI_GROUPS_ALL; /* checked by the config already */
        __atomic_store_n(&sm_mpi_groups, mask, __ATOMIC_RELAXED);
        __atomic_store_n(&sm_mpi_groups_known, 1, __ATOMIC_RELEASE);
    }
    const sm_mpi_function_info_t *f = &sm_mpi_functions[fn];
    sm_region_id_t r = sm_mpi_api->region_define(f->name, NULL, 0, SM_PARADIGM_MPI,
                                                 (sm_region_role_t)f->role);
    if (r == SM_INVALID_ID)
        return SM_INVALID_ID; /* core not up yet: try again next time */
    /* A group left out: the region is not entered (the filtered bit), and
     * sm_mpi_call_begin passes the call through untraced. */
    if (sm_mpi_group_off(fn))
        r |= SM_REGION_FILTERED;
    __atomic_store_n(&sm_mpi_regions[fn], r + 1, __ATOMIC_RELAXED);
    return r;
}

static SM_NOINLINE uint32_t sm_mpi_region_of_slow(uint32_t fn)
{
    int saved_errno = errno;
    uint32_t r = sm_mpi_region_define(fn);
    errno = saved_errno;
    return r;
}

/* Every call goes through wrappers with hooks, measured or not on this
 * thread (the core's enter/leave/event entries do nothing on a thread that
 * does not measure): the communicator and request tables must see every
 * creation, and a communicator's creation is collective over its members,
 * which need not all measure at the same time.  Only nesting (an MPI call
 * made by an MPI call) and an inactive adapter call straight through.
 * The fast path is inline (mpi_hooks.h); here the first call of a function
 * (its region defined) and the calls of a filtered one. */
int sm_mpi_call_begin_slow(sm_mpi_call_t *call, uint32_t fn)
{
    if (SM_UNLIKELY(fn >= SM_MPI_FN_COUNT))
        return 0;
    uint32_t r = __atomic_load_n(&sm_mpi_regions[fn], __ATOMIC_RELAXED) - 1;
    if (r == SM_INVALID_ID)
        r = sm_mpi_region_of_slow(fn);
    if (SM_UNLIKELY(sm_region_filtered(r)) && r != SM_INVALID_ID && sm_mpi_group_off(fn) &&
        !sm_mpi_functions[fn].bookkeeping) {
        /* Its group is left out, and its hooks only record events: straight
         * through, untraced.  Groups are the job's (one configuration), so
         * both ends of a message or collective are left out alike. */
        return 0;
    }
    sm_mpi_in_call = fn + 1;
    call->fn = fn;
    call->region = r;
    if (SM_LIKELY(r != SM_INVALID_ID))
        sm_mpi_api->enter(r); /* a filtered region records only the events
                                 * inside the call (adapter_api.c) */
    return 1;
}

/* MPI_Init/Init_thread, MPI_Finalize, MPI_Abort (see mpi_wrapper_support.h):
 * only nesting calls straight through, so that their hooks always run. */
int sm_mpi_call_begin_lifecycle(sm_mpi_call_t *call, uint32_t fn)
{
    if (sm_mpi_in_call)
        return 0;
    sm_mpi_in_call = fn + 1;
    call->fn = fn;
    call->region = SM_INVALID_ID;
    if (sm_mpi_api && !__atomic_load_n(&sm_mpi_pass, __ATOMIC_RELAXED) && fn < SM_MPI_FN_COUNT) {
        uint32_t r = __atomic_load_n(&sm_mpi_regions[fn], __ATOMIC_RELAXED) - 1;
        if (r == SM_INVALID_ID)
            r = sm_mpi_region_of_slow(fn);
        call->region = r;
        if (r != SM_INVALID_ID)
            sm_mpi_api->enter(r);
    }
    return 1;
}


/* ---------------------------------------------------------------- scratch */

typedef struct sm_mpi_scratch {
    MPI_Status *statuses;
    MPI_Request *requests;
    MPI_Fint *fints;
    size_t n_statuses, n_requests, n_fints;
} sm_mpi_scratch_t;

static SM_TLS sm_mpi_scratch_t sm_mpi_scratch;
static pthread_key_t sm_mpi_scratch_key;
static pthread_once_t sm_mpi_scratch_once = PTHREAD_ONCE_INIT;

/* At thread exit (not before): the arrays of a thread that made MPI calls. */
static void sm_mpi_scratch_release(void *p)
{
    sm_mpi_scratch_t *s = p;
    free(s->statuses);
    free(s->requests);
    free(s->fints);
    memset(s, 0, sizeof *s);
}

static void sm_mpi_scratch_key_create(void)
{
    if (pthread_key_create(&sm_mpi_scratch_key, sm_mpi_scratch_release) != 0)
        sm_mpi_scratch_key = (pthread_key_t)-1;
}

static SM_NOINLINE void *sm_mpi_scratch_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
    size_t n = *cap ? *cap : 16;
    while (n < want)
        n *= 2;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return NULL;
    if (!*cap) {
        pthread_once(&sm_mpi_scratch_once, sm_mpi_scratch_key_create);
        if (sm_mpi_scratch_key != (pthread_key_t)-1)
            pthread_setspecific(sm_mpi_scratch_key, &sm_mpi_scratch);
    }
    *arr = p;
    *cap = n;
    return p;
}

MPI_Status *sm_mpi_scratch_statuses(int n)
{
    size_t want = n > 0 ? (size_t)n : 1;
    if (SM_LIKELY(want <= sm_mpi_scratch.n_statuses))
        return sm_mpi_scratch.statuses;
    return sm_mpi_scratch_grow((void **)&sm_mpi_scratch.statuses, &sm_mpi_scratch.n_statuses,
                               want, sizeof(MPI_Status));
}

MPI_Request *sm_mpi_scratch_requests(int n)
{
    size_t want = n > 0 ? (size_t)n : 1;
    if (SM_LIKELY(want <= sm_mpi_scratch.n_requests))
        return sm_mpi_scratch.requests;
    return sm_mpi_scratch_grow((void **)&sm_mpi_scratch.requests, &sm_mpi_scratch.n_requests,
                               want, sizeof(MPI_Request));
}

MPI_Fint *sm_mpi_scratch_fint(int n)
{
    size_t want = n > 0 ? (size_t)n : 1;
    if (SM_LIKELY(want <= sm_mpi_scratch.n_fints))
        return sm_mpi_scratch.fints;
    return sm_mpi_scratch_grow((void **)&sm_mpi_scratch.fints, &sm_mpi_scratch.n_fints, want,
                               sizeof(MPI_Fint));
}

/* ---------------------------------------------------------------- clocks */

static inline uint64_t sm_mpi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Rank 0 serves the other ranks one after the other: each sends
 * SM_MPI_CLOCK_ROUNDS empty pings and gets rank 0's clock back; the round
 * trip with the shortest time gives offset = rank 0's time - the midpoint
 * of the round trip on the local clock.  Cost: (size - 1) * rounds round
 * trips in sequence at rank 0 (at 512 ranks and 2-3 us per round trip,
 * 10-15 ms), once at MPI_Init and once at MPI_Finalize. */
/* This boot of this machine's kernel: processes that share it share
 * CLOCK_MONOTONIC exactly, so their offset is 0 with no error at all. */
static void sm_mpi_boot_id(char id[40])
{
    memset(id, 0, 40);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(id, 40, f))
            id[0] = '\0';
        fclose(f);
    }
}

static void sm_mpi_clock_sync(int which)
{
    MPI_Comm comm = sm_mpi_private_comm;
    char boot[40], root_boot[40];
    sm_mpi_boot_id(boot);
    memcpy(root_boot, boot, sizeof boot);
    int unknown = !boot[0];
    if (PMPI_Bcast(root_boot, (int)sizeof root_boot, MPI_CHAR, 0, comm) != MPI_SUCCESS)
        unknown = 1;
    /* 1: this rank must measure its offset (another machine, or unknown). */
    int measure = unknown || !root_boot[0] || memcmp(boot, root_boot, sizeof boot) != 0;
    int *who = sm_mpi_world_rank == 0 ? calloc(sm_mpi_world_size, sizeof *who) : NULL;
    if (PMPI_Gather(&measure, 1, MPI_INT, who, 1, MPI_INT, 0, comm) != MPI_SUCCESS && who)
        for (uint32_t r = 0; r < sm_mpi_world_size; r++)
            who[r] = 1;
    if (sm_mpi_world_rank == 0) {
        for (uint32_t r = 1; r < sm_mpi_world_size; r++) {
            for (int i = 0; (!who || who[r]) && i < SM_MPI_CLOCK_ROUNDS; i++) {
                if (PMPI_Recv(NULL, 0, MPI_BYTE, (int)r, SM_MPI_TAG_CLOCK, comm,
                              MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    break;
                uint64_t t = sm_mpi_now_ns();
                if (PMPI_Send(&t, 1, MPI_UINT64_T, (int)r, SM_MPI_TAG_CLOCK, comm) != MPI_SUCCESS)
                    break;
            }
        }
        free(who);
        sm_mpi_api->clock_offset(which, sm_mpi_now_ns(), 0);
        return;
    }
    if (!measure) {
        sm_mpi_api->clock_offset(which, sm_mpi_now_ns(), 0);
        return;
    }
    uint64_t best_rtt = UINT64_MAX, best_mid = 0;
    int64_t best_off = 0;
    for (int i = 0; i < SM_MPI_CLOCK_ROUNDS; i++) {
        uint64_t remote = 0, t0 = sm_mpi_now_ns();
        if (PMPI_Sendrecv(NULL, 0, MPI_BYTE, 0, SM_MPI_TAG_CLOCK, &remote, 1, MPI_UINT64_T, 0,
                          SM_MPI_TAG_CLOCK, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            break;
        uint64_t t1 = sm_mpi_now_ns();
        if (t1 - t0 < best_rtt) {
            best_rtt = t1 - t0;
            best_mid = t0 + (t1 - t0) / 2;
            best_off = (int64_t)(remote - best_mid);
        }
    }
    if (best_rtt != UINT64_MAX)
        sm_mpi_api->clock_offset(which, best_mid, best_off);
}

/* ---------------------------------------------------------------- life cycle */

/* A number for this MPI_COMM_WORLD, different from that of another job with
 * high probability (host, pid, time). */
static uint32_t sm_mpi_make_token(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    h ^= (uint64_t)getpid() * 0x9E3779B97F4A7C15ull;
    h ^= sm_mpi_now_ns() * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    uint32_t t = (uint32_t)(h ^ (h >> 32));
    return t ? t : 1;
}

/* Rank 0 claims the output folder (the core creates it, so that a clash
 * with another job is detected there) and hands its final name and the job
 * token to everyone. */
typedef struct sm_mpi_init_msg {
    uint32_t token;
    uint32_t dir_len; /* 0: no folder to agree on */
    char dir[PATH_MAX];
} sm_mpi_init_msg_t;

static void sm_mpi_agree_output(void)
{
    const sm_adapter_api_t *api = sm_mpi_api;
    static sm_mpi_init_msg_t m;
    memset(&m, 0, sizeof m);
    if (sm_mpi_world_rank == 0) {
        m.token = sm_mpi_make_token();
        const char *dir = api->output_dir();
        if (dir && dir[0]) {
            char mine[PATH_MAX];
            snprintf(mine, sizeof mine, "%s", dir);
            api->set_output_dir(mine); /* says itself when it fails */
            dir = api->output_dir();   /* as created: possibly made unique */
            size_t len = dir ? strlen(dir) : 0;
            if (len > 0 && len < sizeof m.dir) {
                memcpy(m.dir, dir, len + 1);
                m.dir_len = (uint32_t)len;
            }
        }
    }
    if (PMPI_Bcast(&m, (int)sizeof m, MPI_BYTE, 0, sm_mpi_private_comm) != MPI_SUCCESS) {
        if (sm_mpi_world_rank != 0) {
            const char *own = api->output_dir();
            sm_warning("rank %u: could not learn rank 0's output folder; writing to %s",
                        sm_mpi_world_rank, own ? own : "?");
            m.token = sm_mpi_make_token();
        }
        m.dir_len = 0;
    }
    sm_mpi_world_token = m.token;
    if (sm_mpi_world_rank != 0 && m.dir_len > 0) {
        m.dir[sizeof m.dir - 1] = 0;
        api->set_output_dir(m.dir);
    }
}

void sm_mpi_hook_initialized(void)
{
    const sm_adapter_api_t *api = sm_mpi_api;
    if (!api || __atomic_exchange_n(&sm_mpi_init_done, 1, __ATOMIC_ACQ_REL))
        return;
    int saved_errno = errno;
    int measured = api->runtime_init() == 0;
    int rank = 0, size = 1;
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
        PMPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_WORLD, &sm_mpi_private_comm) != MPI_SUCCESS) {
        sm_warning("rank %d: cannot set up sysmeasure's communicator; MPI is not measured", rank);
        sm_mpi_private_comm = MPI_COMM_NULL;
        __atomic_store_n(&sm_mpi_pass, 1, __ATOMIC_RELAXED);
        errno = saved_errno;
        return;
    }
    PMPI_Comm_set_errhandler(sm_mpi_private_comm, MPI_ERRORS_RETURN);
    PMPI_Comm_set_name(sm_mpi_private_comm, "sysmeasure");
    sm_mpi_world_rank = (uint32_t)rank;
    sm_mpi_world_size = (uint32_t)size;

    /* All or none: a process group where some processes are not measured
     * would wait for them at every collective step. */
    int flags[3] = {measured, !measured, measured ? size - rank : 0}, any[3] = {0, 0, 0};
    if (PMPI_Allreduce(flags, any, 3, MPI_INT, MPI_MAX, sm_mpi_private_comm) != MPI_SUCCESS) {
        any[0] = measured;
        any[1] = 1;
        any[2] = size - rank;
    }
    if (!measured || any[1]) {
        if (measured && rank == size - any[2])
            sm_warning("only some of the %d MPI processes are measured; MPI calls are not "
                        "recorded and every process writes its own output",
                        size);
        PMPI_Comm_free(&sm_mpi_private_comm);
        __atomic_store_n(&sm_mpi_pass, 1, __ATOMIC_RELAXED);
        errno = saved_errno;
        return;
    }

    sm_mpi_procs_setup(&sm_mpi_procs, sm_mpi_private_comm);
    api->set_process_group(&sm_mpi_procs);
    sm_mpi_agree_output();
    sm_mpi_comm_init();
    sm_mpi_types_init();
    sm_mpi_clock_sync(0);
    /* Causal profiling, when it runs in this process (dlsym: the core's
     * one entry for it, NULL otherwise). */
    sm_causal_api_fn causal;
    *(void **)&causal = dlsym(RTLD_DEFAULT, "sysmeasure_causal_api");
    if (causal && causal() && causal()->version == SM_CAUSAL_API_VERSION)
        __atomic_store_n(&sm_mpi_causal, causal(), __ATOMIC_RELEASE);
    __atomic_store_n(&sm_mpi_on, 1, __ATOMIC_RELEASE);
    errno = saved_errno;
}

void sm_mpi_hook_finalizing(void)
{
    const sm_adapter_api_t *api = sm_mpi_api;
    if (!api || !__atomic_load_n(&sm_mpi_on, __ATOMIC_ACQUIRE))
        return;
    int saved_errno = errno;
    /* This rank's data goes to disk first: the clock exchange and the
     * collective write wait on the other ranks, and a job torn down then
     * (a rank that ended without MPI_Finalize, mpirun signalled) must not
     * take it along. */
    __atomic_store_n(&sm_mpi_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_mpi_causal, NULL, __ATOMIC_RELEASE);
    api->save_before_finalize();
    /* The ranks' saves end at different times: the first to finish waits
     * here without polling (sm_mpi_procs), not in the clock exchange. */
    (void)sm_mpi_procs.barrier(sm_mpi_procs.ctx);
    sm_mpi_clock_sync(1);
    api->finalize();
    __atomic_store_n(&sm_mpi_pass, 1, __ATOMIC_RELEASE);
    sm_mpi_comm_fini();
    sm_mpi_procs_teardown();
    PMPI_Comm_free(&sm_mpi_private_comm);
    errno = saved_errno;
}

void sm_mpi_hook_aborting(MPI_Comm comm, int errorcode)
{
    (void)comm;
    const sm_adapter_api_t *api = sm_mpi_api;
    if (!api)
        return;
    char reason[64];
    snprintf(reason, sizeof reason, "MPI_Abort called with code %d", errorcode);
    __atomic_store_n(&sm_mpi_on, 0, __ATOMIC_RELEASE);
    api->emergency_write(reason);
    __atomic_store_n(&sm_mpi_pass, 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- joining late */

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still
 * works (MPI-2.2 and later): the job's collective end runs there when no
 * wrapper of MPI_Finalize is in the call path. */
static int sm_mpi_self_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    sm_mpi_hook_finalizing();
    return MPI_SUCCESS;
}

/* Called by the core (adapter_load.c) after it loaded this library into a
 * process whose MPI was initialized without it: a program that brought the
 * core up through a tool library (KokkosP) with no launcher.  Its MPI calls
 * go straight to libmpi and are not recorded, but its ranks become one job:
 * a process group, one output folder agreed at rank 0, clocks aligned, one
 * collective end at MPI_Finalize.  Collective over MPI_COMM_WORLD.  0 when
 * it joined; -1 when MPI is not initialized (or finalized already). */
SM_EXPORT int sysmeasure_mpi_join(void);
SM_EXPORT int sysmeasure_mpi_join(void)
{
    int initialized = 0, finalized = 0;
    if (!sm_mpi_api || PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
        PMPI_Finalized(&finalized) != MPI_SUCCESS || finalized)
        return -1;
    int saved_errno = errno;
    sm_mpi_hook_initialized();
    int rc = -1, key = MPI_KEYVAL_INVALID;
    if (__atomic_load_n(&sm_mpi_on, __ATOMIC_ACQUIRE)) {
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, sm_mpi_self_delete, &key, NULL) ==
                MPI_SUCCESS &&
            PMPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) == MPI_SUCCESS)
            rc = 0;
        else
            sm_warning("rank %u: cannot hook MPI_Finalize; each rank leaves its data for "
                       "sysmeasure-merge at its end", sm_mpi_world_rank);
    }
    errno = saved_errno;
    return rc == 0 || __atomic_load_n(&sm_mpi_on, __ATOMIC_ACQUIRE) ? 0 : -1;
}
