/* The synthetic job of the scale harness (sim_job.h). */
#define _GNU_SOURCE
#include "sim_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/event_record.h"
#include "finalize/comm_pairs.h"
#include "merge/profile_reduce.h"
#include "sim_procs.h"
#include "util/bytes.h"
#include "util/hash.h"
#include "writers/writers.h"

_Static_assert(SIM_CATALOGUE - SIM_G_SKELETON == 229, "the random part's size is a prime");

/* ---------------------------------------------------------------- numbers */

static uint64_t sim_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t sim_h(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return sim_mix(seed ^ sim_mix(a ^ sim_mix(b ^ sim_mix(c ^ sim_mix(d)))));
}

/* ---------------------------------------------------------------- regions */

static const char *const sim_skeleton[SIM_G_SKELETON] = {
    "main", "init", "solve", "exchange", "finalize", "MPI_Init", "MPI_Send", "MPI_Recv",
    "MPI_Allreduce", "MPI_Barrier", "MPI_Finalize"};
static const char *const sim_skeleton_file[SIM_G_SKELETON] = {
    "app.c", "app.c", "solver.c", "halo.c", "app.c", NULL, NULL, NULL, NULL, NULL, NULL};

static bool sim_is_mpi(uint32_t g)
{
    return g >= SIM_G_MPI_INIT && g <= SIM_G_MPI_FINALIZE;
}

const char *sim_region_name(uint32_t g, char *buf, size_t size)
{
    if (g < SIM_G_SKELETON)
        return sim_skeleton[g];
    if (g < SIM_G_ROLES)
        snprintf(buf, size, "kernel_%02u", (unsigned)(g - SIM_G_KERNELS));
    else if (g < SIM_G_OWN)
        snprintf(buf, size, "role_%02u", (unsigned)(g - SIM_G_ROLES));
    else
        snprintf(buf, size, "rank_%u_io", (unsigned)(g - SIM_G_OWN));
    return buf;
}

const char *sim_region_file(uint32_t g)
{
    return g < SIM_G_SKELETON ? sim_skeleton_file[g]
           : g < SIM_G_ROLES  ? "kernels.c"
           : g < SIM_G_OWN    ? "roles.c"
                              : "io.c";
}

uint32_t sim_region_line(uint32_t g)
{
    return g < SIM_G_SKELETON ? (sim_is_mpi(g) ? 0 : 10 * (g + 1))
           : g < SIM_G_ROLES  ? 100 + 10 * (g - SIM_G_KERNELS)
           : g < SIM_G_OWN    ? 500 + 10 * (g - SIM_G_ROLES)
                              : g - SIM_G_OWN + 1;
}

uint8_t sim_region_paradigm(uint32_t g)
{
    return sim_is_mpi(g) ? SM_PARADIGM_MPI
           : g >= SIM_G_KERNELS && g < SIM_G_ROLES ? SM_PARADIGM_COMPILER
                                                   : SM_PARADIGM_USER;
}

static uint8_t sim_region_role(uint32_t g)
{
    if (g == SIM_G_MPI_SEND || g == SIM_G_MPI_RECV)
        return SM_ROLE_POINT2POINT;
    if (sim_is_mpi(g))
        return g == SIM_G_MPI_INIT || g == SIM_G_MPI_FINALIZE ? SM_ROLE_WRAPPER
                                                              : SM_ROLE_COLLECTIVE;
    return g >= SIM_G_KERNELS && g < SIM_G_ROLES ? SM_ROLE_FUNCTION : SM_ROLE_CODE;
}

bool sim_rank_has_own(uint32_t r)
{
    return r % SIM_OWN_EVERY == 5;
}

static bool sim_job_has_own(const sim_job_t *job, uint32_t r)
{
    return !job->bounded && sim_rank_has_own(r);
}

static bool sim_has_role(const sim_job_t *job, uint32_t r, uint32_t k)
{
    return sim_h(job->seed, r, k, 'R', 0) % 8 == 0;
}

