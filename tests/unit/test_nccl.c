/* The NCCL library's own logic, without NCCL (no GPU or NCCL here; no
 * stand-in library either): what an NCCL call's arguments become
 * (gpu/nccl/nccl_convert.c), the communicator table
 * (gpu/nccl/nccl_comms.c), communicator identities computed alike in two
 * processes, and the core's side of hashed communicators: each process's
 * definition knows only its own place, unify fills in the others, and the
 * OTF2 archive has them as CUDA communicators.  One function per case. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "core/adapter_api.h"
#include "core/buffer.h"
#include "core/definitions.h"
#include "core/event_record.h"
#include "core/location.h"
#include "core/runtime.h"
#include "merge/unify.h"
#include "nccl_comms.h"
#include "nccl_convert.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

/* A unique id as a program passes it (its bytes are NCCL's business; these
 * stand for one: a magic number and a socket address, then zeros). */
static sm_nccl_unique_id_t unique_id(uint32_t port)
{
    sm_nccl_unique_id_t id;
    memset(&id, 0, sizeof id);
    const uint64_t magic = UINT64_C(0x3a91c0de5eed1234);
    memcpy(id.internal, &magic, sizeof magic);
    id.internal[8] = 2; /* AF_INET */
    id.internal[10] = (char)(port >> 8);
    id.internal[11] = (char)port;
    id.internal[12] = 10, id.internal[13] = 0, id.internal[14] = 0, id.internal[15] = 7;
    return id;
}

