/* profile.txt: the call-path profile as box-drawn text tables, in the layout of
 * the ROCm Systems Profiler's wall_clock.txt (one row per thread and path, a
 * |N>>> prefix naming the thread), followed by the same paths across threads;
 * for a job of several ranks also across ranks and the ranks that stand out,
 * then the MPI functions and the communication matrix.  The text stays
 * readable for large jobs: per-thread rows only while the job summary has
 * its members (profile_stats.h: SM_PROFILE_DETAIL_MAX), and the first of them
 * at that; the matrix is cut (profile-ranks.csv has every thread's rows). */
#include "summary_common.h"
#include "../finalize/pipeline.h"
#include "profile_sampled.h"
#include "gpu_summary.h"
#include "../causal/causal_output.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/definitions.h"
#include "../util/abbrev.h"
#include "../util/json.h"
#include "../util/log.h"
#include "text_table.h"

/* Threads with per-thread rows and a legend line, ranks with a full matrix,
 * pairs listed beyond that. */
#define SM_TEXT_MAX_MEMBERS 16
#define SM_TEXT_MAX_MATRIX 16
#define SM_TEXT_TOP_PAIRS 20
#define SM_TEXT_TOP_PATHS 20 /* paths in the table of ranks that stand out */

/* ---------------------------------------------------------------- values */

typedef struct sm_time_unit {
    const char *name;
    double ns;
} sm_time_unit_t;

static const sm_time_unit_t sm_time_units[] = {
    {"sec", 1e9}, {"msec", 1e6}, {"usec", 1e3}, {"nsec", 1}};

/* The largest unit in which v (ns) is at least 1; nsec for smaller values. */
static const sm_time_unit_t *sm_time_unit_for(double ns)
{
    size_t n = sizeof sm_time_units / sizeof sm_time_units[0];
    for (size_t i = 0; i + 1 < n; i++)
        if (ns >= sm_time_units[i].ns)
            return &sm_time_units[i];
    return &sm_time_units[n - 1];
}


/* The whole file's context. */
typedef struct sm_text {
    sm_out_t *o;
    const sm_run_info_t *run;
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    sm_row_t *row;
    bool multi;         /* more than one rank */
    uint32_t shown;     /* members with per-thread rows: */
    uint32_t members[SM_TEXT_MAX_MEMBERS]; /* which, in member order */
    uint32_t idle;      /* members with no event (not shown) */
    uint32_t slow_rank, fast_rank; /* ranks with the most and least time in regions */
    sm_derived_t derived[SM_SUMMARY_MAX_COUNTERS];
    uint32_t n_derived;
} sm_text_t;

/* Name sanitized and abbreviated (util/abbrev.h: C++ template arguments
 * collapsed, SM_ABBREV_WIDTH characters at most); profile.json and
 * profile.csv have the full name. */
static void sm_text_name_into(char *name, size_t room, const char *s)
{
    char full[SM_LABEL_SIZE];
    snprintf(full, sizeof full, "%s", s);
    sm_text_sanitize(full);
    sm_abbrev(full, name, room, SM_ABBREV_WIDTH);
}

/* prefix, then "main", "|_run", "  |_step": the indentation of the
 * wall_clock tables, bounded so that deep recursion keeps rows short. */
static void sm_text_label(const sm_text_t *x, char *buf, size_t len, const char *prefix,
                          const sm_cpath_t *p)
{
    uint32_t level = p->depth > 1 ? p->depth - 2 : 0;
    if (level > SM_LABEL_MAX_INDENT)
        level = SM_LABEL_MAX_INDENT;
    int n = snprintf(buf, len, "%s%*s%s", prefix, (int)(2 * level), "", p->depth > 1 ? "|_" : "");
    if (n < 0 || (size_t)n >= len)
        return;
    sm_text_name_into(buf + n, len - (size_t)n, sm_job_region_name(x->job, p->region));
}

/* The thread that holds a spread's min (or max) as the tables name it: its
 * member number and its rank in a job; without members, its rank and its
 * location id on that rank. */
static void sm_text_member(const sm_text_t *x, char *buf, size_t len, const sm_spread_t *sp,
                           bool max)
{
    uint32_t m = max ? sp->max_member : sp->min_member;
    uint32_t rank = max ? sp->max_rank : sp->min_rank, loc = max ? sp->max_loc : sp->min_loc;
    if (m == SM_INVALID_ID)
        snprintf(buf, len, "rank %u loc %u", (unsigned)rank, (unsigned)loc);
    else if (x->multi)
        snprintf(buf, len, "%u (rank %u)", (unsigned)m, (unsigned)x->s->member_rank[m]);
    else
        snprintf(buf, len, "%u", (unsigned)m);
}

/* ---------------------------------------------------------------- the tables */

/* KIND, last: what the region is (ParFor, REGION, FENCE, ... for Kokkos;
 * loop, barrier, collective, ... for the others). */
static const char *const sm_thread_heads[] = {"LABEL", "COUNT", "DEPTH", "METRIC",
                                              "UNITS", "SUM",   "MEAN",  "MIN",
                                              "MAX",   "VAR",   "STDDEV", "% SELF", "KIND"};

static const char *const sm_across_heads[] = {"LABEL",  "THREADS",    "COUNT", "METRIC",
                                              "UNITS",  "MEAN",       "MIN",   "MIN THREAD",
                                              "MAX",    "MAX THREAD", "STDDEV", "KIND"};

static const char *const sm_ranks_heads[] = {
    "LABEL",     "RANKS",    "COUNT",       "UNITS",     "INCL MEAN", "INCL MIN",
    "MIN RANK",  "INCL MAX", "MAX RANK",    "INCL STDDEV", "EXCL MEAN", "EXCL MIN",
    "MIN RANK",  "EXCL MAX", "MAX RANK",    "EXCL STDDEV", "KIND"};
