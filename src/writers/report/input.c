/* The report's input: the folder's JSON files read, checked against
 * what the page relies on (so damage is said, not drawn), and prepared. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

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
int sm_report_check(sm_report_t *r, const char **file, char *err, size_t errlen)
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
int sm_report_check_timeline(const sm_jv_t *tl, char *err, size_t errlen)
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
int sm_report_prepare(sm_report_t *r)
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
    return sm_report_credit(r);
}

/* Whether a path's region is Kokkos work that a backend runs: a kernel, a
 * deep copy or a fence (not a profile region, which the user wrote). */
static bool sm_rpath_kokkos_work(const sm_jv_t *v)
{
    const char *pd = sm_jv_str(v, "paradigm"), *kind = sm_jv_str(v, "kind");
    return pd && !strcmp(pd, "kokkos") && kind && strcmp(kind, "REGION") && strcmp(kind, "EVENT");
}

static int sm_str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each path's credit (sm_rpath_t).  The paths come in pre-order (depth
 * first), so a stack of depths gives each its ancestors.  The master thread
 * runs the OpenMP region inside the kernel; the workers run it at their
 * top, where no kernel is above it: their OpenMP regions count as Kokkos
 * when their outermost OpenMP region is one that runs inside a kernel
 * somewhere (same name: same parallel construct). */
int sm_report_credit(sm_report_t *r)
{
    uint32_t n = r->n_paths;
    /* per depth on the stack: under Kokkos work, the outermost OpenMP name */
    bool *kokkos = calloc(n ? n : 1, sizeof *kokkos);
    const char **outer_omp = calloc(n ? n : 1, sizeof *outer_omp);
    const char **inside = calloc(n ? n : 1, sizeof *inside); /* names run inside kernels */
    const char **omp_of = calloc(n ? n : 1, sizeof *omp_of);  /* each path's outermost */
    uint32_t n_inside = 0;
    if (!kokkos || !outer_omp || !inside || !omp_of) {
        free(kokkos), free(outer_omp), free(inside), free(omp_of);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        sm_rpath_t *p = &r->paths[i];
        const char *pd = sm_jv_str(p->v, "paradigm");
        uint32_t d = p->depth < n ? p->depth : n - 1;
        bool above = d > 0 && kokkos[d - 1];
        const char *outer = d > 0 ? outer_omp[d - 1] : NULL;
        bool omp = pd && !strcmp(pd, "openmp");
        if (omp && !outer)
            outer = sm_jv_str(p->v, "region");
        kokkos[d] = above || sm_rpath_kokkos_work(p->v);
        outer_omp[d] = outer;
        omp_of[i] = omp ? outer : NULL;
        p->credit = sm_tl_kind_of_paradigm(pd);
        if (omp && above) {
            p->under_kokkos = true;
            if (outer)
                inside[n_inside++] = outer;
        }
    }
    qsort(inside, n_inside, sizeof *inside, sm_str_cmp);
    for (uint32_t i = 0; i < n; i++) {
        sm_rpath_t *p = &r->paths[i];
        if (!p->under_kokkos && omp_of[i] &&
            bsearch(&omp_of[i], inside, n_inside, sizeof *inside, sm_str_cmp))
            p->under_kokkos = true;
        if (p->under_kokkos)
            p->credit = SM_TL_KOKKOS;
    }
    free(kokkos), free(outer_omp), free(inside), free(omp_of);
    return 0;
}

/* One of the folder's JSON files, as how allows: the document, or NULL
 * with err words to follow its path and *refused clear when the file is
 * as good as absent (not there; for a file of this run, not this run's:
 * its writer said why it did not write it), set when it must be said. */
sm_jv_t *sm_report_read(const char *dir, const char *name, sm_fs_input_t how,
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