uint32_t sim_rank_threads(const sim_job_t *job, uint32_t r)
{
    return 1 + (uint32_t)(sim_h(job->seed, r, 0, 'T', 0) % 2);
}

uint32_t sim_rank_regions(const sim_job_t *job, uint32_t r, uint32_t *out)
{
    uint32_t all[SIM_G_OWN + 1], n = 0;
    for (uint32_t g = 0; g < SIM_G_ROLES; g++)
        all[n++] = g;
    for (uint32_t k = 0; k < SIM_N_ROLES; k++)
        if (sim_has_role(job, r, k))
            all[n++] = SIM_G_ROLES + k;
    if (sim_job_has_own(job, r))
        all[n++] = SIM_G_OWN + r;
    /* Each rank its own order: its ids differ from the others'. */
    uint32_t shift = (r * 7u) % n;
    for (uint32_t i = 0; i < n; i++)
        out[i] = all[(i + shift) % n];
    return n;
}

/* ---------------------------------------------------------------- the job */

int sim_job_init(sim_job_t *job, uint32_t n_ranks, uint64_t seed)
{
    memset(job, 0, sizeof *job);
    job->n_ranks = n_ranks;
    job->seed = seed;
    job->planted[0] = n_ranks / 3;
    job->planted[1] = n_ranks >= 2 ? n_ranks - 2 : 0;

    /* The catalogue: the skeleton, then random paths (a parent always
     * before its children). */
    static const struct { int32_t parent; uint32_t region; } skel[SIM_G_SKELETON] = {
        {-1, SIM_G_MAIN},     {0, SIM_G_INIT},          {1, SIM_G_MPI_INIT},
        {0, SIM_G_SOLVE},     {3, SIM_G_MPI_ALLREDUCE}, {0, SIM_G_EXCHANGE},
        {5, SIM_G_MPI_SEND},  {5, SIM_G_MPI_RECV},      {0, SIM_G_FINALIZE},
        {8, SIM_G_MPI_BARRIER}, {8, SIM_G_MPI_FINALIZE}};
    for (uint32_t i = 0; i < SIM_G_SKELETON; i++) {
        job->paths[i].parent = skel[i].parent;
        job->paths[i].region = skel[i].region;
        job->paths[i].depth = skel[i].parent < 0 ? 1 : job->paths[skel[i].parent].depth + 1;
    }
    uint64_t state = seed;
    for (uint32_t i = SIM_G_SKELETON; i < SIM_CATALOGUE;) {
        uint64_t x = sim_mix(state++);
        uint32_t p = (uint32_t)(x % i);
        const sim_path_t *pp = &job->paths[p];
        if (pp->depth >= SIM_MAX_DEPTH || sim_is_mpi(pp->region))
            continue;
        uint32_t g = (x >> 32) % 4 ? SIM_G_KERNELS + (uint32_t)((x >> 40) % SIM_N_KERNELS)
                                   : SIM_G_ROLES + (uint32_t)((x >> 40) % SIM_N_ROLES);
        bool clash = false;
        for (int32_t a = (int32_t)p; a >= 0 && !clash; a = job->paths[a].parent)
            clash = job->paths[a].region == g; /* no recursion */
        for (uint32_t c = 0; c < i && !clash; c++)
            clash = job->paths[c].parent == (int32_t)p && job->paths[c].region == g;
        if (clash)
            continue;
        job->paths[i] = (sim_path_t){.parent = (int32_t)p, .region = g, .depth = pp->depth + 1};
        i++;
    }

    for (uint32_t c = 0; c < 4 && c < n_ranks; c++) {
        job->split_size[c] = (n_ranks - c + 3) / 4;
        job->split_members[c] = malloc(sizeof(uint32_t) * job->split_size[c]);
        if (!job->split_members[c])
            return -1;
        for (uint32_t i = 0; i < job->split_size[c]; i++)
            job->split_members[c][i] = c + 4 * i;
    }
    return 0;
}

