/* The report's sections of what was measured besides time: GPU,
 * counters, sampled functions (and their flame graph). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---------------------------------------------------------------- GPU */

void sm_report_gpu(sm_report_t *r)
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
        sm_html_name(o, sm_jv_str(k, "name"));
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
void sm_report_counters(sm_report_t *r, sm_rpath_t **sorted)
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
                      H - 1, sampled ? SM_REPORT_NEUTRAL_LIGHT : sm_tl_color[sm_tl_kind_of_paradigm(pd)]);
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

void sm_report_sampling(sm_report_t *r)
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
        sm_html_name(o, hot[h].name);
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
