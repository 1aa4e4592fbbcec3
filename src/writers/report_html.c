/* report.html: one self-contained page for a person to look at, built from
 * the folder's own metadata.json, profile.json and comm_matrix data (the
 * same files at finalize, in sysmeasure-merge and in sysmeasure-report, so
 * the page is the same whichever wrote it).  Plots are inline SVG drawn
 * here; the only script sorts tables.  Nothing is loaded from elsewhere.
 *
 * The page stays small for large jobs: tables are capped (SM_REPORT_MAX_*)
 * and the page says what was left out; per-rank plots draw the rank ranges
 * of profile.json's "rank_bins" (at most SM_PROFILE_RANK_BINS of them, one
 * rank each in jobs of no more ranks), so the page does not grow with the
 * ranks.  A profile.json without bins (an older folder) is drawn from its
 * per-rank rows. */
#include "out_file.h"
#include "../finalize/pipeline.h"
#include "timeline.h"
#include "writers.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "../util/json_read.h"
#include "../util/log.h"
#include "../util/grow.h"

#define SM_REPORT_MAX_PATHS 200      /* rows of the call-path table */
#define SM_REPORT_MAX_IMBALANCE 10   /* regions in the load-imbalance section */
#define SM_REPORT_RANK_BARS 32       /* per-rank bars up to this many ranks */
#define SM_REPORT_MAX_RANK_ROWS 512  /* ranks drawn in "where the time went" */
#define SM_REPORT_MATRIX_CELLS 64    /* heat-map cells per side (ranks binned beyond) */
/* Beyond these a number in the files is damage, not a job: */
#define SM_REPORT_MAX_RANKS (1u << 20)  /* ranks */
#define SM_REPORT_MAX_DEPTH (1u << 20)  /* call-path depth */
#define SM_REPORT_MAX_COUNT ((uint64_t)1 << 53) /* a count of events (a double's integers) */
#define SM_REPORT_TL_MAX_BINS 10000     /* columns of timeline.json (it has 300) */
#define SM_REPORT_TL_MAX_CELLS (1u << 21) /* lanes x columns (512 x 300 at most) */
#define SM_REPORT_MAX_BINS 4096         /* rank ranges (profile.json has 128 at most) */

/* Where time goes: the kinds of work of timeline.h (sm_tl_*), one list for
 * the bars, the timeline and timeline.json. */

/* One call path as the page uses it. */
typedef struct sm_rpath {
    const sm_jv_t *v;
    double incl, excl, visits; /* sums over ranks */
    uint32_t ranks, depth;
} sm_rpath_t;

typedef struct sm_report {
    sm_out_t o;
    const sm_jv_t *meta, *prof, *tl; /* tl: timeline.json, NULL without */
    uint32_t n_ranks;
    double duration_ns;
    sm_rpath_t *paths;
    uint32_t n_paths;
    uint32_t *threads;      /* [n_ranks] */
    uint32_t *main_threads; /* [n_ranks]: threads no other thread created */
    /* The rank ranges of profile.json ("rank_bins"); 0: none, the plots
     * read the per-rank rows. */
    uint32_t n_bins;
    uint32_t *bin_first;    /* [n_bins + 1]: first rank of each, then n_ranks */
    uint32_t *bin_ranks, *bin_threads, *bin_main; /* [n_bins] */
} sm_report_t;

/* Path v's column col of the job's rank range b (0 where it has none). */
static double sm_rpath_bin(const sm_jv_t *v, const char *col, uint32_t b)
{
    const sm_jv_t *pb = sm_jv_get(v, "rank_bins");
    uint32_t first = (uint32_t)sm_jv_num(pb, "first_bin", 0);
    const sm_jv_t *x = b >= first ? sm_jv_at(sm_jv_get(pb, col), b - first) : NULL;
    return x && x->type == SM_JV_NUMBER ? x->num : 0.0;
}

/* "rank 3" or "ranks 16-23" of range b. */
static void sm_bin_name(const sm_report_t *r, uint32_t b, char *buf, size_t len)
{
    uint32_t lo = r->bin_first[b], hi = r->bin_first[b + 1];
    if (hi <= lo + 1)
        snprintf(buf, len, "rank %u", (unsigned)lo);
    else
        snprintf(buf, len, "ranks %u-%u", (unsigned)lo, (unsigned)(hi - 1));
}

/* ---------------------------------------------------------------- text */

/* s for HTML text and attribute values; control characters become '?'. */
static void sm_html(sm_out_t *o, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p && !o->err; p++) {
        switch (*p) {
        case '&': sm_out_printf(o, "&amp;"); break;
        case '<': sm_out_printf(o, "&lt;"); break;
        case '>': sm_out_printf(o, "&gt;"); break;
        case '"': sm_out_printf(o, "&quot;"); break;
        case '\'': sm_out_printf(o, "&#39;"); break;
        default: sm_out_repeat(o, *p < 0x20 || *p == 0x7f ? '?' : (char)*p, 1);
        }
    }
}

static void sm_fmt_time(char *buf, size_t len, double ns)
{
    double a = fabs(ns);
    if (a >= 1e9)
        snprintf(buf, len, "%.3g s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, len, "%.3g ms", ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%.3g \xc2\xb5s", ns / 1e3);
    else
        snprintf(buf, len, "%.0f ns", ns);
}

static void sm_fmt_bytes(char *buf, size_t len, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.3g %s" : "%.0f %s", b, unit[u]);
}

/* A table cell with a number to sort by and its text. */
static void sm_td_num(sm_out_t *o, double v, const char *text)
{
    sm_out_printf(o, "<td class=n data-v=\"%.17g\">", isfinite(v) ? v : 0.0);
    sm_html(o, text);
    sm_out_printf(o, "</td>");
}

static void sm_td_time(sm_out_t *o, double ns)
{
    char b[48];
    sm_fmt_time(b, sizeof b, ns);
    sm_td_num(o, ns, b);
}

static void sm_td_count(sm_out_t *o, double v)
{
    char b[48];
    snprintf(b, sizeof b, "%.0f", v);
    sm_td_num(o, v, b);
}

/* ---------------------------------------------------------------- page frame */

static const char sm_report_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;"
    "color:#222;background:#fff}"
    "h1{font-size:22px;margin:16px 0 4px}h2{font-size:18px;border-bottom:2px solid #4e79a7;"
    "margin-top:28px}nav a{margin-right:12px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;border-bottom:1px "
    "solid #ddd;text-align:left;vertical-align:top}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}"
    "table.sortable th{cursor:pointer;background:#eef2f6}table.sortable th:hover{background:"
    "#dde5ee}th.a:after{content:' \\25b2'}th.d:after{content:' \\25bc'}"
    ".note{color:#555;font-style:italic}.warn{color:#a00}.key span{display:inline-block;"
    "width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}"
    "svg text{font:11px system-ui,sans-serif}td.path{font-family:monospace}"
    "dt{font-weight:bold;float:left;clear:left;width:150px}dd{margin-left:160px}";

/* Sorting only: click a header; numbers sort by data-v. */
static const char sm_report_js[] =
    "document.querySelectorAll('table.sortable').forEach(function(t){\n"
    " t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\n"
    "  var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),up=!th.classList.contains('a');\n"
    "  t.querySelectorAll('th').forEach(function(h){h.classList.remove('a','d')});\n"
    "  th.classList.add(up?'a':'d');\n"
    "  rows.sort(function(x,y){var p=x.cells[i],q=y.cells[i],r;\n"
    "   if(p.dataset.v!==undefined&&q.dataset.v!==undefined)r=p.dataset.v-q.dataset.v;\n"
    "   else r=p.textContent.localeCompare(q.textContent);return up?r:-r});\n"
    "  rows.forEach(function(r){b.appendChild(r)});});});});\n";

static void sm_legend(sm_out_t *o, const bool *used)
{
    sm_out_printf(o, "<p class=key>");
    for (int c = 0; c < SM_TL_COUNT; c++)
        if (!used || used[c])
            sm_out_printf(o, "<span style=\"background:%s\"></span>%s", sm_tl_color[c],
                          sm_tl_name[c]);
    sm_out_printf(o, "</p>\n");
}

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

static void sm_report_run(sm_report_t *r)
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
    sm_out_printf(o, "</code></dd>\n<dt>Ranks &times; threads</dt><dd>%u rank%s &times; up to "
                     "%u thread%s (%u in all)</dd>\n",
                  (unsigned)r->n_ranks, r->n_ranks == 1 ? "" : "s", (unsigned)max_threads,
                  max_threads == 1 ? "" : "s", (unsigned)threads);
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