void sim_job_free(sim_job_t *job)
{
    for (uint32_t c = 0; c < 4; c++)
        free(job->split_members[c]);
    sm_defset_free(job->global);
    sm_profile_summary_free(job->summary);
    for (uint32_t r = 0; job->all_maps && r < job->n_ranks; r++)
        sm_id_maps_free(&job->all_maps[r]);
    free(job->all_maps);
    memset(job, 0, sizeof *job);
}

/* ---------------------------------------------------------------- profiles */

static uint32_t sim_path_region(const sim_job_t *job, uint32_t r, uint32_t c)
{
    return c == SIM_PATH_OWN ? SIM_G_OWN + r : job->paths[c].region;
}

void sim_thread_paths(const sim_job_t *job, uint32_t r, uint32_t t, bool *sel)
{
    memset(sel, 0, SIM_CATALOGUE + 1);
    uint64_t h = sim_h(job->seed, r, t, 'P', 0);
    uint32_t target, count = 0;
    if (t == 0) {
        for (uint32_t i = 0; i < SIM_G_SKELETON; i++)
            sel[i] = true;
        count = SIM_G_SKELETON;
        target = 20 + (uint32_t)(h % 181);
    } else {
        sel[0] = sel[SIM_PATH_SOLVE] = true;
        count = 2;
        target = 20 + (uint32_t)(h % 101);
    }
    const uint32_t span = SIM_CATALOGUE - SIM_G_SKELETON;
    uint32_t start = (uint32_t)((h >> 20) % span), stride = 1 + (uint32_t)((h >> 40) % (span - 1));
    for (uint32_t i = 0; i < span && count < target; i++) {
        uint32_t idx = SIM_G_SKELETON + (uint32_t)((start + (uint64_t)i * stride) % span);
        uint32_t add = 0;
        bool ok = true;
        for (int32_t p = (int32_t)idx; p >= 0 && !sel[p] && ok; p = job->paths[p].parent) {
            uint32_t g = job->paths[p].region;
            ok = g < SIM_G_ROLES || sim_has_role(job, r, g - SIM_G_ROLES);
            add++;
        }
        if (!ok || count + add > target)
            continue;
        for (int32_t p = (int32_t)idx; p >= 0 && !sel[p]; p = job->paths[p].parent)
            sel[p] = true;
        count += add;
    }
    if (t == 0 && sim_job_has_own(job, r))
        sel[SIM_PATH_OWN] = true;
}

void sim_thread_values(const sim_job_t *job, uint32_t r, uint32_t t, const bool *sel,
                       sim_values_t *v)
{
    memset(v, 0, sizeof *v * (SIM_CATALOGUE + 1));
    bool planted = r == job->planted[0] || r == job->planted[1];
    for (uint32_t c = 0; c <= SIM_CATALOGUE; c++) {
        if (!sel[c])
            continue;
        uint64_t h = sim_h(job->seed, r, t, c, 'V');
        uint64_t visits = 1 + h % 40, each = 1000 + (h >> 16) % 200000;
        if (c == SIM_PATH_SOLVE) {
            visits = SIM_SOLVE_VISITS;
            each = (2000000 + (h >> 16) % 10000) * (planted ? SIM_PLANTED_FACTOR : 1);
        }
        v[c].visits = visits;
        v[c].excl = visits * each;
        uint32_t g = sim_path_region(job, r, c);
        if (g == SIM_G_MPI_SEND)
            v[c].sent = visits * 8192;
        else if (g == SIM_G_MPI_RECV)
            v[c].received = visits * 8192;
        else if (g == SIM_G_MPI_ALLREDUCE)
            v[c].sent = v[c].received = visits * 64;
    }
    /* Children come after their parents: inclusive times bottom-up. */
    for (uint32_t c = SIM_CATALOGUE + 1; c-- > 0;) {
        if (!sel[c])
            continue;
        v[c].incl += v[c].excl;
        int32_t parent = c == SIM_PATH_OWN ? 0 : job->paths[c].parent;
        if (parent >= 0)
            v[parent].incl += v[c].incl;
    }
}

