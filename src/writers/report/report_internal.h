/* report.html, in parts (src/writers/report/): one self-contained page for
 * a person to look at, built from
 * the folder's own metadata.json, profile.json and comm_matrix data (the
 * same files at finalize, in sysmeasure-merge and in sysmeasure-report, so
 * the page is the same whichever wrote it).  Plots are inline SVG drawn
 * here; the scripts sort tables and draw a path's distribution from the
 * values its tree node carries.  Nothing is loaded from elsewhere.
 *
 * The page stays small for large jobs: tables are capped (SM_REPORT_MAX_*)
 * and the page says what was left out; per-rank plots draw the rank ranges
 * of profile.json's "rank_bins" (at most SM_PROFILE_RANK_BINS of them, one
 * rank each in jobs of no more ranks), so the page does not grow with the
 * ranks.  A profile.json without bins (an older folder) is drawn from its
 * per-rank rows.
 *
 *   page.c          the page's frame (style, script, sections in order),
 *                   sm_report_write_html and the output (sm_output_report)
 *   input.c         the folder's files read, checked and prepared
 *   sections.c      the run, where the time went, call paths, load
 *                   imbalance
 *   mpi_timeline.c  MPI (table and heat maps), the timeline, metric
 *                   timelines
 *   measures.c      GPU, counters, sampled functions
 *   tree.c          the call tree and the distribution of a clicked path
 *   compare.c       two runs compared (sysmeasure-report --compare A B)
 *   causal.c        the causal profile (causal/experiments.json)
 *   text.c          HTML escaping, numbers and table cells, the legend
 *
 * This header is what they share; the rest of the tree uses writers.h. */
#ifndef SM_REPORT_INTERNAL_H
#define SM_REPORT_INTERNAL_H

#include "../out_file.h"
#include "../timeline.h"
#include "../writers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../util/abbrev.h"
#include "../../util/grow.h"
#include "../../util/json_read.h"
#include "../../util/log.h"

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
/* A profile.json of at most so many paths and threads is read with its
 * per-thread values (the call tree's distributions per thread). */
#define SM_REPORT_THREAD_PATHS 2000
#define SM_REPORT_THREAD_VALUES 64

/* Where time goes: the kinds of work of timeline.h (sm_tl_*), one list for
 * the bars, the timeline and timeline.json.  Their colours mean a kind of
 * work everywhere on the page; what is not a kind of work (slow and fast
 * ranks, a metric's line) is drawn in greys, darker for more. */
#define SM_REPORT_NEUTRAL_DARK "#2f2f2f"  /* the slowest rank; a metric's largest */
#define SM_REPORT_NEUTRAL "#8c8c8c"       /* the other ranks */
#define SM_REPORT_NEUTRAL_LIGHT "#c8c8c8" /* the fastest rank; a metric's mean */

/* One call path as the page uses it. */
typedef struct sm_rpath {
    const sm_jv_t *v;
    double incl, excl, visits; /* sums over ranks */
    uint32_t ranks, depth;
    /* What its exclusive time counts as (sm_tl_*): its paradigm's kind, but
     * OpenMP that a Kokkos kernel, copy or fence runs (Kokkos' OpenMP
     * backend) counts as Kokkos, the paradigm the user wrote; under_kokkos
     * says so. */
    int credit;
    bool under_kokkos;
} sm_rpath_t;

/* Two runs compared (compare.c): per call path ("a / b / c") or MPI
 * function ("MPI function MPI_Send", all its paths), the exclusive time of
 * all ranks together in A and in B. */
typedef struct sm_cmp_row {
    char *key;
    const char *kind; /* (the profile's, while it is loaded) */
    bool mpi, in_a, in_b;
    double a, b;
} sm_cmp_row_t;

typedef struct sm_cmp {
    sm_cmp_row_t *rows; /* the largest change (|B - A|) first */
    uint32_t n, cap;
} sm_cmp_t;