#define SM_THREAD_KIND_COL 12
#define SM_ACROSS_KIND_COL 11
#define SM_RANKS_KIND_COL 16

typedef enum { SM_TABLE_THREAD, SM_TABLE_THREADS, SM_TABLE_RANKS } sm_table_kind_t;

typedef struct sm_text_walk {
    const sm_text_t *x;
    sm_table_t *table;
    uint32_t member;
} sm_text_walk_t;

#define SM_CELL(row, c, ...) snprintf((row)->cell[c], SM_CELL_SIZE, __VA_ARGS__)

/* A derived figure's row: its name, its value, "-" in the other cells. */
static void sm_derived_row(sm_text_walk_t *w, const sm_derived_t *dv, double value, int ncols)
{
    sm_row_t *row = w->x->row;
    SM_CELL(row, 3, "%s", dv->name);
    SM_CELL(row, 4, "ratio");
    SM_CELL(row, 5, "%.4f", value);
    for (int c = 6; c < ncols; c++)
        SM_CELL(row, c, "-");
    sm_table_row(w->table, row);
}

/* Below a path's wall_clock row: one row per PAPI event (inclusive counts
 * per visit; % SELF the exclusive share), then the derived figures. */
static void sm_thread_counter_rows(sm_text_walk_t *w, const sm_cpath_member_t *m)
{
    const sm_text_t *x = w->x;
    const sm_profile_summary_t *s = x->s;
    sm_row_t *row = x->row;
    for (uint32_t k = 0; m->counters && k < s->n_counters; k++) {
        const sm_stat_t *incl = &m->counters[k], *excl = &m->counters[s->n_counters + k];
        double var = sm_stat_variance(incl, m->visits);
        SM_CELL(row, 3, "%s", s->counter_names[k]);
        SM_CELL(row, 4, "events");
        SM_CELL(row, 5, "%llu", (unsigned long long)incl->sum);
        SM_CELL(row, 6, "%.3f", sm_stat_mean(incl, m->visits));
        SM_CELL(row, 7, "%llu", (unsigned long long)(incl->min == UINT64_MAX ? 0 : incl->min));
        SM_CELL(row, 8, "%llu", (unsigned long long)incl->max);
        SM_CELL(row, 9, "%.3f", var);
        SM_CELL(row, 10, "%.3f", sqrt(var));
        SM_CELL(row, 11, "%.1f", incl->sum ? 100.0 * (double)excl->sum / (double)incl->sum : 100.0);
        sm_table_row(w->table, row);
    }
    for (uint32_t d = 0; m->counters && d < x->n_derived; d++) {
        const sm_derived_t *dv = &x->derived[d];
        sm_derived_row(w, dv, sm_derived_value(dv, m->counters[dv->num].sum,
                                               m->counters[dv->den].sum), 12);
    }
}

static void sm_thread_row(const sm_cpath_t *p, void *arg)
{
    sm_text_walk_t *w = arg;
    const sm_cpath_member_t *m = &p->members[w->member];
    if (p->depth == 0 || m->visits == 0 || sm_cpath_is_sampled(w->x->job, p))
        return; /* sampled functions: their own section */
    double npt = sm_summary_member_ns_per_tick(w->x->s, w->member);
    double sum = (double)m->incl.sum * npt;
    double mean = sm_stat_mean(&m->incl, m->visits) * npt;
    double min = (double)m->incl.min * npt;
    double max = (double)m->incl.max * npt;
    double var = sm_stat_variance(&m->incl, m->visits) * npt * npt;
    double self = m->incl.sum ? 100.0 * (double)m->excl.sum / (double)m->incl.sum : 100.0;
    const sm_time_unit_t *u = sm_time_unit_for(sum);
    sm_row_t *row = w->x->row;
    char prefix[24];
    snprintf(prefix, sizeof prefix, "|%u>>> ", (unsigned)w->member);
    sm_text_label(w->x, row->label, sizeof row->label, prefix, p);
    SM_CELL(row, 1, "%llu", (unsigned long long)m->visits);
    SM_CELL(row, 2, "%u", (unsigned)(p->depth - 1));
    SM_CELL(row, 3, "wall_clock");
    SM_CELL(row, 4, "%s", u->name);
    SM_CELL(row, 5, "%.6f", sum / u->ns);
    SM_CELL(row, 6, "%.6f", mean / u->ns);
    SM_CELL(row, 7, "%.6f", min / u->ns);
    SM_CELL(row, 8, "%.6f", max / u->ns);
    SM_CELL(row, 9, "%.6f", var / (u->ns * u->ns));
    SM_CELL(row, 10, "%.6f", sqrt(var) / u->ns);
    SM_CELL(row, 11, "%.1f", self);
    SM_CELL(row, SM_THREAD_KIND_COL, "%s", sm_job_region_kind(w->x->job, p->region));
    sm_table_row(w->table, row);
    row->cell[SM_THREAD_KIND_COL][0] = '\0'; /* (the counter rows below) */
    sm_thread_counter_rows(w, m);
}

static uint64_t sm_cpath_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_cpath_total(s, p, SM_PV_VISITS);
}

/* Below a path's wall_clock row across threads: each PAPI event's
 * inclusive count per thread, then the derived figures over all threads. */
