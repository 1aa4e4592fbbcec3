/* report.html's causal profile (--causal): from causal/experiments.json,
 * one small plot per function chosen, the predicted program speedup
 * against the code speedup (each point the experiments at that speedup,
 * with its error bar), a dashed diagonal for "the program as fast as the
 * function", so that a flat line (not the bottleneck) and a rising one
 * stand apart at a glance. */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SM_REPORT_MAX_CAUSAL 12 /* functions plotted (the table has them all) */

void sm_report_causal(sm_report_t *r)
{
    const sm_jv_t *c = r->causal, *fns = sm_jv_get(c, "functions");
    uint32_t n = sm_jv_len(fns);
    if (!n)
        return;
    sm_out_t *o = &r->o;
    sm_out_printf(o, "<h2 id=causal>Causal profile</h2>\n<p>What the program would gain if one "
                     "function were made faster (virtual speedups, after Coz): %u experiments, "
                     "progress point <code>",
                  (unsigned)sm_jv_len(sm_jv_get(c, "experiments")));
    sm_html(o, sm_jv_str(c, "estimates_for"));
    sm_out_printf(o, "</code>. A flat line: that function is not what holds the program back; "
                     "the dashed line is a program as much faster as the function. "
                     "causal/experiments.coz opens in Coz's viewer.</p>\n<div>");
    const int W = 240, H = 170, L = 40, B = 24, T = 18;
    for (uint32_t i = 0; i < n && i < SM_REPORT_MAX_CAUSAL; i++) {
        const sm_jv_t *f = sm_jv_at(fns, i), *es = sm_jv_get(f, "estimates");
        /* The y range: -25 % to the largest estimate, at least 50 %. */
        double top = 0.5, bottom = -0.25;
        for (uint32_t k = 0; k < sm_jv_len(es); k++) {
            double y = sm_jv_num(sm_jv_at(es, k), "program_speedup", 0);
            if (isfinite(y) && y > top)
                top = y > 1 ? 1 : y;
        }
        double pw = W - L - 8, ph = H - B - T;
#define SM_X(s) (L + pw * (s))
#define SM_Y(v) (T + ph * (top - ((v) < bottom ? bottom : (v) > top ? top : (v))) / (top - bottom))
        /* A line (line mode) by its file:line, a function by its name. */
        const char *name = sm_jv_get(f, "line") ? sm_jv_str(f, "selected")
                                                : sm_jv_str(f, "function");
        sm_out_printf(o, "<svg class=causal width=%d height=%d role=img aria-label=\"causal "
                         "profile of ", W, H);
        sm_html(o, name);
        sm_out_printf(o, "\"><text x=%d y=12 font-weight=bold>", L);
        char cut[48];
        size_t nl = name ? strlen(name) : 0;
        if (nl > 28) /* the end of a path says most */
            snprintf(cut, sizeof cut, "...%s", name + nl - 25);
        else
            snprintf(cut, sizeof cut, "%s", name ? name : "?");
        sm_html(o, cut);
        sm_out_printf(o, "</text><rect x=%d y=%d width=%.0f height=%.0f fill=none stroke=#999/>",
                      L, T, pw, ph);
        sm_out_printf(o, "<line x1=%.1f y1=%.1f x2=%.1f y2=%.1f stroke=#bbb/>", SM_X(0),
                      SM_Y(0), SM_X(1), SM_Y(0));
        sm_out_printf(o, "<line x1=%.1f y1=%.1f x2=%.1f y2=%.1f stroke=#bbb "
                         "stroke-dasharray=4/>",
                      SM_X(0), SM_Y(0), SM_X(top < 1 ? top : 1), SM_Y(top < 1 ? top : 1));
        sm_out_printf(o, "<text x=%d y=%.1f text-anchor=end>%+.0f%%</text><text x=%d y=%.1f "
                         "text-anchor=end>0%%</text><text x=%d y=%.1f text-anchor=end>%+.0f%%"
                         "</text>",
                      L - 3, SM_Y(top) + 4, 100 * top, L - 3, SM_Y(0) + 4, L - 3,
                      SM_Y(bottom) + 4, 100 * bottom);
        sm_out_printf(o, "<text x=%.1f y=%d text-anchor=middle>code speedup</text><text x=%d "
                         "y=%d>0</text><text x=%.1f y=%d text-anchor=end>100%%</text>",
                      SM_X(0.5), H - 4, L, H - 12, SM_X(1), H - 12);
        /* The estimates: a line through them, points with error bars. */
        sm_out_printf(o, "<polyline fill=none stroke=#1f77b4 points=\"");
        for (uint32_t k = 0; k < sm_jv_len(es); k++) {
            const sm_jv_t *e = sm_jv_at(es, k);
            double s = sm_jv_num(e, "speedup", 0), y = sm_jv_num(e, "program_speedup", 0);
            if (isfinite(s) && isfinite(y) && s >= 0 && s <= 1)
                sm_out_printf(o, "%.1f,%.1f ", SM_X(s), SM_Y(y));
        }
        sm_out_printf(o, "\"/>");
        for (uint32_t k = 0; k < sm_jv_len(es); k++) {
            const sm_jv_t *e = sm_jv_at(es, k);
            double s = sm_jv_num(e, "speedup", 0), y = sm_jv_num(e, "program_speedup", 0);
            double err = sm_jv_num(e, "error", 0);
            if (!isfinite(s) || !isfinite(y) || s < 0 || s > 1)
                continue;
            if (isfinite(err) && err > 0)
                sm_out_printf(o, "<line x1=%.1f y1=%.1f x2=%.1f y2=%.1f stroke=#1f77b4 "
                                 "stroke-opacity=.5/>",
                              SM_X(s), SM_Y(y - err), SM_X(s), SM_Y(y + err));
            sm_out_printf(o, "<circle cx=%.1f cy=%.1f r=2.5 fill=#1f77b4><title>code %.0f%%: "
                             "program %+.1f%% &#177; %.1f (%.0f experiments)</title></circle>",
                          SM_X(s), SM_Y(y), 100 * s, 100 * y, 100 * (isfinite(err) ? err : 0),
                          sm_jv_num(e, "experiments", 0));
        }
#undef SM_X
#undef SM_Y
        sm_out_printf(o, "</svg>\n");
    }
    sm_out_printf(o, "</div>\n");
    if (n > SM_REPORT_MAX_CAUSAL)
        sm_out_printf(o, "<p class=note>%u more functions in causal/experiments.json and "
                         "profile.txt.</p>\n", n - SM_REPORT_MAX_CAUSAL);
}
