/* Profile summary across ranks: three planted "ranks" (hand-built trees,
 * different local region ids and tick lengths) are serialized, concatenated
 * as sm_tree_gather delivers them, and rebuilt into the job summary; exact
 * per-member and per-rank values, the spreads across threads and ranks,
 * bytes, the MPI totals, member names and lineage; malformed blobs are
 * rejected; the writers produce their files for the job.  Then counters
 * (PAPI events): two ranks counting different events, united by name, with
 * exact inclusive/exclusive sums and the derived figures. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "merge/profile_summary.h"
#include "merge/unify.h"
#include "writers/summary_common.h"
#include "writers/writers.h"
#include "unit.h"

#define MS 1000000ull /* ns */

/* Unified region ids of the job. */
enum { MAIN, COMPUTE, SEND, RECV };

/* A path below parent with planted per-visit times (ticks): visits = n. */
static sm_profile_node_t *plant(sm_profile_t *prof, sm_profile_node_t *parent,
                                sm_region_id_t region, const uint64_t *ticks, int n,
                                uint64_t self_ticks_less, uint64_t sent, uint64_t received)
{
    sm_profile_node_t *node = sm_profile_child(prof, parent, region);
    for (int i = 0; i < n; i++) {
        node->visits++;
        sm_stat_add(&node->incl, ticks[i]);
        sm_stat_add(&node->excl, ticks[i] - self_ticks_less);
    }
    node->bytes_sent += sent;
    node->bytes_received += received;
    return node;
}

/* {u32 rank, u64 len, bytes}, little-endian, as sm_tree_gather's records. */
static size_t append_record(uint8_t *seq, size_t at, uint32_t rank, const void *blob,
                            uint64_t len)
{
    for (int i = 0; i < 4; i++)
        seq[at++] = (uint8_t)(rank >> (8 * i));
    for (int i = 0; i < 8; i++)
        seq[at++] = (uint8_t)(len >> (8 * i));
    memcpy(seq + at, blob, len);
    return at + len;
}

static const sm_cpath_t *child(const sm_cpath_t *p, sm_region_id_t region)
{
    for (const sm_cpath_t *c = p->first_child; c; c = c->next_sibling)
        if (c->region == region)
            return c;
    return NULL;
}

static bool is_mpi(sm_region_id_t region, void *arg)
{
    (void)arg;
    return region == SEND || region == RECV;
}

