/* The report's drawings over ranks and time: the MPI table and heat
 * maps, the timeline and the metric timelines. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---------------------------------------------------------------- MPI */

void sm_report_mpi_table(sm_report_t *r)
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

void sm_report_matrix(sm_report_t *r)
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

void sm_report_timeline(sm_report_t *r)
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


/* ---------------------------------------------------------------- metric timelines */

void sm_report_metrics(sm_report_t *r)
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
    const int W = 440, H = 90;
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
        /* The axis labels' room: about 7 px a character at the page's
         * font, so that a long unit is not cut at the left edge. */
        size_t longest = strlen(bh) > strlen(bl) ? strlen(bh) : strlen(bl);
        int L = 10 + 7 * (int)(longest < 40 ? longest : 40);
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
                          k ? SM_REPORT_NEUTRAL_LIGHT : SM_REPORT_NEUTRAL_DARK,
                          k ? " stroke-dasharray=\"3,2\"" : "");
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