static void sm_report_time(sm_report_t *r)
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
    for (uint32_t i = 0; top && i < r->n_paths; i++) {
        const sm_jv_t *v = r->paths[i].v;
        const char *pd = sm_jv_str(v, "paradigm");
        if (pd && !strcmp(pd, "sampling"))
            continue; /* callers found by sampling: inside their region's time */
        int c = sm_tl_kind_of_paradigm(pd);
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
static void sm_path_text(sm_out_t *o, const sm_jv_t *v)
{
    const sm_jv_t *path = sm_jv_get(v, "path");
    for (uint32_t d = 0; d < sm_jv_len(path); d++) {
        sm_out_printf(o, d ? " / " : "");
        sm_html(o, sm_jv_at(path, d)->str);
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

static sm_rpath_t **sm_sorted_paths(sm_report_t *r)
{
    sm_rpath_t **s = malloc((r->n_paths ? r->n_paths : 1) * sizeof *s);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < r->n_paths; i++)
        s[i] = &r->paths[i];
    qsort(s, r->n_paths, sizeof *s, sm_rpath_by_incl);
    return s;
}

static void sm_report_paths(sm_report_t *r, sm_rpath_t **sorted)
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
                     "<th>Incl. max</th></tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < rows && !o->err; i++) {
        const sm_rpath_t *p = sorted[i];
        /* The whole path (rows are sorted, so indentation would mislead),
         * the region itself in bold. */
        const sm_jv_t *path = sm_jv_get(p->v, "path");
        uint32_t depth = sm_jv_len(path);
        sm_out_printf(o, "<tr><td class=path>");
        for (uint32_t d = 0; d + 1 < depth; d++) {
            sm_html(o, sm_jv_at(path, d)->str);
            sm_out_printf(o, " / ");
        }
        sm_out_printf(o, "<b>");
        sm_html(o, depth ? sm_jv_at(path, depth - 1)->str : "?");
        sm_out_printf(o, "</b></td><td>");
        sm_html(o, sm_jv_str(p->v, "paradigm"));
        sm_out_printf(o, "</td>");
        sm_td_count(o, p->ranks);
        sm_td_count(o, p->visits);
        sm_td_time(o, p->incl);
        sm_td_time(o, p->excl);
        sm_spread_cells(o, sm_jv_get(sm_jv_get(p->v, "across_ranks"), "inclusive"));
        sm_out_printf(o, "</tr>\n");
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

static void sm_report_imbalance(sm_report_t *r, sm_rpath_t **sorted)
{
    sm_out_t *o = &r->o;
    sm_out_printf(o, "<h2 id=imbalance>Load imbalance</h2>\n<p>The regions with the most "
                     "time: each rank's inclusive time (the sum over its threads). Imbalance is "
                     "max / mean across ranks (1.00: balanced).</p>\n");
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
                              v == max ? "#e15759" : v == min ? "#59a14f" : "#4e79a7", rank, b,
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
                             "fill=\"#4e79a7\"/><line x1=%.1f x2=%.1f y1=0 y2=14 stroke="
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
                                  hi == max ? "#e15759" : lo == min ? "#59a14f" : "#4e79a7", who,
                                  bl, bh, bm);
                }
                sm_out_printf(o, "</svg>");
            }
        }
        sm_out_printf(o, "</td></tr>\n");
    }
    sm_out_printf(o, "</table>\n");
}

/* ---------------------------------------------------------------- MPI */

