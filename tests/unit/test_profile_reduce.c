/* The job's profile reduced up a tree (merge/profile_reduce.h): 70 planted
 * ranks (94 threads: beyond the 64 whose per-member values travel along),
 * two tick lengths, imbalance planted in rank 37, bytes in the even ranks.
 * The statistics of every path (across threads and across ranks), the
 * ranks that stand out, the rank bins and the regions over their paths
 * equal a direct computation from the planted values; the binomial tree
 * (an in-process transport, ranks run from the last to the first so that
 * every child has sent before its parent receives), sysmeasure-merge's
 * reduction in one process and merges in other groupings give the same
 * numbers, byte for byte; a small job keeps its members through the tree;
 * truncated reduced blobs are refused. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "merge/profile_reduce.h"
#include "merge/profile_summary.h"
#include "merge/tree_reduce.h"
#include "merge/unify.h"
#include "unit.h"

enum { MAIN, COMPUTE, SEND };
#define P 70
#define SLOW 37

/* ---------------------------------------------------------------- planted ranks */

static double npt_of(uint32_t r)
{
    return r % 2 ? 0.5 : 2.0; /* ns per tick: two clocks */
}

/* ns of one visit of COMPUTE on rank r's main thread (2 visits). */
static uint64_t compute_ns(uint32_t r)
{
    return r == SLOW ? 30000 : 1000 + 10 * (uint64_t)(r % 11);
}

typedef struct planted {
    sm_profile_t main, helper;
    void *blob;
    uint64_t len;
} planted_t;

static sm_profile_node_t *visit(sm_profile_t *prof, sm_profile_node_t *parent,
                                sm_region_id_t region, uint64_t ticks, uint64_t self)
{
    sm_profile_node_t *n = sm_profile_child(prof, parent, region);
    n->visits++;
    sm_stat_add(&n->incl, ticks);
    sm_stat_add(&n->excl, self);
    return n;
}

/* Rank r: main thread main > {compute x 2, send (even ranks)}; every third
 * rank a helper thread, main > compute once (500 ns, all of it in compute). */
static void plant_rank(planted_t *x, uint32_t r)
{
    double npt = npt_of(r);
    uint64_t c = (uint64_t)(compute_ns(r) / npt); /* ticks: exact */
    sm_profile_init(&x->main);
    sm_profile_init(&x->helper);
    uint64_t main_ticks = (uint64_t)(100000 / npt);
    sm_profile_node_t *m = visit(&x->main, &x->main.root, MAIN, main_ticks,
                                 main_ticks - 2 * c - (r % 2 ? 0 : 8));
    visit(&x->main, m, COMPUTE, c, c);
    visit(&x->main, m, COMPUTE, c, c);
    if (r % 2 == 0) {
        sm_profile_node_t *s = visit(&x->main, m, SEND, 8, 8);
        s->bytes_sent = 8ull * (r + 1);
    }
    sm_summary_thread_t t[2] = {
        {.location = 0, .name = "main", .creator = SM_INVALID_ID, .root = &x->main.root},
        {.location = 1, .name = "helper", .creator = 0, .root = &x->helper.root}};
    uint32_t n = 1;
    if (r % 3 == 0) {
        uint64_t h = (uint64_t)(500 / npt);
        visit(&x->helper, visit(&x->helper, &x->helper.root, MAIN, h, 0), COMPUTE, h, h);
        n = 2;
    }
    sm_profile_summary_t *s = sm_profile_summary_from_threads(t, n, npt);
    x->blob = s ? sm_profile_summary_serialize(s, NULL, r, &x->len) : NULL;
    sm_profile_summary_free(s);
}

static uint32_t threads_of(uint32_t r)
{
    return r % 3 == 0 ? 2 : 1;
}

/* ---------------------------------------------------------------- an in-process transport */

typedef struct msg {
    uint32_t src, dst;
    void *buf;
    uint64_t len;
} msg_t;

typedef struct net {
    msg_t msgs[4096];
    uint32_t n;
} net_t;

typedef struct proc_ctx {
    net_t *net;
    uint32_t rank;
} proc_ctx_t;

static int fake_send(void *ctx, uint32_t dest, const void *buf, uint64_t len)
{
    proc_ctx_t *c = ctx;
    if (c->net->n == 4096)
        return -1;
    void *copy = malloc(len ? len : 1);
    memcpy(copy, buf, len);
    c->net->msgs[c->net->n++] = (msg_t){c->rank, dest, copy, len};
    return 0;
}

