/* The causal profile's files (outputs.def): causal/experiments.coz, in the
 * profile format of Coz's viewer (tab-separated "kind key=value ..." lines:
 * startup, one experiment line with its throughput-point and latency-point
 * lines, samples per function, runtime), and causal/experiments.json, the
 * same experiments with sysmeasure's estimates per function.
 *
 * The estimate is Coz's: an experiment's effective duration is its length
 * less the delay inserted while it ran; the period of a progress point is
 * effective duration / passes, summed over the experiments of one function
 * and speedup; the program speedup is 1 - period / baseline period, the
 * baseline being every experiment at 0 % (of any function: they all
 * insert nothing).  Its error bar is the standard error of the experiments'
 * own estimates, with the baseline's. */
#define _GNU_SOURCE
#include "causal_output.h"
#include "causal_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../finalize/pipeline.h"
#include "../util/fs.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../util/srcloc.h"
#include "../util/symbols.h"
#include "../writers/out_file.h"

/* The point estimates are made for: the throughput point passed most (a
 * latency point's ends when there is none); -1 when none was passed. */
int sm_causal_main_point(void)
{
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    uint32_t np = sm_causal_points();
    int best = -1, best_latency = 1;
    uint64_t best_visits = 0;
    for (uint32_t p = 0; p < np; p++) {
        uint64_t v = 0;
        for (uint32_t i = 0; i < n; i++)
            v += e[i].delta.visits[p];
        int latency = sm_causal_point_is_latency(p);
        if (v && (best < 0 || (best_latency && !latency) ||
                  (latency == best_latency && v > best_visits))) {
            best = (int)p;
            best_visits = v;
            best_latency = latency;
        }
    }
    return best;
}

/* An experiment's length less the delays inserted in it (Coz's
 * "duration"), in ns. */
static uint64_t sm_co_effective_ns(const sm_causal_exp_t *e)
{
    uint64_t d = e->end_ns - e->start_ns;
    return d > e->delay_ns ? d - e->delay_ns : 0;
}

static double sm_co_effective(const sm_causal_exp_t *e)
{
    return (double)sm_co_effective_ns(e);
}

/* The baseline of progress point `point`: every experiment at 0 %, their
 * pooled period per pass (*period, ns), how many (*count) and the variance
 * of their own periods relative to it (*var).  0, or -1 without one. */
static int sm_co_baseline(const sm_causal_exp_t *e, uint32_t n, int point, double *period,
                          uint32_t *count, double *var)
{
    double dur = 0, visits = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].speedup == 0 && e[i].delta.visits[point]) {
            dur += sm_co_effective(&e[i]);
            visits += (double)e[i].delta.visits[point];
            k++;
        }
    if (!k || dur <= 0)
        return -1;
    *period = dur / visits;
    *count = k;
    double s1 = 0, s2 = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].speedup == 0 && e[i].delta.visits[point]) {
            double r = sm_co_effective(&e[i]) / (double)e[i].delta.visits[point] / *period;
            s1 += r;
            s2 += r * r;
        }
    *var = k > 1 ? (s2 - s1 * s1 / k) / (k - 1) : 0;
    return 0;
}

int sm_causal_estimate(int32_t fn, uint32_t line, uint32_t speedup, int point,
                       sm_causal_estimate_t *out)
{
    memset(out, 0, sizeof *out);
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    if (point < 0)
        return -1;
    double base_period, base_var;
    uint32_t base_n;
    if (sm_co_baseline(e, n, point, &base_period, &base_n, &base_var) != 0)
        return -1;
    double dur = 0, visits = 0, s1 = 0, s2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].fn != fn || e[i].line != line || e[i].speedup != speedup ||
            !e[i].delta.visits[point])
            continue;
        double eff = sm_co_effective(&e[i]);
        dur += eff;
        visits += (double)e[i].delta.visits[point];
        double r = 1.0 - eff / (double)e[i].delta.visits[point] / base_period;
        s1 += r;
        s2 += r * r;
        out->experiments++;
    }
    if (!out->experiments)
        return -1;
    uint32_t k = out->experiments;
    double var = k > 1 ? (s2 - s1 * s1 / k) / (k - 1) : 0;
    out->program_speedup = 1.0 - dur / visits / base_period;
    out->error = sqrt((var > 0 ? var / k : 0) + (base_var > 0 ? base_var / base_n : 0));
    out->baseline_experiments = base_n;
    return 0;
}