/* The statistics of n visits summing to total, as even as integers go. */
static void sim_stat_fill(sm_stat_t *s, uint64_t total, uint64_t n)
{
    uint64_t q = total / n, rem = total % n;
    s->sum = total;
    s->min = q;
    s->max = q + rem;
    s->sumsq = (unsigned __int128)(q + rem) * (q + rem) + (unsigned __int128)q * q * (n - 1);
}

/* Rank r's call trees in its own region ids, as the runtime would hold
 * them at the end. */
typedef struct sim_threads {
    uint32_t n;
    sm_profile_t prof[2];
    sm_summary_thread_t th[2];
    sm_region_id_t creation[1];
} sim_threads_t;

static void sim_threads_make(const sim_job_t *job, uint32_t r, sim_threads_t *st)
{
    uint32_t regions[SIM_G_OWN + 1];
    uint32_t n = sim_rank_regions(job, r, regions);
    uint32_t local[SIM_G_OWN + 1];
    for (uint32_t i = 0; i < n; i++)
        local[regions[i] < SIM_G_OWN ? regions[i] : SIM_G_OWN] = i;
    bool sel[SIM_CATALOGUE + 1];
    sim_values_t v[SIM_CATALOGUE + 1];
    sm_profile_node_t *node[SIM_CATALOGUE + 1];
    st->n = sim_rank_threads(job, r);
    st->creation[0] = local[SIM_G_MAIN];
    for (uint32_t t = 0; t < st->n; t++) {
        sm_profile_t *p = &st->prof[t];
        sm_profile_init(p);
        sim_thread_paths(job, r, t, sel);
        sim_thread_values(job, r, t, sel, v);
        for (uint32_t c = 0; c <= SIM_CATALOGUE; c++) {
            if (!sel[c])
                continue;
            int32_t parent = c == SIM_PATH_OWN ? 0 : job->paths[c].parent;
            uint32_t g = sim_path_region(job, r, c);
            sm_profile_node_t *x = sm_profile_child(p, parent < 0 ? &p->root : node[parent],
                                                    local[g < SIM_G_OWN ? g : SIM_G_OWN]);
            node[c] = x;
            x->visits = v[c].visits;
            sim_stat_fill(&x->incl, v[c].incl, v[c].visits);
            sim_stat_fill(&x->excl, v[c].excl, v[c].visits);
            x->bytes_sent = v[c].sent;
            x->bytes_received = v[c].received;
        }
        st->th[t] = (sm_summary_thread_t){
            .location = t,
            .name = t ? "Thread 1" : "Thread 0 (main)",
            .creator = t ? 0 : SM_INVALID_ID,
            .creator_depth = t ? 1 : 0,
            .creator_path = t ? st->creation : NULL,
            .root = &p->root,
        };
    }
}

static void sim_threads_free(sim_threads_t *st)
{
    for (uint32_t t = 0; t < st->n; t++)
        sm_profile_free(&st->prof[t]);
}

/* ---------------------------------------------------------------- definitions */