static int fake_recv(void *ctx, uint32_t src, void **buf, uint64_t *len)
{
    proc_ctx_t *c = ctx;
    for (uint32_t i = 0; i < c->net->n; i++) {
        msg_t *m = &c->net->msgs[i];
        if (m->buf && m->src == src && m->dst == c->rank) {
            *buf = m->buf;
            *len = m->len;
            m->buf = NULL;
            return 0;
        }
    }
    return -1; /* (a child that has not sent: the order below prevents it) */
}

/* The job summary of the ranks' blobs through sm_profiles_reduce on every
 * rank, the last first. */
static sm_profile_summary_t *tree(planted_t *ranks, uint32_t n)
{
    static net_t net;
    memset(&net, 0, sizeof net);
    sm_profile_summary_t *root = NULL;
    for (uint32_t r = n; r-- > 0;) {
        proc_ctx_t ctx = {&net, r};
        sm_procs_t procs = {.rank = r, .size = n, .ctx = &ctx, .send = fake_send,
                            .recv = fake_recv};
        sm_profile_summary_t *s = sm_profiles_reduce(&procs, ranks[r].blob, ranks[r].len, n);
        CHECK(r == 0 || s == NULL);
        if (r == 0)
            root = s;
    }
    return root;
}

/* {rank, len, blob} records of sm_tree_gather, for sysmeasure-merge's way. */
static uint8_t *gathered(planted_t *ranks, uint32_t n, uint64_t *len)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < n; r++)
        total += 12 + ranks[r].len;
    uint8_t *seq = malloc(total), *p = seq;
    for (uint32_t r = n; r-- > 0;) { /* (in no particular order: here backwards) */
        memcpy(p, &r, 4);
        memcpy(p + 4, &ranks[r].len, 8);
        memcpy(p + 12, ranks[r].blob, ranks[r].len);
        p += 12 + ranks[r].len;
    }
    *len = total;
    return seq;
}

static const sm_cpath_t *child(const sm_cpath_t *p, sm_region_id_t region)
{
    for (const sm_cpath_t *c = p ? p->first_child : NULL; c; c = c->next_sibling)
        if (c->region == region)
            return c;
    return NULL;
}

static int quiet(void)
{
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    return saved;
}

static void loud(int saved)
{
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* ---------------------------------------------------------------- direct computation */

typedef struct expect {
    uint32_t n;
    double mean, stddev;
    uint64_t sum, min, max;
    uint32_t min_who, max_who;
} expect_t;

static expect_t direct(const uint64_t *v, const uint8_t *present, uint32_t n)
{
    expect_t e = {0};
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!present[i])
            continue;
        if (!e.n || v[i] < e.min)
            e.min = v[i], e.min_who = i;
        if (!e.n || v[i] > e.max)
            e.max = v[i], e.max_who = i;
        e.n++;
        e.sum += v[i];
        sum += (double)v[i];
    }
    e.mean = e.n ? sum / e.n : 0;
    double m2 = 0;
    for (uint32_t i = 0; i < n; i++)
        if (present[i])
            m2 += ((double)v[i] - e.mean) * ((double)v[i] - e.mean);
    e.stddev = e.n ? sqrt(m2 / e.n) : 0;
    return e;
}

static void check_spread(const char *what, sm_spread_t sp, expect_t e)
{
    int before = unit_failures;
    CHECK_EQ_U(sp.n, e.n);
    CHECK_NEAR(sp.mean, e.mean, 1e-9 * e.mean);
    CHECK_NEAR(sp.min, (double)e.min, 0);
    CHECK_NEAR(sp.max, (double)e.max, 0);
    CHECK_NEAR(sp.sum, (double)e.sum, 0);
    CHECK_NEAR(sp.stddev, e.stddev, 1e-6 * (e.stddev + 1));
    CHECK_EQ_U(sp.min_member, e.min_who);
    CHECK_EQ_U(sp.max_member, e.max_who);
    if (unit_failures != before)
        fprintf(stderr, "  (in %s)\n", what);
}