static void sm_report_mpi_table(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *mpi = sm_jv_get(r->prof, "mpi");
    sm_out_printf(o, "<h2 id=mpi>MPI</h2>\n");
    if (!sm_jv_len(mpi)) {
        sm_out_printf(o, "<p class=note>No MPI function was called.</p>\n");
        return;
    }
    sm_out_printf(o, "<table class=sortable id=mpi-table><thead><tr><th>Function</th>"
                     "<th>Calls</th><th>Ranks</th><th>Time (all ranks)</th>"
                     "<th>Mean per rank</th><th>Max per rank</th><th>Max rank</th>"
                     "<th>Bytes sent</th><th>Bytes received</th></tr></thead><tbody>\n");
    for (uint32_t i = 0; i < sm_jv_len(mpi) && !o->err; i++) {
        const sm_jv_t *f = sm_jv_at(mpi, i);
        char b[48];
        sm_out_printf(o, "<tr><td>");
        sm_html(o, sm_jv_str(f, "function"));
        sm_out_printf(o, "</td>");
        sm_td_count(o, sm_jv_num(f, "calls", 0));
        sm_td_count(o, sm_jv_num(f, "ranks", 0));
        sm_td_time(o, sm_jv_num(f, "time", 0));
        sm_td_time(o, sm_jv_num(f, "time_per_rank_mean", 0));
        sm_td_time(o, sm_jv_num(f, "time_per_rank_max", 0));
        sm_td_count(o, sm_jv_num(f, "max_rank", 0));
        for (int k = 0; k < 2; k++) {
            double v = sm_jv_num(f, k ? "bytes_received" : "bytes_sent", 0);
            sm_fmt_bytes(b, sizeof b, v);
            sm_td_num(o, v, b);
        }
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
}

/* One heat map of the matrix (which: "messages" or "bytes"); beyond
 * SM_REPORT_MATRIX_CELLS ranks a cell sums a block of ranks. */
static void sm_report_heatmap(sm_report_t *r, const sm_jv_t *cm, const char *which)
{
    sm_out_t *o = &r->o;
    uint32_t n = (uint32_t)sm_jv_num(cm, "ranks", 0);
    if (!n)
        return;
    uint32_t per = (n + SM_REPORT_MATRIX_CELLS - 1) / SM_REPORT_MATRIX_CELLS, cells = (n + per - 1) / per;
    double *m = calloc((size_t)cells * cells, sizeof *m);
    if (!m) {
        sm_out_fail(o, ENOMEM);
        return;
    }
    /* Every pair, or (a large job) blocks of ranks already summed: each
     * block falls in one cell (its first ranks; blocks no larger). */
    const sm_jv_t *pairs = sm_jv_get(cm, "pairs");
    if (!pairs)
        pairs = sm_jv_get(cm, "cells");
    double max = 0;
    for (uint32_t i = 0; i < sm_jv_len(pairs); i++) {
        const sm_jv_t *p = sm_jv_at(pairs, i);
        double s = sm_jv_num(p, "sender", -1), d = sm_jv_num(p, "receiver", -1);
        if (s < 0 || d < 0 || s >= n || d >= n)
            continue;
        double *c = &m[(size_t)((uint32_t)s / per) * cells + (uint32_t)d / per];
        *c += sm_jv_num(p, which, 0);
        if (*c > max)
            max = *c;
    }
    const int S = 360, L = 40;
    double cs = (double)S / cells;
    sm_out_printf(o, "<figure style=\"display:inline-block;margin:0 24px 0 0\"><svg id=\"matrix-"
                     "%s\" width=%d height=%d role=img aria-label=\"%s from sender to receiver\">"
                     "<rect x=%d y=%d width=%d height=%d fill=\"#f4f4f4\"/>",
                  which, S + L + 4, S + L + 4, which, L, L, S, S);
    for (uint32_t a = 0; a < cells; a++)
        for (uint32_t b = 0; b < cells; b++) {
            double v = m[(size_t)a * cells + b];
            if (v <= 0)
                continue;
            /* log scale: a matrix often spans orders of magnitude */
            double f = max > 1 ? log1p(v) / log1p(max) : 1;
            char t[48];
            if (!strcmp(which, "bytes"))
                sm_fmt_bytes(t, sizeof t, v);
            else
                snprintf(t, sizeof t, "%.0f messages", v);
            if (per == 1)
                sm_out_printf(o, "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill=\"rgb(%d,%d,"
                                 "%d)\"><title>rank %u to rank %u: %s</title></rect>",
                              L + b * cs, L + a * cs, cs, cs, (int)(255 - 30 * f),
                              (int)(235 - 200 * f), (int)(200 - 170 * f), (unsigned)a,
                              (unsigned)b, t);
            else
                sm_out_printf(o, "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill=\"rgb(%d,%d,"
                                 "%d)\"><title>ranks %u-%u to %u-%u: %s</title></rect>",
                              L + b * cs, L + a * cs, cs, cs, (int)(255 - 30 * f),
                              (int)(235 - 200 * f), (int)(200 - 170 * f), (unsigned)(a * per),
                              (unsigned)(a * per + per - 1), (unsigned)(b * per),
                              (unsigned)(b * per + per - 1), t);
        }
    /* Rank labels on a few ticks. */
    uint32_t step = cells <= 16 ? 1 : cells / 8;
    for (uint32_t a = 0; a < cells; a += step) {
        sm_out_printf(o, "<text x=%.1f y=%d text-anchor=middle>%u</text>", L + (a + 0.5) * cs,
                      L - 4, (unsigned)(a * per));
        sm_out_printf(o, "<text x=%d y=%.1f text-anchor=end>%u</text>", L - 4,
                      L + (a + 0.5) * cs + 4, (unsigned)(a * per));
    }
    sm_out_printf(o, "<text x=%d y=12>receiver &rarr;</text><text x=2 y=%d>sender</text>"
                     "</svg><figcaption>%s (darker: more; log scale)%s</figcaption></figure>\n",
                  L, L - 16, which, per > 1 ? ", ranks binned" : "");
    free(m);
}

static void sm_report_matrix(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *cm = sm_jv_get(r->prof, "comm_matrix");
    sm_out_printf(o, "<h3 id=matrix>Communication matrix</h3>\n");
    if (!cm || cm->type != SM_JV_OBJECT) {
        sm_out_printf(o, "<p class=note>No point-to-point message was sent.</p>\n");
        return;
    }
    char b[48];
    sm_fmt_bytes(b, sizeof b, sm_jv_num(cm, "bytes", 0));
    sm_out_printf(o, "<p>Point-to-point messages from sender (row) to receiver (column): %.0f "
                     "messages, %s in all.</p>\n",
                  sm_jv_num(cm, "messages", 0), b);
    sm_report_heatmap(r, cm, "messages");
    sm_report_heatmap(r, cm, "bytes");
}

/* ---------------------------------------------------------------- timeline */

#define SM_REPORT_TL_W 800 /* px of the time axis */

/* Members of a lane's per_mille object the page looks at (the kinds of
 * timeline.h; a later sysmeasure may write more, which are not drawn). */
#define SM_REPORT_TL_KEYS 32

/* The kind holding most time in bin b of a lane (its first nk members,
 * whose kinds are kind_of[]), and its share (per mille of the lane's
 * time); -1 when the lane is idle there. */
static int sm_tl_top(const sm_jv_t *pm, uint32_t nk, const int *kind_of, uint32_t b,
                     double *share)
{
    int best = -1;
    double top = 0;
    for (uint32_t k = 0; k < nk; k++) {
        const sm_jv_t *a = pm->items[k];
        double v = b < sm_jv_len(a) ? sm_jv_at(a, b)->num : 0;
        if (v > top && kind_of[k] >= 0) {
            top = v;
            best = kind_of[k];
        }
    }
    *share = top;
    return top >= 50 ? best : -1; /* under 5%: idle (or no data) */
}

static void sm_report_timeline(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *tl = r->tl, *lanes = sm_jv_get(tl, "lanes");
    sm_out_printf(o, "<h2 id=timeline>Timeline</h2>\n");
    if (!sm_jv_len(lanes)) {
        sm_out_printf(o, "<p class=note>No timeline: %s</p>\n",
                      tl ? "the trace holds no region or GPU activity."
                         : "this folder has no timeline.json of this run (it is written with the "
                           "OTF2 trace; tracing was off, or the trace could not be written).");
        return;
    }
    uint32_t n = sm_jv_len(lanes), bins = (uint32_t)sm_jv_num(tl, "bins", 0);
    double bin_ns = sm_jv_num(tl, "bin_ns", 0);
    if (!bins || bins > SM_REPORT_TL_MAX_BINS)
        return;
    const int L = 170, H = n > 64 ? 5 : 14, G = n > 64 ? 1 : 3;
    double bw = (double)SM_REPORT_TL_W / bins;
    char b0[48], b1[48];
    sm_fmt_time(b0, sizeof b0, bin_ns * bins);
    sm_out_printf(o, "<p>The whole job (%s), one lane per %s; each of the %u columns "
                     "shows what held most of the lane's time then, paler where it held "
                     "less; white: idle or not started. Hover for the figures.</p>\n",
                  b0, sm_jv_num(tl, "ranks_per_lane", 1) > 1 ? "group of ranks" :
                  "thread and GPU stream (or rank, where there are many)", (unsigned)bins);
    bool used[SM_TL_COUNT] = {false};
    for (uint32_t i = 0; i < n; i++) {
        const sm_jv_t *pm = sm_jv_get(sm_jv_at(lanes, i), "per_mille");
        for (uint32_t k = 0; pm && pm->type == SM_JV_OBJECT && k < pm->n; k++)
            for (int c = 0; c < SM_TL_COUNT; c++)
                used[c] |= !strcmp(pm->keys[k], sm_tl_name[c]);
    }
    sm_legend(o, used);
    sm_out_printf(o, "<svg id=timeline-lanes width=%d height=%u role=img aria-label=\"timeline "
                     "of the job\">\n",
                  L + SM_REPORT_TL_W + 10, (unsigned)(n * (H + G) + 24));
    for (uint32_t i = 0; i < n && !o->err; i++) {
        const sm_jv_t *lane = sm_jv_at(lanes, i), *pm = sm_jv_get(lane, "per_mille");
        int kind_of[SM_REPORT_TL_KEYS];
        double lane_sum[SM_TL_COUNT] = {0};
        uint32_t nk = pm && pm->type == SM_JV_OBJECT ? pm->n : 0;
        if (nk > SM_REPORT_TL_KEYS)
            nk = SM_REPORT_TL_KEYS;
        for (uint32_t k = 0; k < nk; k++) {
            kind_of[k] = -1;
            for (int c = 0; c < SM_TL_COUNT; c++)
                if (!strcmp(pm->keys[k], sm_tl_name[c]))
                    kind_of[k] = c;
            for (uint32_t b = 0; kind_of[k] >= 0 && b < sm_jv_len(pm->items[k]); b++)
                lane_sum[kind_of[k]] += sm_jv_at(pm->items[k], b)->num;
        }
        /* The lane's main kind, for the page's text and tests. */
        int main_kind = 0;
        for (int c = 1; c < SM_TL_COUNT; c++)
            if (lane_sum[c] > lane_sum[main_kind])
                main_kind = c;
        double y = 2 + i * (double)(H + G);
        sm_out_printf(o, "<g class=lane data-rank=\"%.0f\" data-kind=\"", sm_jv_num(lane, "rank", 0));
        sm_html(o, sm_jv_str(lane, "kind"));
        sm_out_printf(o, "\" data-main=\"%s\"><title>", sm_tl_name[main_kind]);
        sm_html(o, sm_jv_str(lane, "name"));
        sm_out_printf(o, "</title>");
        if (n <= 64) {
            sm_out_printf(o, "<text x=0 y=%.0f>", y + H - 3);
            sm_html(o, sm_jv_str(lane, "name"));
            sm_out_printf(o, "</text>");
        }
        /* Runs of bins with the same top kind and paleness: one rect each. */
        uint32_t start = 0;
        int kind = -1, level = 0;
        double share_sum = 0;
        for (uint32_t b = 0; b <= bins; b++) {
            double share = 0;
            int k = b < bins ? sm_tl_top(pm, nk, kind_of, b, &share) : -2;
            int lv = share >= 750 ? 3 : share >= 400 ? 2 : 1;
            if (b < bins && k == kind && lv == level) {
                share_sum += share;
                continue;
            }
            if (kind >= 0 && b > start) {
                sm_fmt_time(b0, sizeof b0, bin_ns * start);
                sm_fmt_time(b1, sizeof b1, bin_ns * b);
                sm_out_printf(o, "<rect x=%.1f y=%.0f width=%.1f height=%d fill=\"%s\" "
                                 "fill-opacity=\"%.2f\"><title>%s to %s: %s %.0f%%</title>"
                                 "</rect>",
                              L + start * bw, y, (b - start) * bw, H, sm_tl_color[kind],
                              level == 3 ? 1.0 : level == 2 ? 0.7 : 0.4, b0, b1,
                              sm_tl_name[kind], share_sum / (b - start) / 10);
            }
            start = b;
            kind = k;
            level = lv;
            share_sum = share;
        }
        sm_out_printf(o, "</g>\n");
    }
    /* The time axis: five ticks. */
    double ay = n * (double)(H + G) + 4;
    for (int t = 0; t <= 4; t++) {
        double x = L + SM_REPORT_TL_W * t / 4.0;
        sm_fmt_time(b0, sizeof b0, bin_ns * bins * t / 4.0);
        sm_out_printf(o, "<line x1=%.1f x2=%.1f y1=0 y2=%.0f stroke=\"#888\" stroke-width="
                         "\"0.5\"/><text x=%.1f y=%.0f text-anchor=%s>%s</text>",
                      x, x, ay, x, ay + 14, t == 0 ? "start" : t == 4 ? "end" : "middle", b0);
    }
    sm_out_printf(o, "</svg>\n");
}

/* ---------------------------------------------------------------- GPU */

static void sm_report_gpu(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *g = sm_jv_get(r->prof, "gpu");
    if (!g || g->type != SM_JV_OBJECT)
        return;
    const sm_jv_t *ks = sm_jv_get(g, "kernels"), *cs = sm_jv_get(g, "copies");
    char b[48];
    sm_fmt_time(b, sizeof b, sm_jv_num(g, "kernel_time_ns", 0));
    sm_out_printf(o, "<h2 id=gpu>GPU kernels and copies</h2>\n<p>%u kernels, %s of kernel "
                     "time in all (device time, from the GPU's own timestamps).</p>\n",
                  (unsigned)sm_jv_len(ks), b);
    /* The top kernels as bars of their share. */
    uint32_t nk = sm_jv_len(ks) < 20 ? sm_jv_len(ks) : 20;
    if (nk) {
        const int W = 500, L = 260, H = 14;
        sm_out_printf(o, "<svg id=gpu-kernels width=%d height=%u role=img aria-label=\"kernel "
                         "time\">", L + W + 80, (unsigned)(nk * (H + 3) + 4));
        double top = sm_jv_num(sm_jv_at(ks, 0), "total_ns", 0);
        for (uint32_t i = 0; i < nk; i++) {
            const sm_jv_t *k = sm_jv_at(ks, i);
            double v = sm_jv_num(k, "total_ns", 0), y = 2 + i * (H + 3.0);
            sm_fmt_time(b, sizeof b, v);
            sm_out_printf(o, "<text x=%d y=%.0f text-anchor=end>", L - 4, y + H - 3);
            const char *name = sm_jv_str(k, "name");
            char cut[48];
            snprintf(cut, sizeof cut, "%.40s%s", name ? name : "?",
                     name && strlen(name) > 40 ? "..." : "");
            sm_html(o, cut);
            sm_out_printf(o, "</text><rect x=%d y=%.0f width=%.1f height=%d fill=\"%s\"><title>",
                          L, y, top > 0 ? W * v / top : 0, H, sm_tl_color[SM_TL_GPU_KERNEL]);
            sm_html(o, name);
            sm_out_printf(o, ": %s, %.1f%%</title></rect><text x=%.1f y=%.0f>%s</text>", b,
                          100 * sm_jv_num(k, "share", 0),
                          L + (top > 0 ? W * v / top : 0) + 4, y + H - 3, b);
        }
        sm_out_printf(o, "</svg>\n");
    }
    sm_out_printf(o, "<table class=sortable id=gpu-kernel-table><thead><tr><th>Kernel</th>"
                     "<th>Calls</th><th>Total</th><th>Share</th><th>Mean</th><th>Min</th>"
                     "<th>Max</th><th>Ranks</th></tr></thead><tbody>\n");
    for (uint32_t i = 0; i < sm_jv_len(ks) && i < SM_REPORT_MAX_PATHS && !o->err; i++) {
        const sm_jv_t *k = sm_jv_at(ks, i);
        sm_out_printf(o, "<tr><td class=path>");
        sm_html(o, sm_jv_str(k, "name"));
        sm_out_printf(o, "</td>");
        sm_td_count(o, sm_jv_num(k, "calls", 0));
        sm_td_time(o, sm_jv_num(k, "total_ns", 0));
        snprintf(b, sizeof b, "%.1f%%", 100 * sm_jv_num(k, "share", 0));
        sm_td_num(o, sm_jv_num(k, "share", 0), b);
        sm_td_time(o, sm_jv_num(k, "mean_ns", 0));
        sm_td_time(o, sm_jv_num(k, "min_ns", 0));
        sm_td_time(o, sm_jv_num(k, "max_ns", 0));
        sm_td_count(o, sm_jv_num(sm_jv_get(k, "ranks"), "n", 0));
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
    if (!sm_jv_len(cs)) {
        sm_out_printf(o, "<p class=note>No copies or memsets.</p>\n");
        return;
    }
    sm_out_printf(o, "<table class=sortable id=gpu-copy-table><thead><tr><th>Copy</th><th>Count"
                     "</th><th>Bytes</th><th>Time</th><th>GB/s</th></tr></thead><tbody>\n");
    for (uint32_t i = 0; i < sm_jv_len(cs) && !o->err; i++) {
        const sm_jv_t *c = sm_jv_at(cs, i);
        sm_out_printf(o, "<tr><td>");
        sm_html(o, sm_jv_str(c, "kind"));
        sm_out_printf(o, "</td>");
        sm_td_count(o, sm_jv_num(c, "count", 0));
        sm_fmt_bytes(b, sizeof b, sm_jv_num(c, "bytes", 0));
        sm_td_num(o, sm_jv_num(c, "bytes", 0), b);
        sm_td_time(o, sm_jv_num(c, "time_ns", 0));
        snprintf(b, sizeof b, "%.2f", sm_jv_num(c, "bandwidth_gb_s", 0));
        sm_td_num(o, sm_jv_num(c, "bandwidth_gb_s", 0), b);
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
}

/* ---------------------------------------------------------------- counters */

/* PAPI counters of the top call paths (by inclusive time): the exclusive
 * count summed over ranks, then the derived figures. */
static void sm_report_counters(sm_report_t *r, sm_rpath_t **sorted)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *names = NULL, *derived = NULL;
    for (uint32_t i = 0; i < r->n_paths && !names; i++) {
        const sm_jv_t *at = sm_jv_get(sorted[i]->v, "across_threads");
        const sm_jv_t *c = sm_jv_get(at, "counters");
        if (c && c->type == SM_JV_OBJECT && c->n) {
            names = c;
            derived = sm_jv_get(at, "derived");
        }
    }
    if (!names)
        return;
    uint32_t nc = names->n < 8 ? names->n : 8;
    uint32_t nd = derived && derived->type == SM_JV_OBJECT ? (derived->n < 4 ? derived->n : 4) : 0;
    sm_out_printf(o, "<h2 id=counters>Counters</h2>\n<p>Hardware or software-defined counter "
                     "events (PAPI) of the top call paths: the exclusive count, all ranks "
                     "together%s.</p>\n<table class=sortable id=counter-table><thead><tr>"
                     "<th>Call path</th>", nd ? ", and figures derived from two of them" : "");
    for (uint32_t k = 0; k < nc; k++) {
        sm_out_printf(o, "<th>");
        sm_html(o, names->keys[k]);
        sm_out_printf(o, "</th>");
    }
    for (uint32_t k = 0; k < nd; k++) {
        sm_out_printf(o, "<th>");
        sm_html(o, derived->keys[k]);
        sm_out_printf(o, "</th>");
    }
    sm_out_printf(o, "</tr></thead><tbody>\n");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < r->n_paths && shown < 50 && !o->err; i++) {
        const sm_jv_t *v = sorted[i]->v;
        const sm_jv_t *pr = sm_jv_get(v, "per_rank");
        double sum[8] = {0};
        bool any = false;
        for (uint32_t q = 0; q < sm_jv_len(pr); q++) {
            const sm_jv_t *c = sm_jv_get(sm_jv_at(pr, q), "counters");
            for (uint32_t k = 0; k < nc; k++) {
                double x = sm_jv_num(sm_jv_get(c, names->keys[k]), "exclusive", 0);
                sum[k] += x;
                any |= x > 0;
            }
        }
        if (!pr) {
            /* (a large job: the sums from the spread across ranks) */
            const sm_jv_t *ar = sm_jv_get(v, "across_ranks");
            const sm_jv_t *c = sm_jv_get(ar, "counters");
            double ranks = sm_jv_num(ar, "ranks", 0);
            for (uint32_t k = 0; k < nc; k++) {
                double x = sm_jv_num(sm_jv_get(sm_jv_get(c, names->keys[k]), "exclusive"),
                                     "mean", 0) * ranks;
                sum[k] += x;
                any |= x > 0;
            }
        }
        if (!any)
            continue;
        shown++;
        sm_out_printf(o, "<tr><td class=path>");
        sm_path_text(o, v);
        sm_out_printf(o, "</td>");
        for (uint32_t k = 0; k < nc; k++)
            sm_td_count(o, sum[k]);
        const sm_jv_t *d = sm_jv_get(sm_jv_get(v, "across_threads"), "derived");
        for (uint32_t k = 0; k < nd; k++) {
            const sm_jv_t *x = sm_jv_get(d, derived->keys[k]);
            char b[48] = "";
            if (x && x->type == SM_JV_NUMBER)
                snprintf(b, sizeof b, "%.3g", x->num);
            sm_td_num(o, x && x->type == SM_JV_NUMBER ? x->num : 0, b);
        }
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
}

/* ---------------------------------------------------------------- sampling */

/* One function as the hot-function table sums it over call paths. */
typedef struct sm_hot {
    const char *name, *file;
    double line, samples;
    uint32_t order; /* where it first comes in profile.json */
} sm_hot_t;

static int sm_hot_by_samples(const void *a, const void *b)
{
    const sm_hot_t *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples < y->samples ? 1 : -1;
    return (x->order > y->order) - (x->order < y->order);
}

/* By name (an unnamed one is a name of its own), then by order. */
static int sm_hot_by_name(const void *a, const void *b)
{
    const sm_hot_t *x = a, *y = b;
    int c = x->name && y->name ? strcmp(x->name, y->name) : !x->name - !y->name;
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* The call-path tree as a flame graph: width inclusive time (all ranks),
 * the paths in pre-order as profile.json lists them. */
static void sm_report_flame(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    double total = 0;
    uint32_t max_depth = 0;
    for (uint32_t i = 0; i < r->n_paths; i++) {
        if (r->paths[i].depth == 0)
            total += r->paths[i].incl;
        if (r->paths[i].depth > max_depth)
            max_depth = r->paths[i].depth;
    }
    if (total <= 0)
        return;
    if (max_depth > 40)
        max_depth = 40;
    const int W = 1000, H = 16;
    double next[41] = {0}; /* per depth: where the next frame starts */
    sm_out_printf(o, "<h3>Flame graph</h3>\n<p>Every call path, the sampled callers "
                     "included: the width is its inclusive time over all ranks, its callers "
                     "below it.</p>\n<svg id=flame width=%d height=%u role=img aria-label="
                     "\"flame graph\">", W, (unsigned)((max_depth + 1) * H + 2));
    for (uint32_t i = 0; i < r->n_paths && !o->err; i++) {
        const sm_rpath_t *p = &r->paths[i];
        if (p->depth > max_depth)
            continue;
        double x = next[p->depth], w = W * p->incl / total;
        next[p->depth] = x + w;
        for (uint32_t d = p->depth + 1; d <= max_depth; d++)
            next[d] = x; /* its callees start under it */
        if (w < 0.5)
            continue;
        const sm_jv_t *path = sm_jv_get(p->v, "path");
        const char *name = sm_jv_len(path) ? sm_jv_at(path, sm_jv_len(path) - 1)->str : "?";
        const char *pd = sm_jv_str(p->v, "paradigm");
        bool sampled = pd && !strcmp(pd, "sampling");
        double y = (max_depth - p->depth) * H;
        char b[48];
        sm_fmt_time(b, sizeof b, p->incl);
        sm_out_printf(o, "<g><title>");
        sm_html(o, name);
        sm_out_printf(o, " (%s): %s, %.1f%%</title><rect x=%.1f y=%.0f width=%.1f height=%d "
                         "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"/>",
                      sampled ? "sampled" : pd ? pd : "?", b, 100 * p->incl / total, x, y, w,
                      H - 1, sampled ? "#f28e2b" : sm_tl_color[sm_tl_kind_of_paradigm(pd)]);
        if (w > 40) {
            char cut[64];
            int fit = (int)(w / 7);
            snprintf(cut, sizeof cut, "%.*s", fit < 60 ? fit : 60, name ? name : "?");
            sm_out_printf(o, "<text x=%.1f y=%.0f>", x + 2, y + H - 4);
            sm_html(o, cut);
            sm_out_printf(o, "</text>");
        }
        sm_out_printf(o, "</g>\n");
    }
    sm_out_printf(o, "</svg>\n");
}

static void sm_report_sampling(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *s = sm_jv_get(r->prof, "sampling");
    if (!s || s->type != SM_JV_OBJECT)
        return;
    const sm_jv_t *cps = sm_jv_get(s, "callpaths");
    uint32_t n = 0, cap = 0;
    sm_hot_t *hot = NULL;
    double all = 0;
    for (uint32_t i = 0; i < sm_jv_len(cps); i++) {
        const sm_jv_t *fs = sm_jv_get(sm_jv_at(cps, i), "functions");
        for (uint32_t k = 0; k < sm_jv_len(fs); k++) {
            /* (per_thread is not read: sm_report_write_html skips it) */
            const sm_jv_t *f = sm_jv_at(fs, k), *ar = sm_jv_get(f, "across_ranks");
            const char *name = sm_jv_str(f, "function");
            double samples = sm_jv_num(ar, "mean", 0) * sm_jv_num(ar, "n", 0);
            all += samples;
            if (n == cap && SM_GROW(hot, cap, 64) != 0) {
                free(hot);
                sm_out_fail(o, ENOMEM);
                return;
            }
            hot[n] = (sm_hot_t){name, sm_jv_str(f, "file"), sm_jv_num(f, "line", 0), samples, n};
            n++;
        }
    }
    /* One entry per function name, summed (sorted, not searched: a large
     * profile has many thousands), with the file and line where it first
     * came. */
    qsort(hot, n, sizeof *hot, sm_hot_by_name);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m && hot[i].name && hot[m - 1].name && !strcmp(hot[i].name, hot[m - 1].name))
            hot[m - 1].samples += hot[i].samples;
        else
            hot[m++] = hot[i];
    }
    n = m;
    qsort(hot, n, sizeof *hot, sm_hot_by_samples);
    sm_out_printf(o, "<h2 id=sampling>Sampled hot functions</h2>\n<p>Call-stack sampling at "
                     "%.0f Hz (%s time): the functions the samples landed in (the 30 with the "
                     "most), %.0f samples in all.</p>\n<table class=sortable id=hot-table><thead><tr><th>Function</th>"
                     "<th>Where</th><th>Samples</th><th>Share</th></tr></thead><tbody>\n",
                  sm_jv_num(s, "frequency_hz", 0),
                  sm_jv_str(s, "clock") ? sm_jv_str(s, "clock") : "cpu", all);
    for (uint32_t h = 0; h < n && h < 30 && hot[h].samples > 0 && !o->err; h++) {
        sm_out_printf(o, "<tr><td class=path>");
        sm_html(o, hot[h].name);
        sm_out_printf(o, "</td><td>");
        if (hot[h].file) {
            sm_html(o, hot[h].file);
            sm_out_printf(o, ":%.0f", hot[h].line);
        }
        sm_out_printf(o, "</td>");
        sm_td_count(o, hot[h].samples);
        char b[32];
        snprintf(b, sizeof b, "%.1f%%", all > 0 ? 100 * hot[h].samples / all : 0.0);
        sm_td_num(o, hot[h].samples, b);
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
    free(hot);
    /* Call stacks were sampled when the tree holds callers found by it. */
    bool stacks = false;
    for (uint32_t i = 0; i < r->n_paths && !stacks; i++) {
        const char *pd = sm_jv_str(r->paths[i].v, "paradigm");
        stacks = pd && !strcmp(pd, "sampling");
    }
    if (stacks)
        sm_report_flame(r);
}

/* ---------------------------------------------------------------- metric timelines */

static void sm_report_metrics(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_jv_t *ms = sm_jv_get(r->tl, "metrics");
    if (!sm_jv_len(ms))
        return;
    double span = sm_jv_num(r->tl, "bin_ns", 0) * sm_jv_num(r->tl, "bins", 0);
    char b0[48];
    sm_fmt_time(b0, sizeof b0, span);
    sm_out_printf(o, "<h2 id=metrics>Metric timelines</h2>\n<p>The sampled metrics over the "
                     "job's %s: the line is the largest value of any rank in each column, the "
                     "dashed line the mean.</p>\n", b0);
    const int W = 440, H = 90, L = 70;
    for (uint32_t i = 0; i < sm_jv_len(ms) && i < 24 && !o->err; i++) {
        const sm_jv_t *m = sm_jv_at(ms, i), *mx = sm_jv_get(m, "max"), *mean = sm_jv_get(m, "mean");
        uint32_t nb = sm_jv_len(mx);
        double hi = 0, lo = 0;
        bool any = false;
        for (uint32_t b = 0; b < nb; b++) {
            const sm_jv_t *x = sm_jv_at(mx, b), *y = sm_jv_at(mean, b);
            if (x->type != SM_JV_NUMBER)
                continue;
            if (!any || x->num > hi)
                hi = x->num;
            if (!any || (y && y->type == SM_JV_NUMBER && y->num < lo))
                lo = y && y->type == SM_JV_NUMBER ? y->num : x->num;
            any = true;
        }
        if (!any || !nb)
            continue;
        if (!(lo > 0 && lo > hi / 2))
            lo = 0; /* the axis from 0, unless the series stays high (then from its lowest) */
        double range = hi > lo ? hi - lo : 1;
        const char *unit = sm_jv_str(m, "unit");
        bool bytes = unit && !strcmp(unit, "B");
        char bh[48], bl[48];
        if (bytes) {
            sm_fmt_bytes(bh, sizeof bh, hi);
            sm_fmt_bytes(bl, sizeof bl, lo);
        } else {
            snprintf(bh, sizeof bh, "%.3g %s", hi, unit && strcmp(unit, "1") ? unit : "");
            snprintf(bl, sizeof bl, "%.3g", lo);
        }
        sm_out_printf(o, "<figure class=metric style=\"display:inline-block;margin:0 16px 8px 0\">"
                         "<svg width=%d height=%d role=img aria-label=\"", L + W + 4, H + 8);
        sm_html(o, sm_jv_str(m, "name"));
        sm_out_printf(o, "\"><rect x=%d y=2 width=%d height=%d fill=\"#f7f7f7\"/>"
                         "<text x=%d y=12 text-anchor=end>", L, W, H, L - 4);
        sm_html(o, bh);
        sm_out_printf(o, "</text><text x=%d y=%d text-anchor=end>", L - 4, H + 2);
        sm_html(o, bl);
        sm_out_printf(o, "</text>");
        for (int k = 0; k < 2; k++) {
            const sm_jv_t *a = k ? mean : mx;
            sm_out_printf(o, "<polyline fill=none stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
                          k ? "#59a14f" : "#4e79a7", k ? " stroke-dasharray=\"3,2\"" : "");
            for (uint32_t b = 0; b < nb && b < sm_jv_len(a); b++) {
                const sm_jv_t *x = sm_jv_at(a, b);
                if (x->type == SM_JV_NUMBER)
                    sm_out_printf(o, "%.1f,%.1f ", L + W * (b + 0.5) / nb,
                                  2 + H - H * (x->num - lo) / range);
            }
            sm_out_printf(o, "\"/>");
        }
        sm_out_printf(o, "</svg><figcaption>");
        sm_html(o, sm_jv_str(m, "name"));
        sm_out_printf(o, " (largest %s)</figcaption></figure>\n", bh);
    }
}

/* ---------------------------------------------------------------- the page */

static void sm_report_page(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    sm_out_printf(o, "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n"
                     "<meta name=viewport content=\"width=device-width\">\n<title>sysmeasure: ");
    sm_html(o, sm_jv_str(r->meta, "program"));
    sm_out_printf(o, "</title>\n<style>%s</style></head>\n<body>\n<h1>sysmeasure report: ",
                  sm_report_css);
    sm_html(o, sm_jv_str(r->meta, "program"));
    sm_out_printf(o, "</h1>\n<nav><a href=\"#run\">The run</a>");
    if (r->prof)
        sm_out_printf(o, "<a href=\"#time\">Where the time went</a><a href=\"#paths\">Top call "
                         "paths</a><a href=\"#imbalance\">Load imbalance</a><a href=\"#mpi\">"
                         "MPI</a>");
    if (r->tl)
        sm_out_printf(o, "<a href=\"#timeline\">Timeline</a>");
    if (sm_jv_len(sm_jv_get(r->prof, "papi_events")))
        sm_out_printf(o, "<a href=\"#counters\">Counters</a>");
    if (sm_jv_get(r->prof, "gpu") && sm_jv_get(r->prof, "gpu")->type == SM_JV_OBJECT)
        sm_out_printf(o, "<a href=\"#gpu\">GPU</a>");
    if (sm_jv_get(r->prof, "sampling") && sm_jv_get(r->prof, "sampling")->type == SM_JV_OBJECT)
        sm_out_printf(o, "<a href=\"#sampling\">Sampled functions</a>");
    if (sm_jv_len(sm_jv_get(r->tl, "metrics")))
        sm_out_printf(o, "<a href=\"#metrics\">Metrics</a>");
    sm_out_printf(o, "</nav>\n");
    sm_report_run(r);
    if (r->prof) {
        sm_rpath_t **sorted = sm_sorted_paths(r);
        if (!sorted) {
            sm_out_fail(o, ENOMEM);
        } else {
            sm_report_time(r);
            sm_report_timeline(r);
            sm_report_paths(r, sorted);
            sm_report_imbalance(r, sorted);
            sm_report_counters(r, sorted);
            free(sorted);
        }
        sm_report_mpi_table(r);
        sm_report_matrix(r);
        sm_report_gpu(r);
        sm_report_sampling(r);
    } else {
        sm_report_timeline(r);
    }
    sm_report_metrics(r);
    sm_out_printf(o, "<p class=note style=\"margin-top:32px\">Written by sysmeasure from "
                     "metadata.json, profile.json and timeline.json in this folder; the full "
                     "figures are there and in profile.txt, the events in traces.otf2.</p>\n"
                     "<script>\n%s</script>\n</body></html>\n",
                  sm_report_js);
}

/* An array of n numbers from lo to hi (whole ones: whole), non-decreasing
 * with rising; 0, or -1 with err. */
static int sm_report_check_numbers(const sm_jv_t *a, const char *where, uint32_t n, double lo,
                                   double hi, bool whole, bool rising, char *err, size_t errlen)
{
    if (!a || a->type != SM_JV_ARRAY || a->n != n) {
        snprintf(err, errlen, "%s is not an array of %u numbers", where, (unsigned)n);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const sm_jv_t *x = a->items[i];
        if (x->type != SM_JV_NUMBER || !(x->num >= lo && x->num <= hi) ||
            (whole && x->num != floor(x->num)) ||
            (rising && i && x->num < a->items[i - 1]->num)) {
            snprintf(err, errlen, "%s[%u] is no %snumber from %.0f to %.0f%s", where, (unsigned)i,
                     whole ? "whole " : "", lo, hi, rising ? " (rising)" : "");
            return -1;
        }
    }
    return 0;
}

/* profile.json's "rank_bins" of the job: the number of ranges and their
 * columns. */
static int sm_report_check_bins(sm_report_t *r, char *err, size_t errlen)
{
    const sm_jv_t *jb = sm_jv_get(r->prof, "rank_bins");
    uint64_t nb;
    if (!jb)
        return 0;
    if (sm_jv_whole(jb, "rank_bins", "bins", 0, SM_REPORT_MAX_BINS, 0, &nb, err, errlen))
        return -1;
    if (nb > r->n_ranks) {
        snprintf(err, errlen, "rank_bins: %u ranges of %u ranks", (unsigned)nb,
                 (unsigned)r->n_ranks);
        return -1;
    }
    static const char *const cols[] = {"first_rank", "ranks", "threads", "main_threads"};
    for (int c = 0; c < 4; c++) {
        char where[48];
        snprintf(where, sizeof where, "rank_bins.%s", cols[c]);
        if (sm_report_check_numbers(sm_jv_get(jb, cols[c]), where, (uint32_t)nb, 0,
                                    c < 2 ? r->n_ranks - (c == 0) : 4294967295.0, true, c == 0,
                                    err, errlen))
            return -1;
    }
    r->n_bins = (uint32_t)nb;
    return 0;
}

/* A path's "rank_bins": within the job's ranges, numbers. */
static int sm_report_check_path_bins(const sm_report_t *r, const sm_jv_t *cp, uint32_t i,
                                     char *err, size_t errlen)
{
    const sm_jv_t *pb = sm_jv_get(cp, "rank_bins");
    if (!pb)
        return 0;
    char where[96];
    snprintf(where, sizeof where, "callpaths[%u].rank_bins", (unsigned)i);
    uint64_t first;
    if (sm_jv_whole(pb, where, "first_bin", 0, r->n_bins, 0, &first, err, errlen))
        return -1;
    uint32_t n = sm_jv_len(sm_jv_get(pb, "ranks"));
    if (n > r->n_bins - first) {
        snprintf(err, errlen, "%s: %u ranges from %u, of %u", where, (unsigned)n,
                 (unsigned)first, (unsigned)r->n_bins);
        return -1;
    }
    static const char *const cols[] = {"ranks", "inclusive_sum", "inclusive_min", "inclusive_max",
                                       "exclusive_sum"};
    for (int c = 0; c < 5; c++) {
        char col[128];
        snprintf(col, sizeof col, "%s.%s", where, cols[c]);
        if (sm_report_check_numbers(sm_jv_get(pb, cols[c]), col, n, 0,
                                    c ? 1.8446744073709552e19 : r->n_ranks, c == 0, false, err,
                                    errlen))
            return -1;
    }
    return 0;
}

/* The numbers of the files that size or index the page's tables (ranks,
 * threads, depths, matrix cells, timeline bins), checked before anything
 * is drawn: a file written by sysmeasure always passes; a damaged or
 * crafted one is refused with what is wrong.  0, or -1 with err (and which
 * file in *file). */
static int sm_report_check(sm_report_t *r, const char **file, char *err, size_t errlen)
{
    uint64_t meta_ranks, prof_ranks, x;
    double d;
    char where[96];
    *file = "metadata.json";
    if (sm_jv_whole(r->meta, "", "ranks", 1, SM_REPORT_MAX_RANKS, 1, &meta_ranks, err, errlen) ||
        sm_jv_finite(r->meta, "", "duration_ns", 0, &d, err, errlen))
        return -1;
    r->n_ranks = (uint32_t)meta_ranks;
    r->duration_ns = d;
    /* The counts the notes give. */
    const sm_jv_t *buf = sm_jv_get(r->meta, "buffers");
    if (sm_jv_whole(buf, "buffers", "dropped_records", 0, SM_REPORT_MAX_COUNT, 0, &x, err,
                    errlen) ||
        sm_jv_whole(buf, "buffers", "spills", 0, SM_REPORT_MAX_COUNT, 0, &x, err, errlen) ||
        sm_jv_whole(r->meta, "", "unmatched_leaves", 0, SM_REPORT_MAX_COUNT, 0, &x, err, errlen))
        return -1;
    if (!r->prof)
        return 0;
    *file = "profile.json";
    if (sm_jv_whole(r->prof, "", "ranks", 1, SM_REPORT_MAX_RANKS, 1, &prof_ranks, err, errlen))
        return -1;
    if (prof_ranks > r->n_ranks)
        r->n_ranks = (uint32_t)prof_ranks;
    const sm_jv_t *th = sm_jv_get(r->prof, "threads");
    for (uint32_t i = 0; i < sm_jv_len(th); i++) {
        snprintf(where, sizeof where, "threads[%u]", (unsigned)i);
        if (sm_jv_whole(sm_jv_at(th, i), where, "rank", 0, r->n_ranks - 1, 0, &x, err, errlen))
            return -1;
    }
    if (sm_report_check_bins(r, err, errlen) != 0)
        return -1;
    const sm_jv_t *cps = sm_jv_get(r->prof, "callpaths");
    if (cps->type != SM_JV_ARRAY) {
        snprintf(err, errlen, "\"callpaths\" is not an array");
        return -1;
    }
    for (uint32_t i = 0; i < cps->n; i++) {
        const sm_jv_t *cp = cps->items[i], *pr = sm_jv_get(cp, "per_rank");
        snprintf(where, sizeof where, "callpaths[%u]", (unsigned)i);
        if (sm_jv_whole(cp, where, "depth", 0, SM_REPORT_MAX_DEPTH, 0, &x, err, errlen))
            return -1;
        if (sm_report_check_path_bins(r, cp, i, err, errlen) != 0)
            return -1;
        for (uint32_t k = 0; k < sm_jv_len(pr); k++) {
            const sm_jv_t *e = sm_jv_at(pr, k);
            snprintf(where, sizeof where, "callpaths[%u].per_rank[%u]", (unsigned)i, (unsigned)k);
            if (sm_jv_whole(e, where, "rank", 0, r->n_ranks - 1, 0, &x, err, errlen) ||
                sm_jv_finite(e, where, "inclusive", 0, &d, err, errlen) ||
                sm_jv_finite(e, where, "exclusive", 0, &d, err, errlen) ||
                sm_jv_finite(e, where, "visits", 0, &d, err, errlen))
                return -1;
        }
    }
    const sm_jv_t *cm = sm_jv_get(r->prof, "comm_matrix");
    if (cm && cm->type == SM_JV_OBJECT) {
        uint64_t n;
        if (sm_jv_whole(cm, "comm_matrix", "ranks", 0, r->n_ranks, 0, &n, err, errlen))
            return -1;
        const sm_jv_t *pairs = sm_jv_get(cm, "pairs");
        const char *key = "pairs";
        if (!pairs) {
            pairs = sm_jv_get(cm, "cells");
            key = "cells";
        }
        for (uint32_t i = 0; i < sm_jv_len(pairs); i++) {
            snprintf(where, sizeof where, "comm_matrix.%s[%u]", key, (unsigned)i);
            if (!n) {
                snprintf(err, errlen, "%s: a pair of a matrix of 0 ranks", where);
                return -1;
            }
            if (sm_jv_whole(sm_jv_at(pairs, i), where, "sender", 0, n - 1, 0, &x, err, errlen) ||
                sm_jv_whole(sm_jv_at(pairs, i), where, "receiver", 0, n - 1, 0, &x, err, errlen))
                return -1;
        }
    }
    return 0;
}

/* timeline.json's numbers (bins, the lanes' shares): 0, or -1 with err. */
static int sm_report_check_timeline(const sm_jv_t *tl, char *err, size_t errlen)
{
    uint64_t bins;
    double d;
    char where[64];
    if (tl->type != SM_JV_OBJECT) {
        snprintf(err, errlen, "it is not an object");
        return -1;
    }
    if (sm_jv_whole(tl, "", "bins", 0, SM_REPORT_TL_MAX_BINS, 0, &bins, err, errlen) ||
        sm_jv_finite(tl, "", "bin_ns", 0, &d, err, errlen))
        return -1;
    const sm_jv_t *lanes = sm_jv_get(tl, "lanes");
    /* (each cell can be a rectangle on the page: the page stays bounded) */
    if ((uint64_t)sm_jv_len(lanes) * bins > SM_REPORT_TL_MAX_CELLS) {
        snprintf(err, errlen, "%u lanes of %llu columns are more than a page draws (%u cells)",
                 (unsigned)sm_jv_len(lanes), (unsigned long long)bins, SM_REPORT_TL_MAX_CELLS);
        return -1;
    }
    for (uint32_t i = 0; i < sm_jv_len(lanes); i++) {
        const sm_jv_t *pm = sm_jv_get(sm_jv_at(lanes, i), "per_mille");
        if (pm && pm->type != SM_JV_OBJECT) {
            snprintf(err, errlen, "lanes[%u].per_mille is not an object", (unsigned)i);
            return -1;
        }
        for (uint32_t k = 0; pm && k < pm->n; k++)
            for (uint32_t b = 0; b < sm_jv_len(pm->items[k]); b++) {
                const sm_jv_t *v = sm_jv_at(pm->items[k], b);
                if (v->type != SM_JV_NUMBER || !(v->num >= 0 && v->num <= 1000)) {
                    snprintf(where, sizeof where, "lanes[%u].per_mille", (unsigned)i);
                    snprintf(err, errlen, "%s has a share that is no number from 0 to 1000",
                             where);
                    return -1;
                }
            }
    }
    return 0;
}

/* Per path: sums over ranks; threads per rank (after sm_report_check). */
static int sm_report_prepare(sm_report_t *r)
{
    r->threads = calloc(r->n_ranks, sizeof *r->threads);
    r->main_threads = calloc(r->n_ranks, sizeof *r->main_threads);
    if (!r->threads || !r->main_threads)
        return -1;
    const sm_jv_t *th = sm_jv_get(r->prof, "threads");
    for (uint32_t i = 0; i < sm_jv_len(th); i++) {
        uint32_t rank = (uint32_t)sm_jv_num(sm_jv_at(th, i), "rank", 0);
        const sm_jv_t *by = sm_jv_get(sm_jv_at(th, i), "created_by");
        r->threads[rank]++;
        r->main_threads[rank] += !by || by->type == SM_JV_NULL;
    }
    if (!th) /* no profile: rank 0's threads from metadata.json */
        r->threads[0] = sm_jv_len(sm_jv_get(r->meta, "locations"));
    const sm_jv_t *cps = sm_jv_get(r->prof, "callpaths");
    r->n_paths = sm_jv_len(cps);
    r->paths = calloc(r->n_paths ? r->n_paths : 1, sizeof *r->paths);
    if (!r->paths)
        return -1;
    for (uint32_t i = 0; i < r->n_paths; i++) {
        sm_rpath_t *p = &r->paths[i];
        p->v = sm_jv_at(cps, i);
        p->depth = (uint32_t)sm_jv_num(p->v, "depth", 0);
        const sm_jv_t *pr = sm_jv_get(p->v, "per_rank");
        if (!pr) {
            /* A large job: no per-rank rows, the sums from the spreads. */
            const sm_jv_t *ar = sm_jv_get(p->v, "across_ranks");
            double n = sm_jv_num(ar, "ranks", 0);
            p->ranks = n > 0 && n <= r->n_ranks ? (uint32_t)n : 0;
            p->incl = sm_jv_num(sm_jv_get(ar, "inclusive"), "mean", 0) * p->ranks;
            p->excl = sm_jv_num(sm_jv_get(ar, "exclusive"), "mean", 0) * p->ranks;
            p->visits = sm_jv_num(sm_jv_get(ar, "visits"), "mean", 0) * p->ranks;
            continue;
        }
        p->ranks = sm_jv_len(pr);
        for (uint32_t k = 0; k < p->ranks; k++) {
            const sm_jv_t *e = sm_jv_at(pr, k);
            p->incl += sm_jv_num(e, "inclusive", 0);
            p->excl += sm_jv_num(e, "exclusive", 0);
            p->visits += sm_jv_num(e, "visits", 0);
        }
    }
    /* The job's rank ranges (checked). */
    const sm_jv_t *jb = sm_jv_get(r->prof, "rank_bins");
    if (r->n_bins) {
        r->bin_first = calloc(r->n_bins + 1, sizeof *r->bin_first);
        r->bin_ranks = calloc(r->n_bins, sizeof *r->bin_ranks);
        r->bin_threads = calloc(r->n_bins, sizeof *r->bin_threads);
        r->bin_main = calloc(r->n_bins, sizeof *r->bin_main);
        if (!r->bin_first || !r->bin_ranks || !r->bin_threads || !r->bin_main)
            return -1;
        for (uint32_t b = 0; b < r->n_bins; b++) {
            r->bin_first[b] = (uint32_t)sm_jv_at(sm_jv_get(jb, "first_rank"), b)->num;
            r->bin_ranks[b] = (uint32_t)sm_jv_at(sm_jv_get(jb, "ranks"), b)->num;
            r->bin_threads[b] = (uint32_t)sm_jv_at(sm_jv_get(jb, "threads"), b)->num;
            r->bin_main[b] = (uint32_t)sm_jv_at(sm_jv_get(jb, "main_threads"), b)->num;
        }
        r->bin_first[r->n_bins] = r->n_ranks;
    }
    return 0;
}

/* One of the folder's JSON files, as how allows: the document, or NULL
 * with err words to follow its path and *refused clear when the file is
 * as good as absent (not there; for a file of this run, not this run's:
 * its writer said why it did not write it), set when it must be said. */
static sm_jv_t *sm_report_read(const char *dir, const char *name, sm_fs_input_t how,
                               const char *const *skip, int *refused, char *err, size_t errlen)
{
    char path[4200], why[400];
    int unread;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sm_jv_t *v = sm_jv_parse_file(path, how, skip, why, sizeof why, &unread);
    int e = errno;
    int absent = unread && (e == ENOENT || (how == SM_FS_INPUT_OWN && sm_fs_input_refused(e)));
    *refused = !v && !absent;
    if (!v)
        snprintf(err, errlen, unread ? "%s" : "is damaged (%s)", why);
    return v;
}

int sm_report_write_html(const char *dir, sm_fs_input_t how, char *err, size_t errlen)
{
    char why[512];
    int refused;
    sm_jv_t *meta = sm_report_read(dir, "metadata.json", how, NULL, &refused, why, sizeof why);
    if (!meta || !sm_jv_str(meta, "sysmeasure_version")) {
        if (!meta && (refused || how == SM_FS_INPUT_OWN))
            snprintf(err, errlen, "%s/metadata.json %s", dir, why);
        else
            snprintf(err, errlen, "%s is not a sysmeasure output folder (metadata.json %s)", dir,
                     meta ? "was not written by sysmeasure" : why);
        sm_jv_free(meta);
        return SM_REPORT_NOT_OUTPUT;
    }
    /* The per-thread records are the bulk of a large job's profile.json
     * and the page does not use them. */
    static const char *const skip[] = {"per_thread", NULL};
    sm_jv_t *prof = sm_report_read(dir, "profile.json", how, skip, &refused, why, sizeof why);
    if (refused || (prof && !sm_jv_get(prof, "callpaths"))) {
        snprintf(err, errlen, "%s/profile.json %s", dir,
                 refused ? why : "is damaged (no call paths)");
        sm_jv_free(meta);
        sm_jv_free(prof);
        return SM_REPORT_NOT_OUTPUT;
    }
    /* timeline.json: written with the trace; a damaged one costs only the
     * timeline (said on the page and in one line), not the report. */
    sm_jv_t *tl = sm_report_read(dir, "timeline.json", how, NULL, &refused, why, sizeof why);
    char bad[400];
    if (tl && sm_report_check_timeline(tl, bad, sizeof bad) != 0) {
        snprintf(why, sizeof why, "is damaged: %s", bad);
        sm_jv_free(tl);
        tl = NULL;
        refused = 1;
    }
    if (refused)
        sm_warning("%s/timeline.json %s: report.html has no timeline", dir, why);
    /* One left by an earlier run in a reused --output folder (this one
     * traced nothing, or failed before it) is older than this run's start. */
    struct stat st;
    char path[4200];
    snprintf(path, sizeof path, "%s/timeline.json", dir);
    double started = sm_jv_num(meta, "start_time_ns", 0) / 1e9;
    if (tl && how != SM_FS_INPUT_OWN && stat(path, &st) == 0 && started > 0 &&
        (double)st.st_mtime + 1 < started) {
        sm_jv_free(tl);
        tl = NULL;
    }
    sm_report_t r = {.meta = meta, .prof = prof, .tl = tl};
    const char *file;
    int rc = -1;
    if (sm_report_check(&r, &file, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s/%s is damaged: %s", dir, file, why);
        rc = SM_REPORT_NOT_OUTPUT;
    } else if (sm_report_prepare(&r) != 0) {
        sm_error("writing %s/report.html failed: %s", dir, strerror(ENOMEM));
    } else if (sm_out_open(&r.o, dir, "report.html") == 0) { /* (failures printed there) */
        sm_report_page(&r);
        rc = sm_out_close(&r.o);
    }
    free(r.paths);
    free(r.threads);
    free(r.main_threads);
    free(r.bin_first);
    free(r.bin_ranks);
    free(r.bin_threads);
    free(r.bin_main);
    sm_jv_free(meta);
    sm_jv_free(prof);
    sm_jv_free(tl);
    return rc;
}

static bool sm_report_wanted(const sm_finalize_t *f)
{
    return f->report;
}

static int sm_report_output(sm_finalize_t *f)
{
    char err[PATH_MAX + 512];
    int rc = sm_report_write_html(f->run->output_dir, SM_FS_INPUT_OWN, err, sizeof err);
    if (rc == SM_REPORT_NOT_OUTPUT)
        sm_error("writing %s/report.html failed: %s", f->run->output_dir, err);
    return rc == 0 ? 0 : -1;
}

const sm_output_t sm_output_report = {
    .file = "report.html",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_report_wanted,
    .follows = "metadata.json", /* it reads metadata.json and profile.json back */
    .write = sm_report_output,
};
