/* Per-kernel GPU counter statistics: see gpu_counter_table.h. */
#include "gpu_counter_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hash.h"

sm_gct_t *sm_gct_new(uint32_t n_ranks)
{
    sm_gct_t *t = calloc(1, sizeof *t);
    if (t)
        t->n_ranks = n_ranks ? n_ranks : 1;
    return t;
}

sm_gct_t *sm_gct_new_reduced(uint32_t n_ranks)
{
    sm_gct_t *t = sm_gct_new(n_ranks);
    if (t)
        t->reduced = 1;
    return t;
}

void sm_gct_free(sm_gct_t *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n_rows; i++) {
        free(t->rows[i].kernel);
        free(t->rows[i].path);
        free(t->rows[i].rank);
    }
    for (uint32_t k = 0; k < t->n_metrics; k++)
        free(t->metrics[k]);
    free(t->metrics);
    free(t->rows);
    free(t->table);
    free(t);
}

static uint32_t sm_gct_metric(sm_gct_t *t, const char *name)
{
    for (uint32_t k = 0; k < t->n_metrics; k++)
        if (!strcmp(t->metrics[k], name))
            return k;
    char **grown = realloc(t->metrics, (t->n_metrics + 1) * sizeof *grown);
    char *copy = strdup(name);
    if (grown)
        t->metrics = grown;
    if (!grown || !copy) {
        free(copy);
        return UINT32_MAX;
    }
    t->metrics[t->n_metrics] = copy;
    return t->n_metrics++;
}

static uint64_t sm_gct_hash(const char *kernel, const char *path, uint32_t metric)
{
    uint64_t h = sm_fnv(kernel, strlen(kernel) + 1, SM_FNV_START);
    h = path ? sm_fnv(path, strlen(path) + 1, h) : sm_fnv("", 0, h ^ 0x5bd1e995u);
    return sm_fnv(&metric, sizeof metric, h);
}

static int sm_gct_grow(sm_gct_t *t)
{
    uint32_t size = t->table_size ? 2 * t->table_size : 256;
    uint32_t *table = calloc(size, sizeof *table);
    if (!table)
        return -1;
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gct_row_t *r = &t->rows[i];
        uint32_t k = (uint32_t)sm_gct_hash(r->kernel, r->path, r->metric) & (size - 1);
        while (table[k])
            k = (k + 1) & (size - 1);
        table[k] = i + 1;
    }
    free(t->table);
    t->table = table;
    t->table_size = size;
    return 0;
}

static sm_gct_row_t *sm_gct_row(sm_gct_t *t, const char *kernel, const char *path,
                                uint32_t metric)
{
    if ((t->n_rows + 1) * 2 > t->table_size && sm_gct_grow(t) != 0)
        return NULL;
    uint32_t mask = t->table_size - 1;
    uint32_t k = (uint32_t)sm_gct_hash(kernel, path, metric) & mask;
    for (; t->table[k]; k = (k + 1) & mask) {
        sm_gct_row_t *r = &t->rows[t->table[k] - 1];
        if (r->metric == metric && !strcmp(r->kernel, kernel) &&
            (r->path && path ? !strcmp(r->path, path) : r->path == path))
            return r;
    }
    if (t->n_rows == t->cap_rows) {
        uint32_t cap = t->cap_rows ? 2 * t->cap_rows : 32;
        sm_gct_row_t *rows = realloc(t->rows, cap * sizeof *rows);
        if (!rows)
            return NULL;
        t->rows = rows;
        t->cap_rows = cap;
    }
    sm_gct_row_t *r = &t->rows[t->n_rows];
    memset(r, 0, sizeof *r);
    r->metric = metric;
    r->kernel = strdup(kernel);
    r->path = path ? strdup(path) : NULL;
    r->rank = t->reduced ? NULL : calloc(t->n_ranks, sizeof *r->rank);
    if (!r->kernel || (path && !r->path) || (!t->reduced && !r->rank)) {
        free(r->kernel);
        free(r->path);
        free(r->rank);
        return NULL;
    }
    t->table[k] = ++t->n_rows;
    return r;
}

int sm_gct_add(sm_gct_t *t, uint32_t rank, const char *kernel, const char *path,
               const char *metric, const sm_fstat_t *st)
{
    if (!t || rank >= t->n_ranks)
        return -1;
    if (!st->n)
        return 0;
    uint32_t m = sm_gct_metric(t, metric);
    sm_gct_row_t *rows[2] = {NULL, NULL};
    if (m != UINT32_MAX) {
        rows[0] = sm_gct_row(t, kernel, path ? path : "", m);
        rows[1] = rows[0] ? sm_gct_row(t, kernel, NULL, m) : NULL;
    }
    if (!rows[1]) {
        t->oom = 1;
        return -1;
    }
    /* Making the kernel's row may have moved the array: look again. */
    rows[0] = sm_gct_row(t, kernel, path ? path : "", m);
    for (int i = 0; i < 2; i++) {
        sm_fstat_merge(&rows[i]->all, st);
        sm_fstat_merge(&rows[i]->rank[rank], st);
    }
    return 0;
}