/* The job summary of the 70 ranks, whichever way it was reduced. */
static void check_job(const char *how, const sm_profile_summary_t *s)
{
    CHECK(s != NULL);
    if (!s)
        return;
    fprintf(stderr, "checking the job reduced by %s\n", how);
    CHECK(!s->per_member);
    CHECK_EQ_U(s->n_members, 0);
    CHECK_EQ_U(s->n_ranks, P);
    CHECK_EQ_U(s->ranks_present, P);
    uint64_t threads = 0;
    for (uint32_t r = 0; r < P; r++)
        threads += threads_of(r);
    CHECK_EQ_U(s->n_threads, threads);
    CHECK_NEAR(s->ns_per_tick, npt_of(0), 0);
    const sm_cpath_t *main_p = child(&s->root, MAIN), *compute = child(main_p, COMPUTE),
                     *send = child(main_p, SEND);
    CHECK(main_p && compute && send && s->root.first_child == main_p &&
          main_p->first_child == compute && compute->next_sibling == send);
    if (!compute || !send)
        return;

    /* Across ranks: per rank the sum over its threads. */
    uint64_t v[P];
    uint8_t all[P], even[P];
    for (uint32_t r = 0; r < P; r++) {
        v[r] = 2 * compute_ns(r) + (threads_of(r) == 2 ? 500 : 0);
        all[r] = 1;
        even[r] = r % 2 == 0;
    }
    check_spread("compute across ranks", sm_cpath_spread_ranks_time(s, compute, 0),
                 direct(v, all, P));
    check_spread("compute excl across ranks", sm_cpath_spread_ranks_time(s, compute, 1),
                 direct(v, all, P));
    for (uint32_t r = 0; r < P; r++)
        v[r] = 8ull * (r + 1);
    check_spread("bytes across ranks", sm_cpath_spread_ranks_bytes(s, send, 0),
                 direct(v, even, P));
    for (uint32_t r = 0; r < P; r++)
        v[r] = 2 + (threads_of(r) == 2);
    check_spread("visits across ranks", sm_cpath_spread_ranks_visits(s, compute),
                 direct(v, all, P));
    for (uint32_t r = 0; r < P; r++)
        v[r] = 100000 - 2 * compute_ns(r) - (r % 2 ? 0 : 16);
    check_spread("main excl across ranks", sm_cpath_spread_ranks_time(s, main_p, 1),
                 direct(v, all, P));

    /* Across threads: every thread of every rank (no member numbers: the
     * rank and location of the min and max). */
    uint64_t tv[2 * P];
    uint8_t tp[2 * P];
    uint32_t rank_of[2 * P], loc_of[2 * P], nt = 0;
    for (uint32_t r = 0; r < P; r++)
        for (uint32_t t = 0; t < threads_of(r); t++) {
            tv[nt] = t ? 500 : 2 * compute_ns(r);
            tp[nt] = 1;
            rank_of[nt] = r;
            loc_of[nt++] = t;
        }
    expect_t e = direct(tv, tp, nt);
    sm_spread_t sp = sm_cpath_spread_time(s, compute, 0);
    CHECK_EQ_U(sp.n, nt);
    CHECK_NEAR(sp.mean, e.mean, 1e-9 * e.mean);
    CHECK_NEAR(sp.stddev, e.stddev, 1e-6 * e.stddev);
    CHECK_NEAR(sp.min, 500, 0);
    CHECK_EQ_U(sp.min_rank, rank_of[e.min_who]);
    CHECK_EQ_U(sp.min_loc, loc_of[e.min_who]);
    CHECK_EQ_U(sp.max_rank, SLOW);
    CHECK_EQ_U(sp.max_loc, 0);
    CHECK_EQ_U(sp.min_member, SM_INVALID_ID);

    /* The ranks that stand out: rank 37 first, then by time, lower rank on
     * a tie; the fastest likewise. */
    const sm_cpath_stats_t *st = compute->stats;
    CHECK(st && st->n_top == SM_PROFILE_TOP_RANKS && st->n_bottom == SM_PROFILE_TOP_RANKS);
    if (st) {
        CHECK_EQ_U(st->top[0].rank, SLOW);
        CHECK_EQ_U(st->top[0].value, 2 * 30000);
        for (uint32_t i = 1; i < st->n_top; i++)
            CHECK(st->top[i - 1].value > st->top[i].value ||
                  (st->top[i - 1].value == st->top[i].value &&
                   st->top[i - 1].rank < st->top[i].rank));
        /* The least: r % 11 == 0 without a helper (0, 33, 66 have one). */
        CHECK_EQ_U(st->bottom[0].value, 2000);
        CHECK_EQ_U(st->bottom[0].rank, 11);
        CHECK_EQ_U(st->bottom[1].rank, 22);
        CHECK_EQ_U(st->bottom[2].rank, 44);
        /* One bin a rank (70 < 128). */
        CHECK_EQ_U(st->bin_first, 0);
        CHECK_EQ_U(st->n_bins, P);
        CHECK_EQ_U(st->bins[SLOW].ranks, 1);
        CHECK_EQ_U(st->bins[SLOW].incl_max, 60000);
        CHECK_EQ_U(s->n_bins, P);
        CHECK_EQ_U(s->bins[0].threads, 2);
        CHECK_EQ_U(s->bins[0].main_threads, 1);
    }
}

