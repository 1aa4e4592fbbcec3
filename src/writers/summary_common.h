/* Helpers shared by the summary writers (profile.txt, profile.json,
 * profile.csv, comm_matrix.csv/.json): CSV fields, names from the job's
 * definitions, the communication matrix (output files: out_file.h). */
#ifndef SM_SUMMARY_COMMON_H
#define SM_SUMMARY_COMMON_H

#include <locale.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "out_file.h"
#include "writers.h"

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line
 * break; control characters become '?' so that every row is one line. */
void sm_csv_field(sm_out_t *o, const char *s) SM_HIDDEN;

/* Region name in the job's definitions, "?" when unknown. */
const char *sm_job_region_name(const sm_job_t *job, sm_region_id_t id) SM_HIDDEN;
/* What the region is, in a word (sm_region_kind_name): "ParFor", "loop", ... */
const char *sm_job_region_kind(const sm_job_t *job, sm_region_id_t id) SM_HIDDEN;
/* A call path's names are written in full up to this depth.  A deeper one
 * (deep recursion under a large SYSMEASURE_PROFILE_DEPTH) is named by its
 * SM_PATH_NAMES innermost regions, its outer part through the parent ids:
 * written in full, the profiles grew with the depth squared. */
#define SM_PATH_NAMES 64
/* The first depth (0: top level) of p's names as written. */
static inline uint32_t sm_cpath_names_from(const sm_cpath_t *p)
{
    return p->depth > SM_PATH_NAMES ? p->depth - SM_PATH_NAMES : 0;
}
/* p's names from sm_cpath_names_from(p), outermost first, joined with
 * " > ", "... > " first where cut, into *buf (grown, *cap its size); false
 * when out of memory. */
bool sm_cpath_joined(const sm_job_t *job, const sm_cpath_t *p, char **buf,
                     size_t *cap) SM_HIDDEN;
/* An sm_region_select_fn (arg: the job): regions of paradigm MPI. */
bool sm_job_region_is_mpi(sm_region_id_t id, void *job) SM_HIDDEN;

/* key: {"mean", "min", "min_<who>", "max", "max_<who>", "stddev"} of a
 * spread, who being "thread" or "rank"; with_n: "n" first.  An invalid
 * member id is null.  The one writer of spreads for every JSON file. */
void sm_json_spread(sm_json_t *j, const char *key, sm_spread_t sp, const char *who,
                    bool with_n) SM_HIDDEN;

/* Ranks of the job: job->n_ranks, else procs->size, else 1. */
uint32_t sm_job_ranks(const sm_job_t *job) SM_HIDDEN;
/* Why rank r has no data (sysmeasure-merge), or NULL. */
static inline const char *sm_job_missing(const sm_job_t *job, uint32_t r)
{
    return job && job->missing ? job->missing[r] : NULL;
}
/* Ranks of the job that have data (sysmeasure-merge: the others missing). */
uint32_t sm_job_ranks_present(const sm_job_t *job) SM_HIDDEN;
/* The missing ranks and why, grouped by reason, ranks as ranges:
 * "ranks 1, 3-5 (no process file ...); rank 7 (...)" into buf ("" when
 * none); cut with "..." where buf is too small. */
void sm_job_missing_text(const sm_job_t *job, char *buf, size_t len) SM_HIDDEN;

/* ---- figures derived from two counters ---- */

/* num / den x scale over the same visits: instructions per cycle, misses per
 * 1000 instructions, wherever both PAPI events were counted. */
typedef struct sm_derived {
    char name[160];
    uint32_t num, den; /* counter indices of the summary */
    double scale;
} sm_derived_t;
/* The derived figures this summary's counters allow (at most max). */
uint32_t sm_summary_derived(const sm_profile_summary_t *s, sm_derived_t *out,
                            uint32_t max) SM_HIDDEN;
/* Its value from the two sums; NAN when den is 0. */
double sm_derived_value(const sm_derived_t *d, uint64_t num, uint64_t den) SM_HIDDEN;

/* ---- communication matrix ---- */
/* Whether the job has a matrix with any message. */
bool sm_comm_matrix_any(const sm_job_t *job) SM_HIDDEN;
/* The up to max pairs with the most bytes (then messages, then lower ranks
 * first), in that order; returns how many. */
uint32_t sm_comm_matrix_top(const sm_job_t *job, sm_comm_pair_t *top, uint32_t max) SM_HIDDEN;
/* {"ranks", "messages", "bytes", "pairs": [{sender, receiver, messages,
 * bytes}] (non-zero pairs, row-major)}, or null without a matrix. */
void sm_comm_matrix_json(sm_json_t *j, const sm_job_t *job) SM_HIDDEN;
/* The same matrix in at most cells x cells blocks of consecutive ranks:
 * {"ranks", "messages", "bytes", "ranks_per_cell", "cells": [{"sender",
 * "receiver" (the first rank of each block), "messages", "bytes"}] (the
 * blocks that are not empty), "top_pairs": the SM_COMM_TOP_PAIRS pairs
 * that moved the most bytes}: its size does not grow with the ranks. */
#define SM_COMM_TOP_PAIRS 20
void sm_comm_matrix_json_binned(sm_json_t *j, const sm_job_t *job, uint32_t cells) SM_HIDDEN;

#endif