static void sm_across_counter_rows(sm_text_walk_t *w, const sm_cpath_t *p, uint32_t threads)
{
    const sm_text_t *x = w->x;
    const sm_profile_summary_t *s = x->s;
    sm_row_t *row = x->row;
    for (uint32_t k = 0; threads && k < s->n_counters; k++) {
        sm_spread_t sp = sm_cpath_spread_counter(s, p, k, 0);
        SM_CELL(row, 3, "%s", s->counter_names[k]);
        SM_CELL(row, 4, "events");
        SM_CELL(row, 5, "%.3f", sp.mean);
        SM_CELL(row, 6, "%.0f", sp.min);
        sm_text_member(x, row->cell[7], SM_CELL_SIZE, &sp, false);
        SM_CELL(row, 8, "%.0f", sp.max);
        sm_text_member(x, row->cell[9], SM_CELL_SIZE, &sp, true);
        SM_CELL(row, 10, "%.3f", sp.stddev);
        sm_table_row(w->table, row);
    }
    for (uint32_t d = 0; threads && d < x->n_derived; d++) {
        const sm_derived_t *dv = &x->derived[d];
        sm_derived_row(w, dv, sm_derived_value(dv, sm_cpath_counter_total(s, p, dv->num, 0),
                                               sm_cpath_counter_total(s, p, dv->den, 0)), 11);
    }
}

static void sm_across_row(const sm_cpath_t *p, void *arg)
{
    sm_text_walk_t *w = arg;
    if (p->depth == 0 || sm_cpath_is_sampled(w->x->job, p))
        return;
    const sm_text_t *x = w->x;
    sm_spread_t sp = sm_cpath_spread_time(x->s, p, 0);
    sm_row_t *row = x->row;
    sm_text_label(x, row->label, sizeof row->label, "", p);
    SM_CELL(row, 1, "%u", (unsigned)sp.n);
    SM_CELL(row, 2, "%llu", (unsigned long long)sm_cpath_visits(x->s, p));
    SM_CELL(row, 3, "wall_clock");
    if (sp.n) {
        const sm_time_unit_t *u = sm_time_unit_for(sp.max);
        SM_CELL(row, 4, "%s", u->name);
        SM_CELL(row, 5, "%.6f", sp.mean / u->ns);
        SM_CELL(row, 6, "%.6f", sp.min / u->ns);
        sm_text_member(x, row->cell[7], SM_CELL_SIZE, &sp, false);
        SM_CELL(row, 8, "%.6f", sp.max / u->ns);
        sm_text_member(x, row->cell[9], SM_CELL_SIZE, &sp, true);
        SM_CELL(row, 10, "%.6f", sp.stddev / u->ns);
    } else { /* on the tree, but no thread completed a visit */
        for (int c = 4; c < 11; c++)
            SM_CELL(row, c, "-");
    }
    SM_CELL(row, SM_ACROSS_KIND_COL, "%s", sm_job_region_kind(x->job, p->region));
    sm_table_row(w->table, row);
    row->cell[SM_ACROSS_KIND_COL][0] = '\0';
    sm_across_counter_rows(w, p, sp.n);
}

/* Six cells from first: mean, min, min rank, max, max rank, stddev. */
static void sm_ranks_cells(sm_row_t *row, int first, sm_spread_t sp, const sm_time_unit_t *u)
{
    SM_CELL(row, first, "%.6f", sp.mean / u->ns);
    SM_CELL(row, first + 1, "%.6f", sp.min / u->ns);
    SM_CELL(row, first + 2, "%u", (unsigned)sp.min_member);
    SM_CELL(row, first + 3, "%.6f", sp.max / u->ns);
    SM_CELL(row, first + 4, "%u", (unsigned)sp.max_member);
    SM_CELL(row, first + 5, "%.6f", sp.stddev / u->ns);
}

static const sm_time_unit_t sm_unit_one = {"events", 1.0};

static void sm_ranks_row(const sm_cpath_t *p, void *arg)
{
    sm_text_walk_t *w = arg;
    if (p->depth == 0 || sm_cpath_is_sampled(w->x->job, p))
        return;
    const sm_text_t *x = w->x;
    sm_spread_t incl = sm_cpath_spread_ranks_time(x->s, p, 0);
    sm_row_t *row = x->row;
    sm_text_label(x, row->label, sizeof row->label, "", p);
    SM_CELL(row, 1, "%u", (unsigned)incl.n);
    SM_CELL(row, 2, "%llu", (unsigned long long)sm_cpath_visits(x->s, p));
    if (incl.n) {
        const sm_time_unit_t *u = sm_time_unit_for(incl.max);
        SM_CELL(row, 3, "%s", u->name);
        sm_ranks_cells(row, 4, incl, u);
        sm_ranks_cells(row, 10, sm_cpath_spread_ranks_time(x->s, p, 1), u);
    } else {
        for (int c = 3; c < 16; c++)
            SM_CELL(row, c, "-");
    }
    SM_CELL(row, SM_RANKS_KIND_COL, "%s", sm_job_region_kind(x->job, p->region));
    sm_table_row(w->table, row);
    row->cell[SM_RANKS_KIND_COL][0] = '\0';
    /* Each PAPI event: the label names it, the cells are counts. */
    for (uint32_t k = 0; incl.n && k < x->s->n_counters; k++) {
        char label[SM_LABEL_SIZE];
        sm_text_label(x, label, sizeof label, "", p);
        snprintf(row->label, sizeof row->label, "%.900s [%s]", label, x->s->counter_names[k]);
        SM_CELL(row, 3, "events");
        sm_ranks_cells(row, 4, sm_cpath_spread_ranks_counter(x->s, p, k, 0), &sm_unit_one);
        sm_ranks_cells(row, 10, sm_cpath_spread_ranks_counter(x->s, p, k, 1), &sm_unit_one);
        sm_table_row(w->table, row);
    }
}

