/* The end-of-run exchange of 4,096 simulated ranks (tests/sim/): the real
 * unification and profile step run on synthetic per-rank data, and the job's
 * summary and unified definitions are checked against a direct computation
 * from that data: per call path the visits and the inclusive/exclusive
 * times across threads and across ranks (n, mean, min and max with who holds
 * them, stddev), bytes, the planted imbalance named; every rank's maps send
 * its ids to entries of the same content; each communicator unified once.
 * Only the summary's public accessors are used (sm_cpath_spread_*, the tree
 * of paths), so the test holds whatever the summary keeps inside. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../sim/sim_job.h"
#include "../sim/sim_procs.h"
#include "unit.h"

#define RANKS 4096u
#define SEED 4099u

static sim_job_t job;
static sim_stats_t stats;
static int run_rc = -1;

/* ---------------------------------------------------------------- the direct computation */

/* A spread over values in the order given (members, then ranks), ties to
 * the first: the documented rule of sm_spread_t. */
typedef struct expect {
    uint32_t n;
    unsigned __int128 sum, sumsq;
    uint64_t min, max;
    /* who holds min and max: a rank, and for the across-threads spreads
     * the thread's location on it (SM_INVALID_ID across ranks) */
    uint32_t min_who, max_who, min_loc, max_loc;
} expect_t;

enum { E_VISITS, E_INCL, E_EXCL, E_R_VISITS, E_R_INCL, E_R_EXCL, E_R_SENT, E_R_RECV, E_KINDS };

/* Catalogue paths, then each rank's own path (main/rank_R_io). */
#define N_OWN ((RANKS + SIM_OWN_EVERY - 6) / SIM_OWN_EVERY)
#define N_IDS (SIM_CATALOGUE + N_OWN)
static expect_t expected[N_IDS][E_KINDS];
static bool seen[N_IDS];

static void expect_add(expect_t *e, uint64_t x, uint32_t who, uint32_t loc)
{
    if (e->n == 0 || x < e->min) {
        e->min = x;
        e->min_who = who;
        e->min_loc = loc;
    }
    if (e->n == 0 || x > e->max) {
        e->max = x;
        e->max_who = who;
        e->max_loc = loc;
    }
    e->n++;
    e->sum += x;
    e->sumsq += (unsigned __int128)x * x;
}

static uint32_t own_id(uint32_t r)
{
    return SIM_CATALOGUE + r / SIM_OWN_EVERY;
}

static void compute_expected(void)
{
    static bool sel[2][SIM_CATALOGUE + 1];
    static sim_values_t v[2][SIM_CATALOGUE + 1];
    uint32_t member = 0;
    for (uint32_t r = 0; r < RANKS; r++) {
        uint32_t nt = sim_rank_threads(&job, r);
        for (uint32_t t = 0; t < nt; t++) {
            sim_thread_paths(&job, r, t, sel[t]);
            sim_thread_values(&job, r, t, sel[t], v[t]);
        }
        for (uint32_t c = 0; c <= SIM_CATALOGUE; c++) {
            uint32_t id = c == SIM_PATH_OWN ? own_id(r) : c;
            sim_values_t tot = {0};
            bool any = false;
            for (uint32_t t = 0; t < nt; t++) {
                if (!sel[t][c])
                    continue;
                any = true;
                expect_add(&expected[id][E_VISITS], v[t][c].visits, r, t);
                expect_add(&expected[id][E_INCL], v[t][c].incl, r, t);
                expect_add(&expected[id][E_EXCL], v[t][c].excl, r, t);
                tot.visits += v[t][c].visits;
                tot.incl += v[t][c].incl;
                tot.excl += v[t][c].excl;
                tot.sent += v[t][c].sent;
                tot.received += v[t][c].received;
            }
            if (!any)
                continue;
            seen[id] = true;
            expect_add(&expected[id][E_R_VISITS], tot.visits, r, SM_INVALID_ID);
            expect_add(&expected[id][E_R_INCL], tot.incl, r, SM_INVALID_ID);
            expect_add(&expected[id][E_R_EXCL], tot.excl, r, SM_INVALID_ID);
            expect_add(&expected[id][E_R_SENT], tot.sent, r, SM_INVALID_ID);
            expect_add(&expected[id][E_R_RECV], tot.received, r, SM_INVALID_ID);
        }
        member += nt;
    }
}