uint32_t sim_rank_comms(const sim_job_t *job, uint32_t r, sim_comm_t *out)
{
    uint32_t n = 0, P = job->n_ranks;
    out[n++] = (sim_comm_t){.key = {SM_COMM_LEADER_SELF, 0}, .name = "MPI_COMM_SELF", .size = 1,
                            .parent = SM_COMM_NONE};
    out[n++] = (sim_comm_t){.key = {0, 0}, .name = "MPI_COMM_WORLD", .size = P,
                            .parent = SM_COMM_NONE};
    out[n++] = (sim_comm_t){.key = {r % 4, 1}, .name = "split_mod4",
                            .size = job->split_size[r % 4],
                            .members = job->split_members[r % 4], .parent = 1};
    if ((r | 1) < P && !job->bounded) {
        out[n] = (sim_comm_t){.key = {r & ~1u, 2}, .name = "pair_a", .size = 2, .parent = 1,
                              .pair = {r & ~1u, r | 1}};
        n++;
    }
    if ((r | 2) < P && !job->bounded) {
        out[n] = (sim_comm_t){.key = {r & ~2u, 3}, .name = "pair_b", .size = 2, .parent = 1,
                              .pair = {r & ~2u, r | 2}};
        n++;
    }
    if (sim_rank_threads(job, r) == 2 && !job->bounded) {
        out[n] = (sim_comm_t){.key = {SM_COMM_LEADER_PROCESS, SM_COMM_SEQ_TEAM}, .name =
                              "OpenMP team", .size = 2, .parent = SM_COMM_NONE, .pair = {0, 1}};
        n++;
    }
    for (uint32_t i = 0; i < n; i++)
        if (out[i].pair[1])
            out[i].members = out[i].pair;
    return n;
}

/* A rank's tables, as the core would hold them. */
#define SIM_MAX_STRINGS 256
typedef struct sim_lists {
    sm_defs_lists_t l;
    char *strings[SIM_MAX_STRINGS];
    uint32_t index[2 * SIM_MAX_STRINGS]; /* id + 1 */
    char arena[8192];
    size_t used;
    sm_region_def_t regions[SIM_G_OWN + 1];
    sm_comm_def_t comms[6];
    sim_comm_t sc[6];
    sm_named_metric_def_t metrics[3];
    sm_attribute_def_t attributes[1];
} sim_lists_t;

static uint32_t sim_string(sim_lists_t *s, const char *str)
{
    if (!str)
        return SM_INVALID_ID;
    size_t len = strlen(str);
    uint32_t mask = 2 * SIM_MAX_STRINGS - 1, i = (uint32_t)sm_fnv(str, len, SM_FNV_START) & mask;
    for (; s->index[i]; i = (i + 1) & mask)
        if (!strcmp(s->strings[s->index[i] - 1], str))
            return s->index[i] - 1;
    if (s->l.n_strings == SIM_MAX_STRINGS || s->used + len + 1 > sizeof s->arena)
        abort(); /* (the synthetic data is far smaller) */
    char *copy = memcpy(s->arena + s->used, str, len + 1);
    s->used += len + 1;
    s->strings[s->l.n_strings] = copy;
    s->index[i] = ++s->l.n_strings;
    return s->l.n_strings - 1;
}

static void sim_lists_make(const sim_job_t *job, uint32_t r, sim_lists_t *s)
{
    memset(&s->l, 0, sizeof s->l);
    memset(s->index, 0, sizeof s->index);
    s->used = 0;
    s->l.strings = s->strings;
    s->l.regions = s->regions;
    s->l.comms = s->comms;
    s->l.metrics = s->metrics;
    s->l.attributes = s->attributes;
    uint32_t g[SIM_G_OWN + 1];
    uint32_t n = sim_rank_regions(job, r, g);
    char buf[64];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t name = sim_string(s, sim_region_name(g[i], buf, sizeof buf));
        s->regions[i] = (sm_region_def_t){.name = name,
                                          .file = sim_string(s, sim_region_file(g[i])),
                                          .line = sim_region_line(g[i]),
                                          .paradigm = sim_region_paradigm(g[i]),
                                          .role = sim_region_role(g[i])};
    }
    s->l.n_regions = n;
    s->l.n_comms = sim_rank_comms(job, r, s->sc);
    for (uint32_t i = 0; i < s->l.n_comms; i++) {
        const sim_comm_t *c = &s->sc[i];
        s->comms[i] = (sm_comm_def_t){.key = c->key, .name = sim_string(s, c->name),
                                      .size = c->size, .members = (uint32_t *)c->members,
                                      .parent = c->parent};
    }
    s->metrics[s->l.n_metrics++] = (sm_named_metric_def_t){
        sim_string(s, "memory_rss"), sim_string(s, "bytes"), SM_METRIC_SAMPLED};
    s->metrics[s->l.n_metrics++] = (sm_named_metric_def_t){
        sim_string(s, "io_bytes"), sim_string(s, "bytes"), SM_METRIC_SAMPLED};
    if (r % 2 == 0)
        s->metrics[s->l.n_metrics++] = (sm_named_metric_def_t){
            sim_string(s, "gpu_power"), sim_string(s, "W"), SM_METRIC_SAMPLED};
    s->attributes[s->l.n_attributes++] = (sm_attribute_def_t){sim_string(s, "msg_tag"), 0};
}