/* Walk (measure or print) the rows of one table. */
static void sm_text_rows(sm_table_t *t, const sm_text_t *x, sm_table_kind_t kind)
{
    sm_text_walk_t w = {.x = x, .table = t};
    if (kind == SM_TABLE_THREADS)
        sm_cpath_walk(&x->s->root, sm_across_row, &w);
    else if (kind == SM_TABLE_RANKS)
        sm_cpath_walk(&x->s->root, sm_ranks_row, &w);
    else
        for (uint32_t k = 0; k < x->shown; k++) {
            w.member = x->members[k];
            sm_cpath_walk(&x->s->root, sm_thread_row, &w);
        }
}

/* One table: measure, then print. */
static void sm_text_table(const sm_text_t *x, sm_table_kind_t kind)
{
    sm_table_t t;
    if (kind == SM_TABLE_THREAD)
        sm_table_init(&t, "CALL-PATH PROFILE PER THREAD", sm_thread_heads, "lrrllrrrrrrrl", 13);
    else if (kind == SM_TABLE_THREADS)
        sm_table_init(&t, "CALL-PATH PROFILE ACROSS THREADS", sm_across_heads, "lrrllrrrrrrl", 12);
    else
        sm_table_init(&t, "CALL-PATH PROFILE ACROSS RANKS (per rank: sum over its threads)",
                      sm_ranks_heads, "lrrlrrrrrrrrrrrrl", 17);
    sm_text_rows(&t, x, kind);
    sm_table_begin(&t, x->o);
    sm_text_rows(&t, x, kind);
    sm_table_end(&t);
}

/* ---------------------------------------------------------------- ranks that stand out */

static const char *const sm_outlier_heads[] = {"PATH",      "RANKS",         "UNITS",
                                               "MEAN",      "MAX - MEAN",    "MAX / MEAN",
                                               "SLOWEST RANKS (RANK: TIME)", "FASTEST RANKS"};

typedef struct sm_outliers {
    const sm_text_t *x;
    const sm_cpath_t **paths;
    double *loss;
    uint32_t n, cap;
    bool oom;
} sm_outliers_t;

static void sm_outlier_scan(const sm_cpath_t *p, void *arg)
{
    sm_outliers_t *o = arg;
    if (p->depth == 0 || o->oom || !p->stats || sm_cpath_is_sampled(o->x->job, p))
        return;
    sm_spread_t sp = sm_cpath_spread_ranks_time(o->x->s, p, 0);
    if (sp.n < 2)
        return;
    if (o->n == o->cap) {
        uint32_t cap = o->cap ? 2 * o->cap : 64;
        const sm_cpath_t **paths = realloc(o->paths, cap * sizeof *paths);
        if (paths)
            o->paths = paths;
        double *loss = realloc(o->loss, cap * sizeof *loss);
        if (loss)
            o->loss = loss;
        if (!paths || !loss) {
            o->oom = true;
            return;
        }
        o->cap = cap;
    }
    o->paths[o->n] = p;
    o->loss[o->n++] = sp.max - sp.mean;
}

/* "5: 3.01, 2: 1.20, ..." of a list of ranks and times, in unit u. */
static void sm_outlier_list(char *buf, size_t len, const sm_rank_value_t *list, uint32_t n,
                            const sm_time_unit_t *u)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%u: %.4g", i ? ", " : "",
                               (unsigned)list[i].rank, (double)list[i].value / u->ns);
}

/* The joined names of p ("main > step > solve"), cut and sanitized. */
static void sm_text_path_name(const sm_text_t *x, char *buf, size_t len, const sm_cpath_t *p)
{
    char joined[SM_LABEL_SIZE];
    const sm_cpath_t *chain[64];
    uint32_t n = 0;
    for (const sm_cpath_t *q = p; q && q->depth > 0 && n < 64; q = q->parent)
        chain[n++] = q;
    size_t at = 0;
    joined[0] = '\0';
    if (p->depth > 64) /* (deeper: the innermost 64) */
        at = (size_t)snprintf(joined, sizeof joined, "...");
    while (n-- && at < sizeof joined)
        at += (size_t)snprintf(joined + at, sizeof joined - at, "%s%s", at ? " > " : "",
                               sm_job_region_name(x->job, chain[n]->region));
    sm_text_name_into(buf, len, joined);
}

static void sm_outlier_rows(sm_table_t *t, const sm_text_t *x, const sm_outliers_t *o,
                            const uint32_t *order, uint32_t n)
{
    sm_row_t *row = x->row;
    for (uint32_t i = 0; i < n; i++) {
        const sm_cpath_t *p = o->paths[order[i]];
        sm_spread_t sp = sm_cpath_spread_ranks_time(x->s, p, 0);
        const sm_time_unit_t *u = sm_time_unit_for(sp.max);
        sm_text_path_name(x, row->label, sizeof row->label, p);
        SM_CELL(row, 1, "%u", (unsigned)sp.n);
        SM_CELL(row, 2, "%s", u->name);
        SM_CELL(row, 3, "%.6f", sp.mean / u->ns);
        SM_CELL(row, 4, "%.6f", (sp.max - sp.mean) / u->ns);
        SM_CELL(row, 5, "%.2f", sp.mean > 0 ? sp.max / sp.mean : 1.0);
        sm_outlier_list(row->cell[6], SM_CELL_SIZE, p->stats->top, p->stats->n_top, u);
        sm_outlier_list(row->cell[7], SM_CELL_SIZE, p->stats->bottom, p->stats->n_bottom, u);
        sm_table_row(t, row);
    }
}

static const sm_outliers_t *sm_outlier_sorting;

static int sm_outlier_order(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, k = *(const uint32_t *)b;
    double x = sm_outlier_sorting->loss[i], y = sm_outlier_sorting->loss[k];
    if (x != y)
        return x > y ? -1 : 1;
    return i < k ? -1 : i > k; /* tree order on a tie */
}

/* Per path (those of the most time lost to the slowest rank), the ranks
 * with the most and the least inclusive time: at any number of ranks the
 * ranks to look at, without a row per rank. */