int sm_causal_estimate_window(int32_t fn, uint32_t line, uint32_t center, uint32_t half,
                              int point, sm_causal_estimate_t *out)
{
    memset(out, 0, sizeof *out);
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    if (point < 0)
        return -1;
    double base_period, base_var;
    uint32_t base_n;
    if (sm_co_baseline(e, n, point, &base_period, &base_n, &base_var) != 0)
        return -1;
    double s1 = 0, s2 = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].fn != fn || e[i].line != line || !e[i].speedup || !e[i].delta.visits[point] ||
            e[i].speedup + half < center || e[i].speedup > center + half)
            continue;
        double r = 1.0 - sm_co_effective(&e[i]) / (double)e[i].delta.visits[point] /
                             base_period;
        s1 += r;
        s2 += r * r;
        k++;
    }
    if (!k)
        return -1;
    double var = k > 1 ? (s2 - s1 * s1 / k) / (k - 1) : 0;
    out->program_speedup = s1 / k;
    out->error = sqrt(var > 0 ? var / k : 0);
    out->experiments = k;
    out->baseline_experiments = base_n;
    return 0;
}

/* The distinct (function, line) pairs chosen, in order of first use: the
 * index of an experiment of each in *first (malloc'd); their count. */
static uint32_t sm_co_selections(uint32_t **first)
{
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e), k = 0;
    *first = calloc(n + 1, sizeof **first);
    for (uint32_t i = 0; *first && i < n; i++) {
        if (e[i].fn < 0)
            continue;
        uint32_t j = 0;
        while (j < k && !(e[(*first)[j]].fn == e[i].fn && e[(*first)[j]].line == e[i].line))
            j++;
        if (j == k)
            (*first)[k++] = i;
    }
    return k;
}

/* What experiment e sped up: "fn (file:line)" for a function (the line of
 * its start), "file:line in fn" for a line (its addresses in that function
 * alone: code of one line inlined into two functions is two choices);
 * *name gets the function's name. */
static void sm_co_label(const sm_causal_exp_t *e, char *buf, size_t len, char *name,
                        size_t nlen)
{
    char fname[300], where[600];
    sm_causal_function_label(e->fn, fname, sizeof fname, where, sizeof where);
    if (name)
        snprintf(name, nlen, "%s", fname);
    const sm_causal_fn_t *f = sm_causal_scope_fn((uint32_t)e->fn);
    sm_srcloc_t loc;
    if (e->line && f && sm_srcloc_lookup((const void *)(f->lo + e->offset), &loc) == 0)
        snprintf(buf, len, "%s:%u in %s", loc.file, e->line, fname);
    else if (e->line)
        snprintf(buf, len, "line %u of %s", e->line, fname);
    else if (where[0])
        snprintf(buf, len, "%s (%s)", fname, where);
    else
        snprintf(buf, len, "%s", fname);
}

/* profile.txt's section: per function chosen, the predicted program
 * speedup at 10, 25 and 50 % (the experiments within 5 points of each). */