/* sm_error lines of the malformed cases are expected: keep them off. */
static int quiet(void)
{
    fflush(stderr);
    int saved = dup(2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    return saved;
}

static void loud(int saved)
{
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* NULL (rejected) or a summary, which is freed. */
static bool accepted(const void *seq, uint64_t len, uint32_t n_ranks)
{
    sm_profile_summary_t *s = sm_profile_summary_from_blobs(seq, len, n_ranks);
    sm_profile_summary_free(s);
    return s != NULL;
}

static char *slurp(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Counter statistics on node n: per visit, inclusive incl[i], exclusive
 * excl[i], for counter k of nc. */
static void plant_counter(sm_profile_node_t *n, uint32_t nc, uint32_t k, const uint64_t *incl,
                          const uint64_t *excl, int visits)
{
    for (int i = 0; i < visits; i++) {
        sm_stat_add(&n->counters[k], incl[i]);
        sm_stat_add(&n->counters[nc + k], excl[i]);
    }
}

/* Rank 0 counts PAPI_TOT_INS and PAPI_TOT_CYC; rank 1 PAPI_TOT_CYC and
 * PAPI_L2_DCM: the job has all three, by name. */
static void test_counters(void)
{
    sm_profile_t p0, p1;
    sm_profile_init(&p0);
    sm_profile_init(&p1);
    p0.n_counters = p1.n_counters = 2;
    uint64_t t_main[] = {10 * MS}, t_comp[] = {4 * MS, 6 * MS};
    sm_profile_node_t *m0 = plant(&p0, &p0.root, MAIN, t_main, 1, 0, 0, 0);
    sm_profile_node_t *c0 = plant(&p0, m0, COMPUTE, t_comp, 2, 0, 0, 0);
    sm_profile_node_t *m1 = plant(&p1, &p1.root, MAIN, t_main, 1, 0, 0, 0);
    sm_profile_node_t *c1 = plant(&p1, m1, COMPUTE, t_comp, 2, 0, 0, 0);
    CHECK(m0->counters && c0->counters && m1->counters && c1->counters);
    if (!m0->counters || !c0->counters || !m1->counters || !c1->counters)
        return;
    /* rank 0: main INS 1000 incl (400 own), compute INS 200 + 400; CYC 2000 / 1200 */
    plant_counter(m0, 2, 0, (uint64_t[]){1000}, (uint64_t[]){400}, 1);
    plant_counter(c0, 2, 0, (uint64_t[]){200, 400}, (uint64_t[]){200, 400}, 2);
    plant_counter(m0, 2, 1, (uint64_t[]){2000}, (uint64_t[]){800}, 1);
    plant_counter(c0, 2, 1, (uint64_t[]){500, 700}, (uint64_t[]){500, 700}, 2);
    /* rank 1: CYC 3000 / compute 1000 + 1000; L2_DCM 50 / compute 20 + 20 */
    plant_counter(m1, 2, 0, (uint64_t[]){3000}, (uint64_t[]){1000}, 1);
    plant_counter(c1, 2, 0, (uint64_t[]){1000, 1000}, (uint64_t[]){1000, 1000}, 2);
    plant_counter(m1, 2, 1, (uint64_t[]){50}, (uint64_t[]){10}, 1);
    plant_counter(c1, 2, 1, (uint64_t[]){20, 20}, (uint64_t[]){20, 20}, 2);
    sm_summary_thread_t t0 = {.location = 0, .name = "Thread 0 (main)", .creator = SM_INVALID_ID,
                              .root = &p0.root};
    sm_summary_thread_t t1 = t0;
    t1.root = &p1.root;
    const char *names0[] = {"PAPI_TOT_INS", "PAPI_TOT_CYC"};
    const char *names1[] = {"PAPI_TOT_CYC", "PAPI_L2_DCM"};
    sm_profile_summary_t *l0 = sm_profile_summary_from_counting_threads(&t0, 1, 1.0, 2, names0);
    sm_profile_summary_t *l1 = sm_profile_summary_from_counting_threads(&t1, 1, 1.0, 2, names1);
    CHECK(l0 && l1);
    if (!l0 || !l1)
        return;
    uint64_t len0, len1;
    uint8_t *b0 = sm_profile_summary_serialize(l0, NULL, 0, &len0);
    uint8_t *b1 = sm_profile_summary_serialize(l1, NULL, 1, &len1);
    uint8_t *seq = malloc(24 + len0 + len1);
    size_t n = append_record(seq, 0, 1, b1, len1);
    n = append_record(seq, n, 0, b0, len0);
    sm_profile_summary_t *s = sm_profile_summary_from_blobs(seq, n, 2);
    CHECK(s && s->n_counters == 3);
    if (s && s->n_counters == 3) {
        CHECK(!strcmp(s->counter_names[0], "PAPI_TOT_INS"));
        CHECK(!strcmp(s->counter_names[1], "PAPI_TOT_CYC"));
        CHECK(!strcmp(s->counter_names[2], "PAPI_L2_DCM"));
        CHECK(sm_summary_counter_index(s, "PAPI_L2_DCM") == 2);
        const sm_cpath_t *main = child(&s->root, MAIN), *comp = child(main, COMPUTE);
        /* rank 1's CYC lands in the job's CYC; it has no INS */
        CHECK_EQ_U(main->members[1].counters[1].sum, 3000);
        CHECK_EQ_U(main->members[1].counters[3 + 1].sum, 1000);
        CHECK_EQ_U(main->members[1].counters[0].sum, 0);
        CHECK_EQ_U(comp->members[1].counters[2].sum, 40);
        CHECK_EQ_U(comp->members[0].counters[0].min, 200);
        CHECK_EQ_U(comp->members[0].counters[0].max, 400);
        CHECK_EQ_U(sm_cpath_counter_total(s, main, 1, 0), 5000);
        CHECK_EQ_U(sm_cpath_counter_total(s, main, 1, 1), 1800);
        sm_spread_t sp = sm_cpath_spread_ranks_counter(s, comp, 1, 0);
        CHECK_EQ_U(sp.n, 2);
        CHECK_NEAR(sp.min, 1200, 0);
        CHECK_EQ_U(sp.min_member, 0);
        CHECK_NEAR(sp.max, 2000, 0);
        CHECK_EQ_U(sp.max_member, 1);
        sp = sm_cpath_spread_counter(s, comp, 0, 1);
        CHECK_NEAR(sp.mean, 300, 0); /* rank 0: 600 exclusive, rank 1: none counted */
        sm_derived_t d[8];
        uint32_t nd = sm_summary_derived(s, d, 8);
        CHECK_EQ_U(nd, 2);
        if (nd == 2) {
            CHECK(d[0].num == 0 && d[0].den == 1);
            CHECK_NEAR(sm_derived_value(&d[0], 1000, 2000), 0.5, 1e-12);
            CHECK(d[1].num == 2 && d[1].den == 0);
            CHECK_NEAR(sm_derived_value(&d[1], 40, 600), 1000.0 * 40 / 600, 1e-9);
        }
    }
    /* Every truncation of a blob with counters is rejected. */
    int saved = quiet();
    int truncated_accepted = 0;
    for (uint64_t cut = 1; cut < len1; cut++) {
        n = append_record(seq, 0, 1, b1, cut);
        truncated_accepted += accepted(seq, n, 2);
    }
    loud(saved);
    CHECK_EQ_U(truncated_accepted, 0);
    /* Remapping skips the counter section. */
    uint32_t map[] = {MAIN, COMPUTE, SEND, RECV};
    CHECK(sm_profile_summary_remap(b1, len1, map, 4) == 0);
    free(seq);
    free(b0);
    free(b1);
    sm_profile_summary_free(s);
    sm_profile_summary_free(l0);
    sm_profile_summary_free(l1);
    sm_profile_free(&p0);
    sm_profile_free(&p1);
}

int main(void)
{
    /* ---- rank 0: 1 ns per tick, local ids = unified ids ---- */
    sm_profile_t p0;
    sm_profile_init(&p0);
    uint64_t r0_main[] = {100 * MS}, r0_compute[] = {8 * MS, 12 * MS},
             r0_send[] = {1 * MS, 1 * MS, 1 * MS};
    sm_profile_node_t *m0 = plant(&p0, &p0.root, MAIN, r0_main, 1, 23 * MS, 0, 0);
    plant(&p0, m0, COMPUTE, r0_compute, 2, 0, 0, 0);
    plant(&p0, m0, SEND, r0_send, 3, 0, 300, 0);
    sm_summary_thread_t t0[] = {{.location = 0, .name = "Thread 0 (main)",
                                 .creator = SM_INVALID_ID, .root = &p0.root}};

    /* ---- rank 1: 0.5 ns per tick (ticks are 2 x ns), its own region ids
     * (compute 0, main 1, MPI_Recv 2), two threads given out of order ---- */
    enum { L_COMPUTE, L_MAIN, L_RECV };
    sm_profile_t p1a, p1b;
    sm_profile_init(&p1a);
    sm_profile_init(&p1b);
    uint64_t r1b_main[] = {200 * MS}, r1b_compute[] = {20 * MS, 30 * MS},
             r1b_recv[] = {4 * MS, 4 * MS, 4 * MS}, r1a_main[] = {40 * MS},
             r1a_compute[] = {30 * MS};
    sm_profile_node_t *m1b = plant(&p1b, &p1b.root, L_MAIN, r1b_main, 1, 62 * MS, 0, 0);
    plant(&p1b, m1b, L_COMPUTE, r1b_compute, 2, 0, 0, 0);
    plant(&p1b, m1b, L_RECV, r1b_recv, 3, 0, 0, 300);
    sm_profile_node_t *m1a = plant(&p1a, &p1a.root, L_MAIN, r1a_main, 1, 30 * MS, 0, 0);
    plant(&p1a, m1a, L_COMPUTE, r1a_compute, 1, 0, 0, 0);
    sm_region_id_t creation[] = {L_MAIN};
    sm_summary_thread_t t1[] = {
        {.location = 1, .name = "Thread 1", .creator = 0, .creator_depth = 1,
         .creator_path = creation, .root = &p1a.root},
        {.location = 0, .name = "Thread 0 (main)", .creator = SM_INVALID_ID, .root = &p1b.root}};
    uint32_t map1[] = {COMPUTE, MAIN, RECV};
    sm_id_maps_t maps1 = {.n_regions = 3, .regions = map1};

    /* ---- rank 2: 2 ns per tick ---- */
    sm_profile_t p2;
    sm_profile_init(&p2);
    uint64_t r2_main[] = {50 * MS}, r2_compute[] = {10 * MS, 10 * MS, 10 * MS},
             r2_send[] = {2 * MS};
    sm_profile_node_t *m2 = plant(&p2, &p2.root, MAIN, r2_main, 1, 32 * MS, 0, 0);
    plant(&p2, m2, COMPUTE, r2_compute, 3, 0, 0, 0);
    plant(&p2, m2, SEND, r2_send, 1, 0, 1000, 0);
    sm_summary_thread_t t2[] = {{.location = 0, .name = "Thread 0 (main)",
                                 .creator = SM_INVALID_ID, .root = &p2.root}};

    sm_profile_summary_t *l0 = sm_profile_summary_from_threads(t0, 1, 1.0);
    sm_profile_summary_t *l1 = sm_profile_summary_from_threads(t1, 2, 0.5);
    sm_profile_summary_t *l2 = sm_profile_summary_from_threads(t2, 1, 2.0);
    CHECK(l0 && l1 && l2);
    if (!l0 || !l1 || !l2)
        return UNIT_RESULT();
    CHECK_EQ_U(l1->member_info[0].creator, 1); /* local lineage: location 0 is member 1 */

    uint64_t len0, len1, len2;
    uint8_t *b0 = sm_profile_summary_serialize(l0, NULL, 0, &len0);
    uint8_t *b1 = sm_profile_summary_serialize(l1, &maps1, 1, &len1);
    uint8_t *b2 = sm_profile_summary_serialize(l2, NULL, 2, &len2);
    CHECK(b0 && b1 && b2);
    if (!b0 || !b1 || !b2)
        return UNIT_RESULT();

    /* The record layout this test assumes is sm_tree_gather's. */
    uint8_t *seq = malloc(36 + len0 + len1 + len2);
    size_t n = append_record(seq, 0, 0, b0, len0);
    void *gathered = NULL;
    uint64_t gathered_len = 0;
    CHECK(sm_tree_gather(sm_procs_single(), b0, len0, &gathered, &gathered_len) == 0);
    CHECK(gathered && gathered_len == n && memcmp(gathered, seq, n) == 0);
    free(gathered);

    /* Records in no particular order, as from the tree. */
    n = append_record(seq, 0, 2, b2, len2);
    n = append_record(seq, n, 0, b0, len0);
    n = append_record(seq, n, 1, b1, len1);
    sm_profile_summary_t *s = sm_profile_summary_from_blobs(seq, n, 3);
    CHECK(s != NULL);
    if (!s)
        return UNIT_RESULT();

    /* Members: by rank, then location id. */
    CHECK_EQ_U(s->n_members, 4);
    CHECK_EQ_U(s->n_ranks, 3);
    uint32_t ranks[] = {0, 1, 1, 2}, locations[] = {0, 0, 1, 0};
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_EQ_U(s->member_rank[i], ranks[i]);
        CHECK_EQ_U(s->member_location[i], locations[i]);
    }
    CHECK_EQ_U(s->rank_first_member[0], 0);
    CHECK_EQ_U(s->rank_first_member[1], 1);
    CHECK_EQ_U(s->rank_first_member[2], 3);
    CHECK_EQ_U(s->rank_first_member[3], 4);
    CHECK_NEAR(s->rank_ns_per_tick[1], 0.5, 0);
    CHECK_NEAR(s->rank_ns_per_tick[2], 2.0, 0);
    CHECK_STR(s->member_info[0].name, "Thread 0 (main)");
    CHECK_STR(s->member_info[2].name, "Thread 1");
    CHECK_EQ_U(s->member_info[1].creator, SM_INVALID_ID);
    CHECK_EQ_U(s->member_info[1].creator_location, SM_INVALID_ID);
    CHECK_EQ_U(s->member_info[2].creator, 1);
    CHECK_EQ_U(s->member_info[2].creation_depth, 1);
    CHECK_EQ_U(s->member_info[2].creation_path[0], MAIN); /* unified */

    /* One tree in unified ids. */
    const sm_cpath_t *main_p = child(&s->root, MAIN);
    CHECK(main_p && !main_p->next_sibling && s->root.first_child == main_p);
    const sm_cpath_t *compute = main_p ? child(main_p, COMPUTE) : NULL;
    const sm_cpath_t *send = main_p ? child(main_p, SEND) : NULL;
    const sm_cpath_t *recv = main_p ? child(main_p, RECV) : NULL;
    CHECK(compute && send && recv);
    if (!compute || !send || !recv)
        return UNIT_RESULT();
    CHECK(main_p->first_child == compute && compute->next_sibling == send &&
          send->next_sibling == recv); /* first-seen order, rank 0 first */

    /* Per member: exact ticks of its own rank. */
    CHECK_EQ_U(compute->members[0].visits, 2);
    CHECK_EQ_U(compute->members[0].incl.sum, 20 * MS);
    CHECK_EQ_U(compute->members[0].incl.min, 8 * MS);
    CHECK_EQ_U(compute->members[0].incl.max, 12 * MS);
    CHECK_EQ_U(compute->members[1].visits, 2);
    CHECK_EQ_U(compute->members[1].incl.sum, 50 * MS);
    CHECK_EQ_U(compute->members[2].visits, 1);
    CHECK_EQ_U(compute->members[2].incl.sum, 30 * MS);
    CHECK_EQ_U(compute->members[3].visits, 3);
    CHECK_EQ_U(compute->members[3].incl.sum, 30 * MS);
    CHECK(compute->members[3].incl.sumsq == (unsigned __int128)3 * (10 * MS) * (10 * MS));
    CHECK_EQ_U(send->members[0].bytes_sent, 300);
    CHECK_EQ_U(send->members[3].bytes_sent, 1000);
    CHECK_EQ_U(recv->members[1].bytes_received, 300);
    CHECK_EQ_U(recv->members[0].visits, 0);

    /* Per rank: the sum over its threads, in ns. */
    sm_cpath_rank_total_t rt;
    sm_cpath_rank_total(s, compute, 1, &rt);
    CHECK_EQ_U(rt.threads, 2);
    CHECK_EQ_U(rt.visits, 3);
    CHECK_NEAR(rt.incl_ns, 40e6, 0);
    CHECK_NEAR(rt.excl_ns, 40e6, 0);
    sm_cpath_rank_total(s, compute, 2, &rt);
    CHECK_NEAR(rt.incl_ns, 60e6, 0);

    /* Across ranks: 20, 40, 60 ms. */
    sm_spread_t sp = sm_cpath_spread_ranks_time(s, compute, 0);
    CHECK_EQ_U(sp.n, 3);
    CHECK_NEAR(sp.mean, 40e6, 1e-6);
    CHECK_NEAR(sp.min, 20e6, 0);
    CHECK_EQ_U(sp.min_member, 0);
    CHECK_NEAR(sp.max, 60e6, 0);
    CHECK_EQ_U(sp.max_member, 2);
    CHECK_NEAR(sp.stddev, sqrt(800.0 / 3.0) * 1e6, 1e-3); /* 16.33 ms */
    sp = sm_cpath_spread_ranks_visits(s, compute); /* 2, 3, 3 */
    CHECK_NEAR(sp.mean, 8.0 / 3.0, 1e-12);
    CHECK_EQ_U(sp.min_member, 0);
    CHECK_EQ_U(sp.max_member, 1); /* the lowest rank on a tie */
    sp = sm_cpath_spread_ranks_time(s, main_p, 1); /* excl 77, 69 + 5, 36 ms */
    CHECK_NEAR(sp.min, 36e6, 0);
    CHECK_EQ_U(sp.min_member, 2);
    CHECK_NEAR(sp.max, 77e6, 0);
    CHECK_EQ_U(sp.max_member, 0);
    sm_cpath_rank_total(s, main_p, 1, &rt);
    CHECK_NEAR(rt.excl_ns, 74e6, 0);
    sp = sm_cpath_spread_ranks_bytes(s, send, 0); /* 300 and 1000; rank 1 never sent */
    CHECK_EQ_U(sp.n, 2);
    CHECK_NEAR(sp.mean, 650, 0);
    CHECK_EQ_U(sp.min_member, 0);
    CHECK_EQ_U(sp.max_member, 2);
    sp = sm_cpath_spread_ranks_bytes(s, recv, 1);
    CHECK_EQ_U(sp.n, 1);
    CHECK_NEAR(sp.max, 300, 0);
    CHECK_EQ_U(sp.max_member, 1);

    /* Across threads (all members of the job): 20, 25, 15, 60 ms. */
    sp = sm_cpath_spread_time(s, compute, 0);
    CHECK_EQ_U(sp.n, 4);
    CHECK_NEAR(sp.mean, 30e6, 1e-6);
    CHECK_NEAR(sp.min, 15e6, 0);
    CHECK_EQ_U(sp.min_member, 2);
    CHECK_NEAR(sp.max, 60e6, 0);
    CHECK_EQ_U(sp.max_member, 3);
    CHECK_NEAR(sp.stddev, sqrt((100.0 + 25 + 225 + 900) / 4) * 1e6, 1e-3);

    /* MPI functions over their paths. */
    uint32_t nt;
    sm_region_total_t *tot = sm_profile_region_totals(s, is_mpi, NULL, &nt);
    CHECK_EQ_U(nt, 2);
    if (tot && nt == 2) {
        CHECK_EQ_U(tot[0].region, SEND); /* 7 ms before 6 ms */
        CHECK_EQ_U(tot[0].calls, 4);
        CHECK_EQ_U(tot[0].ranks, 2);
        CHECK_NEAR(tot[0].time_ns, 7e6, 0);
        CHECK_NEAR(tot[0].mean_rank_ns, 3.5e6, 0);
        CHECK_NEAR(tot[0].max_rank_ns, 4e6, 0);
        CHECK_EQ_U(tot[0].max_rank, 2);
        CHECK_EQ_U(tot[0].bytes_sent, 1300);
        CHECK_EQ_U(tot[1].region, RECV);
        CHECK_EQ_U(tot[1].calls, 3);
        CHECK_EQ_U(tot[1].max_rank, 1);
        CHECK_NEAR(tot[1].time_ns, 6e6, 0);
        CHECK_EQ_U(tot[1].bytes_received, 300);
    }
    free(tot);

    /* ---- the writers, for this job ---- */
    sm_defset_t *defs = sm_defset_new();
    CHECK(sm_defset_region(defs, "main", "app.c", 10, SM_PARADIGM_USER, SM_ROLE_FUNCTION) == MAIN);
    CHECK(sm_defset_region(defs, "compute", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE) == COMPUTE);
    CHECK(sm_defset_region(defs, "MPI_Send", NULL, 0, SM_PARADIGM_MPI, SM_ROLE_POINT2POINT) == SEND);
    CHECK(sm_defset_region(defs, "MPI_Recv", NULL, 0, SM_PARADIGM_MPI, SM_ROLE_POINT2POINT) == RECV);
    sm_procs_t procs = {.rank = 0, .size = 3};
    sm_job_process_t processes[3] = {{0, 100, "node1"}, {1, 101, "node1"}, {2, 200, "node2"}};
    /* Rank 0 sent 3 messages (300 bytes) to rank 1, rank 2 one of 1000 to 0. */
    sm_comm_pair_t pairs[2] = {{0, 1, 3, 300}, {2, 0, 1, 1000}};
    sm_job_t job = {.procs = &procs, .defs = defs, .processes = processes,
                    .matrix_pairs = pairs, .matrix_pairs_n = 2};
    char dir[] = "/tmp/sm-test-summary-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *argv[] = {"./app", "x y"};
    sm_run_info_t run = {.output_dir = dir, .program = "app", .argc = 2, .argv = argv,
                         .pid = 100, .hostname = "node1", .clock_source = "tsc"};
    CHECK(sm_profile_write_text(&run, &job, s) == 0);
    CHECK(sm_profile_write_json(&run, &job, s) == 0);
    CHECK(sm_profile_write_csv(&run, &job, s) == 0);
    CHECK(sm_comm_matrix_write(&run, &job) == 0);
    const char *text = slurp(dir, "comm_matrix.csv");
    CHECK_STR(text, "sender,receiver,messages,bytes\n0,1,3,300\n2,0,1,1000\n");
    text = slurp(dir, "profile.csv");
    CHECK(text && strstr(text, "\n2,1,1,compute,region,main > compute,2,3,0,3,60000000,20000000,"
                               "20000000,60000000,20000000,20000000,0,0\n"));
    CHECK(text && strstr(text, "\n2,1,1,compute,region,main > compute,1,2,1,1,15000000,15000000,"
                               "15000000,15000000,15000000,15000000,0,0\n"));
    CHECK(text && strstr(text, "\n3,1,1,MPI_Send,p2p,main > MPI_Send,2,3,0,1,4000000,4000000,"
                               "4000000,4000000,4000000,4000000,1000,0\n"));
    text = slurp(dir, "profile.txt");
    CHECK(text && strstr(text, "ranks       : 3 on 2 hosts\n"));
    CHECK(text && strstr(text, "thread 2: rank 1, Thread 1, created by thread 1 in main\n"));
    CHECK(text && strstr(text, "CALL-PATH PROFILE ACROSS RANKS"));
    CHECK(text && strstr(text, "MPI FUNCTIONS"));
    CHECK(text && strstr(text, "point-to-point communication matrix"));
    const char *files[] = {"profile.txt", "profile.json", "profile.csv", "comm_matrix.csv",
                           "comm_matrix.json"};
    if (getenv("SM_TEST_KEEP")) {
        fprintf(stderr, "output kept in %s\n", dir);
    } else {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            unlink(path);
        }
        rmdir(dir);
    }
    sm_defset_free(defs);

    /* ---- one process: the same path with one rank ---- */
    n = append_record(seq, 0, 0, b1, len1);
    /* rank 0's record holding rank 1's blob: rejected */
    int saved = quiet();
    CHECK(!accepted(seq, n, 1));
    loud(saved);
    uint64_t len1r;
    uint8_t *b1r = sm_profile_summary_serialize(l1, &maps1, 0, &len1r);
    n = append_record(seq, 0, 0, b1r, len1r);
    sm_profile_summary_t *one = sm_profile_summary_from_blobs(seq, n, 1);
    CHECK(one && one->n_members == 2 && one->n_ranks == 1);
    if (one) {
        const sm_cpath_t *c = child(child(&one->root, MAIN), COMPUTE);
        sm_cpath_rank_total(one, c, 0, &rt);
        CHECK_NEAR(rt.incl_ns, 40e6, 0);
        CHECK_EQ_U(one->member_info[1].creator, 0);
    }
    sm_profile_summary_free(one);
    free(b1r);

    /* ---- a per-process file's blob (own ids), mapped afterwards ---- */
    uint64_t len1own;
    uint8_t *b1own = sm_profile_summary_serialize(l1, NULL, 1, &len1own);
    CHECK(b1own && len1own == len1);
    CHECK(sm_profile_summary_remap(b1own, len1own, map1, 3) == 0);
    CHECK(b1own && len1own == len1 && memcmp(b1own, b1, len1) == 0);
    saved = quiet();
    CHECK(sm_profile_summary_remap(b1own, len1own - 1, map1, 3) == -1);
    loud(saved);
    free(b1own);

    /* ---- a rank that sent an empty record: the others still count ---- */
    n = append_record(seq, 0, 0, b0, len0);
    n = append_record(seq, n, 1, "", 0);
    n = append_record(seq, n, 2, b2, len2);
    saved = quiet();
    sm_profile_summary_t *two = sm_profile_summary_from_blobs(seq, n, 3);
    loud(saved);
    CHECK(two && two->n_members == 2 && two->rank_first_member[2] == 1 &&
          two->member_rank[1] == 2);
    if (two) {
        sp = sm_cpath_spread_ranks_time(two, child(child(&two->root, MAIN), COMPUTE), 0);
        CHECK_EQ_U(sp.n, 2);
        CHECK_NEAR(sp.mean, 40e6, 0);
    }
    sm_profile_summary_free(two);

    /* ---- malformed input ---- */
    saved = quiet();
    /* Every truncation of a blob (its record says the shorter length); an
     * empty one is a rank without a summary (above). */
    int truncated_accepted = 0;
    for (uint64_t cut = 1; cut < len1; cut++) {
        n = append_record(seq, 0, 1, b1, cut);
        truncated_accepted += accepted(seq, n, 3);
    }
    /* A repeated rank, a rank beyond the job, a record for another rank. */
    n = append_record(seq, 0, 0, b0, len0);
    n = append_record(seq, n, 0, b0, len0);
    bool repeated = accepted(seq, n, 3);
    n = append_record(seq, 0, 2, b2, len2);
    bool beyond = accepted(seq, n, 2);
    n = append_record(seq, 0, 1, b2, len2);
    bool other = accepted(seq, n, 3);
    /* A trailing byte, a bad magic. */
    uint8_t *longer = malloc(len0 + 1);
    memcpy(longer, b0, len0);
    longer[len0] = 0;
    n = append_record(seq, 0, 0, longer, len0 + 1);
    bool trailing = accepted(seq, n, 3);
    n = append_record(seq, 0, 0, b0, len0);
    seq[12] ^= 0xff;
    bool magic = accepted(seq, n, 3);
    /* Every byte corrupted in turn: accepted or not, never a crash (run under
     * valgrind or ASan to see reads out of bounds). */
    for (uint64_t at = 0; at < len1; at++) {
        n = append_record(seq, 0, 1, b1, len1);
        seq[12 + at] ^= 0xa5;
        accepted(seq, n, 3);
    }
    loud(saved);
    CHECK_EQ_U(truncated_accepted, 0);
    CHECK(!repeated);
    CHECK(!beyond);
    CHECK(!other);
    CHECK(!trailing);
    CHECK(!magic);
    free(longer);

    free(seq);
    test_counters();
    free(b0);
    free(b1);
    free(b2);
    sm_profile_summary_free(s);
    sm_profile_summary_free(l0);
    sm_profile_summary_free(l1);
    sm_profile_summary_free(l2);
    sm_profile_free(&p0);
    sm_profile_free(&p1a);
    sm_profile_free(&p1b);
    sm_profile_free(&p2);
    return UNIT_RESULT();
}