static int sm_text_outliers(const sm_text_t *x)
{
    sm_outliers_t o = {.x = x};
    sm_cpath_walk(&x->s->root, sm_outlier_scan, &o);
    uint32_t *order = o.n ? malloc(o.n * sizeof *order) : NULL;
    if (o.oom || (o.n && !order)) {
        free(o.paths);
        free(o.loss);
        free(order);
        return ENOMEM;
    }
    for (uint32_t i = 0; i < o.n; i++)
        order[i] = i;
    sm_outlier_sorting = &o;
    if (o.n) /* (qsort of no array: undefined, even of 0 elements) */
        qsort(order, o.n, sizeof *order, sm_outlier_order);
    sm_outlier_sorting = NULL;
    uint32_t n = o.n < SM_TEXT_TOP_PATHS ? o.n : SM_TEXT_TOP_PATHS;
    if (n) {
        sm_out_printf(x->o, "\nranks that stand out: per path (the %u of the most time lost to "
                            "the slowest rank, MAX - MEAN of the per-rank inclusive time), the "
                            "%u ranks with the most and the least time\n\n",
                      (unsigned)n, (unsigned)SM_PROFILE_TOP_RANKS);
        sm_table_t t;
        sm_table_init(&t, "RANKS THAT STAND OUT", sm_outlier_heads, "lrlrrrll", 8);
        sm_outlier_rows(&t, x, &o, order, n);
        sm_table_begin(&t, x->o);
        sm_outlier_rows(&t, x, &o, order, n);
        sm_table_end(&t);
    }
    free(order);
    free(o.paths);
    free(o.loss);
    return 0;
}

/* ---------------------------------------------------------------- MPI */

static const char *const sm_mpi_heads[] = {"FUNCTION",  "CALLS",    "RANKS",    "UNITS",
                                           "TOTAL",     "MEAN/RANK", "MAX/RANK", "MAX RANK",
                                           "BYTES SENT", "BYTES RECEIVED"};

static void sm_mpi_rows(sm_table_t *t, const sm_text_t *x, const sm_region_total_t *tot,
                        uint32_t n)
{
    sm_row_t *row = x->row;
    for (uint32_t i = 0; i < n; i++) {
        const sm_region_total_t *f = &tot[i];
        const sm_time_unit_t *u = sm_time_unit_for(f->time_ns);
        sm_text_name_into(row->label, sizeof row->label, sm_job_region_name(x->job, f->region));
        SM_CELL(row, 1, "%llu", (unsigned long long)f->calls);
        SM_CELL(row, 2, "%u", (unsigned)f->ranks);
        SM_CELL(row, 3, "%s", u->name);
        SM_CELL(row, 4, "%.6f", f->time_ns / u->ns);
        SM_CELL(row, 5, "%.6f", f->mean_rank_ns / u->ns);
        SM_CELL(row, 6, "%.6f", f->max_rank_ns / u->ns);
        if (f->max_rank != SM_INVALID_ID)
            SM_CELL(row, 7, "%u", (unsigned)f->max_rank);
        else
            SM_CELL(row, 7, "-");
        SM_CELL(row, 8, "%llu", (unsigned long long)f->bytes_sent);
        SM_CELL(row, 9, "%llu", (unsigned long long)f->bytes_received);
        sm_table_row(t, row);
    }
}

/* Per MPI function, over every call path where it appears. */
static int sm_text_mpi(const sm_text_t *x)
{
    uint32_t n;
    sm_region_total_t *tot = sm_profile_region_totals(x->s, sm_job_region_is_mpi,
                                                      (void *)x->job, &n);
    if (n == UINT32_MAX)
        return ENOMEM;
    if (n) {
        sm_out_printf(x->o, "\n");
        sm_table_t t;
        sm_table_init(&t, "MPI FUNCTIONS (summed over their call paths)", sm_mpi_heads,
                      "lrrlrrrrrr", 10);
        sm_mpi_rows(&t, x, tot, n);
        sm_table_begin(&t, x->o);
        sm_mpi_rows(&t, x, tot, n);
        sm_table_end(&t);
    }
    free(tot);
    return 0;
}

/* ---------------------------------------------------------------- matrix */

static void sm_matrix_rows(sm_table_t *t, const sm_text_t *x, const uint64_t *cells,
                           uint32_t n)
{
    sm_row_t *row = x->row;
    for (uint32_t s = 0; s < n; s++) {
        uint64_t total = 0;
        snprintf(row->label, sizeof row->label, "%u", (unsigned)s);
        for (uint32_t r = 0; r < n; r++) {
            uint64_t v = cells[(size_t)s * n + r];
            total += v;
            SM_CELL(row, 1 + r, "%llu", (unsigned long long)v);
        }
        SM_CELL(row, 1 + n, "%llu", (unsigned long long)total);
        sm_table_row(t, row);
    }
}

static void sm_matrix_table(const sm_text_t *x, const char *title, const uint64_t *cells,
                            uint32_t n)
{
    char names[SM_TEXT_MAX_MATRIX][12];
    const char *heads[SM_TABLE_MAX_COLS];
    char align[SM_TABLE_MAX_COLS + 1];
    heads[0] = "SENDER";
    for (uint32_t r = 0; r < n; r++) {
        snprintf(names[r], sizeof names[r], "%u", (unsigned)r);
        heads[1 + r] = names[r];
    }
    heads[1 + n] = "TOTAL";
    memset(align, 'r', n + 2);
    align[n + 2] = '\0';
    sm_table_t t;
    sm_table_init(&t, title, heads, align, n + 2);
    sm_matrix_rows(&t, x, cells, n);
    sm_table_begin(&t, x->o);
    sm_matrix_rows(&t, x, cells, n);
    sm_table_end(&t);
}