/* ---------------------------------------------------------------- paths of the summary */

/* Global region index of a unified region id, by its name. */
static uint32_t global_region(uint32_t region)
{
    const char *name = sm_defset_region_name(job.global, region);
    unsigned k;
    char tail[8];
    for (uint32_t g = 0; g < SIM_G_SKELETON; g++)
        if (!strcmp(name, sim_region_name(g, NULL, 0)))
            return g;
    if (sscanf(name, "kernel_%u", &k) == 1)
        return SIM_G_KERNELS + k;
    if (sscanf(name, "role_%u", &k) == 1)
        return SIM_G_ROLES + k;
    if (sscanf(name, "rank_%u_%2s", &k, tail) == 2)
        return SIM_G_OWN + k;
    return UINT32_MAX;
}

typedef struct found {
    const sm_cpath_t *path[N_IDS];
    uint32_t n, unknown, twice;
} found_t;

/* Each path of the summary to its id: a catalogue path by (parent,
 * region), main/rank_R_io by R. */
static void find_paths(const sm_cpath_t *p, int32_t parent_id, found_t *f)
{
    for (const sm_cpath_t *c = p->first_child; c; c = c->next_sibling) {
        uint32_t g = global_region(c->region);
        int32_t id = -1;
        if (g >= SIM_G_OWN && parent_id == 0)
            id = (int32_t)own_id(g - SIM_G_OWN);
        for (uint32_t k = 0; id < 0 && g != UINT32_MAX && k < SIM_CATALOGUE; k++)
            if (job.paths[k].parent == parent_id && job.paths[k].region == g)
                id = (int32_t)k;
        if (id < 0) {
            f->unknown++;
            continue;
        }
        f->twice += f->path[id] != NULL;
        f->path[id] = c;
        f->n++;
        find_paths(c, id, f);
    }
}

static found_t found;

/* ---------------------------------------------------------------- comparisons */

static int compare_spread(const char *what, uint32_t id, sm_spread_t s, const expect_t *e)
{
    int bad = 0;
    double n = e->n, mean = (double)e->sum / n;
    unsigned __int128 num = e->sumsq * e->n - e->sum * e->sum;
    double stddev = (double)(sqrtl((long double)num) / (long double)e->n);
    bad |= s.n != e->n;
    bad |= s.min != (double)e->min || s.max != (double)e->max;
    if (e->min_loc == SM_INVALID_ID) /* across ranks: the ranks */
        bad |= s.min_member != e->min_who || s.max_member != e->max_who;
    else /* across threads: rank and location (the job is past the detail cap) */
        bad |= s.min_rank != e->min_who || s.min_loc != e->min_loc ||
               s.max_rank != e->max_who || s.max_loc != e->max_loc;
    bad |= fabs(s.mean - mean) > 1e-12 * mean;
    bad |= fabs(s.stddev - stddev) > 1e-9 * (stddev > 0 ? stddev : mean);
    if (bad)
        fprintf(stderr,
                "  path %u %s: n %u/%u mean %.17g/%.17g min %.17g/%llu (%u/%u) "
                "max %.17g/%llu (%u/%u) stddev %.17g/%.17g\n",
                id, what, s.n, e->n, s.mean, mean, s.min, (unsigned long long)e->min,
                s.min_member, e->min_who, s.max, (unsigned long long)e->max, s.max_member,
                e->max_who, s.stddev, stddev);
    return bad;
}

/* ---------------------------------------------------------------- cases */

static void test_exchange_completes(void)
{
    CHECK_EQ_U(run_rc, 0);
    CHECK_EQ_U(job.failures, 0);
    CHECK(job.global != NULL);
    CHECK(job.summary != NULL);
    if (job.summary)
        CHECK_EQ_U(job.summary->n_ranks, RANKS);
    CHECK(stats.crit_cpu_s > 0 && stats.crit_cpu_s <= stats.ranks_cpu_s);
    CHECK(stats.phase[SIM_PH_UNIFY].root_msgs > 0);
}