void sm_causal_text(sm_out_t *o)
{
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    int point = sm_causal_main_point();
    uint32_t nf = sm_causal_scope_count();
    if (!n || point < 0)
        return;
    (void)nf;
    uint32_t *first;
    uint32_t nsel = sm_co_selections(&first);
    if (!first)
        return;
    uint32_t base = 0;
    for (uint32_t i = 0; i < n; i++)
        base += e[i].speedup == 0;
    sm_out_printf(o, "\nCAUSAL PROFILE (--causal): predicted program speedup when a function is "
                  "made faster\n  progress point '%s', %u experiments (%u at 0 %%, the "
                  "baseline); each cell: predicted speedup +- standard error (experiments), "
                  "from the experiments within 5 points of the code speedup\n\n",
                  sm_causal_point_name((uint32_t)point), n, base);
    sm_out_printf(o, "  %-40s %-22s %-22s %s\n", e[0].line ? "LINE" : "FUNCTION", "CODE 10 %",
                  "CODE 25 %", "CODE 50 %");
    static const uint32_t at[3] = {10, 25, 50};
    for (uint32_t q = 0; q < nsel; q++) {
        const sm_causal_exp_t *x = &e[first[q]];
        char name[700];
        if (x->line)
            sm_co_label(x, name, sizeof name, NULL, 0);
        else
            sm_causal_function_label(x->fn, name, sizeof name, NULL, 0);
        if (strlen(name) > 40) { /* the end of a path says most */
            size_t l = strlen(name);
            memmove(name + 3, name + l - 37, 38);
            memcpy(name, "...", 3);
        }
        char line[200];
        int len = snprintf(line, sizeof line, "  %-40s", name);
        for (int k = 0; k < 3 && len > 0 && (size_t)len < sizeof line; k++) {
            sm_causal_estimate_t est;
            char cell[64];
            if (sm_causal_estimate_window(x->fn, x->line, at[k], 5, point, &est) == 0)
                snprintf(cell, sizeof cell, "%+6.1f%% +-%4.1f (%u)", 100 * est.program_speedup,
                         100 * est.error, est.experiments);
            else
                snprintf(cell, sizeof cell, "-");
            len += snprintf(line + len, sizeof line - (size_t)len, " %-22s", cell);
        }
        size_t end = strlen(line);
        while (end && line[end - 1] == ' ')
            line[--end] = '\0';
        sm_out_printf(o, "%s\n", line);
    }
    free(first);
}

void sm_causal_function_label(int32_t fn, char *name, size_t nlen, char *where, size_t wlen)
{
    const sm_causal_fn_t *f = sm_causal_scope_fn((uint32_t)fn);
    snprintf(name, nlen, "%s", f ? f->name : "?");
    if (where)
        where[0] = '\0';
    if (!f)
        return;
    if (!strncmp(f->name, "_Z", 2)) {
        sm_symbol_t sym;
        char demangled[512];
        if (sm_symbol_lookup_names((const void *)f->lo, &sym, NULL, 0, demangled,
                                   sizeof demangled) == 0 && demangled[0])
            snprintf(name, nlen, "%s", demangled);
    }
    sm_srcloc_t loc;
    if (where && sm_srcloc_function((const void *)f->lo, &loc) == 0 && loc.file[0])
        snprintf(where, wlen, "%s:%u", loc.file, loc.line);
}

/* ---------------------------------------------------------------- outputs */

/* Every rank takes part (the reduction is collective) in a live run with
 * --causal; only rank 0 writes, when there were experiments. */
static bool sm_co_wanted_job(const sm_finalize_t *f)
{
    /* (sysmeasure-merge: a rank recovered from its crash-safe files has no
     * configuration, and a merge makes no causal profile.) */
    return f->run->config && f->run->config->causal && !f->images;
}

static bool sm_co_wanted(const sm_finalize_t *f)
{
    const sm_causal_exp_t *e;
    return sm_co_wanted_job(f) && sm_causal_experiments(&e) > 0;
}

/* The job's progress per experiment at rank 0: every rank ran the same
 * numbered experiments and counted its own passes; they are summed by
 * experiment number and point name (rank 0's names).  Once. */