static void case_types_and_ops(void)
{
    static const size_t sizes[SM_NCCL_TYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    for (int t = 0; t < SM_NCCL_TYPE_COUNT; t++)
        CHECK_EQ_U(sm_nccl_type_size(t), sizes[t]);
    CHECK_STR(sm_nccl_type_name(SM_NCCL_FLOAT32), "float32");
    CHECK_STR(sm_nccl_type_name(SM_NCCL_BFLOAT16), "bfloat16");
    CHECK_STR(sm_nccl_type_name(SM_NCCL_INT8), "int8");
    CHECK_STR(sm_nccl_type_name(SM_NCCL_FLOAT8E5M2), "float8e5m2");
    CHECK_STR(sm_nccl_type_name(12), "unknown");
    CHECK_STR(sm_nccl_type_name(-1), "unknown");
    CHECK_EQ_U(sm_nccl_type_size(12), 0);
    CHECK_STR(sm_nccl_op_name(SM_NCCL_SUM), "sum");
    CHECK_STR(sm_nccl_op_name(SM_NCCL_PROD), "prod");
    CHECK_STR(sm_nccl_op_name(SM_NCCL_MAX), "max");
    CHECK_STR(sm_nccl_op_name(SM_NCCL_MIN), "min");
    CHECK_STR(sm_nccl_op_name(SM_NCCL_AVG), "avg");
    CHECK_STR(sm_nccl_op_name(5), "premulsum"); /* the first op a program makes */
    CHECK_STR(sm_nccl_op_name(0x7fffffff), "premulsum");
    CHECK_STR(sm_nccl_op_name(-3), "unknown");
    /* the functions' table: every row named, in enum order */
    for (int f = 0; f < SM_NCCL_FN_COUNT; f++)
        CHECK(sm_nccl_functions[f].name && !strncmp(sm_nccl_functions[f].name, "nccl", 4));
    CHECK_STR(sm_nccl_functions[SM_NCCL_FN_ALL_REDUCE].name, "ncclAllReduce");
    CHECK_STR(sm_nccl_functions[SM_NCCL_FN_COMM_ABORT].name, "ncclCommAbort");
    CHECK_EQ_U(sm_nccl_functions[SM_NCCL_FN_REDUCE_SCATTER].op, SM_COLL_REDUCE_SCATTER_BLOCK);
}

static void case_bytes(void)
{
    /* 1 MiB of float32: count 262144 */
    CHECK_EQ_U(sm_nccl_bytes(262144, SM_NCCL_FLOAT32), 1048576);
    CHECK_EQ_U(sm_nccl_bytes(65536, SM_NCCL_FLOAT32), 262144);
    CHECK_EQ_U(sm_nccl_bytes(3, SM_NCCL_FLOAT64), 24);
    CHECK_EQ_U(sm_nccl_bytes(7, SM_NCCL_BFLOAT16), 14);
    CHECK_EQ_U(sm_nccl_bytes(7, 99), 0);               /* unknown type */
    CHECK_EQ_U(sm_nccl_bytes(SIZE_MAX, SM_NCCL_INT64), 0); /* overflow */

    uint64_t s, r;
    const uint64_t b = 1048576;
    sm_nccl_coll_bytes(SM_NCCL_FN_ALL_REDUCE, b, -1, 0, 2, &s, &r);
    CHECK_EQ_U(s, b);
    CHECK_EQ_U(r, b);
    sm_nccl_coll_bytes(SM_NCCL_FN_ALL_REDUCE, b, -1, 3, 4, &s, &r);
    CHECK_EQ_U(s, 3 * b);
    CHECK_EQ_U(r, 3 * b);
    sm_nccl_coll_bytes(SM_NCCL_FN_BROADCAST, b, 1, 1, 4, &s, &r); /* the root */
    CHECK_EQ_U(s, 3 * b);
    CHECK_EQ_U(r, 0);
    sm_nccl_coll_bytes(SM_NCCL_FN_BCAST, b, 1, 0, 4, &s, &r);
    CHECK_EQ_U(s, 0);
    CHECK_EQ_U(r, b);
    sm_nccl_coll_bytes(SM_NCCL_FN_REDUCE, b, 0, 0, 3, &s, &r);
    CHECK_EQ_U(s, 0);
    CHECK_EQ_U(r, 2 * b);
    sm_nccl_coll_bytes(SM_NCCL_FN_REDUCE, b, 0, 2, 3, &s, &r);
    CHECK_EQ_U(s, b);
    CHECK_EQ_U(r, 0);
    sm_nccl_coll_bytes(SM_NCCL_FN_GATHER, b, 2, 2, 3, &s, &r);
    CHECK_EQ_U(r, 2 * b);
    sm_nccl_coll_bytes(SM_NCCL_FN_SCATTER, b, 2, 0, 3, &s, &r);
    CHECK_EQ_U(r, b);
    sm_nccl_coll_bytes(SM_NCCL_FN_ALL_GATHER, b, -1, 1, 2, &s, &r);
    CHECK_EQ_U(s, b);
    CHECK_EQ_U(r, b);
    sm_nccl_coll_bytes(SM_NCCL_FN_REDUCE_SCATTER, b, -1, 1, 8, &s, &r);
    CHECK_EQ_U(s, 7 * b);
    CHECK_EQ_U(r, 7 * b);
    /* unknown place or a root outside the communicator: nothing claimed */
    sm_nccl_coll_bytes(SM_NCCL_FN_ALL_REDUCE, b, -1, -1, -1, &s, &r);
    CHECK_EQ_U(s + r, 0);
    sm_nccl_coll_bytes(SM_NCCL_FN_BROADCAST, b, 5, 0, 2, &s, &r);
    CHECK_EQ_U(s + r, 0);
    /* each collective, as every rank counts it: as much sent as received */
    static const sm_nccl_fn_t colls[] = {SM_NCCL_FN_ALL_REDUCE, SM_NCCL_FN_BROADCAST,
                                         SM_NCCL_FN_REDUCE, SM_NCCL_FN_ALL_GATHER,
                                         SM_NCCL_FN_REDUCE_SCATTER, SM_NCCL_FN_ALLTOALL,
                                         SM_NCCL_FN_GATHER, SM_NCCL_FN_SCATTER};
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
        for (int n = 1; n <= 5; n++)
            for (int root = 0; root < n; root++) {
                uint64_t all_s = 0, all_r = 0;
                for (int rank = 0; rank < n; rank++) {
                    sm_nccl_coll_bytes(colls[i], 100, root, rank, n, &s, &r);
                    all_s += s;
                    all_r += r;
                }
                CHECK_EQ_U(all_s, all_r);
                if (n > 1)
                    CHECK(all_s > 0);
            }
}

/* The identity the process computes for unique id `port`, computed in a
 * process of its own: what another rank of the communicator gets. */
static uint64_t id_in_other_process(uint32_t port)
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        sm_nccl_unique_id_t u = unique_id(port);
        uint64_t id = sm_nccl_id_of_unique(&u, 1);
        ssize_t w = write(fd[1], &id, sizeof id);
        _exit(w == (ssize_t)sizeof id ? 0 : 1);
    }
    close(fd[1]);
    uint64_t id = 0;
    if (read(fd[0], &id, sizeof id) != (ssize_t)sizeof id)
        id = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return id;
}