static const char *const sm_pair_heads[] = {"SENDER", "RECEIVER", "MESSAGES", "BYTES"};

static void sm_pair_rows(sm_table_t *t, const sm_text_t *x, const sm_comm_pair_t *pairs,
                         uint32_t n)
{
    sm_row_t *row = x->row;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(row->label, sizeof row->label, "%u", (unsigned)pairs[i].sender);
        SM_CELL(row, 1, "%u", (unsigned)pairs[i].receiver);
        SM_CELL(row, 2, "%llu", (unsigned long long)pairs[i].messages);
        SM_CELL(row, 3, "%llu", (unsigned long long)pairs[i].bytes);
        sm_table_row(t, row);
    }
}

static void sm_text_matrix(const sm_text_t *x)
{
    const sm_job_t *job = x->job;
    if (!sm_comm_matrix_any(job)) {
        sm_out_printf(x->o, "communication matrix: no point-to-point messages were recorded\n");
        return;
    }
    uint32_t n = sm_job_ranks(job);
    if (n <= SM_TEXT_MAX_MATRIX) {
        uint64_t messages[SM_TEXT_MAX_MATRIX * SM_TEXT_MAX_MATRIX] = {0};
        uint64_t bytes[SM_TEXT_MAX_MATRIX * SM_TEXT_MAX_MATRIX] = {0};
        for (uint64_t p = 0; p < job->matrix_pairs_n; p++) {
            const sm_comm_pair_t *c = &job->matrix_pairs[p];
            if (c->sender < n && c->receiver < n) {
                messages[(size_t)c->sender * n + c->receiver] += c->messages;
                bytes[(size_t)c->sender * n + c->receiver] += c->bytes;
            }
        }
        /* Short titles: a long one would widen the narrow columns. */
        sm_out_printf(x->o, "point-to-point communication matrix (row: sender rank, column: "
                            "receiver rank):\n\n");
        sm_matrix_table(x, "MESSAGES", messages, n);
        sm_out_printf(x->o, "\n");
        sm_matrix_table(x, "BYTES", bytes, n);
        return;
    }
    sm_comm_pair_t top[SM_TEXT_TOP_PAIRS];
    uint32_t k = sm_comm_matrix_top(job, top, SM_TEXT_TOP_PAIRS);
    sm_table_t t;
    char title[48];
    snprintf(title, sizeof title, "TOP %u PAIRS BY BYTES", (unsigned)k);
    sm_out_printf(x->o, "point-to-point communication, the sender-receiver pairs (world ranks) "
                        "that moved the most bytes:\n\n");
    sm_table_init(&t, title, sm_pair_heads, "rrrr", 4);
    sm_pair_rows(&t, x, top, k);
    sm_table_begin(&t, x->o);
    sm_pair_rows(&t, x, top, k);
    sm_table_end(&t);
    sm_out_printf(x->o, "the full matrix of the %u ranks: comm_matrix.csv, comm_matrix.json\n",
                  (unsigned)n);
}

/* ---------------------------------------------------------------- header */

/* Shell-like quoting, so that the command can be read back unambiguously. */
static void sm_text_command(sm_out_t *o, int argc, char **argv)
{
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        const char *a = argv[i];
        bool plain = *a != '\0';
        for (const char *p = a; *p && plain; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "_-+=./,:@%^", *p))
                plain = false;
        sm_out_printf(o, "%s", i ? " " : "");
        if (plain) {
            sm_out_printf(o, "%s", a);
            continue;
        }
        sm_out_printf(o, "'");
        for (const char *p = a; *p; p++) {
            if (*p == '\'')
                sm_out_printf(o, "'\\''");
            else
                sm_out_printf(o, "%c", (unsigned char)*p < 0x20 ? '?' : *p);
        }
        sm_out_printf(o, "'");
    }
    sm_out_printf(o, "\n");
}

static void sm_text_name(sm_out_t *o, const char *name, const char *missing)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name && *name ? name : missing);
    sm_text_sanitize(buf);
    sm_out_printf(o, "%s", buf);
}

/* Per member: its visits in all and its time in top-level regions. */
typedef struct sm_member_load {
    const sm_profile_summary_t *s;
    uint64_t *visits;
    double *top_ns;
} sm_member_load_t;

static void sm_member_load_path(const sm_cpath_t *p, void *arg)
{
    sm_member_load_t *l = arg;
    if (p->depth == 0 || !p->members)
        return;
    for (uint32_t i = 0; i < l->s->n_members; i++) {
        l->visits[i] += p->members[i].visits;
        if (p->depth == 1)
            l->top_ns[i] += (double)p->members[i].incl.sum * sm_summary_member_ns_per_tick(l->s, i);
    }
}

/* The threads with per-thread rows, when there are more than the table
 * takes: first every thread with events of the slowest and of the fastest
 * rank (by the time of their threads in top-level regions), then threads
 * with events in order; threads without any event (an MPI library's idle
 * helper threads) never.  Shown in member order. */