static int sm_co_reduce(sm_finalize_t *f)
{
    static int done;
    const sm_procs_t *pr = f->procs;
    if (done || !pr || pr->size < 2)
        return 0;
    done = 1;
    sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments_mut(&e);
    /* Rank 0's point names, one a line. */
    char *names = NULL;
    uint64_t len = 0;
    if (pr->rank == 0) {
        size_t cap = 1;
        for (uint32_t p = 0; p < sm_causal_points(); p++)
            cap += strlen(sm_causal_point_name(p)) + 1;
        names = calloc(1, cap);
        for (uint32_t p = 0; names && p < sm_causal_points(); p++) {
            strcat(names, sm_causal_point_name(p));
            strcat(names, "\n");
        }
        len = names ? strlen(names) + 1 : 0;
    }
    if (pr->bcast(pr->ctx, 0, (void **)&names, &len) != 0) {
        free(names);
        return -1;
    }
    int local_of[SM_CAUSAL_MAX_POINTS];
    uint32_t np = 0;
    for (char *line = names; line && len && *line && np < SM_CAUSAL_MAX_POINTS; np++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        local_of[np] = -1;
        for (uint32_t q = 0; q < sm_causal_points(); q++)
            if (!strcmp(sm_causal_point_name(q), line))
                local_of[np] = (int)q;
        line = nl ? nl + 1 : line + strlen(line);
    }
    free(names);
    uint64_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].no + 1 > m)
            m = e[i].no + 1;
    if (pr->allreduce_max_u64(pr->ctx, &m, 1) != 0)
        return -1;
    uint32_t w = np + 1;
    uint64_t *v = m ? calloc(m * w, sizeof *v) : NULL;
    if (m && !v)
        return -1; /* every rank runs out alike or the reduction fails: said by the caller */
    for (uint32_t i = 0; v && i < n; i++) {
        for (uint32_t p = 0; p < np; p++)
            if (local_of[p] >= 0)
                v[e[i].no * w + p] += e[i].delta.visits[local_of[p]];
        v[e[i].no * w + np] += 1;
    }
    int rc = m ? pr->allreduce_sum_u64(pr->ctx, v, (uint32_t)(m * w)) : 0;
    if (rc == 0 && pr->rank == 0)
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t p = 0; p < np; p++)
                e[i].delta.visits[p] = v[e[i].no * w + p];
            e[i].ranks = (uint32_t)v[e[i].no * w + np];
        }
    free(v);
    return rc;
}

/* The causal folder of the output folder: 0, or -1 said. */
static int sm_co_folder(const sm_finalize_t *f, char *dir, size_t len)
{
    snprintf(dir, len, "%s/causal", f->run->output_dir);
    if (sm_mkdir_p(dir) != 0) {
        sm_error("cannot create %s: the causal profile is not written", dir);
        return -1;
    }
    return 0;
}

/* The experiment's selected name in the .coz file: the function, with its
 * source where known ("fn (file:line)"). */
static void sm_co_selected(int32_t fn, char *buf, size_t len)
{
    char name[300], where[600];
    sm_causal_function_label(fn, name, sizeof name, where, sizeof where);
    if (where[0])
        snprintf(buf, len, "%s (%s)", name, where);
    else
        snprintf(buf, len, "%s", name);
}

