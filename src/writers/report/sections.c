/* The report's sections of the run: the run itself, where the time
 * went, the top call paths and the load imbalance. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---------------------------------------------------------------- the run */

/* A process's host, for the list of hosts. */
typedef struct sm_host {
    const char *name;
    uint32_t rank;
} sm_host_t;

static int sm_host_by_name(const void *a, const void *b)
{
    const sm_host_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int sm_host_by_rank(const void *a, const void *b)
{
    const sm_host_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

void sm_report_run(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *m = r->meta;
    char b[64];
    sm_out_printf(o, "<h2 id=run>The run</h2>\n<dl>\n<dt>Program</dt><dd>");
    sm_html(o, sm_jv_str(m, "program"));
    sm_out_printf(o, "</dd>\n<dt>Command</dt><dd><code>");
    const sm_jv_t *cmd = sm_jv_get(m, "command");
    for (uint32_t i = 0; i < sm_jv_len(cmd); i++) {
        sm_out_printf(o, i ? " " : "");
        sm_html(o, sm_jv_at(cmd, i)->str);
    }
    uint32_t threads = 0, max_threads = 0;
    for (uint32_t i = 0; i < r->n_ranks; i++) {
        threads += r->threads[i];
        if (r->threads[i] > max_threads)
            max_threads = r->threads[i];
    }
    if (!sm_jv_get(r->prof, "threads") && r->n_bins) {
        /* (no thread list in a large job: the ranges' threads, per rank
         * their mean rounded up) */
        threads = max_threads = 0;
        for (uint32_t b = 0; b < r->n_bins; b++) {
            threads += r->bin_threads[b];
            uint32_t per = r->bin_ranks[b] ? (r->bin_threads[b] + r->bin_ranks[b] - 1) /
                                                 r->bin_ranks[b] : 0;
            if (per > max_threads)
                max_threads = per;
        }
    }
    /* A merge of some of the job's ranks says so first. */
    const sm_jv_t *merged = sm_jv_get(m, "ranks_merged");
    const sm_jv_t *gone = sm_jv_get(m, "missing_ranks");
    char of[64] = "";
    if (merged && merged->type == SM_JV_NUMBER)
        snprintf(of, sizeof of, "%.0f of ", merged->num);
    sm_out_printf(o, "</code></dd>\n<dt>Ranks &times; threads</dt><dd id=ranks>%s%u rank%s "
                     "&times; up to %u thread%s (%u in all)",
                  of, (unsigned)r->n_ranks, r->n_ranks == 1 ? "" : "s", (unsigned)max_threads,
                  max_threads == 1 ? "" : "s", (unsigned)threads);
    if (sm_jv_len(gone)) {
        sm_out_printf(o, "; missing: rank%s", sm_jv_len(gone) == 1 ? "" : "s");
        for (uint32_t i = 0; i < sm_jv_len(gone) && i < 32; i++)
            sm_out_printf(o, "%s %.0f", i ? "," : "", sm_jv_num(sm_jv_at(gone, i), "rank", 0));
        if (sm_jv_len(gone) > 32)
            sm_out_printf(o, " &hellip; (%u in all)", (unsigned)sm_jv_len(gone));
    }
    sm_out_printf(o, "</dd>\n");
    /* Hosts, each once, in rank order (sorted, not searched: a job may
     * have 10^5 processes). */
    const sm_jv_t *procs = sm_jv_get(m, "processes");
    uint32_t np = sm_jv_len(procs), n_hosts = 0;
    sm_out_printf(o, "<dt>Hosts</dt><dd>");
    sm_host_t *hosts = malloc((np ? np : 1) * sizeof *hosts);
    if (!hosts)
        sm_out_fail(o, ENOMEM);
    uint32_t nh = 0;
    for (uint32_t i = 0; hosts && i < np; i++) {
        const char *h = sm_jv_str(sm_jv_at(procs, i), "host");
        if (h && *h)
            hosts[nh++] = (sm_host_t){h, i};
    }
    if (hosts) {
        qsort(hosts, nh, sizeof *hosts, sm_host_by_name); /* each name's first rank first */
        uint32_t first = 0;
        for (uint32_t i = 0; i < nh; i++)
            if (i == 0 || strcmp(hosts[i].name, hosts[first - 1].name) != 0)
                hosts[first++] = hosts[i];
        n_hosts = first;
        qsort(hosts, n_hosts, sizeof *hosts, sm_host_by_rank);
        for (uint32_t i = 0; i < n_hosts && i < 32; i++) {
            sm_out_printf(o, i ? ", " : "");
            sm_html(o, hosts[i].name);
        }
        free(hosts);
    }
    if (n_hosts > 32)
        sm_out_printf(o, " &hellip; (%u hosts in all)", (unsigned)n_hosts);
    sm_fmt_time(b, sizeof b, r->duration_ns);
    sm_out_printf(o, "</dd>\n<dt>Duration</dt><dd>%s (", b);
    sm_html(o, sm_jv_str(m, "start_time"));
    sm_out_printf(o, " to ");
    sm_html(o, sm_jv_str(m, "end_time"));
    sm_out_printf(o, ")</dd>\n<dt>sysmeasure</dt><dd>");
    sm_html(o, sm_jv_str(m, "sysmeasure_version"));
    sm_out_printf(o, "</dd>\n</dl>\n");

    /* Notes and warnings: the run's notes, lost or spilled events. */
    sm_out_printf(o, "<h3>Notes and warnings</h3>\n<ul id=notes>\n");
    int items = 0;
    const sm_jv_t *notes = sm_jv_get(m, "notes");
    for (uint32_t i = 0; i < sm_jv_len(notes); i++, items++) {
        sm_out_printf(o, "<li class=warn>");
        sm_html(o, sm_jv_at(notes, i)->str);
        sm_out_printf(o, "</li>\n");
    }
    /* Ranks a merge had no data of: the page is of the others.  One line,
     * the ranks grouped by their reason (in rank order, as the file lists
     * them; the first 64). */
    if (sm_jv_len(gone) && ++items) {
        uint32_t ng = sm_jv_len(gone) < 64 ? sm_jv_len(gone) : 64;
        sm_out_printf(o, "<li class=warn id=missing-ranks>%.0f of %u ranks merged "
                         "(sysmeasure-merge): every figure on this page is of those. Missing:",
                      merged && merged->type == SM_JV_NUMBER ? merged->num : 0.0,
                      (unsigned)r->n_ranks);
        bool *done = calloc(ng, sizeof *done);
        for (uint32_t i = 0; done && i < ng; i++) {
            if (done[i])
                continue;
            const char *why = sm_jv_str(sm_jv_at(gone, i), "reason");
            sm_out_printf(o, "%s rank", i ? ";" : "");
            for (uint32_t k = i, first = 1; k < ng; k++) {
                const char *w = sm_jv_str(sm_jv_at(gone, k), "reason");
                if (done[k] || (w != why && (!w || !why || strcmp(w, why))))
                    continue;
                done[k] = true;
                sm_out_printf(o, "%s %.0f", first ? "" : ",", sm_jv_num(sm_jv_at(gone, k), "rank", 0));
                first = 0;
            }
            sm_out_printf(o, " (");
            sm_html(o, why);
            sm_out_printf(o, ")");
        }
        free(done);
        if (sm_jv_len(gone) > ng)
            sm_out_printf(o, "; &hellip; %u in all (metadata.json missing_ranks)",
                          (unsigned)sm_jv_len(gone));
        sm_out_printf(o, ".</li>\n");
    }
    const sm_jv_t *buf = sm_jv_get(m, "buffers");
    double dropped = sm_jv_num(buf, "dropped_records", 0), spills = sm_jv_num(buf, "spills", 0);
    double unmatched = sm_jv_num(m, "unmatched_leaves", 0);
    if (dropped > 0 && ++items)
        sm_out_printf(o, "<li class=warn>%.0f events were dropped (buffers full): the trace "
                         "and the profile miss them.</li>\n", dropped);
    if (spills > 0 && ++items)
        sm_out_printf(o, "<li>Event buffers spilled to disk %.0f times.</li>\n", spills);
    if (unmatched > 0 && ++items)
        sm_out_printf(o, "<li class=warn>%.0f region ends had no matching begin.</li>\n",
                      unmatched);
    if (!r->prof && ++items)
        sm_out_printf(o, "<li class=warn>No profile.json in this folder (profiling was off, "
                         "or it could not be written): only the run is shown.</li>\n");
    if (!items)
        sm_out_printf(o, "<li>None.</li>\n");
    sm_out_printf(o, "</ul>\n");

    /* Configuration: what was set, then the defaults folded away. */
    const sm_jv_t *cfg = sm_jv_get(m, "configuration");
    for (int pass = 0; pass < 2 && cfg && cfg->type == SM_JV_OBJECT; pass++) {
        sm_out_printf(o, pass ? "<details><summary>Configuration: defaults</summary>\n<table>\n"
                              : "<h3>Configuration</h3>\n<table>\n");
        for (uint32_t i = 0; i < cfg->n; i++) {
            const char *src = sm_jv_str(cfg->items[i], "source");
            bool dflt = src && !strcmp(src, "default");
            if (dflt != (pass == 1))
                continue;
            sm_out_printf(o, "<tr><td>");
            sm_html(o, cfg->keys[i]);
            sm_out_printf(o, "</td><td>");
            sm_html(o, sm_jv_str(cfg->items[i], "value"));
            sm_out_printf(o, "</td><td class=note>");
            sm_html(o, src);
            sm_out_printf(o, "</td></tr>\n");
        }
        sm_out_printf(o, pass ? "</table></details>\n" : "</table>\n");
    }
}

/* ---------------------------------------------------------------- where the time went */

void sm_report_time(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    /* Rows: the rank ranges, or (an older profile.json) the ranks. */
    bool binned = r->n_bins > 0;
    uint32_t n = binned ? r->n_bins : r->n_ranks;
    double *t = calloc((size_t)n * SM_TL_COUNT, sizeof *t); /* sums over the row's ranks */
    sm_out_printf(o, "<h2 id=time>Where the time went</h2>\n");
    if (!t) {
        sm_out_fail(o, ENOMEM);
        return;
    }
    /* Exclusive time of every path by row and kind; time in no region is
     * the threads' share of the run less their top-level regions. */
    double *top = calloc(n, sizeof *top);
    double omp_in_kokkos = 0; /* OpenMP run by Kokkos kernels, counted as Kokkos */
    for (uint32_t i = 0; top && i < r->n_paths; i++) {
        const sm_jv_t *v = r->paths[i].v;
        const char *pd = sm_jv_str(v, "paradigm");
        if (pd && !strcmp(pd, "sampling"))
            continue; /* callers found by sampling: inside their region's time */
        int c = r->paths[i].credit;
        if (r->paths[i].under_kokkos)
            omp_in_kokkos += r->paths[i].excl;
        if (binned) {
            for (uint32_t b = 0; b < n; b++) {
                t[(size_t)b * SM_TL_COUNT + c] += sm_rpath_bin(v, "exclusive_sum", b);
                if (r->paths[i].depth == 0)
                    top[b] += sm_rpath_bin(v, "inclusive_sum", b);
            }
            continue;
        }
        const sm_jv_t *pr = sm_jv_get(v, "per_rank");
        for (uint32_t k = 0; k < sm_jv_len(pr); k++) {
            const sm_jv_t *e = sm_jv_at(pr, k);
            double rank = sm_jv_num(e, "rank", -1);
            if (rank < 0 || rank >= n)
                continue;
            t[(size_t)rank * SM_TL_COUNT + c] += sm_jv_num(e, "exclusive", 0);
            if (r->paths[i].depth == 0)
                top[(size_t)rank] += sm_jv_num(e, "inclusive", 0);
        }
    }
    double max_total = 0, sum[SM_TL_COUNT] = {0}, all = 0;
    bool used[SM_TL_COUNT] = {false};
    for (uint32_t k = 0; top && k < n; k++) {
        double ranks = binned ? r->bin_ranks[k] : 1;
        double mains = binned ? r->bin_main[k] : r->main_threads[k];
        double outside = r->duration_ns * (mains > ranks ? mains : ranks) - top[k];
        t[(size_t)k * SM_TL_COUNT + SM_TL_OUTSIDE] = outside > 0 && ranks > 0 ? outside : 0;
        double tot = 0;
        for (int c = 0; c < SM_TL_COUNT; c++) {
            tot += t[(size_t)k * SM_TL_COUNT + c];
            sum[c] += t[(size_t)k * SM_TL_COUNT + c];
            used[c] |= t[(size_t)k * SM_TL_COUNT + c] > 0;
        }
        all += tot;
        if (ranks > 0 && tot / ranks > max_total)
            max_total = tot / ranks;
    }
    free(top);
    sm_out_printf(o, "<p>Time of the threads of each rank, by what they were in (exclusive "
                     "time of the regions). \"Compute outside regions\" is the main thread's "
                     "run time less the time in top-level regions (of every thread of the rank: "
                     "with worker threads it is an underestimate). Hover a bar for its "
                     "figures.</p>\n");
    sm_legend(o, used);

    /* In total, per kind. */
    const int W = 700, L = 80;
    sm_out_printf(o, "<h3>In total</h3>\n<svg id=paradigm-total width=%d height=30 "
                     "role=img aria-label=\"time per paradigm\">", W + L + 10);
    double x = L;
    for (int c = 0; c < SM_TL_COUNT && all > 0; c++) {
        double w = W * sum[c] / all;
        if (w <= 0)
            continue;
        char b[48];
        sm_fmt_time(b, sizeof b, sum[c]);
        sm_out_printf(o, "<rect x=%.1f y=4 width=%.1f height=20 fill=\"%s\"><title>%s: %s "
                         "(%.1f%%)</title></rect>",
                      x, w, sm_tl_color[c], sm_tl_name[c], b, 100 * sum[c] / all);
        x += w;
    }
    sm_out_printf(o, "<text x=0 y=18>all ranks</text></svg>\n<table id=paradigm-table>"
                     "<tr><th>What</th><th>Time (all threads)</th><th>Share</th></tr>\n");
    for (int c = 0; c < SM_TL_COUNT; c++) {
        if (!used[c])
            continue;
        char b[48];
        sm_fmt_time(b, sizeof b, sum[c]);
        sm_out_printf(o, "<tr><td><span style=\"color:%s\">&#9632;</span> %s</td><td class=n>"
                         "%s</td><td class=n>%.1f%%</td></tr>\n",
                      sm_tl_color[c], sm_tl_name[c], b, all > 0 ? 100 * sum[c] / all : 0.0);
    }
    sm_out_printf(o, "</table>\n");
    if (omp_in_kokkos > 0) {
        char b[48];
        sm_fmt_time(b, sizeof b, omp_in_kokkos);
        sm_out_printf(o, "<p class=note id=openmp-in-kokkos>Kokkos includes %s of OpenMP "
                         "regions that Kokkos kernels, copies and fences ran (its OpenMP "
                         "backend): the program wrote Kokkos, so they count as Kokkos here. The call "
                         "paths and the timeline show them as OpenMP, inside the kernels.</p>\n", b);
    }

    /* Per rank (range): one stacked bar each, on one scale (a longer bar: a
     * rank whose threads took longer in all; a range: its mean rank). */
    uint32_t rows = n < SM_REPORT_MAX_RANK_ROWS ? n : SM_REPORT_MAX_RANK_ROWS;
    const int H = n > 64 ? 6 : 16;
    bool ranges = false;
    for (uint32_t k = 0; binned && k < n; k++)
        ranges |= r->bin_first[k + 1] > r->bin_first[k] + 1;
    sm_out_printf(o, "<h3>Per rank%s</h3>\n<svg id=rank-bars width=%d height=%u role=img "
                     "aria-label=\"time per rank\">", ranges ? " (mean rank of each range)" : "",
                  W + L + 10, (unsigned)(rows * (H + 2) + 4));
    for (uint32_t k = 0; k < rows; k++) {
        double y = 2 + k * (H + 2.0);
        double ranks = binned ? r->bin_ranks[k] : 1;
        char who[48];
        if (binned)
            sm_bin_name(r, k, who, sizeof who);
        else
            snprintf(who, sizeof who, "rank %u", (unsigned)k);
        x = L;
        for (int c = 0; c < SM_TL_COUNT && max_total > 0 && ranks > 0; c++) {
            double v = t[(size_t)k * SM_TL_COUNT + c] / ranks, w = W * v / max_total;
            if (w <= 0)
                continue;
            char b[48];
            sm_fmt_time(b, sizeof b, v);
            sm_out_printf(o, "<rect x=%.1f y=%.0f width=%.1f height=%d fill=\"%s\"><title>"
                             "%s, %s: %s</title></rect>",
                          x, y, w, H, sm_tl_color[c], who, sm_tl_name[c], b);
            x += w;
        }
        if (n <= 64)
            sm_out_printf(o, "<text x=0 y=%.0f>%s</text>", y + H - 4, who);
        sm_out_printf(o, "\n");
    }
    sm_out_printf(o, "</svg>\n");
    if (rows < n)
        sm_out_printf(o, "<p class=note>The first %u of %u ranks are drawn.</p>\n",
                      (unsigned)rows, (unsigned)n);
    free(t);
}

/* ---------------------------------------------------------------- call paths */

static int sm_rpath_by_incl(const void *a, const void *b)
{
    const sm_rpath_t *x = *(sm_rpath_t *const *)a, *y = *(sm_rpath_t *const *)b;
    return x->incl < y->incl ? 1 : x->incl > y->incl ? -1 : 0;
}

/* The name of a path, outermost first, with " / " between. */
void sm_path_text(sm_out_t *o, const sm_jv_t *v)
{
    const sm_jv_t *path = sm_jv_get(v, "path");
    if (sm_jv_get(v, "path_from_depth")) /* a deep path: its innermost names */
        sm_out_printf(o, "... / ");
    for (uint32_t d = 0; d < sm_jv_len(path); d++) {
        sm_out_printf(o, d ? " / " : "");
        sm_html_name(o, sm_jv_at(path, d)->str);
    }
}

static void sm_spread_cells(sm_out_t *o, const sm_jv_t *sp)
{
    char b[64], t[96];
    sm_td_time(o, sm_jv_num(sp, "mean", 0));
    const char *keys[2][2] = {{"min", "min_rank"}, {"max", "max_rank"}};
    for (int i = 0; i < 2; i++) {
        double v = sm_jv_num(sp, keys[i][0], 0);
        sm_fmt_time(b, sizeof b, v);
        snprintf(t, sizeof t, "%s (rank %.0f)", b, sm_jv_num(sp, keys[i][1], 0));
        sm_td_num(o, v, t);
    }
}

sm_rpath_t **sm_sorted_paths(sm_report_t *r)
{
    sm_rpath_t **s = malloc((r->n_paths ? r->n_paths : 1) * sizeof *s);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < r->n_paths; i++)
        s[i] = &r->paths[i];
    qsort(s, r->n_paths, sizeof *s, sm_rpath_by_incl);
    return s;
}

void sm_report_paths(sm_report_t *r, sm_rpath_t **sorted)
{
    sm_out_t *o = &r->o;
    uint32_t rows = r->n_paths < SM_REPORT_MAX_PATHS ? r->n_paths : SM_REPORT_MAX_PATHS;
    sm_out_printf(o, "<h2 id=paths>Top call paths</h2>\n<p>By inclusive time summed over "
                     "ranks. Click a heading to sort; mean, min and max are across the ranks "
                     "that visited the path (per rank: the sum over its threads).</p>\n");
    if (rows < r->n_paths)
        sm_out_printf(o, "<p class=note>The %u call paths with the most time of %u are shown "
                         "(profile.json and profile.txt have all).</p>\n",
                      (unsigned)rows, (unsigned)r->n_paths);
    sm_out_printf(o, "<table class=sortable id=paths-table><thead><tr><th>Call path</th>"
                     "<th>Paradigm</th><th>Ranks</th><th>Visits</th><th>Inclusive</th>"
                     "<th>Exclusive</th><th>Incl. mean/rank</th><th>Incl. min</th>"
                     "<th>Incl. max</th><th>Kind</th></tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < rows && !o->err; i++) {
        const sm_rpath_t *p = sorted[i];
        /* The whole path (rows are sorted, so indentation would mislead),
         * the region itself in bold. */
        const sm_jv_t *path = sm_jv_get(p->v, "path");
        uint32_t depth = sm_jv_len(path);
        sm_out_printf(o, "<tr><td class=path>");
        for (uint32_t d = 0; d + 1 < depth; d++) {
            sm_html_name(o, sm_jv_at(path, d)->str);
            sm_out_printf(o, " / ");
        }
        sm_out_printf(o, "<b>");
        sm_html_name(o, depth ? sm_jv_at(path, depth - 1)->str : "?");
        sm_out_printf(o, "</b></td><td>");
        sm_html(o, sm_jv_str(p->v, "paradigm"));
        sm_out_printf(o, "</td>");
        sm_td_count(o, p->ranks);
        sm_td_count(o, p->visits);
        sm_td_time(o, p->incl);
        sm_td_time(o, p->excl);
        sm_spread_cells(o, sm_jv_get(sm_jv_get(p->v, "across_ranks"), "inclusive"));
        sm_out_printf(o, "<td>");
        sm_html(o, sm_jv_str(p->v, "kind"));
        sm_out_printf(o, "</td></tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
}

/* ---------------------------------------------------------------- load imbalance */

/* max/mean of the per-rank inclusive times: 1 is perfect balance. */
static double sm_imbalance(const sm_jv_t *v)
{
    const sm_jv_t *sp = sm_jv_get(sm_jv_get(v, "across_ranks"), "inclusive");
    double mean = sm_jv_num(sp, "mean", 0);
    return mean > 0 ? sm_jv_num(sp, "max", 0) / mean : 1;
}

void sm_report_imbalance(sm_report_t *r, sm_rpath_t **sorted)
{
    sm_out_t *o = &r->o;
    sm_out_printf(o, "<h2 id=imbalance>Load imbalance</h2>\n<p>The regions with the most "
                     "time: each rank's inclusive time (the sum over its threads). Imbalance is "
                     "max / mean across ranks (1.00: balanced). In grey, darkest the slowest "
                     "rank, lightest the fastest (colours on this page are kinds of work).</p>\n");
    /* The headline: the region outside MPI whose own (exclusive) time costs
     * the most waiting, (max - mean) across ranks: time in MPI is mostly
     * the wait for the slowest, and a parent's inclusive time holds it. */
    const sm_rpath_t *worst = NULL;
    double worst_loss = 0;
    uint32_t shown = 0;
    for (uint32_t i = 0; i < r->n_paths; i++) {
        const sm_rpath_t *p = sorted[i];
        if (p->ranks < 2)
            continue;
        shown++;
        const char *par = sm_jv_str(p->v, "paradigm");
        const sm_jv_t *sp = sm_jv_get(sm_jv_get(p->v, "across_ranks"), "exclusive");
        double loss = sm_jv_num(sp, "max", 0) - sm_jv_num(sp, "mean", 0);
        if (par && strcmp(par, "mpi") && loss > worst_loss) {
            worst = p;
            worst_loss = loss;
        }
    }
    if (!shown) {
        sm_out_printf(o, "<p class=note>No region was visited by more than one rank.</p>\n");
        return;
    }
    if (worst) {
        const sm_jv_t *sp = sm_jv_get(sm_jv_get(worst->v, "across_ranks"), "exclusive");
        char bmax[48], bmin[48], bloss[48];
        sm_fmt_time(bmax, sizeof bmax, sm_jv_num(sp, "max", 0));
        sm_fmt_time(bmin, sizeof bmin, sm_jv_num(sp, "min", 0));
        sm_fmt_time(bloss, sizeof bloss, worst_loss);
        sm_out_printf(o, "<p id=imbalance-headline><b>Most imbalanced work (outside MPI): ");
        sm_path_text(o, worst->v);
        sm_out_printf(o, "</b> &mdash; slowest rank %.0f (%s), fastest rank %.0f (%s); the "
                         "slowest takes %s more than the mean (exclusive time).</p>\n",
                      sm_jv_num(sp, "max_rank", 0), bmax, sm_jv_num(sp, "min_rank", 0), bmin,
                      bloss);
    }
    /* Rank ranges of one rank each, few enough: a bar per rank. */
    bool one_each = r->n_bins > 0;
    for (uint32_t b = 0; b < r->n_bins; b++)
        one_each &= r->bin_first[b + 1] == r->bin_first[b] + 1;
    bool bars = r->n_bins ? one_each && r->n_bins <= SM_REPORT_RANK_BARS
                          : r->n_ranks <= SM_REPORT_RANK_BARS;
    if (!bars)
        sm_out_printf(o, "<p class=note>%u ranks: min, mean and max with the ranks that hold "
                         "them, instead of one bar per rank%s.</p>\n", (unsigned)r->n_ranks,
                      r->n_bins ? "; and each range of ranks from its fastest to its slowest "
                                  "rank, the mean marked" : "");
    sm_out_printf(o, "<table id=imbalance-table><tr><th>Region</th><th>Slowest rank</th>"
                     "<th>Fastest rank</th><th>Imbalance</th><th>%s</th></tr>\n",
                  bars ? "Per rank" : "min / mean / max");
    shown = 0;
    for (uint32_t i = 0; i < r->n_paths && shown < SM_REPORT_MAX_IMBALANCE && !o->err; i++) {
        const sm_rpath_t *p = sorted[i];
        if (p->ranks < 2)
            continue;
        shown++;
        const sm_jv_t *sp = sm_jv_get(sm_jv_get(p->v, "across_ranks"), "inclusive");
        double max = sm_jv_num(sp, "max", 0), min = sm_jv_num(sp, "min", 0);
        double mean = sm_jv_num(sp, "mean", 0);
        char bmax[48], bmin[48], bmean[48];
        sm_fmt_time(bmax, sizeof bmax, max);
        sm_fmt_time(bmin, sizeof bmin, min);
        sm_fmt_time(bmean, sizeof bmean, mean);
        sm_out_printf(o, "<tr><td class=path>");
        sm_path_text(o, p->v);
        sm_out_printf(o, "</td><td>rank %.0f (%s)</td><td>rank %.0f (%s)</td><td class=n>%.2f"
                         "</td><td>",
                      sm_jv_num(sp, "max_rank", 0), bmax, sm_jv_num(sp, "min_rank", 0), bmin,
                      sm_imbalance(p->v));
        const int W = 300, H = 8;
        if (bars) {
            /* One horizontal bar per rank, on the region's own scale; the
             * line marks the mean. */
            uint32_t nr = r->n_bins ? r->n_bins : r->n_ranks;
            sm_out_printf(o, "<svg width=%d height=%u>", W + 50, (unsigned)(nr * (H + 1) + 2));
            const sm_jv_t *pr = sm_jv_get(p->v, "per_rank");
            uint32_t rows = r->n_bins ? r->n_bins : sm_jv_len(pr);
            for (uint32_t k = 0; k < rows; k++) {
                double rank, v;
                if (r->n_bins) {
                    if (sm_rpath_bin(p->v, "ranks", k) <= 0)
                        continue;
                    rank = r->bin_first[k];
                    v = sm_rpath_bin(p->v, "inclusive_sum", k);
                } else {
                    const sm_jv_t *e = sm_jv_at(pr, k);
                    rank = sm_jv_num(e, "rank", 0);
                    v = sm_jv_num(e, "inclusive", 0);
                }
                char b[48];
                sm_fmt_time(b, sizeof b, v);
                sm_out_printf(o, "<rect x=40 y=%.0f width=%.1f height=%d fill=\"%s\"><title>"
                                 "rank %.0f: %s</title></rect><text x=0 y=%.0f "
                                 "font-size=8>r%.0f</text>",
                              1 + rank * (H + 1), max > 0 ? W * v / max : 0, H,
                              v == max ? SM_REPORT_NEUTRAL_DARK : v == min ? SM_REPORT_NEUTRAL_LIGHT : SM_REPORT_NEUTRAL, rank, b,
                              rank * (H + 1) + H, rank);
            }
            if (max > 0)
                sm_out_printf(o, "<line x1=%.1f x2=%.1f y1=0 y2=%u stroke=\"#222\" "
                                 "stroke-dasharray=\"2,2\"><title>mean %s</title></line>",
                              40 + W * mean / max, 40 + W * mean / max,
                              (unsigned)(nr * (H + 1) + 2), bmean);
            sm_out_printf(o, "</svg>");
        } else {
            /* min .. max as a range, the mean as a tick, on the region's scale. */
            sm_out_printf(o, "<svg width=%d height=14><rect x=%.1f y=3 width=%.1f height=8 "
                             "fill=\"" SM_REPORT_NEUTRAL "\"/><line x1=%.1f x2=%.1f y1=0 y2=14 stroke="
                             "\"#222\"/></svg> %s / %s / %s",
                          W + 10, max > 0 ? W * min / max : 0,
                          max > 0 ? W * (max - min) / max : 0, max > 0 ? W * mean / max : 0,
                          max > 0 ? W * mean / max : 0, bmin, bmean, bmax);
            if (r->n_bins && max > 0) {
                /* Each range of ranks, left to right: a column from its
                 * fastest to its slowest rank (height: time), its mean a
                 * tick. */
                const int HH = 40;
                double cw = (double)W / r->n_bins;
                sm_out_printf(o, "<br><svg class=bins width=%d height=%d>", W + 10, HH + 2);
                for (uint32_t b = 0; b < r->n_bins; b++) {
                    double nrk = sm_rpath_bin(p->v, "ranks", b);
                    if (nrk <= 0)
                        continue;
                    double lo = sm_rpath_bin(p->v, "inclusive_min", b);
                    double hi = sm_rpath_bin(p->v, "inclusive_max", b);
                    double mb = sm_rpath_bin(p->v, "inclusive_sum", b) / nrk;
                    char who[48], bl[48], bh[48], bm[48];
                    sm_bin_name(r, b, who, sizeof who);
                    sm_fmt_time(bl, sizeof bl, lo);
                    sm_fmt_time(bh, sizeof bh, hi);
                    sm_fmt_time(bm, sizeof bm, mb);
                    double y0 = 1 + HH * (1 - hi / max), y1 = 1 + HH * (1 - lo / max);
                    sm_out_printf(o, "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill=\"%s\">"
                                     "<title>%s: %s .. %s, mean %s</title></rect>",
                                  b * cw, y0, cw > 1.5 ? cw - 0.5 : cw, y1 - y0 > 1 ? y1 - y0 : 1,
                                  hi == max ? SM_REPORT_NEUTRAL_DARK : lo == min ? SM_REPORT_NEUTRAL_LIGHT : SM_REPORT_NEUTRAL, who,
                                  bl, bh, bm);
                }
                sm_out_printf(o, "</svg>");
            }
        }
        sm_out_printf(o, "</td></tr>\n");
    }
    sm_out_printf(o, "</table>\n");
}
