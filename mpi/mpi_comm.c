/* The communicator table and the communicator hooks.
 *
 * Table: open addressing (linear probing) keyed by the handle's bits, with
 * backward-shift deletion, so that creating and freeing communicators for
 * ever leaves no tombstones.  Readers take no lock: they read the slots
 * under a sequence counter (seqlock) and retry when a writer changed the
 * table meanwhile; writers (communicator creation, free, renaming) take a
 * mutex.  A grown table replaces the old one, which stays allocated (a
 * reader may still be in it): at most the sum of the sizes it ever had,
 * i.e. twice the largest.  An entry (sm_mpi_comm_t) is freed when the
 * communicator is freed and no pending receive refers to it any more.
 *
 * Key agreement for a new communicator (collective over its members, in the
 * creating call's wrapper):
 * - intracommunicator: one PMPI_Allgather of {world rank, seq, job token}
 *   over the new communicator: rank 0 is the leader and contributes the
 *   next number of its counter; the members' world ranks come with it (no
 *   group translation, which is O(n * world) in some MPIs).  Size 1: no
 *   communication.
 * - intercommunicator: PMPI_Intercomm_merge on a temporary communicator,
 *   the same Allgather there, then freed.  Each group is one block of the
 *   merged communicator; the leader is the local leader with the smaller
 *   world rank, its group comes first in the definition (union of both
 *   groups, the same list on every member).
 * - members of another MPI_COMM_WORLD (spawn, connect/accept, join): the
 *   processes of the other job need not run these hooks at all (a spawned
 *   child never sees MPI_Comm_spawn's intercommunicator created), so no
 *   collective may involve them.  Found before any communication: an
 *   intracommunicator is in this world when its parent is (a parent we did
 *   not see: its group translated against MPI_COMM_WORLD's); an
 *   intercommunicator when both groups' rank 0 are.  Such a communicator is
 *   defined for this process alone ({own world rank, own seq}, one member);
 *   events on it carry no world ranks of peers.  A job token in the
 *   Allgather double-checks.
 * Every member takes the same branch, so the collectives always match. */
#define _GNU_SOURCE
#include "mpi_comm.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_adapter.h"
#include "mpi_hooks.h"

_Static_assert(sizeof(MPI_Comm) <= sizeof(uint64_t), "MPI_Comm handles up to 64 bits");

sm_mpi_comm_t sm_mpi_comm_world_rec = {.id = SM_COMM_NONE};
static MPI_Group sm_world_group = MPI_GROUP_NULL; /* for translating groups */
static sm_mpi_comm_t sm_mpi_comm_self_rec = {.id = SM_COMM_NONE};

/* Numbers this process hands out as a communicator leader; 0 is
 * MPI_COMM_WORLD's. */
static uint32_t sm_comm_next_seq = 1;