static int sm_co_write_coz(sm_finalize_t *f)
{
    if (sm_co_reduce(f) != 0) {
        sm_error("causal profiling: the ranks' progress could not be summed; "
                 "causal/experiments.coz and .json show rank 0's alone");
    }
    const sm_causal_exp_t *any;
    if ((f->procs && f->procs->rank != 0) || !sm_causal_experiments(&any))
        return 0;
    char dir[4200];
    if (sm_co_folder(f, dir, sizeof dir) != 0)
        return -1;
    sm_out_t o;
    if (sm_out_open(&o, dir, "experiments.coz") != 0)
        return -1;
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    uint32_t np = sm_causal_points();
    uint64_t t0 = sm_causal_startup_ns();
    sm_out_printf(&o, "startup\ttime=%llu\n", (unsigned long long)t0);
    char sel[1000];
    for (uint32_t i = 0; i < n; i++) {
        sm_co_label(&e[i], sel, sizeof sel, NULL, 0);
        sm_out_printf(&o, "experiment\tselected=%s\tspeedup=%.2f\tduration=%llu\t"
                      "selected-samples=%llu\n",
                      sel, e[i].speedup / 100.0, (unsigned long long)sm_co_effective_ns(&e[i]),
                      (unsigned long long)e[i].selected_samples);
        for (uint32_t p = 0; p < np; p++) {
            if (sm_causal_point_is_latency(p))
                sm_out_printf(&o, "latency-point\tname=%s\tarrivals=%llu\tdepartures=%llu\t"
                              "difference=%lld\n",
                              sm_causal_point_name(p),
                              (unsigned long long)e[i].delta.arrivals[p],
                              (unsigned long long)e[i].delta.visits[p],
                              (long long)(e[i].before.arrivals[p] - e[i].before.visits[p]));
            else
                sm_out_printf(&o, "throughput-point\tname=%s\tdelta=%llu\n",
                              sm_causal_point_name(p), (unsigned long long)e[i].delta.visits[p]);
        }
    }
    for (uint32_t fn = 0; fn < sm_causal_scope_count(); fn++) {
        uint64_t s = sm_causal_function_samples(fn);
        if (!s)
            continue;
        sm_co_selected((int32_t)fn, sel, sizeof sel);
        sm_out_printf(&o, "samples\tlocation=%s\tcount=%llu\n", sel, (unsigned long long)s);
    }
    sm_out_printf(&o, "runtime\ttime=%llu\n", (unsigned long long)(sm_causal_end_ns() - t0));
    return sm_out_close(&o);
}