static void case_identities(void)
{
    sm_nccl_unique_id_t a = unique_id(29500), b = unique_id(29501);
    uint64_t ida = sm_nccl_id_of_unique(&a, 1);
    CHECK(ida != 0);
    CHECK(ida <= (uint64_t)INT64_MAX); /* an int64 attribute, never negative */
    CHECK_EQ_U(id_in_other_process(29500), ida); /* the same id in another process */
    CHECK(sm_nccl_id_of_unique(&b, 1) != ida);    /* another communicator */
    sm_nccl_unique_id_t c = a;
    c.internal[127] ^= 1; /* the last byte counts too */
    CHECK(sm_nccl_id_of_unique(&c, 1) != ida);
    /* ncclCommInitRankScalable: all the ids, in order */
    sm_nccl_unique_id_t two[2] = {a, b}, swapped[2] = {b, a};
    CHECK(sm_nccl_id_of_unique(two, 2) != ida);
    CHECK(sm_nccl_id_of_unique(two, 2) != sm_nccl_id_of_unique(swapped, 2));
    CHECK_EQ_U(sm_nccl_id_of_unique(two, 1), ida);
    /* splits: parent, sequence and color */
    uint64_t s0 = sm_nccl_id_of_split(ida, 0, 1);
    CHECK_EQ_U(sm_nccl_id_of_split(ida, 0, 1), s0);
    CHECK(sm_nccl_id_of_split(ida, 0, 2) != s0);
    CHECK(sm_nccl_id_of_split(ida, 1, 1) != s0);
    CHECK(sm_nccl_id_of_split(sm_nccl_id_of_unique(&b, 1), 0, 1) != s0);
    CHECK(s0 != ida);
    CHECK(sm_nccl_id_of_local(77, 0) != sm_nccl_id_of_local(77, 1));
    CHECK(sm_nccl_id_of_local(77, 0) != sm_nccl_id_of_local(78, 0));
    /* the core's key: hashed, neither a team nor MPI's, by vendor */
    sm_comm_key_t k = sm_comm_key_hashed(ida, 0), kamd = sm_comm_key_hashed(ida, 1);
    CHECK(sm_comm_key_is_hashed(k) && sm_comm_key_is_hashed(kamd));
    CHECK(!sm_comm_key_is_team(k));
    CHECK(k.leader != SM_COMM_LEADER_SELF && k.leader != SM_COMM_LEADER_PROCESS);
    CHECK(k.leader >= 0xE0000000u && !(k.leader & SM_COMM_LEADER_HASHED_AMD));
    CHECK(kamd.leader & SM_COMM_LEADER_HASHED_AMD);
    CHECK_EQ_U(kamd.seq, k.seq);
    sm_comm_key_t kb = sm_comm_key_hashed(sm_nccl_id_of_unique(&b, 1), 0);
    CHECK(kb.leader != k.leader || kb.seq != k.seq);
    sm_comm_key_t world = {0, 0}, team = {SM_COMM_LEADER_PROCESS, SM_COMM_SEQ_TEAM | 3};
    CHECK(!sm_comm_key_is_hashed(world) && !sm_comm_key_is_hashed(team));
    char name[64];
    sm_nccl_comm_name(0x1a2b, 0, name, sizeof name);
    CHECK_STR(name, "NCCL communicator 0000000000001a2b");
    sm_nccl_comm_name(0x1a2b, 1, name, sizeof name);
    CHECK_STR(name, "RCCL communicator 0000000000001a2b");
}