sm_defset_t *sim_rank_defset(const sim_job_t *job, uint32_t r)
{
    sim_lists_t *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    sim_lists_make(job, r, s);
    sm_defset_t *d = sm_defset_from_lists(&s->l, r);
    free(s);
    return d;
}

/* ---------------------------------------------------------------- the exchange */

sm_profile_summary_t *sim_profile_step(const sm_procs_t *procs, const void *blob, uint64_t len,
                                       uint32_t n_ranks)
{
    /* The live end's own step (src/finalize/pipeline.c): the profiles
     * reduced up the tree (src/merge/profile_reduce.c). */
    return sm_profiles_reduce(procs, blob, blob ? len : 0, n_ranks);
}

/* The other exchanges of live.c's sm_finalize_live, with the sizes it
 * uses: the all-reduce of "unusable", the gather of every process's
 * sm_job_process_t, the communication matrix (its pairs up the tree,
 * src/finalize/comm_pairs.c, checked at rank 0), the run totals, and the tree gather
 * of the named metrics (the size of sm_metrics_serialize's blob for three
 * metrics). */
static int sim_live_replay(const sm_procs_t *procs)
{
    uint32_t n = procs->size, r = procs->rank;
    int failures = 0;
    uint64_t unusable = 0;
    failures += procs->allreduce_max_u64(procs->ctx, &unusable, 1) != 0;

    sm_job_process_t me = {.rank = r, .pid = 1000 + (int64_t)r};
    snprintf(me.hostname, sizeof me.hostname, "node%05u", r / 64);
    sm_job_process_t *all = r == 0 ? calloc(n, sizeof *all) : NULL;
    failures += procs->gather(procs->ctx, 0, &me, sizeof me, all) != 0;

    /* Each rank sends 100 messages of 8 KiB to ranks r^1 and r^2: rank 0
     * must hold exactly those pairs, in order, and nothing of P x P. */
    sm_comm_pair_t sends[2];
    uint32_t n_mine = 0;
    uint32_t peers[2] = {r ^ 1u, r ^ 2u};
    for (int k = 0; k < 2; k++)
        if (peers[k] < n)
            sends[n_mine++] = (sm_comm_pair_t){r, peers[k], 100, 819200};
    sm_comm_pair_t *pairs = NULL;
    uint64_t n_pairs = 0;
    failures += sm_comm_pairs_gather(procs, sends, n_mine, &pairs, &n_pairs) != 0;
    if (r == 0) {
        uint64_t want = 0;
        for (uint32_t i = 0; i < n; i++)
            want += ((i ^ 1u) < n) + ((i ^ 2u) < n);
        failures += n_pairs != want;
        for (uint64_t i = 1; i < n_pairs; i++)
            failures += pairs[i - 1].sender > pairs[i].sender ||
                        (pairs[i - 1].sender == pairs[i].sender &&
                         pairs[i - 1].receiver >= pairs[i].receiver);
    }
    free(pairs);

    uint64_t v4[4] = {0}, first = 0, records[2 * SM_REC_KIND_COUNT] = {0}, most = 0, v6[6] = {0};
    failures += procs->allreduce_sum_u64(procs->ctx, v4, 4) != 0;
    failures += procs->allreduce_max_u64(procs->ctx, &first, 1) != 0;
    failures += procs->allreduce_sum_u64(procs->ctx, records, 2 * SM_REC_KIND_COUNT) != 0;
    failures += procs->allreduce_max_u64(procs->ctx, &most, 1) != 0;
    failures += procs->allreduce_sum_u64(procs->ctx, v6, 6) != 0;

    sm_wbuf_t w = {0};
    static const char *const names[3][2] = {
        {"memory_rss", "bytes"}, {"io_bytes", "bytes"}, {"gpu_power", "W"}};
    sm_put_u32(&w, 3);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 2; k++) {
            sm_put_u32(&w, (uint32_t)strlen(names[i][k]));
            sm_put_bytes(&w, names[i][k], strlen(names[i][k]));
        }
        for (int k = 0; k < 5; k++)
            sm_put_u64(&w, (uint64_t)(r + 1) * (uint64_t)(k + 1));
    }
    uint64_t mlen = 0, glen = 0;
    void *mine = sm_wbuf_finish(&w, &mlen), *gathered = NULL;
    failures += sm_tree_gather(procs, mine ? mine : "", mine ? mlen : 0, &gathered, &glen) != 0;
    free(mine);
    free(gathered);
    free(all);
    return failures;
}

