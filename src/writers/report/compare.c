/* Two runs compared (sysmeasure-report --compare A B): per call path and
 * per MPI function, the exclusive time of all ranks together in A and in
 * B, sorted by the size of the change, as text and as a section of B's
 * report.html. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define SM_CMP_TEXT_ROWS 30
#define SM_CMP_HTML_ROWS 100

/* A path's inclusive and exclusive time over its ranks. */
static void sm_cmp_sums(const sm_jv_t *v, double *incl, double *excl)
{
    const sm_jv_t *pr = sm_jv_get(v, "per_rank");
    *incl = *excl = 0;
    if (!pr) { /* a large job: from the spread across ranks */
        const sm_jv_t *ar = sm_jv_get(v, "across_ranks");
        double n = sm_jv_num(ar, "ranks", 0);
        *incl = sm_jv_num(sm_jv_get(ar, "inclusive"), "mean", 0) * n;
        *excl = sm_jv_num(sm_jv_get(ar, "exclusive"), "mean", 0) * n;
        return;
    }
    for (uint32_t k = 0; k < sm_jv_len(pr); k++) {
        *incl += sm_jv_num(sm_jv_at(pr, k), "inclusive", 0);
        *excl += sm_jv_num(sm_jv_at(pr, k), "exclusive", 0);
    }
}

/* The key of a path: its names joined by " / "; of an MPI function:
 * "MPI function NAME" (all its call paths together). */
static char *sm_cmp_key(const sm_jv_t *v, bool mpi)
{
    const sm_jv_t *path = sm_jv_get(v, "path");
    size_t len = 32;
    for (uint32_t d = 0; d < sm_jv_len(path); d++)
        len += strlen(sm_jv_at(path, d)->str ? sm_jv_at(path, d)->str : "?") + 3;
    char *k = malloc(len);
    if (!k)
        return NULL;
    size_t at = 0;
    if (mpi) {
        const char *name = sm_jv_len(path) ? sm_jv_at(path, sm_jv_len(path) - 1)->str : "?";
        snprintf(k, len, "MPI function %s", name ? name : "?");
        return k;
    }
    k[0] = '\0';
    for (uint32_t d = 0; d < sm_jv_len(path); d++) {
        const char *s = sm_jv_at(path, d)->str;
        at += (size_t)snprintf(k + at, len - at, "%s%s", d ? " / " : "", s ? s : "?");
    }
    return k;
}

static int sm_cmp_by_key(const void *a, const void *b)
{
    return strcmp(((const sm_cmp_row_t *)a)->key, ((const sm_cmp_row_t *)b)->key);
}

static int sm_cmp_by_change(const void *a, const void *b)
{
    const sm_cmp_row_t *x = a, *y = b;
    double dx = fabs(x->b - x->a), dy = fabs(y->b - y->a);
    return dx < dy ? 1 : dx > dy ? -1 : strcmp(x->key, y->key);
}

/* One profile's rows (which: 0 for A, 1 for B) appended to c. */
static int sm_cmp_add(sm_cmp_t *c, const sm_jv_t *prof, int which)
{
    const sm_jv_t *cps = sm_jv_get(prof, "callpaths");
    for (uint32_t i = 0; i < sm_jv_len(cps); i++) {
        const sm_jv_t *v = sm_jv_at(cps, i);
        const char *pd = sm_jv_str(v, "paradigm");
        if (pd && !strcmp(pd, "sampling"))
            continue; /* (callers found by sampling: inside their region's time) */
        double incl, excl;
        sm_cmp_sums(v, &incl, &excl);
        for (int mpi = 0; mpi < 1 + (pd && !strcmp(pd, "mpi")); mpi++) {
            if (c->n == c->cap && SM_GROW(c->rows, c->cap, 64) != 0)
                return -1;
            sm_cmp_row_t *r = &c->rows[c->n];
            memset(r, 0, sizeof *r);
            if (!(r->key = sm_cmp_key(v, mpi)))
                return -1;
            r->mpi = mpi;
            r->kind = sm_jv_str(v, "kind");
            *(which ? &r->b : &r->a) = excl;
            *(which ? &r->in_b : &r->in_a) = true;
            c->n++;
        }
    }
    return 0;
}