static void case_comm_table(void)
{
    sm_nccl_comms_reset();
    static char handles[SM_NCCL_COMMS + 1];
    CHECK(sm_nccl_comm_find(NULL) == NULL);
    CHECK(sm_nccl_comm_find(&handles[0]) == NULL);
    sm_nccl_entry_t *e = sm_nccl_comm_add(&handles[0], 42, 1, 2, SM_COMM_NONE, 0);
    CHECK(e && e->id == 42 && e->rank == 1 && e->nranks == 2 && e->core == SM_COMM_NONE);
    CHECK(sm_nccl_comm_find(&handles[0]) == e);
    CHECK(sm_nccl_comm_find(&handles[1]) == NULL);
    /* destroyed: gone; a new communicator at the same address: the new one */
    sm_nccl_comm_forget(&handles[0]);
    CHECK(sm_nccl_comm_find(&handles[0]) == NULL);
    sm_nccl_entry_t *again = sm_nccl_comm_add(&handles[0], 43, -1, -1, 7, 1);
    CHECK(again == e && again->id == 43 && again->rank == -1 && again->parent == 7 && again->amd);
    CHECK(sm_nccl_comm_find(&handles[0]) == e);
    /* the table fills up: the last one is refused, the others still found */
    int added = 1;
    for (int i = 1; i <= SM_NCCL_COMMS; i++)
        added += sm_nccl_comm_add(&handles[i], (uint64_t)i, 0, 1, SM_COMM_NONE, 0) != NULL;
    CHECK_EQ_U(added, SM_NCCL_COMMS);
    CHECK(sm_nccl_comm_find(&handles[SM_NCCL_COMMS]) == NULL);
    for (int i = 1; i < SM_NCCL_COMMS; i++)
        if (!sm_nccl_comm_find(&handles[i]) || sm_nccl_comm_find(&handles[i])->id != (uint64_t)i) {
            CHECK(!"every communicator entered is found");
            break;
        }
    sm_nccl_comms_reset();
    CHECK(sm_nccl_comm_find(&handles[1]) == NULL);
}

/* One process's definitions as a killed process's journal gives them:
 * one hashed communicator with its members as the process knows them. */
static sm_defset_t *process_defs(sm_comm_key_t key, const uint32_t *members, uint32_t n,
                                 uint32_t rank)
{
    char *strings[1] = {"NCCL communicator test"};
    sm_comm_def_t comm = {.key = key, .name = 0, .size = n, .members = (uint32_t *)members,
                          .parent = SM_COMM_NONE};
    sm_defs_lists_t l;
    memset(&l, 0, sizeof l);
    l.n_strings = 1;
    l.strings = strings;
    l.n_comms = 1;
    l.comms = &comm;
    return sm_defset_from_lists(&l, rank);
}

/* d takes in other's definitions as a parent of the unify tree does. */
static void merge_into(sm_defset_t *d, const sm_defset_t *other)
{
    uint64_t len = 0;
    void *blob = sm_defset_serialize(other, &len);
    CHECK(blob != NULL);
    CHECK_EQ_U(sm_defset_merge_blob(d, blob, len, NULL), 0);
    free(blob);
}