void sim_job_rank(const sm_procs_t *procs, void *arg)
{
    sim_job_t *job = arg;
    uint32_t r = procs->rank;

    /* 1. The definitions: the process's tables as a set (what sm_unify's
     * sm_defset_from_process does), unified. */
    sim_phase(SIM_PH_UNIFY, "unify");
    sim_untimed_begin();
    sim_lists_t *lists = malloc(sizeof *lists);
    if (lists)
        sim_lists_make(job, r, lists);
    sim_untimed_end();
    sm_defset_t *local = lists ? sm_defset_from_lists(&lists->l, r) : NULL;
    sim_untimed_begin();
    free(lists);
    sim_untimed_end();
    sm_id_maps_t maps = {0};
    sm_defset_t *global = NULL;
    int unified = sm_unify_set(procs, local, job->scope, &global, &maps);
    sm_defset_free(local);
    if (unified != 0)
        job->failures++;
    if (r == 0)
        job->global = global;
    else
        sm_defset_free(global);

    if (job->unify_only) {
        sm_id_maps_free(&maps);
        return;
    }

    /* 2. The profiles: this rank's summary in the job's region ids, then
     * the step that makes the job's summary at rank 0. */
    sim_phase(SIM_PH_PROFILES, "profiles");
    sim_untimed_begin();
    sim_threads_t *threads = malloc(sizeof *threads);
    if (threads)
        sim_threads_make(job, r, threads);
    sim_untimed_end();
    sm_profile_summary_t *mine =
        threads ? sm_profile_summary_from_threads(threads->th, threads->n, 1.0) : NULL;
    uint64_t len = 0;
    void *blob = mine ? sm_profile_summary_serialize(mine, unified == 0 ? &maps : NULL, r, &len)
                      : NULL;
    sm_profile_summary_free(mine);
    sim_untimed_begin();
    if (threads)
        sim_threads_free(threads);
    free(threads);
    sim_untimed_end();
    if (!blob)
        job->failures++;
    if (r == 0)
        job->root_blob_bytes = len;
    sm_profile_summary_t *s = sim_profile_step(procs, blob, len, procs->size);
    free(blob);
    if (r == 0) {
        job->summary = s;
        if (!s)
            job->failures++;
    }

    /* 3. What else live.c exchanges. */
    if (job->live) {
        sim_phase(SIM_PH_LIVE, "live.c's other collectives");
        if (sim_live_replay(procs) != 0)
            job->failures++;
    }

    if (job->keep_maps && job->all_maps)
        job->all_maps[r] = maps;
    else
        sm_id_maps_free(&maps);
}