static void sm_text_pick_members(sm_text_t *x)
{
    const sm_profile_summary_t *s = x->s;
    x->shown = x->idle = 0;
    if (!s->per_member || !s->n_members)
        return;
    if (s->n_members <= SM_TEXT_MAX_MEMBERS) {
        for (uint32_t i = 0; i < s->n_members; i++)
            x->members[x->shown++] = i;
        return;
    }
    uint64_t *visits = calloc(s->n_members, sizeof *visits);
    double *top = calloc(s->n_members, sizeof *top);
    uint32_t n_ranks = s->n_ranks ? s->n_ranks : 1;
    double *rank_ns = calloc(n_ranks, sizeof *rank_ns);
    bool *pick = calloc(s->n_members, sizeof *pick);
    if (!visits || !top || !rank_ns || !pick) { /* (the first ones, as before) */
        for (uint32_t i = 0; i < SM_TEXT_MAX_MEMBERS; i++)
            x->members[x->shown++] = i;
        free(visits), free(top), free(rank_ns), free(pick);
        return;
    }
    sm_member_load_t l = {s, visits, top};
    sm_cpath_walk(&s->root, sm_member_load_path, &l);
    for (uint32_t i = 0; i < s->n_members; i++) {
        uint32_t r = s->member_rank[i] < n_ranks ? s->member_rank[i] : 0;
        rank_ns[r] += top[i];
        x->idle += visits[i] == 0;
    }
    x->slow_rank = x->fast_rank = 0;
    for (uint32_t r = 1; r < n_ranks; r++) {
        if (rank_ns[r] > rank_ns[x->slow_rank])
            x->slow_rank = r;
        if (rank_ns[r] < rank_ns[x->fast_rank])
            x->fast_rank = r;
    }
    uint32_t n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < s->n_members && n < SM_TEXT_MAX_MEMBERS; i++) {
            bool wanted = visits[i] && !pick[i] &&
                          (pass == 1 || s->member_rank[i] == x->slow_rank ||
                           s->member_rank[i] == x->fast_rank);
            if (wanted) {
                pick[i] = true;
                n++;
            }
        }
    for (uint32_t i = 0; i < s->n_members; i++)
        if (pick[i])
            x->members[x->shown++] = i;
    free(visits), free(top), free(rank_ns), free(pick);
}

static void sm_text_legend(const sm_text_t *x)
{
    const sm_profile_summary_t *s = x->s;
    for (uint32_t k = 0; k < x->shown; k++) {
        uint32_t i = x->members[k];
        const sm_summary_member_t *m = &s->member_info[i];
        sm_out_printf(x->o, "  thread %u: ", (unsigned)i);
        if (x->multi)
            sm_out_printf(x->o, "rank %u, ", (unsigned)s->member_rank[i]);
        sm_text_name(x->o, m->name, "(unnamed)");
        if (m->creator_location != SM_INVALID_ID) {
            if (m->creator != SM_INVALID_ID)
                sm_out_printf(x->o, ", created by thread %u", (unsigned)m->creator);
            else
                sm_out_printf(x->o, ", created by location %u", (unsigned)m->creator_location);
            for (uint32_t d = 0; d < m->creation_depth; d++) {
                sm_out_printf(x->o, "%s", d ? " > " : " in ");
                sm_text_name(x->o, sm_job_region_name(x->job, m->creation_path[d]), "?");
            }
        }
        if (x->shown < s->n_members && x->multi && s->member_rank[i] == x->slow_rank)
            sm_out_printf(x->o, " [slowest rank]");
        else if (x->shown < s->n_members && x->multi && s->member_rank[i] == x->fast_rank)
            sm_out_printf(x->o, " [fastest rank]");
        sm_out_printf(x->o, "\n");
    }
    if (x->shown < s->n_members)
        sm_out_printf(x->o, "  ... %u more threads not shown (%u of them without any event); "
                      "see \"threads\" in profile.json\n",
                      (unsigned)(s->n_members - x->shown), (unsigned)x->idle);
}

static int sm_text_compare_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct host names of the job's processes; 0 when unknown. */
static uint32_t sm_text_hosts(const sm_job_t *job, uint32_t n)
{
    if (!job || !job->processes || n == 0)
        return 0;
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return 0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (job->processes[i].hostname[0]) /* "": a rank that left no data */
            names[m++] = job->processes[i].hostname;
    qsort(names, m, sizeof *names, sm_text_compare_str);
    uint32_t hosts = m > 0;
    for (uint32_t i = 1; i < m; i++)
        hosts += strcmp(names[i], names[i - 1]) != 0;
    free(names);
    return hosts;
}

/* The rank whose pid, host and threads the header shows: rank 0, or after
 * a partial merge the first rank with data (the one run describes). */
static uint32_t sm_text_first_rank(const sm_job_t *job)
{
    uint32_t n = sm_job_ranks(job);
    for (uint32_t r = 0; job && job->missing && r < n; r++)
        if (!sm_job_missing(job, r))
            return r;
    return 0;
}