static bool is_send(sm_region_id_t region, void *arg)
{
    (void)arg;
    return region == SEND;
}

static void check_regions(const sm_profile_summary_t *s)
{
    uint32_t n;
    sm_region_total_t *tot = s ? sm_profile_region_totals(s, is_send, NULL, &n) : NULL;
    CHECK(tot && n == 1);
    if (tot && n == 1) {
        CHECK_EQ_U(tot[0].calls, P / 2);
        CHECK_EQ_U(tot[0].ranks, P / 2);
        CHECK_NEAR(tot[0].time_ns, 16.0 * (P / 2), 0); /* 8 ticks of 2 ns per even rank */
        CHECK_EQ_U(tot[0].max_rank, 0);
        CHECK_EQ_U(tot[0].bytes_sent, 8ull * (P / 2) * (P / 2)); /* sum of 8(r+1), r even */
    }
    free(tot);
}

/* Two job summaries hold the same tree and the same statistics. */
static void check_same(const sm_profile_summary_t *a, const sm_profile_summary_t *b)
{
    CHECK(a && b);
    if (!a || !b)
        return;
    CHECK_EQ_U(a->n_threads, b->n_threads);
    CHECK_EQ_U(a->n_region_stats, b->n_region_stats);
    for (uint32_t i = 0; i < a->n_region_stats && i < b->n_region_stats; i++)
        CHECK(!memcmp(&a->region_stats[i].rank_time, &b->region_stats[i].rank_time,
                      sizeof(sm_mstat_t)) && a->region_stats[i].calls == b->region_stats[i].calls);
    const sm_cpath_t *p = a->root.first_child, *q = b->root.first_child;
    while (p && q) {
        CHECK(p->region == q->region && p->depth == q->depth);
        CHECK(p->stats && q->stats && p->stats->n_values == q->stats->n_values);
        if (p->stats && q->stats) {
            CHECK(!memcmp(p->stats->threads, q->stats->threads,
                          2 * p->stats->n_values * sizeof(sm_mstat_t)));
            CHECK(!memcmp(p->stats->top, q->stats->top, sizeof p->stats->top));
            CHECK(!memcmp(p->stats->bottom, q->stats->bottom, sizeof p->stats->bottom));
            CHECK(p->stats->n_bins == q->stats->n_bins &&
                  !memcmp(p->stats->bins, q->stats->bins, p->stats->n_bins * sizeof(sm_rank_bin_t)));
        }
        /* Pre-order. */
        if (p->first_child) {
            p = p->first_child;
            q = q->first_child;
            continue;
        }
        while (p && !p->next_sibling) {
            p = p->parent && p->parent->depth ? p->parent : NULL;
            q = q && q->parent && q->parent->depth ? q->parent : NULL;
        }
        p = p ? p->next_sibling : NULL;
        q = q ? q->next_sibling : NULL;
    }
    CHECK(!p && !q);
}