static void case_unify_members(void)
{
    const uint32_t U = SM_COMM_MEMBER_UNKNOWN, S = SM_COMM_MEMBER_SELF;
    sm_comm_key_t key = sm_comm_key_hashed(12345, 0);
    /* world rank 3 is NCCL rank 0, world rank 1 is NCCL rank 1 */
    const uint32_t as_r3[2] = {S, U}, as_r1[2] = {U, S};
    sm_defset_t *d = process_defs(key, as_r3, 2, 3), *o = process_defs(key, as_r1, 2, 1);
    CHECK_EQ_U(sm_defset_comm_count(d), 1);
    const sm_comm_def_t *c = sm_defset_comm_get(d, 0);
    CHECK(c->members && c->members[0] == 3 && c->members[1] == U); /* its own place */
    merge_into(d, o);
    c = sm_defset_comm_get(d, 0);
    CHECK_EQ_U(sm_defset_comm_count(d), 1);
    CHECK(c->members && c->members[0] == 3 && c->members[1] == 1);
    CHECK_STR(sm_defset_string_get(d, c->name), "NCCL communicator test");
    sm_defset_free(d);
    sm_defset_free(o);
    /* the other order, and a third rank whose process left nothing */
    const uint32_t three_r0[3] = {U, S, U}, three_r2[3] = {S, U, U};
    d = process_defs(key, three_r2, 3, 2);
    o = process_defs(key, three_r0, 3, 0);
    merge_into(o, d);
    c = sm_defset_comm_get(o, 0);
    CHECK(c->members && c->members[0] == 2 && c->members[1] == 0 && c->members[2] == U);
    sm_defset_free(d);
    sm_defset_free(o);
    /* not a hashed key: members are taken as they are (an MPI communicator) */
    sm_comm_key_t mpi = {0, 4};
    const uint32_t world[2] = {0, 1};
    d = process_defs(mpi, world, 2, 1);
    c = sm_defset_comm_get(d, 0);
    CHECK(c->members && c->members[0] == 0 && c->members[1] == 1);
    sm_defset_free(d);
}

/* Enter/leave attributes and collective records on this thread. */
typedef struct seen {
    int coll_begin, coll_end, sends, enters_with_comm;
    uint32_t coll_comm;
    uint64_t coll_sent, coll_received, attr_comm, attr_bytes;
} seen_t;

static int collect(const sm_record_t *r, void *arg)
{
    seen_t *s = arg;
    const uint64_t *w = sm_record_payload(r);
    if (r->kind == SM_REC_COLL_BEGIN)
        s->coll_begin++;
    if (r->kind == SM_REC_COLL_END) {
        s->coll_end++;
        s->coll_comm = r->ref;
        s->coll_sent = w[1];
        s->coll_received = w[2];
    }
    if (r->kind == SM_REC_MSG_SEND)
        s->sends++;
    if (r->kind == SM_REC_ENTER && r->aux) {
        const sm_record_attr_t *a = sm_record_payload(r);
        for (uint32_t i = 0; i < r->aux; i++) {
            const char *name = sm_string_get(sm_attribute_get(a[i].attribute)->name);
            if (!strcmp(name, "nccl comm")) {
                s->enters_with_comm++;
                s->attr_comm = a[i].value.raw;
            }
            if (!strcmp(name, "nccl bytes"))
                s->attr_bytes = a[i].value.raw;
        }
    }
    return 0;
}

/* Global definitions read back from the archive: the CUDA communicators'
 * groups (their size and first member) and names. */
typedef struct defs {
    int cuda_locations_groups, mpi_groups, region_cuda, n;
    struct {
        OTF2_GroupRef group;
        uint32_t size;
        uint64_t first;
        char name[128];
    } comm[4];
    char strings[64][128];
} defs_t;