static uint32_t sm_comm_take_seq(void)
{
    return __atomic_fetch_add(&sm_comm_next_seq, 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- the table */

typedef struct sm_comm_slot {
    uint64_t key; /* handle bits; 0: empty (no valid handle is all zero) */
    sm_mpi_comm_t *rec;
} sm_comm_slot_t;

typedef struct sm_comm_table {
    uint32_t mask;
    uint32_t shift; /* 64 - log2(capacity) */
    struct sm_comm_table *older;
    sm_comm_slot_t slots[];
} sm_comm_table_t;

static sm_comm_table_t *sm_ct;   /* current table (atomic) */
static unsigned sm_ct_seq;       /* odd while a writer changes the table */
static uint32_t sm_ct_count;     /* live entries, under sm_ct_lock */
static pthread_mutex_t sm_ct_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t sm_comm_key_of(MPI_Comm c)
{
    uint64_t k = 0;
    memcpy(&k, &c, sizeof c);
    return k;
}

static inline uint32_t sm_comm_hash(const sm_comm_table_t *t, uint64_t k)
{
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> t->shift);
}

const sm_mpi_comm_t *sm_mpi_comm_lookup_table(MPI_Comm comm)
{
    uint64_t k = sm_comm_key_of(comm);
    if (k == 0 || comm == MPI_COMM_NULL)
        return NULL;
    for (;;) {
        unsigned s0 = __atomic_load_n(&sm_ct_seq, __ATOMIC_ACQUIRE);
        if (SM_UNLIKELY(s0 & 1)) {
            sm_mpi_cpu_relax();
            continue;
        }
        const sm_comm_table_t *t = __atomic_load_n(&sm_ct, __ATOMIC_ACQUIRE);
        sm_mpi_comm_t *rec = NULL;
        if (t) {
            uint32_t i = sm_comm_hash(t, k);
            for (uint32_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
                uint64_t kk = __atomic_load_n(&t->slots[i].key, __ATOMIC_RELAXED);
                if (kk == k) {
                    rec = __atomic_load_n(&t->slots[i].rec, __ATOMIC_RELAXED);
                    break;
                }
                if (kk == 0)
                    break;
            }
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (SM_LIKELY(__atomic_load_n(&sm_ct_seq, __ATOMIC_RELAXED) == s0))
            return rec;
    }
}

/* Writers: under sm_ct_lock, between sm_ct_write_begin/end. */
static void sm_ct_write_begin(void)
{
    __atomic_store_n(&sm_ct_seq, sm_ct_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void sm_ct_write_end(void)
{
    __atomic_store_n(&sm_ct_seq, sm_ct_seq + 1, __ATOMIC_RELEASE);
}

static sm_comm_table_t *sm_ct_new(uint32_t bits)
{
    sm_comm_table_t *t = calloc(1, sizeof *t + sizeof(sm_comm_slot_t) * ((size_t)1 << bits));
    if (!t)
        return NULL;
    t->mask = (1u << bits) - 1;
    t->shift = 64 - bits;
    return t;
}

static void sm_ct_place(sm_comm_table_t *t, uint64_t k, sm_mpi_comm_t *rec)
{
    uint32_t i = sm_comm_hash(t, k);
    while (t->slots[i].key != 0 && t->slots[i].key != k)
        i = (i + 1) & t->mask;
    __atomic_store_n(&t->slots[i].rec, rec, __ATOMIC_RELAXED);
    __atomic_store_n(&t->slots[i].key, k, __ATOMIC_RELAXED);
}

static void sm_comm_free_rec(sm_mpi_comm_t *c)
{
    if (!c || c->permanent)
        return;
    free(c->def_members);
    free(c->name);
    free(c);
}

void sm_mpi_comm_ref(const sm_mpi_comm_t *c)
{
    if (c && !c->permanent)
        __atomic_fetch_add(&((sm_mpi_comm_t *)c)->refs, 1, __ATOMIC_RELAXED);
}

void sm_mpi_comm_unref(const sm_mpi_comm_t *c)
{
    if (c && !c->permanent &&
        __atomic_sub_fetch(&((sm_mpi_comm_t *)c)->refs, 1, __ATOMIC_ACQ_REL) == 0)
        sm_comm_free_rec((sm_mpi_comm_t *)c);
}

/* Insert or replace (a handle freed behind our back and reused). */
static int sm_ct_insert(MPI_Comm comm, sm_mpi_comm_t *rec)
{
    uint64_t k = sm_comm_key_of(comm);
    sm_mpi_comm_t *old = NULL;
    int rc = 0;
    pthread_mutex_lock(&sm_ct_lock);
    sm_comm_table_t *t = sm_ct;
    if (!t || (sm_ct_count + 1) * 2 > t->mask + 1) {
        uint32_t bits = t ? 64 - t->shift + 1 : 6;
        sm_comm_table_t *n = sm_ct_new(bits);
        if (!n) {
            rc = -1;
            goto out;
        }
        if (t)
            for (uint32_t i = 0; i <= t->mask; i++)
                if (t->slots[i].key)
                    sm_ct_place(n, t->slots[i].key, t->slots[i].rec);
        n->older = t; /* kept: readers may still be inside */
        sm_ct_write_begin();
        __atomic_store_n(&sm_ct, n, __ATOMIC_RELEASE);
        sm_ct_write_end();
        t = n;
    }
    uint32_t i = sm_comm_hash(t, k);
    while (t->slots[i].key != 0 && t->slots[i].key != k)
        i = (i + 1) & t->mask;
    if (t->slots[i].key == k)
        old = t->slots[i].rec;
    else
        sm_ct_count++;
    sm_ct_write_begin();
    __atomic_store_n(&t->slots[i].rec, rec, __ATOMIC_RELAXED);
    __atomic_store_n(&t->slots[i].key, k, __ATOMIC_RELAXED);
    sm_ct_write_end();
out:
    pthread_mutex_unlock(&sm_ct_lock);
    if (old)
        sm_mpi_comm_unref(old);
    return rc;
}

/* Remove; returns the entry (the caller drops the table's reference). */
static sm_mpi_comm_t *sm_ct_remove(MPI_Comm comm)
{
    uint64_t k = sm_comm_key_of(comm);
    sm_mpi_comm_t *rec = NULL;
    pthread_mutex_lock(&sm_ct_lock);
    sm_comm_table_t *t = sm_ct;
    if (!t || k == 0)
        goto out;
    uint32_t i = sm_comm_hash(t, k);
    while (t->slots[i].key != 0 && t->slots[i].key != k)
        i = (i + 1) & t->mask;
    if (t->slots[i].key != k)
        goto out;
    rec = t->slots[i].rec;
    sm_ct_count--;
    sm_ct_write_begin();
    /* Backward shift: move later entries of the cluster into the hole when
     * their home slot does not lie cyclically in (hole, their position]. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & t->mask; t->slots[j].key != 0; j = (j + 1) & t->mask) {
        uint32_t home = sm_comm_hash(t, t->slots[j].key);
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        __atomic_store_n(&t->slots[hole].rec, t->slots[j].rec, __ATOMIC_RELAXED);
        __atomic_store_n(&t->slots[hole].key, t->slots[j].key, __ATOMIC_RELAXED);
        hole = j;
    }
    __atomic_store_n(&t->slots[hole].key, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->slots[hole].rec, NULL, __ATOMIC_RELAXED);
    sm_ct_write_end();
out:
    pthread_mutex_unlock(&sm_ct_lock);
    return rec;
}

/* ---------------------------------------------------------------- definitions */

static sm_comm_id_t sm_comm_define_rec(const sm_mpi_comm_t *c, const char *name)
{
    const sm_adapter_api_t *api = sm_mpi_api;
    if (!api)
        return SM_COMM_NONE;
    if (c->def_null || c->def_members || c->def_size == 0)
        return api->comm_define(c->key, name, c->def_size, c->def_null ? NULL : c->def_members,
                                c->parent);
    uint32_t *ids = malloc(sizeof *ids * c->def_size);
    if (!ids)
        return SM_COMM_NONE;
    for (uint32_t i = 0; i < c->def_size; i++)
        ids[i] = i;
    sm_comm_id_t id = api->comm_define(c->key, name, c->def_size, ids, c->parent);
    free(ids);
    return id;
}

int sm_mpi_comm_init(void)
{
    sm_mpi_comm_t *w = &sm_mpi_comm_world_rec;
    *w = (sm_mpi_comm_t){
        .size = (int32_t)sm_mpi_world_size,
        .rank = (int32_t)sm_mpi_world_rank,
        .remote_size = (int32_t)sm_mpi_world_size,
        .permanent = 1,
        .same_world = 1,
        .peer_count = sm_mpi_world_size,
        .key = {0, 0},
        .def_size = sm_mpi_world_size,
        .def_null = 1,
        .parent = SM_COMM_NONE,
        .name = strdup("MPI_COMM_WORLD"),
        .refs = 1,
    };
    sm_mpi_comm_t *s = &sm_mpi_comm_self_rec;
    *s = (sm_mpi_comm_t){
        .size = 1,
        .rank = 0,
        .remote_size = 1,
        .permanent = 1,
        .same_world = 1,
        .peer_count = 1,
        .peers = &sm_mpi_world_rank,
        .key = {SM_COMM_LEADER_SELF, 0},
        .def_size = 1,
        .def_null = 1,
        .parent = SM_COMM_NONE,
        .name = strdup("MPI_COMM_SELF"),
        .refs = 1,
    };
    if (PMPI_Comm_group(MPI_COMM_WORLD, &sm_world_group) != MPI_SUCCESS)
        sm_world_group = MPI_GROUP_NULL;
    s->id = sm_comm_define_rec(s, "MPI_COMM_SELF");
    w->id = sm_comm_define_rec(w, "MPI_COMM_WORLD");
    /* World is answered before the table; self lives in it. */
    return sm_ct_insert(MPI_COMM_SELF, s);
}

void sm_mpi_comm_fini(void)
{
    /* Entries and tables stay: a straggling thread may still look up. */
    if (sm_world_group != MPI_GROUP_NULL)
        PMPI_Group_free(&sm_world_group);
}

/* ---------------------------------------------------------------- creation */

static void sm_comm_say_once(const char *what, int err)
{
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (PMPI_Error_string(err, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error %d", err);
    sm_warning("rank %u: could not agree on a key for a communicator created by %s (%s); "
                "its events on this process are kept apart",
                sm_mpi_world_rank, what, msg);
}

#define SM_COMM_FOREIGN (-1) /* MPI error codes are >= 0 */

/* Ranks 0..n-1 of g (or only rank `one` when >= 0) are processes of this
 * MPI_COMM_WORLD; errors count as no. */
static int sm_group_in_world(MPI_Group g, int n, int one)
{
    if (g == MPI_GROUP_NULL || sm_world_group == MPI_GROUP_NULL)
        return 0;
    if (one >= 0) {
        int out = MPI_UNDEFINED;
        return PMPI_Group_translate_ranks(g, 1, &one, sm_world_group, &out) == MPI_SUCCESS &&
               out != MPI_UNDEFINED;
    }
    if (n <= 0)
        return 1;
    int *in = calloc((size_t)n, sizeof *in), *out = calloc((size_t)n, sizeof *out), ok = 0;
    if (in && out) {
        for (int i = 0; i < n; i++)
            in[i] = i;
        ok = PMPI_Group_translate_ranks(g, n, in, sm_world_group, out) == MPI_SUCCESS;
        for (int i = 0; ok && i < n; i++)
            ok = out[i] != MPI_UNDEFINED;
    }
    free(in);
    free(out);
    return ok;
}

/* Whether every member is a process of this MPI_COMM_WORLD (see above);
 * decided alike on every member, without communication. */
static int sm_comm_same_world(MPI_Comm comm, int inter, int size, const sm_mpi_comm_t *parent)
{
    MPI_Group g = MPI_GROUP_NULL;
    int ok;
    if (!inter) {
        if (parent)
            return parent->same_world;
        ok = PMPI_Comm_group(comm, &g) == MPI_SUCCESS && sm_group_in_world(g, size, -1);
    } else {
        ok = PMPI_Comm_remote_group(comm, &g) == MPI_SUCCESS && sm_group_in_world(g, 0, 0);
        if (g != MPI_GROUP_NULL)
            PMPI_Group_free(&g);
        g = MPI_GROUP_NULL;
        if (ok)
            ok = PMPI_Comm_group(comm, &g) == MPI_SUCCESS && sm_group_in_world(g, 0, 0);
    }
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    return ok;
}

/* Fills c from the new communicator (sizes, key, members); returns an MPI
 * error code or SM_COMM_FOREIGN, c to be completed as the fallback then. */
static int sm_comm_agree(MPI_Comm comm, sm_mpi_comm_t *c, const sm_mpi_comm_t *parent)
{
    int err, inter = 0, size = 0, rank = 0, rsize = 0;
    if ((err = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS ||
        (err = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (err = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return err;
    rsize = size;
    if (inter && (err = PMPI_Comm_remote_size(comm, &rsize)) != MPI_SUCCESS)
        return err;
    c->size = size;
    c->rank = rank;
    c->remote_size = rsize;
    c->is_inter = (uint8_t)!!inter;
    if (!sm_comm_same_world(comm, inter, size, parent))
        return SM_COMM_FOREIGN;
    c->same_world = 1;

    uint32_t mine[3] = {sm_mpi_world_rank, 0, sm_mpi_world_token};
    if (rank == 0) {
        mine[1] = sm_comm_take_seq();
        /* Until agreed: if we led an intracommunicator, this is its key. */
        if (!inter)
            c->key = (sm_comm_key_t){sm_mpi_world_rank, mine[1]};
    }

    uint32_t total = (uint32_t)size + (inter ? (uint32_t)rsize : 0);
    uint32_t *all = malloc(sizeof *all * 3 * (size_t)total);
    if (!all)
        return MPI_ERR_NO_MEM;
    uint32_t local_start = 0;
    if (!inter && size == 1) {
        memcpy(all, mine, sizeof mine);
    } else if (!inter) {
        err = PMPI_Allgather(mine, 3, MPI_UINT32_T, all, 3, MPI_UINT32_T, comm);
    } else {
        MPI_Comm merged = MPI_COMM_NULL;
        int mrank = 0;
        err = PMPI_Intercomm_merge(comm, 0, &merged);
        if (err == MPI_SUCCESS) {
            err = PMPI_Comm_rank(merged, &mrank);
            if (err == MPI_SUCCESS)
                err = PMPI_Allgather(mine, 3, MPI_UINT32_T, all, 3, MPI_UINT32_T, merged);
            PMPI_Comm_free(&merged);
        }
        local_start = (uint32_t)(mrank - rank);
    }
    if (err != MPI_SUCCESS) {
        free(all);
        return err;
    }

    int foreign = 0;
    for (uint32_t i = 0; i < total; i++)
        foreign |= all[3 * i + 2] != sm_mpi_world_token;
    if (foreign) {
        c->same_world = 0;
        free(all);
        return SM_COMM_FOREIGN; /* not an error: the fallback is the answer */
    }

    uint32_t *members = malloc(sizeof *members * total);
    if (!members) {
        free(all);
        return MPI_ERR_NO_MEM;
    }
    if (!inter) {
        for (uint32_t i = 0; i < total; i++)
            members[i] = all[3 * i];
        c->key = (sm_comm_key_t){all[0], all[1]};
        c->peer_offset = c->self_offset = 0;
        c->peer_count = (uint32_t)size;
        c->peers = members;
    } else {
        uint32_t remote_start = local_start == 0 ? (uint32_t)size : 0;
        int local_first = all[3 * local_start] < all[3 * remote_start];
        uint32_t first = local_first ? local_start : remote_start;
        uint32_t first_n = local_first ? (uint32_t)size : (uint32_t)rsize;
        uint32_t second = local_first ? remote_start : local_start;
        uint32_t second_n = total - first_n;
        for (uint32_t i = 0; i < first_n; i++)
            members[i] = all[3 * (first + i)];
        for (uint32_t i = 0; i < second_n; i++)
            members[first_n + i] = all[3 * (second + i)];
        c->key = (sm_comm_key_t){all[3 * first], all[3 * first + 1]};
        c->self_offset = local_first ? 0 : (uint32_t)rsize;
        c->peer_offset = local_first ? (uint32_t)size : 0;
        c->peer_count = (uint32_t)rsize;
        c->peers = members + c->peer_offset;
    }
    free(all);

    /* A copy of MPI_COMM_WORLD's group in order: no list to keep. */
    int identity = !inter && (uint32_t)size == sm_mpi_world_size;
    for (uint32_t i = 0; identity && i < total; i++)
        identity = members[i] == i;
    c->def_size = total;
    if (identity) {
        free(members);
        c->peers = NULL;
        c->def_members = NULL;
    } else {
        c->def_members = members;
    }
    return MPI_SUCCESS;
}

void sm_mpi_hook_comm_created(MPI_Comm parent, MPI_Comm newcomm, int rc)
{
    if (!SM_MPI_ON() || rc != MPI_SUCCESS || newcomm == MPI_COMM_NULL)
        return;
    int saved_errno = errno;
    sm_mpi_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        goto out;
    c->id = SM_COMM_NONE;
    c->refs = 1;
    /* Fallback until agreed: a communicator of this process alone. */
    c->key = (sm_comm_key_t){UINT32_MAX, 0};
    c->def_size = 1;

    /* Our collectives on the application's communicator must not call its
     * error handler (fatal by default): errors return, restored after. */
    const sm_mpi_comm_t *p = sm_mpi_comm_lookup(parent);
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int have_eh = PMPI_Comm_get_errhandler(newcomm, &eh) == MPI_SUCCESS;
    if (have_eh)
        PMPI_Comm_set_errhandler(newcomm, MPI_ERRORS_RETURN);
    int err = sm_comm_agree(newcomm, c, p);
    if (have_eh) {
        PMPI_Comm_set_errhandler(newcomm, eh);
        PMPI_Errhandler_free(&eh);
    }

    const char *fn = sm_mpi_function_name(sm_mpi_current_fn());
    if (err != MPI_SUCCESS) {
        if (err != SM_COMM_FOREIGN)
            sm_comm_say_once(fn ? fn : "an MPI call", err);
        free(c->def_members);
        c->def_members = NULL;
        if (c->key.leader != sm_mpi_world_rank)
            c->key = (sm_comm_key_t){sm_mpi_world_rank, sm_comm_take_seq()};
        c->def_size = 1;
        c->def_members = malloc(sizeof *c->def_members);
        if (c->def_members)
            c->def_members[0] = sm_mpi_world_rank;
        else
            c->def_size = 0;
        c->peers = NULL;
        c->peer_count = 0;
        c->peer_offset = c->self_offset = 0;
    }

    char name[MPI_MAX_OBJECT_NAME + 128];
    pthread_mutex_lock(&sm_ct_lock); /* the parent's name */
    /* An intercommunicator's parent is each group's own local communicator:
     * its name would differ between the groups. */
    if (p && p->name && !c->is_inter)
        snprintf(name, sizeof name, "%s of %s", fn ? fn : "MPI communicator", p->name);
    else
        snprintf(name, sizeof name, "%s", fn ? fn : "MPI communicator");
    pthread_mutex_unlock(&sm_ct_lock);
    c->parent = sm_mpi_comm_id(p);
    c->name = strdup(name);
    c->id = sm_comm_define_rec(c, name);
    if (sm_ct_insert(newcomm, c) != 0)
        sm_comm_free_rec(c);
out:
    errno = saved_errno;
}

void sm_mpi_hook_comm_free(MPI_Comm comm)
{
    if (!SM_MPI_ON() || comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD ||
        comm == MPI_COMM_SELF)
        return;
    sm_mpi_comm_t *c = sm_ct_remove(comm);
    if (c)
        sm_mpi_comm_unref(c);
}

void sm_mpi_hook_comm_named(MPI_Comm comm)
{
    if (!SM_MPI_ON() || comm == MPI_COMM_NULL)
        return;
    int saved_errno = errno;
    sm_mpi_comm_t *c = (sm_mpi_comm_t *)sm_mpi_comm_lookup(comm);
    char name[MPI_MAX_OBJECT_NAME + 1] = "";
    int len = 0;
    if (c && PMPI_Comm_get_name(comm, name, &len) == MPI_SUCCESS && name[0]) {
        char *copy = strdup(name);
        pthread_mutex_lock(&sm_ct_lock);
        if (copy) {
            free(c->name);
            c->name = copy;
        }
        pthread_mutex_unlock(&sm_ct_lock);
        sm_comm_define_rec(c, name);
    }
    errno = saved_errno;
}

/* ---------------------------------------------------------------- the wrappers' helpers */

int sm_mpi_comm_size(MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    if (SM_LIKELY(c != NULL))
        return c->size;
    int n = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
        return 0;
    return n;
}

int sm_mpi_comm_rank(MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    if (SM_LIKELY(c != NULL))
        return c->rank;
    int r = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &r) != MPI_SUCCESS)
        return 0;
    return r;
}

int sm_mpi_comm_remote_size(MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    if (SM_LIKELY(c != NULL))
        return c->remote_size;
    int inter = 0, n = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS)
        return 0;
    return n;
}

int sm_mpi_comm_is_inter(MPI_Comm comm)
{
    const sm_mpi_comm_t *c = sm_mpi_comm_lookup(comm);
    if (SM_LIKELY(c != NULL))
        return c->is_inter;
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    return inter;
}