static void test_paths_match(void)
{
    uint32_t want = 0;
    for (uint32_t id = 0; id < N_IDS; id++)
        want += seen[id];
    CHECK_EQ_U(found.unknown, 0);
    CHECK_EQ_U(found.twice, 0);
    CHECK_EQ_U(found.n, want);
    uint32_t missing = 0;
    for (uint32_t id = 0; id < N_IDS; id++)
        missing += seen[id] && !found.path[id];
    CHECK_EQ_U(missing, 0);
    /* The data is what the test means it to be. */
    CHECK(want > 200);
    CHECK(seen[SIM_PATH_SOLVE] && seen[own_id(5)]);
}

static void test_visits(void)
{
    uint32_t bad = 0;
    for (uint32_t id = 0; id < N_IDS; id++) {
        if (!found.path[id])
            continue;
        bad += compare_spread("visits/threads", id,
                              sm_cpath_spread_visits(job.summary, found.path[id]),
                              &expected[id][E_VISITS]);
        bad += compare_spread("visits/ranks", id,
                              sm_cpath_spread_ranks_visits(job.summary, found.path[id]),
                              &expected[id][E_R_VISITS]);
    }
    CHECK_EQ_U(bad, 0);
}

static void test_times_across_threads(void)
{
    uint32_t bad = 0;
    for (uint32_t id = 0; id < N_IDS; id++) {
        if (!found.path[id])
            continue;
        bad += compare_spread("incl/threads", id,
                              sm_cpath_spread_time(job.summary, found.path[id], 0),
                              &expected[id][E_INCL]);
        bad += compare_spread("excl/threads", id,
                              sm_cpath_spread_time(job.summary, found.path[id], 1),
                              &expected[id][E_EXCL]);
    }
    CHECK_EQ_U(bad, 0);
}

static void test_times_across_ranks(void)
{
    uint32_t bad = 0;
    for (uint32_t id = 0; id < N_IDS; id++) {
        if (!found.path[id])
            continue;
        bad += compare_spread("incl/ranks", id,
                              sm_cpath_spread_ranks_time(job.summary, found.path[id], 0),
                              &expected[id][E_R_INCL]);
        bad += compare_spread("excl/ranks", id,
                              sm_cpath_spread_ranks_time(job.summary, found.path[id], 1),
                              &expected[id][E_R_EXCL]);
    }
    CHECK_EQ_U(bad, 0);
}

static void test_bytes(void)
{
    uint32_t bad = 0;
    for (uint32_t id = 0; id < N_IDS; id++) {
        if (!found.path[id])
            continue;
        bad += compare_spread("sent/ranks", id,
                              sm_cpath_spread_ranks_bytes(job.summary, found.path[id], 0),
                              &expected[id][E_R_SENT]);
        bad += compare_spread("received/ranks", id,
                              sm_cpath_spread_ranks_bytes(job.summary, found.path[id], 1),
                              &expected[id][E_R_RECV]);
    }
    CHECK_EQ_U(bad, 0);
    /* Something was moved: the MPI paths carry bytes. */
    CHECK(expected[6][E_R_SENT].sum > 0 && expected[7][E_R_RECV].sum > 0);
}

static void test_imbalance_named(void)
{
    const sm_cpath_t *solve = found.path[SIM_PATH_SOLVE];
    CHECK(solve != NULL);
    if (!solve)
        return;
    sm_spread_t ranks = sm_cpath_spread_ranks_time(job.summary, solve, 1);
    sm_spread_t threads = sm_cpath_spread_time(job.summary, solve, 1);
    CHECK(ranks.max_member == job.planted[0] || ranks.max_member == job.planted[1]);
    /* Both planted ranks stand above every other: 5 x the time. */
    CHECK(ranks.max >= 4.0 * ranks.mean);
    CHECK(threads.max >= 4.0 * threads.mean);
    CHECK(job.planted[0] == RANKS / 3 && job.planted[1] == RANKS - 2);
}