static OTF2_CallbackCode def_string(void *u, OTF2_StringRef self, const char *s)
{
    defs_t *d = u;
    if (self < 64)
        snprintf(d->strings[self], sizeof d->strings[self], "%s", s);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_group(void *u, OTF2_GroupRef self, OTF2_StringRef name,
                                   OTF2_GroupType type, OTF2_Paradigm paradigm,
                                   OTF2_GroupFlag flags, uint32_t n, const uint64_t *members)
{
    (void)flags, (void)name;
    defs_t *d = u;
    if (paradigm == OTF2_PARADIGM_MPI)
        d->mpi_groups++;
    if (paradigm == OTF2_PARADIGM_CUDA && type == OTF2_GROUP_TYPE_COMM_LOCATIONS)
        d->cuda_locations_groups++;
    if (paradigm == OTF2_PARADIGM_CUDA && type == OTF2_GROUP_TYPE_COMM_GROUP && d->n < 4) {
        d->comm[d->n].group = self;
        d->comm[d->n].size = n;
        d->comm[d->n].first = n ? members[0] : UINT64_MAX;
        d->n++;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_comm(void *u, OTF2_CommRef self, OTF2_StringRef name,
                                  OTF2_GroupRef group, OTF2_CommRef parent, OTF2_CommFlag flags)
{
    (void)self, (void)parent, (void)flags;
    defs_t *d = u;
    for (int i = 0; i < d->n; i++)
        if (d->comm[i].group == group && name < 64)
            snprintf(d->comm[i].name, sizeof d->comm[i].name, "%s", d->strings[name]);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_region(void *u, OTF2_RegionRef self, OTF2_StringRef name,
                                    OTF2_StringRef canonical, OTF2_StringRef description,
                                    OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                    OTF2_RegionFlag flags, OTF2_StringRef file, uint32_t begin,
                                    uint32_t end)
{
    (void)self, (void)canonical, (void)description, (void)role, (void)flags, (void)file,
        (void)begin, (void)end;
    defs_t *d = u;
    if (name < 64 && !strcmp(d->strings[name], "ncclAllReduce") && paradigm == OTF2_PARADIGM_CUDA)
        d->region_cuda = 1;
    return OTF2_CALLBACK_SUCCESS;
}

/* The CUDA communicator named name, or NULL. */
static const void *comm_named(const defs_t *d, const char *name, uint32_t *size, uint64_t *first)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->comm[i].name, name)) {
            *size = d->comm[i].size;
            *first = d->comm[i].first;
            return &d->comm[i];
        }
    return NULL;
}

static void read_defs(const char *dir, defs_t *d)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/traces.otf2", dir);
    OTF2_Reader *r = OTF2_Reader_Open(path);
    CHECK(r != NULL);
    if (!r)
        return;
    OTF2_Reader_SetSerialCollectiveCallbacks(r);
    OTF2_GlobalDefReader *g = OTF2_Reader_GetGlobalDefReader(r);
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, def_string);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, def_comm);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, def_region);
    OTF2_Reader_RegisterGlobalDefCallbacks(r, g, cb, d);
    uint64_t n = 0;
    CHECK(OTF2_Reader_ReadAllGlobalDefinitions(r, g, &n) == OTF2_SUCCESS);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    OTF2_Reader_Close(r);
}

/* Through the adapter table as libsysmeasure-nccl.so uses it, in a process
 * that is NCCL rank 1 of 2 (its peer's process left nothing here): the
 * region with its attributes, the collective on the hashed communicator,
 * and the archive's CUDA communicator holding this process alone.  Last:
 * it ends the run. */