int sm_gct_add_reduced(sm_gct_t *t, const char *kernel, const char *path, const char *metric,
                       const sm_fstat_t *all, sm_spread_t ranks)
{
    if (!t || !t->reduced)
        return -1;
    uint32_t m = sm_gct_metric(t, metric); /* (an empty row names a metric: its order) */
    if (m != UINT32_MAX && !all->n)
        return 0;
    sm_gct_row_t *r = m != UINT32_MAX ? sm_gct_row(t, kernel, path, m) : NULL;
    if (!r) {
        t->oom = 1;
        return -1;
    }
    if (!r->all.n)
        r->ranks = ranks;
    sm_fstat_merge(&r->all, all);
    return 0;
}

static const sm_gct_t *sm_gct_sorting;

static int sm_gct_order(const void *a, const void *b)
{
    const sm_gct_row_t *x = a, *y = b;
    int c = strcmp(x->kernel, y->kernel);
    if (c)
        return c;
    if (!x->path != !y->path)
        return x->path ? 1 : -1;
    if (x->path && (c = strcmp(x->path, y->path)) != 0)
        return c;
    return strcmp(sm_gct_sorting->metrics[x->metric], sm_gct_sorting->metrics[y->metric]);
}

void sm_gct_finish(sm_gct_t *t)
{
    if (!t)
        return;
    sm_gct_sorting = t;
    qsort(t->rows, t->n_rows, sizeof *t->rows, sm_gct_order);
    sm_gct_sorting = NULL;
    free(t->table); /* row indices changed: no more adding */
    t->table = NULL;
    t->table_size = 0;
    for (uint32_t i = 0; i < t->n_rows && !t->reduced; i++) {
        sm_gct_row_t *r = &t->rows[i];
        /* Across the ranks with values: the per-rank sums, as a statistic
         * of n values (one per rank). */
        sm_fstat_t across;
        sm_fstat_clear(&across);
        sm_spread_t sp;
        memset(&sp, 0, sizeof sp);
        for (uint32_t k = 0; k < t->n_ranks; k++) {
            if (!r->rank[k].n)
                continue;
            double v = r->rank[k].sum;
            if (!across.n || v < across.min)
                sp.min_member = k;
            if (!across.n || v > across.max)
                sp.max_member = k;
            sm_fstat_add(&across, v, 1);
        }
        sp.n = (uint32_t)across.n;
        sp.mean = sm_fstat_mean(&across);
        sp.min = across.min;
        sp.max = across.max;
        sp.stddev = sm_fstat_stddev(&across);
        r->ranks = sp;
    }
}

/* ---------------------------------------------------------------- text */

static void sm_gct_text_stat(sm_out_t *o, const char *metric, const sm_fstat_t *st)
{
    sm_out_printf(o, "    %-48s %8llu %9llu %18.12g %16.10g %16.10g %16.10g %12.6g\n", metric,
                  (unsigned long long)st->n, (unsigned long long)st->covered, st->sum,
                  sm_fstat_mean(st), st->min, st->max, sm_fstat_stddev(st));
}