static void test_definitions_mapped(void)
{
    uint32_t bad = 0;
    for (uint32_t r = 0; r < RANKS; r++) {
        const sm_id_maps_t *m = &job.all_maps[r];
        sm_defset_t *local = sim_rank_defset(&job, r);
        if (!local || m->n_regions != sm_defset_region_count(local) ||
            m->n_strings != sm_defset_string_count(local) ||
            m->n_comms != sm_defset_comm_count(local) ||
            m->n_metrics != sm_defset_metric_count(local) ||
            m->n_attributes != sm_defset_attribute_count(local)) {
            bad++;
            sm_defset_free(local);
            continue;
        }
        for (uint32_t i = 0; i < m->n_strings; i++)
            bad += strcmp(sm_defset_string_get(local, i),
                          sm_defset_string_get(job.global, m->strings[i])) != 0;
        for (uint32_t i = 0; i < m->n_regions; i++) {
            const sm_region_def_t *a = sm_defset_region_get(local, i);
            const sm_region_def_t *b = sm_defset_region_get(job.global, m->regions[i]);
            const char *fa = a->file == SM_INVALID_ID ? "" : sm_defset_string_get(local, a->file);
            const char *fb = b->file == SM_INVALID_ID ? "" : sm_defset_string_get(job.global, b->file);
            bad += strcmp(sm_defset_region_name(local, i),
                          sm_defset_region_name(job.global, m->regions[i])) != 0 ||
                   strcmp(fa, fb) != 0 || a->line != b->line || a->paradigm != b->paradigm;
        }
        for (uint32_t i = 0; i < m->n_comms; i++) {
            const sm_comm_def_t *a = sm_defset_comm_get(local, i);
            const sm_comm_def_t *b = sm_defset_comm_get(job.global, m->comms[i]);
            bad += a->key.leader != b->key.leader || a->key.seq != b->key.seq ||
                   a->size != b->size;
        }
        for (uint32_t i = 0; i < m->n_metrics; i++)
            bad += strcmp(sm_defset_string_get(local, sm_defset_metric_get(local, i)->name),
                          sm_defset_string_get(job.global,
                                               sm_defset_metric_get(job.global, m->metrics[i])
                                                   ->name)) != 0;
        sm_defset_free(local);
    }
    CHECK_EQ_U(bad, 0);
    /* Rank 0 defined first: its ids are the union's. */
    uint32_t moved = 0;
    for (uint32_t i = 0; i < job.all_maps[0].n_regions; i++)
        moved += job.all_maps[0].regions[i] != i;
    CHECK_EQ_U(moved, 0);
}

