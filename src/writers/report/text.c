/* The report's text: HTML escaping, times and sizes, table cells that
 * sort by number, the legend of the kinds of work. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

void sm_bin_name(const sm_report_t *r, uint32_t b, char *buf, size_t len)
{
    uint32_t lo = r->bin_first[b], hi = r->bin_first[b + 1];
    if (hi <= lo + 1)
        snprintf(buf, len, "rank %u", (unsigned)lo);
    else
        snprintf(buf, len, "ranks %u-%u", (unsigned)lo, (unsigned)(hi - 1));
}


/* ---------------------------------------------------------------- text */

void sm_html_name(sm_out_t *o, const char *name)
{
    char shortname[4 * SM_ABBREV_WIDTH + 8];
    if (!name || !sm_abbrev(name, shortname, sizeof shortname, SM_ABBREV_WIDTH)) {
        sm_html(o, name);
        return;
    }
    sm_out_printf(o, "<span class=abbr title=\"");
    sm_html(o, name);
    sm_out_printf(o, "\">");
    sm_html(o, shortname);
    sm_out_printf(o, "</span>");
}

/* s for HTML text and attribute values; control characters become '?'. */
void sm_html(sm_out_t *o, const char *s)
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

void sm_fmt_time(char *buf, size_t len, double ns)
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

void sm_fmt_bytes(char *buf, size_t len, double b)
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
void sm_td_num(sm_out_t *o, double v, const char *text)
{
    sm_out_printf(o, "<td class=n data-v=\"%.17g\">", isfinite(v) ? v : 0.0);
    sm_html(o, text);
    sm_out_printf(o, "</td>");
}

void sm_td_time(sm_out_t *o, double ns)
{
    char b[48];
    sm_fmt_time(b, sizeof b, ns);
    sm_td_num(o, ns, b);
}

void sm_td_count(sm_out_t *o, double v)
{
    char b[48];
    snprintf(b, sizeof b, "%.0f", v);
    sm_td_num(o, v, b);
}



void sm_legend(sm_out_t *o, const bool *used)
{
    sm_out_printf(o, "<p class=key>");
    for (int c = 0; c < SM_TL_COUNT; c++)
        if (!used || used[c])
            sm_out_printf(o, "<span style=\"background:%s\"></span>%s", sm_tl_color[c],
                          sm_tl_name[c]);
    sm_out_printf(o, "</p>\n");
}