void sm_gct_text(sm_out_t *o, const sm_gct_t *t, const char *heading)
{
    if (!t || !t->n_rows)
        return;
    static const char *const parts[2] = {"per kernel", "per kernel and launching call path"};
    for (int part = 0; part < 2; part++) {
        sm_out_printf(o, "\nGPU counters %s (%s; VALUES: launches measured, LAUNCHES: launches "
                         "the values stand for)\n",
                      parts[part], heading);
        sm_out_printf(o, "    %-48s %8s %9s %18s %16s %16s %16s %12s\n", "METRIC", "VALUES",
                      "LAUNCHES", "SUM", "MEAN", "MIN", "MAX", "STDDEV");
        const char *last_kernel = NULL, *last_path = NULL;
        for (uint32_t i = 0; i < t->n_rows; i++) {
            const sm_gct_row_t *r = &t->rows[i];
            if (!r->path != !part)
                continue;
            if (!last_kernel || strcmp(last_kernel, r->kernel) ||
                (part && strcmp(last_path, r->path))) {
                if (part)
                    sm_out_printf(o, "  %s\n    from %s\n", r->kernel,
                                  r->path[0] ? r->path : "(unknown)");
                else
                    sm_out_printf(o, "  %s\n", r->kernel);
            }
            last_kernel = r->kernel;
            last_path = r->path;
            sm_gct_text_stat(o, t->metrics[r->metric], &r->all);
        }
    }
    if (t->n_ranks < 2)
        return;
    sm_out_printf(o, "\nGPU counters across ranks (per-rank sums over each kernel's launches)\n");
    sm_out_printf(o, "    %-48s %6s %18s %18s %6s %18s %6s %12s\n", "METRIC", "RANKS", "MEAN",
                  "MIN", "@RANK", "MAX", "@RANK", "STDDEV");
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gct_row_t *r = &t->rows[i];
        if (r->path)
            continue;
        if (!i || strcmp(t->rows[i - 1].kernel, r->kernel) || t->rows[i - 1].path)
            sm_out_printf(o, "  %s\n", r->kernel);
        sm_out_printf(o, "    %-48s %6u %18.12g %18.12g %6u %18.12g %6u %12.6g\n",
                      t->metrics[r->metric], r->ranks.n, r->ranks.mean, r->ranks.min,
                      r->ranks.min_member, r->ranks.max, r->ranks.max_member, r->ranks.stddev);
    }
}

/* ---------------------------------------------------------------- JSON */

static void sm_gct_json_row(sm_json_t *j, const sm_gct_t *t, const sm_gct_row_t *r)
{
    sm_json_object_begin_inline(j);
    sm_json_field_string(j, "kernel", r->kernel);
    if (r->path)
        sm_json_field_string(j, "path", r->path);
    sm_json_field_string(j, "metric", t->metrics[r->metric]);
    sm_json_field_uint(j, "values", r->all.n);
    sm_json_field_uint(j, "launches", r->all.covered);
    sm_json_field_double(j, "sum", r->all.sum);
    sm_json_field_double(j, "mean", sm_fstat_mean(&r->all));
    sm_json_field_double(j, "min", r->all.min);
    sm_json_field_double(j, "max", r->all.max);
    sm_json_field_double(j, "stddev", sm_fstat_stddev(&r->all));
    sm_json_spread(j, "ranks", r->ranks, "rank", true);
    sm_json_object_end(j);
}

void sm_gct_json(sm_json_t *j, const sm_gct_t *t)
{
    sm_json_key(j, "counters");
    if (!t || !t->n_rows) {
        sm_json_null(j);
        return;
    }
    sm_json_object_begin(j);
    sm_json_key(j, "metrics");
    sm_json_array_begin_inline(j);
    for (uint32_t k = 0; k < t->n_metrics; k++)
        sm_json_string(j, t->metrics[k]);
    sm_json_array_end(j);
    for (int part = 0; part < 2; part++) {
        sm_json_key(j, part ? "paths" : "kernels");
        sm_json_array_begin(j);
        for (uint32_t i = 0; i < t->n_rows; i++)
            if (!t->rows[i].path == !part)
                sm_gct_json_row(j, t, &t->rows[i]);
        sm_json_array_end(j);
    }
    sm_json_object_end(j);
}

/* ---------------------------------------------------------------- CSV */

int sm_gct_csv(const char *dir, const char *name, const sm_gct_t *t)
{
    if (!t || !t->n_rows)
        return 0;
    sm_out_t o;
    if (sm_out_open(&o, dir, name) != 0)
        return -1;
    sm_out_printf(&o, "section,kernel,path,metric,values,launches,sum,mean,min,max,stddev,ranks,"
                      "rank_mean,rank_min,rank_min_rank,rank_max,rank_max_rank,rank_stddev\n");
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gct_row_t *r = &t->rows[i];
        sm_out_printf(&o, "%s,", r->path ? "path" : "kernel");
        sm_csv_field(&o, r->kernel);
        sm_out_printf(&o, ",");
        sm_csv_field(&o, r->path ? r->path : "");
        sm_out_printf(&o, ",");
        sm_csv_field(&o, t->metrics[r->metric]);
        sm_out_printf(&o, ",%llu,%llu,%.17g,%.17g,%.17g,%.17g,%.17g,%u,%.17g,%.17g,%u,%.17g,%u,%.17g\n",
                      (unsigned long long)r->all.n, (unsigned long long)r->all.covered, r->all.sum,
                      sm_fstat_mean(&r->all), r->all.min, r->all.max, sm_fstat_stddev(&r->all),
                      r->ranks.n, r->ranks.mean, r->ranks.min, r->ranks.min_member, r->ranks.max,
                      r->ranks.max_member, r->ranks.stddev);
    }
    return sm_out_close(&o);
}