int main(void)
{
    static planted_t ranks[P];
    for (uint32_t r = 0; r < P; r++) {
        plant_rank(&ranks[r], r);
        CHECK(ranks[r].blob != NULL);
    }

    /* sysmeasure-merge's way: every rank's blob in one process. */
    uint64_t len;
    uint8_t *seq = gathered(ranks, P, &len);
    sm_profile_summary_t *merged = sm_profile_summary_from_blobs(seq, len, P);
    check_job("sysmeasure-merge's reduction", merged);
    check_regions(merged);

    /* The binomial tree. */
    sm_profile_summary_t *live = tree(ranks, P);
    check_job("the tree", live);
    check_regions(live);
    check_same(merged, live);

    /* Merges in other groupings: the same bytes. */
    void *parts[P];
    uint64_t lens[P];
    for (uint32_t r = 0; r < P; r++)
        parts[r] = sm_profile_reduced_of_rank(ranks[r].blob, ranks[r].len, r, P, &lens[r]);
    void *one = NULL, *left = NULL, *right = NULL, *two = NULL;
    uint64_t one_len = 0, left_len = 0, right_len = 0, two_len = 0;
    CHECK(sm_profile_reduced_merge((const void *const *)parts, lens, P, &one, &one_len, NULL) == 0);
    CHECK(sm_profile_reduced_merge((const void *const *)parts, lens, 35, &left, &left_len, NULL) == 0);
    CHECK(sm_profile_reduced_merge((const void *const *)parts + 35, lens + 35, P - 35, &right,
                                   &right_len, NULL) == 0);
    const void *halves[2] = {left, right};
    uint64_t half_lens[2] = {left_len, right_len};
    CHECK(sm_profile_reduced_merge(halves, half_lens, 2, &two, &two_len, NULL) == 0);
    CHECK(one && two && one_len == two_len && !memcmp(one, two, one_len));
    sm_profile_summary_t *grouped = two ? sm_profile_summary_from_reduced(two, two_len) : NULL;
    check_same(merged, grouped);

    /* Every truncation of a reduced blob is refused; a corrupt byte never
     * crashes (run under valgrind or ASan to see reads out of bounds). */
    int saved = quiet();
    int accepted = 0;
    for (uint64_t cut = 1; parts[3] && cut < lens[3]; cut++) {
        const void *b[1] = {parts[3]};
        uint64_t l[1] = {cut};
        void *out = NULL;
        uint64_t out_len;
        accepted += sm_profile_reduced_merge(b, l, 1, &out, &out_len, NULL) == 0;
        free(out);
    }
    uint8_t *bad = parts[3] ? malloc(lens[3]) : NULL;
    for (uint64_t at = 0; bad && at < lens[3]; at++) {
        memcpy(bad, parts[3], lens[3]);
        bad[at] ^= 0x5a;
        const void *b[1] = {bad};
        void *out = NULL;
        uint64_t out_len;
        sm_profile_reduced_merge(b, &lens[3], 1, &out, &out_len, NULL);
        free(out);
    }
    free(bad);
    loud(saved);
    CHECK_EQ_U(accepted, 0);

    /* A small job: 4 ranks, 6 threads; the members come through the tree. */
    sm_profile_summary_t *small = tree(ranks, 4);
    CHECK(small && small->per_member && small->n_members == 6 && small->n_ranks == 4);
    if (small && small->per_member) {
        CHECK_EQ_U(small->rank_first_member[1], 2);
        CHECK_EQ_U(small->member_rank[5], 3);
        const sm_cpath_t *c = child(child(&small->root, MAIN), COMPUTE);
        CHECK(c && c->members[1].visits == 1 && c->members[0].visits == 2);
        sm_cpath_rank_total_t rt;
        sm_cpath_rank_total(small, c, 3, &rt);
        CHECK_NEAR(rt.incl_ns, 2 * compute_ns(3) + 500, 0);
        sm_spread_t sp = sm_cpath_spread_time(small, c, 0);
        CHECK_EQ_U(sp.n, 6);
        CHECK_EQ_U(sp.min_member, 1); /* rank 0's helper */
    }
    uint64_t small_len;
    uint8_t *small_seq = gathered(ranks, 4, &small_len);
    sm_profile_summary_t *small_merged = sm_profile_summary_from_blobs(small_seq, small_len, 4);
    check_same(small, small_merged);

    sm_profile_summary_free(small);
    sm_profile_summary_free(small_merged);
    free(small_seq);
    sm_profile_summary_free(grouped);
    for (uint32_t r = 0; r < P; r++)
        free(parts[r]);
    free(one);
    free(two);
    free(left);
    free(right);
    sm_profile_summary_free(live);
    sm_profile_summary_free(merged);
    free(seq);
    for (uint32_t r = 0; r < P; r++) {
        free(ranks[r].blob);
        sm_profile_free(&ranks[r].main);
        sm_profile_free(&ranks[r].helper);
    }
    return UNIT_RESULT();
}