static int sm_co_write_json(sm_finalize_t *f)
{
    char dir[4200];
    if (sm_co_folder(f, dir, sizeof dir) != 0)
        return -1;
    sm_json_t j;
    if (sm_json_open(&j, dir, "experiments.json") != 0)
        return -1;
    const sm_causal_exp_t *e;
    uint32_t n = sm_causal_experiments(&e);
    uint32_t np = sm_causal_points();
    uint32_t nf = sm_causal_scope_count();
    const sm_config_t *cfg = f->run->config;
    sm_json_object_begin(&j);
    sm_json_field_int(&j, "version", 1);
    sm_json_field_string(&j, "mode", cfg->causal_end_to_end ? "end-to-end"
                                     : cfg->causal_mode == SM_CAUSAL_MODE_LINE ? "line"
                                                                               : "function");
    sm_json_field_uint(&j, "ranks", f->procs ? f->procs->size : 1);
    sm_json_field_uint(&j, "period_ns", sm_causal_period_ns());
    sm_json_field_int(&j, "experiment_ms", cfg->causal_experiment);
    sm_json_field_uint(&j, "runtime_ns", sm_causal_end_ns() - sm_causal_startup_ns());
    sm_json_field_uint(&j, "samples", sm_causal_total_samples());
    sm_json_field_uint(&j, "delay_inserted_ns", sm_causal_global_delay());
    sm_json_field_uint(&j, "pause_ns", sm_causal_paid_ns());
    sm_json_field_uint(&j, "functions_in_scope", nf);
    int main_point = sm_causal_main_point();
    sm_json_field_string(&j, "estimates_for",
                         main_point >= 0 ? sm_causal_point_name((uint32_t)main_point) : NULL);
    sm_json_key(&j, "progress_points");
    sm_json_array_begin(&j);
    for (uint32_t p = 0; p < np; p++) {
        uint64_t v = 0;
        for (uint32_t i = 0; i < n; i++)
            v += e[i].delta.visits[p];
        sm_json_object_begin_inline(&j);
        sm_json_field_string(&j, "name", sm_causal_point_name(p));
        sm_json_field_string(&j, "kind", sm_causal_point_is_latency(p) ? "latency" : "throughput");
        sm_json_field_uint(&j, "visits_in_experiments", v);
        sm_json_object_end(&j);
    }
    sm_json_array_end(&j);
    /* The functions chosen, with their estimates at each speedup tried. */
    uint32_t *first;
    uint32_t nsel = sm_co_selections(&first);
    sm_json_key(&j, "functions");
    sm_json_array_begin(&j);
    for (uint32_t q = 0; first && q < nsel; q++) {
        const sm_causal_exp_t *x = &e[first[q]];
        uint32_t fn = (uint32_t)x->fn;
        char name[300], where[600], label[1000];
        sm_causal_function_label((int32_t)fn, name, sizeof name, where, sizeof where);
        sm_co_label(x, label, sizeof label, NULL, 0);
        sm_json_object_begin(&j);
        sm_json_field_string(&j, "function", name);
        sm_json_field_string(&j, "selected", label);
        if (x->line)
            sm_json_field_uint(&j, "line", x->line);
        sm_json_field_string(&j, "source", where[0] ? where : NULL);
        sm_json_field_string(&j, "object", sm_causal_scope_fn(fn)->object);
        sm_json_field_uint(&j, "samples", sm_causal_function_samples(fn));
        sm_json_key(&j, "estimates");
        sm_json_array_begin(&j);
        for (uint32_t s = 0; s <= 100; s += 5) {
            sm_causal_estimate_t est;
            if (sm_causal_estimate((int32_t)fn, x->line, s, main_point, &est) != 0)
                continue;
            sm_json_object_begin_inline(&j);
            sm_json_field_double(&j, "speedup", s / 100.0);
            sm_json_field_double(&j, "program_speedup", est.program_speedup);
            sm_json_field_double(&j, "error", est.error);
            sm_json_field_uint(&j, "experiments", est.experiments);
            sm_json_object_end(&j);
        }
        sm_json_array_end(&j);
        sm_json_object_end(&j);
    }
    sm_json_array_end(&j);
    free(first);
    sm_json_key(&j, "experiments");
    sm_json_array_begin(&j);
    for (uint32_t i = 0; i < n; i++) {
        char name[300], label[1000];
        sm_co_label(&e[i], label, sizeof label, name, sizeof name);
        sm_json_object_begin_inline(&j);
        sm_json_field_string(&j, "function", name);
        if (e[i].line)
            sm_json_field_string(&j, "selected", label);
        sm_json_field_double(&j, "speedup", e[i].speedup / 100.0);
        sm_json_field_uint(&j, "start_ns", e[i].start_ns - sm_causal_startup_ns());
        sm_json_field_uint(&j, "duration_ns", e[i].end_ns - e[i].start_ns);
        sm_json_field_uint(&j, "delay_ns", e[i].delay_ns);
        sm_json_field_uint(&j, "selected_samples", e[i].selected_samples);
        sm_json_field_uint(&j, "ranks", e[i].ranks ? e[i].ranks : 1);
        sm_json_key(&j, "progress");
        sm_json_object_begin_inline(&j);
        for (uint32_t p = 0; p < np; p++)
            sm_json_field_uint(&j, sm_causal_point_name(p), e[i].delta.visits[p]);
        sm_json_object_end(&j);
        sm_json_object_end(&j);
    }
    sm_json_array_end(&j);
    sm_json_object_end(&j);
    return sm_json_close(&j);
}

const sm_output_t sm_output_causal_coz = {
    .file = "causal/experiments.coz",
    .who = SM_OUTPUT_EVERY_RANK,
    .wanted = sm_co_wanted_job,
    .write = sm_co_write_coz,
};

const sm_output_t sm_output_causal_json = {
    .file = "causal/experiments.json",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_co_wanted,
    .write = sm_co_write_json,
};