static int key_order(const void *a, const void *b)
{
    const sm_comm_key_t *x = a, *y = b;
    if (x->leader != y->leader)
        return x->leader < y->leader ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_communicators_once(void)
{
    uint32_t teams = 0;
    for (uint32_t r = 0; r < RANKS; r++)
        teams += sim_rank_threads(&job, r) == 2;
    uint32_t n = sm_defset_comm_count(job.global);
    /* self, world, 4 splits, RANKS/2 pairs of each kind, the teams */
    CHECK_EQ_U(n, 2 + 4 + RANKS / 2 + RANKS / 2 + teams);
    sm_comm_key_t *keys = malloc(sizeof *keys * n);
    uint32_t bad = 0, world = SM_INVALID_ID;
    for (uint32_t i = 0; keys && i < n; i++) {
        const sm_comm_def_t *c = sm_defset_comm_get(job.global, i);
        keys[i] = c->key;
        if (c->key.leader == 0 && c->key.seq == 0)
            world = i;
    }
    if (keys)
        qsort(keys, n, sizeof *keys, key_order);
    for (uint32_t i = 1; keys && i < n; i++)
        bad += key_order(&keys[i - 1], &keys[i]) == 0;
    CHECK_EQ_U(bad, 0);
    free(keys);
    CHECK(world != SM_INVALID_ID);
    /* Contents: the split's members, a pair's, a team's leader, parents. */
    for (uint32_t i = 0; i < n; i++) {
        const sm_comm_def_t *c = sm_defset_comm_get(job.global, i);
        const char *name = sm_defset_string_get(job.global, c->name);
        if (c->key.seq == 1 && c->key.leader < 4) {
            bad += strcmp(name, "split_mod4") != 0 || c->parent != world || !c->members ||
                   c->size != job.split_size[c->key.leader];
            for (uint32_t k = 0; c->members && k < c->size; k++)
                bad += c->members[k] != c->key.leader + 4 * k;
        } else if (c->key.seq == 2 || c->key.seq == 3) {
            uint32_t bit = c->key.seq == 2 ? 1 : 2;
            bad += c->size != 2 || !c->members || c->members[0] != c->key.leader ||
                   c->members[1] != (c->key.leader | bit) || c->parent != world;
        } else if (sm_comm_key_is_team(c->key)) {
            bad += c->key.leader >= RANKS || sim_rank_threads(&job, c->key.leader) != 2 ||
                   strcmp(name, "OpenMP team") != 0;
        }
    }
    CHECK_EQ_U(bad, 0);
}

/* The two scopes of sm_unify_set give the same union and the same maps
 * (every rank's union merged by content, or its maps come down the tree). */
static void test_scopes_agree(void)
{
    const uint32_t n = 1024;
    sim_job_t jobs[2];
    sim_stats_t st[2];
    for (int k = 0; k < 2; k++) {
        CHECK(sim_job_init(&jobs[k], n, SEED + 1) == 0);
        jobs[k].scope = k ? SM_UNIFY_ROOT_ONLY : SM_UNIFY_EVERY_RANK;
        jobs[k].keep_maps = true;
        jobs[k].all_maps = calloc(n, sizeof *jobs[k].all_maps);
        CHECK(jobs[k].all_maps && sim_run(n, sim_job_rank, &jobs[k], &st[k]) == 0);
        CHECK_EQ_U(jobs[k].failures, 0);
    }
    uint64_t la = 0, lb = 0;
    void *a = jobs[0].global ? sm_defset_serialize(jobs[0].global, &la) : NULL;
    void *b = jobs[1].global ? sm_defset_serialize(jobs[1].global, &lb) : NULL;
    CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    uint32_t differ = 0;
    for (uint32_t r = 0; jobs[0].all_maps && jobs[1].all_maps && r < n; r++) {
        const sm_id_maps_t *x = &jobs[0].all_maps[r], *y = &jobs[1].all_maps[r];
        differ += x->n_strings != y->n_strings || x->n_regions != y->n_regions ||
                  x->n_comms != y->n_comms || x->n_metrics != y->n_metrics ||
                  x->n_attributes != y->n_attributes || x->n_contexts != y->n_contexts;
        if (differ)
            break;
        differ += memcmp(x->strings, y->strings, 4u * x->n_strings) != 0 ||
                  memcmp(x->regions, y->regions, 4u * x->n_regions) != 0 ||
                  memcmp(x->comms, y->comms, 4u * x->n_comms) != 0 ||
                  memcmp(x->metrics, y->metrics, 4u * x->n_metrics) != 0 ||
                  memcmp(x->attributes, y->attributes, 4u * x->n_attributes) != 0;
    }
    CHECK_EQ_U(differ, 0);
    /* Only rank 0 receives the union with the maps coming down: the
     * messages of the exchange are far fewer bytes. */
    CHECK(st[1].phase[SIM_PH_UNIFY].all_bytes * 4 < st[0].phase[SIM_PH_UNIFY].all_bytes);
    printf("unify at %u ranks, all messages: %.1f MiB (union to every rank), "
           "%.1f MiB (to rank 0 only)\n", n,
            (double)st[0].phase[SIM_PH_UNIFY].all_bytes / 1048576.0,
            (double)st[1].phase[SIM_PH_UNIFY].all_bytes / 1048576.0);
    sim_job_free(&jobs[0]);
    sim_job_free(&jobs[1]);
}

/* A communicator of many members, led by rank 0, defined by every rank:
 * only its leader sends the members up the tree, so rank 0 receives none
 * of them (each of its children used to send all of them: O(P) bytes and
 * work on every rank for a communicator of P/4 ranks). */
#define BIG_COMM 100000u
static uint32_t big_members[BIG_COMM];
static sm_defset_t *big_union;

static void big_comm_rank(const sm_procs_t *procs, void *arg)
{
    (void)arg;
    sim_phase(SIM_PH_UNIFY, "unify");
    sm_defset_t *local = sm_defset_new();
    sm_defset_region(local, "main", "app.c", 1, SM_PARADIGM_USER, SM_ROLE_FUNCTION);
    sm_comm_key_t world = {0, 0}, big = {0, 5};
    uint32_t w = sm_defset_comm(local, world, "MPI_COMM_WORLD", procs->size, NULL, SM_COMM_NONE);
    sm_defset_comm(local, big, "big", BIG_COMM, big_members, w);
    sm_id_maps_t maps = {0};
    sm_defset_t *global = NULL;
    if (sm_unify_set(procs, local, SM_UNIFY_EVERY_RANK, &global, &maps) != 0)
        unit_failures++;
    if (procs->rank == 0)
        big_union = global;
    else
        sm_defset_free(global);
    sm_id_maps_free(&maps);
    sm_defset_free(local);
}

static void test_members_sent_by_leader_only(void)
{
    for (uint32_t i = 0; i < BIG_COMM; i++)
        big_members[i] = BIG_COMM - 1 - i;
    sim_stats_t st;
    CHECK(sim_run(8, big_comm_rank, NULL, &st) == 0);
    CHECK(big_union != NULL);
    if (!big_union)
        return;
    const sim_phase_stats_t *u = &st.phase[SIM_PH_UNIFY];
    CHECK(u->root_msgs == 3 + 0); /* its three children; the broadcast goes out */
    CHECK(u->root_bytes < BIG_COMM);
    /* The union has them all the same; the broadcast took them to all. */
    CHECK_EQ_U(sm_defset_comm_count(big_union), 2);
    const sm_comm_def_t *c = sm_defset_comm_get(big_union, 1);
    CHECK(c && c->size == BIG_COMM && c->members &&
          memcmp(c->members, big_members, sizeof big_members) == 0);
    CHECK(u->all_bytes >= 7ull * 4 * BIG_COMM);
    sm_defset_free(big_union);
    big_union = NULL;
}

typedef struct unit_case {
    const char *name;
    void (*fn)(void);
} unit_case_t;

int main(void)
{
    static const unit_case_t cases[] = {
        {"exchange_completes", test_exchange_completes},
        {"paths_match", test_paths_match},
        {"visits", test_visits},
        {"times_across_threads", test_times_across_threads},
        {"times_across_ranks", test_times_across_ranks},
        {"bytes", test_bytes},
        {"imbalance_named", test_imbalance_named},
        {"definitions_mapped", test_definitions_mapped},
        {"communicators_once", test_communicators_once},
        {"scopes_agree", test_scopes_agree},
        {"members_sent_by_leader_only", test_members_sent_by_leader_only},
    };
    if (sim_job_init(&job, RANKS, SEED) != 0)
        return 1;
    job.keep_maps = true;
    job.scope = SM_UNIFY_ROOT_ONLY;
    job.all_maps = calloc(RANKS, sizeof *job.all_maps);
    run_rc = sim_run(RANKS, sim_job_rank, &job, &stats);
    printf("%u simulated ranks: %.2f s, critical path %.3f s\n", RANKS, stats.wall_s,
           stats.crit_cpu_s);
    bool usable = run_rc == 0 && job.summary && job.global && job.all_maps;
    if (usable) {
        compute_expected();
        find_paths(&job.summary->root, -1, &found);
    }
    int failed_cases = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = unit_failures;
        if (usable || i == 0 || cases[i].fn == test_scopes_agree ||
            cases[i].fn == test_members_sent_by_leader_only)
            cases[i].fn();
        else
            unit_failures++;
        bool ok = unit_failures == before;
        failed_cases += !ok;
        printf("%s: %s\n", ok ? "PASS" : "FAIL", cases[i].name);
        fflush(stdout);
    }
    sim_job_free(&job);
    return failed_cases ? 1 : 0;
}