static void sm_text_header(const sm_text_t *x)
{
    sm_out_t *o = x->o;
    const sm_run_info_t *run = x->run;
    const sm_profile_summary_t *s = x->s;
    sm_out_printf(o, "sysmeasure call-path profile (wall-clock time)\n\n");
    sm_out_printf(o, "program     : ");
    sm_text_name(o, run->program, "(unknown)");
    sm_out_printf(o, "\ncommand     : ");
    sm_text_command(o, run->argc, run->argv);
    uint32_t present = sm_job_ranks_present(x->job);
    if (x->multi || present != sm_job_ranks(x->job)) {
        uint32_t hosts = sm_text_hosts(x->job, sm_job_ranks(x->job));
        if (present != sm_job_ranks(x->job)) /* a partial merge says so first */
            sm_out_printf(o, "ranks       : %u of %u", (unsigned)present,
                          (unsigned)sm_job_ranks(x->job));
        else
            sm_out_printf(o, "ranks       : %u", (unsigned)s->n_ranks);
        if (hosts)
            sm_out_printf(o, " on %u host%s", (unsigned)hosts, hosts == 1 ? "" : "s");
        if (present != sm_job_ranks(x->job)) {
            char missing[1024];
            sm_job_missing_text(x->job, missing, sizeof missing);
            sm_out_printf(o, "\nmissing     : %s", missing);
        }
        sm_out_printf(o, "\npid         : %ld (rank %u)\n", (long)run->pid,
                      (unsigned)sm_text_first_rank(x->job));
    } else {
        sm_out_printf(o, "pid         : %ld\n", (long)run->pid);
    }
    sm_out_printf(o, "host        : ");
    sm_text_name(o, run->hostname, "(unknown)");
    char whose[32] = "";
    if (x->multi || present != sm_job_ranks(x->job))
        snprintf(whose, sizeof whose, " (rank %u)", (unsigned)sm_text_first_rank(x->job));
    if (s->per_member)
        sm_out_printf(o, "%s\nthreads     : %u\n", whose, (unsigned)s->n_members);
    else
        sm_out_printf(o, "%s\nthreads     : %llu (of every rank)\n", whose,
                      (unsigned long long)s->n_threads);
    sm_out_printf(o, "time source : %s (1 tick = %.6g ns%s)\n",
                  run->clock_source ? run->clock_source : "unknown", s->ns_per_tick,
                  x->multi ? " on rank 0" : "");
    if (s->n_counters) {
        sm_out_printf(o, "PAPI events :");
        for (uint32_t k = 0; k < s->n_counters; k++)
            sm_out_printf(o, "%s %s", k ? "," : "", s->counter_names[k]);
        sm_out_printf(o, " (rows under each path: inclusive counts per visit, %% SELF the "
                      "exclusive share)\n");
    }
    for (uint32_t i = 0; i < run->n_notes; i++)
        sm_out_printf(o, "note        : %s\n", run->notes[i]);
    sm_out_printf(o, "\n");
    if (s->per_member && s->n_members) {
        sm_out_printf(o, "threads (|N>>> in the labels):\n");
        sm_text_legend(x);
        sm_out_printf(o, "\n");
    }
}

static void sm_text_footer(sm_out_t *o, const sm_run_info_t *run)
{
    bool any = run->spills || run->dropped_records || run->unmatched_leaves;
    if (any)
        sm_out_printf(o, "\n");
    if (run->spills)
        sm_out_printf(o, "buffer spills    : %llu (%llu bytes written to disk)\n",
                      (unsigned long long)run->spills, (unsigned long long)run->spilled_bytes);
    if (run->dropped_records)
        sm_out_printf(o, "dropped events   : %llu (lost, a spill could not be written)\n",
                      (unsigned long long)run->dropped_records);
    if (run->unmatched_leaves)
        sm_out_printf(o, "unmatched leaves : %llu (region exits that matched no open region)\n",
                      (unsigned long long)run->unmatched_leaves);
}

/* ---------------------------------------------------------------- writer */

static int sm_text_body(sm_text_t *x)
{
    const sm_profile_summary_t *s = x->s;
    sm_text_header(x);
    if (!s->root.first_child) {
        sm_out_printf(x->o, "no call paths were recorded\n");
    } else {
        if (s->per_member) {
            sm_text_table(x, SM_TABLE_THREAD);
            if (x->shown < s->n_members)
                sm_out_printf(x->o, "(per-thread rows of %u of %u threads: those with events of "
                              "the slowest and the fastest rank, then others with events; %u "
                              "hidden, %u of them without any event; all are in profile.json, "
                              "profile.csv and profile-ranks.csv)\n",
                              (unsigned)x->shown, (unsigned)s->n_members,
                              (unsigned)(s->n_members - x->shown), (unsigned)x->idle);
        } else {
            sm_out_printf(x->o, "(%llu threads: more than %u, so no per-thread rows here; each "
                          "thread's rows are in profile-ranks.csv)\n",
                          (unsigned long long)s->n_threads, (unsigned)SM_PROFILE_DETAIL_MAX);
        }
        sm_out_printf(x->o, "\n");
        sm_text_table(x, SM_TABLE_THREADS);
        if (x->multi) {
            sm_out_printf(x->o, "\n");
            sm_text_table(x, SM_TABLE_RANKS);
            int rc = sm_text_outliers(x);
            if (rc)
                return rc;
        }
        int rc = sm_text_mpi(x);
        if (rc)
            return rc;
        sm_sampled_text(x->o, x->run, x->job, s);
        sm_gpu_summary_t *g = sm_gpu_summary_build(x->job, s);
        sm_gpu_summary_text(x->o, g);
        sm_gpu_summary_free(g);
    }
    sm_procmetrics_text(x->o, x->job);
    sm_causal_text(x->o);
    if (x->multi) {
        sm_out_printf(x->o, "\n");
        sm_text_matrix(x);
    }
    sm_text_footer(x->o, x->run);
    return 0;
}

int sm_profile_write_text(const sm_run_info_t *run, const sm_job_t *job,
                          const sm_profile_summary_t *summary)
{
    if (!summary) { /* the summary could not be built (message printed) */
        sm_error("writing %s/profile.txt failed: no profile summary", run->output_dir);
        return -1;
    }
    sm_out_t o;
    if (sm_out_open(&o, run->output_dir, "profile.txt") != 0)
        return -1;
    sm_text_t x = {.o = &o, .run = run, .job = job, .s = summary,
                   .multi = summary->n_ranks > 1};
    sm_text_pick_members(&x);
    x.n_derived = sm_summary_derived(summary, x.derived, SM_SUMMARY_MAX_COUNTERS);
    x.row = malloc(sizeof *x.row);
    int rc = x.row ? sm_text_body(&x) : ENOMEM;
    free(x.row);
    if (rc)
        sm_out_fail(&o, rc);
    return sm_out_close(&o);
}

static bool sm_profile_text_wanted(const sm_finalize_t *f)
{
    return f->profile && f->summary;
}

static int sm_profile_text_output(sm_finalize_t *f)
{
    return sm_profile_write_text(f->run, &f->job, f->summary);
}

const sm_output_t sm_output_profile_text = {
    .file = "profile.txt",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_profile_text_wanted,
    .write = sm_profile_text_output,
};