int sm_cmp_build(sm_cmp_t *c, const sm_jv_t *a, const sm_jv_t *b)
{
    memset(c, 0, sizeof *c);
    if (sm_cmp_add(c, a, 0) != 0 || sm_cmp_add(c, b, 1) != 0)
        return -1;
    /* Rows of one key merged (an MPI function's paths summed). */
    qsort(c->rows, c->n, sizeof *c->rows, sm_cmp_by_key);
    uint32_t m = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        sm_cmp_row_t *r = &c->rows[i];
        if (m && !strcmp(c->rows[m - 1].key, r->key)) {
            sm_cmp_row_t *q = &c->rows[m - 1];
            q->a += r->a;
            q->b += r->b;
            q->in_a |= r->in_a;
            q->in_b |= r->in_b;
            if (!q->kind)
                q->kind = r->kind;
            free(r->key);
            continue;
        }
        c->rows[m++] = *r;
    }
    c->n = m;
    qsort(c->rows, c->n, sizeof *c->rows, sm_cmp_by_change);
    return 0;
}

void sm_cmp_free(sm_cmp_t *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        free(c->rows[i].key);
    free(c->rows);
    memset(c, 0, sizeof *c);
}

/* "2.00x", "new", "gone". */
static void sm_cmp_ratio(char *buf, size_t len, const sm_cmp_row_t *r)
{
    if (!r->in_a)
        snprintf(buf, len, "new");
    else if (!r->in_b)
        snprintf(buf, len, "gone");
    else if (r->a > 0)
        snprintf(buf, len, "%.2fx", r->b / r->a);
    else
        snprintf(buf, len, "-");
}

void sm_cmp_text(FILE *f, const sm_cmp_t *c, const char *a, const char *b)
{
    fprintf(f, "sysmeasure-report --compare: exclusive time of all ranks together, A = %s, "
               "B = %s;\nthe call paths and MPI functions that changed the most first (B - A)\n\n",
            a, b);
    fprintf(f, "%12s %8s %12s %12s  %s\n", "CHANGE", "B / A", "A", "B", "CALL PATH / MPI FUNCTION");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < c->n && shown < SM_CMP_TEXT_ROWS; i++) {
        const sm_cmp_row_t *r = &c->rows[i];
        if (r->a == r->b)
            continue;
        char d[48], ta[48], tb[48], ratio[32], name[4 * SM_ABBREV_WIDTH + 8];
        double delta = r->b - r->a;
        sm_fmt_time(d, sizeof d, fabs(delta));
        sm_fmt_time(ta, sizeof ta, r->a);
        sm_fmt_time(tb, sizeof tb, r->b);
        sm_cmp_ratio(ratio, sizeof ratio, r);
        char signed_d[56];
        snprintf(signed_d, sizeof signed_d, "%s%s", delta >= 0 ? "+" : "-", d);
        /* (each name of the path abbreviated as in the tables) */
        sm_abbrev(r->key, name, sizeof name, 2 * SM_ABBREV_WIDTH);
        fprintf(f, "%12s %8s %12s %12s  %s\n", signed_d, ratio, ta, tb, name);
        shown++;
    }
    if (!shown)
        fprintf(f, "(no call path or MPI function changed)\n");
}

void sm_report_compare(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    const sm_cmp_t *c = r->cmp;
    if (!c)
        return;
    sm_out_printf(o, "<h2 id=compare>Compared with another run</h2>\n<p>This run (B) against "
                     "<code>");
    sm_html(o, r->cmp_dir);
    sm_out_printf(o, "</code> (A): the exclusive time of each call path and MPI function, all "
                     "ranks together, those that changed the most first (sysmeasure-report "
                     "--compare).</p>\n<table class=sortable "
                     "id=compare-table><thead><tr><th>Call path / MPI function</th><th>Kind"
                     "</th><th>Change (B &minus; A)</th><th>B / A</th><th>A</th><th>B</th></tr>"
                     "</thead><tbody>\n");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < c->n && shown < SM_CMP_HTML_ROWS && !o->err; i++) {
        const sm_cmp_row_t *row = &c->rows[i];
        if (row->a == row->b)
            continue;
        shown++;
        char d[48], text[64], ratio[32];
        double delta = row->b - row->a;
        sm_fmt_time(d, sizeof d, fabs(delta));
        snprintf(text, sizeof text, "%s%s %s", delta >= 0 ? "+" : "-", d,
                 delta >= 0 ? "slower" : "faster");
        sm_cmp_ratio(ratio, sizeof ratio, row);
        sm_out_printf(o, "<tr><td class=path>");
        sm_html_name(o, row->key);
        sm_out_printf(o, "</td><td>");
        sm_html(o, row->mpi ? "MPI function" : row->kind);
        sm_out_printf(o, "</td>");
        sm_td_num(o, delta, text);
        sm_td_num(o, row->a > 0 ? row->b / row->a : 0, ratio);
        sm_td_time(o, row->a);
        sm_td_time(o, row->b);
        sm_out_printf(o, "</tr>\n");
    }
    sm_out_printf(o, "</tbody></table>\n");
    if (!shown)
        sm_out_printf(o, "<p class=note>No call path or MPI function changed.</p>\n");
}