typedef struct sm_report {
    sm_out_t o;
    const sm_cmp_t *cmp;  /* a comparison to show, or NULL */
    const char *cmp_dir;  /* the run compared with (A) */
    const sm_jv_t *meta, *prof, *tl; /* tl: timeline.json, NULL without */
    const sm_jv_t *causal;           /* causal/experiments.json, NULL without */
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
static inline double sm_rpath_bin(const sm_jv_t *v, const char *col, uint32_t b)
{
    const sm_jv_t *pb = sm_jv_get(v, "rank_bins");
    uint32_t first = (uint32_t)sm_jv_num(pb, "first_bin", 0);
    const sm_jv_t *x = b >= first ? sm_jv_at(sm_jv_get(pb, col), b - first) : NULL;
    return x && x->type == SM_JV_NUMBER ? x->num : 0.0;
}

/* text.c */
void sm_bin_name(const sm_report_t *r, uint32_t b, char *buf, size_t len) SM_HIDDEN;
void sm_html(sm_out_t *o, const char *s) SM_HIDDEN;
/* A region's name for a table: abbreviated (util/abbrev.h), the full name
 * on hover (title) where it was. */
void sm_html_name(sm_out_t *o, const char *name) SM_HIDDEN;
void sm_fmt_time(char *buf, size_t len, double ns) SM_HIDDEN;
void sm_fmt_bytes(char *buf, size_t len, double b) SM_HIDDEN;
void sm_td_num(sm_out_t *o, double v, const char *text) SM_HIDDEN;
void sm_td_time(sm_out_t *o, double ns) SM_HIDDEN;
void sm_td_count(sm_out_t *o, double v) SM_HIDDEN;
void sm_legend(sm_out_t *o, const bool *used) SM_HIDDEN;

/* input.c */
int sm_report_check(sm_report_t *r, const char **file, char *err, size_t errlen) SM_HIDDEN;
int sm_report_check_timeline(const sm_jv_t *tl, char *err, size_t errlen) SM_HIDDEN;
int sm_report_prepare(sm_report_t *r) SM_HIDDEN;
int sm_report_credit(sm_report_t *r) SM_HIDDEN;
sm_jv_t *sm_report_read(const char *dir, const char *name, sm_fs_input_t how,
                        const char *const *skip, int *refused, char *err, size_t errlen) SM_HIDDEN;

/* sections.c */
void sm_report_run(sm_report_t *r) SM_HIDDEN;
void sm_report_time(sm_report_t *r) SM_HIDDEN;
void sm_path_text(sm_out_t *o, const sm_jv_t *v) SM_HIDDEN;
sm_rpath_t **sm_sorted_paths(sm_report_t *r) SM_HIDDEN;
void sm_report_paths(sm_report_t *r, sm_rpath_t **sorted) SM_HIDDEN;
void sm_report_imbalance(sm_report_t *r, sm_rpath_t **sorted) SM_HIDDEN;

/* mpi_timeline.c */
void sm_report_mpi_table(sm_report_t *r) SM_HIDDEN;
void sm_report_matrix(sm_report_t *r) SM_HIDDEN;
void sm_report_timeline(sm_report_t *r) SM_HIDDEN;
void sm_report_metrics(sm_report_t *r) SM_HIDDEN;

/* tree.c */
void sm_report_tree(sm_report_t *r) SM_HIDDEN;
extern const char sm_report_tree_js[] SM_HIDDEN;

/* compare.c */
int sm_cmp_build(sm_cmp_t *c, const sm_jv_t *a, const sm_jv_t *b) SM_HIDDEN;
void sm_cmp_free(sm_cmp_t *c) SM_HIDDEN;
void sm_cmp_text(FILE *f, const sm_cmp_t *c, const char *a, const char *b) SM_HIDDEN;
void sm_report_compare(sm_report_t *r) SM_HIDDEN;

/* measures.c */
void sm_report_gpu(sm_report_t *r) SM_HIDDEN;
void sm_report_counters(sm_report_t *r, sm_rpath_t **sorted) SM_HIDDEN;
void sm_report_sampling(sm_report_t *r) SM_HIDDEN;
/* causal.c */
void sm_report_causal(sm_report_t *r) SM_HIDDEN;

#endif