static void case_archive(void)
{
    char dir[] = "/tmp/sm-test-nccl-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    setenv("SYSMEASURE_OUTPUT", dir, 1);
    setenv("SYSMEASURE_OTF2_BACKGROUND", "no", 1);
    unsetenv("SYSMEASURE_ENABLE");
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    CHECK(api && SM_ADAPTER_API_HAS(api, string_define));
    if (!api || !SM_ADAPTER_API_HAS(api, string_define))
        return;
    CHECK_EQ_U(api->string_define("float32"), SM_INVALID_ID); /* core not up */
    CHECK_EQ_U(api->runtime_init_forced(), 0);
    uint32_t f32 = api->string_define("float32");
    CHECK(f32 != SM_INVALID_ID);
    CHECK_EQ_U(api->string_define("float32"), f32);
    CHECK_STR(sm_string_get(f32), "float32");

    sm_nccl_unique_id_t u = unique_id(29500);
    uint64_t id = sm_nccl_id_of_unique(&u, 1);
    const uint32_t mine[2] = {SM_COMM_MEMBER_UNKNOWN, SM_COMM_MEMBER_SELF};
    char name[64];
    sm_nccl_comm_name(id, 0, name, sizeof name);
    uint32_t comm = api->comm_define(sm_comm_key_hashed(id, 0), name, 2, mine, SM_COMM_NONE);
    CHECK(comm != SM_COMM_NONE);
    /* a second rank of it in this process (ncclCommInitAll): defining it
     * again adds that place */
    const uint32_t also[2] = {SM_COMM_MEMBER_SELF, SM_COMM_MEMBER_UNKNOWN};
    CHECK_EQ_U(api->comm_define(sm_comm_key_hashed(id, 0), name, 2, also, SM_COMM_NONE), comm);
    const sm_comm_def_t *def = sm_comm_get(comm);
    CHECK(def->members && def->members[0] == SM_COMM_MEMBER_SELF &&
          def->members[1] == SM_COMM_MEMBER_SELF);

    sm_region_id_t r = api->region_define("ncclAllReduce", NULL, 0, SM_PARADIGM_NCCL,
                                          SM_ROLE_COLLECTIVE);
    sm_adapter_attr_t attrs[2] = {
        {api->attribute_define("nccl comm", SM_ATTR_INT64), id},
        {api->attribute_define("nccl bytes", SM_ATTR_INT64), 1048576}};
    api->enter_attrs(r, attrs, 2);
    api->coll_begin();
    api->coll_end(SM_COLL_ALLREDUCE, comm, SM_NO_ROOT, 1048576, 1048576);
    api->leave(r);
    sm_region_id_t send = api->region_define("ncclSend", NULL, 0, SM_PARADIGM_NCCL,
                                             SM_ROLE_POINT2POINT);
    api->enter(send);
    api->msg_send(comm, 0, 0, 4096, UINT32_MAX);
    api->leave(send);

    seen_t s;
    memset(&s, 0, sizeof s);
    sm_buffer_for_each(sm_location_current(), collect, &s);
    CHECK_EQ_U(s.coll_begin, 1);
    CHECK_EQ_U(s.coll_end, 1);
    CHECK_EQ_U(s.coll_comm, comm);
    CHECK_EQ_U(s.coll_sent, 1048576);
    CHECK_EQ_U(s.coll_received, 1048576);
    CHECK_EQ_U(s.sends, 1);
    CHECK_EQ_U(s.enters_with_comm, 1);
    CHECK_EQ_U(s.attr_comm, id);
    CHECK_EQ_U(s.attr_bytes, 1048576);

    /* a communicator of which this process holds rank 1 only */
    sm_nccl_unique_id_t u2 = unique_id(29600);
    uint64_t id2 = sm_nccl_id_of_unique(&u2, 1);
    char name2[64];
    sm_nccl_comm_name(id2, 0, name2, sizeof name2);
    CHECK(api->comm_define(sm_comm_key_hashed(id2, 0), name2, 2, mine, SM_COMM_NONE) !=
          SM_COMM_NONE);

    sm_runtime_finalize();
    defs_t d;
    memset(&d, 0, sizeof d);
    read_defs(dir, &d);
    CHECK_EQ_U(d.cuda_locations_groups, 1); /* "NCCL ranks" */
    CHECK_EQ_U(d.n, 2);
    CHECK_EQ_U(d.mpi_groups, 0); /* not MPI communicators */
    uint32_t size = 0;
    uint64_t first = 0;
    /* both ranks are this process (rank 0) */
    CHECK(comm_named(&d, name, &size, &first) != NULL);
    CHECK_EQ_U(size, 2);
    CHECK_EQ_U(first, 0);
    /* rank 0's process left nothing: only this one */
    CHECK(comm_named(&d, name2, &size, &first) != NULL);
    CHECK_EQ_U(size, 1);
    CHECK_EQ_U(first, 0);
    CHECK(d.region_cuda);
    if (!getenv("SM_TEST_KEEP_OUTPUT")) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
}

int main(void)
{
    case_types_and_ops();
    case_bytes();
    case_identities();
    case_comm_table();
    case_unify_members();
    case_archive();
    return UNIT_RESULT();
}
