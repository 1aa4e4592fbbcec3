/* What the modules of src/causal share (causal.h says what it does). */
#ifndef SM_CAUSAL_INTERNAL_H
#define SM_CAUSAL_INTERNAL_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/config.h"
#include "../core/location.h"

/* ------------------------------------------------------------ scope (causal_scope.c) */

/* A function that experiments may choose: its code [lo, hi). */
typedef struct sm_causal_fn {
    uintptr_t lo, hi;
    const char *name;   /* as the symbol table has it */
    const char *object; /* the file it comes from */
    uint64_t hash;      /* of the name (never 0): names it across processes */
} sm_causal_fn_t;

/* The functions of the binaries in scope (cfg's regexes, else the program
 * and its own libraries: never the C library, MPI, CUDA, sysmeasure),
 * sorted by address.  0, or -1 after one line (a bad regex, nothing in
 * scope). */
int sm_causal_scope_load(const sm_config_t *cfg) SM_HIDDEN;
/* The function holding pc, or -1.  Safe in a signal handler (a binary
 * search over a table made at start). */
int32_t sm_causal_scope_find(uintptr_t pc) SM_HIDDEN;
uint32_t sm_causal_scope_count(void) SM_HIDDEN;
/* The function whose name has this hash, or -1. */
int32_t sm_causal_scope_by_hash(uint64_t hash) SM_HIDDEN;
uint64_t sm_causal_name_hash(const char *name) SM_HIDDEN;
const sm_causal_fn_t *sm_causal_scope_fn(uint32_t i) SM_HIDDEN;
/* How many binaries are in scope (for the summary). */
uint32_t sm_causal_scope_objects(void) SM_HIDDEN;

/* ------------------------------------------------------------ delays (causal_delay.c) */

/* The experiment under way, as the sample handlers see it. */
extern volatile int32_t sm_causal_selected SM_HIDDEN;   /* function, or -1 */
extern volatile uint64_t sm_causal_delay_ns SM_HIDDEN;  /* per period in it */
/* Line mode: the chosen line's addresses inside the chosen function
 * (published before sm_causal_selected). */
#define SM_CAUSAL_MAX_RANGES 64
typedef struct sm_causal_range {
    uintptr_t lo, hi;
} sm_causal_range_t;
extern sm_causal_range_t sm_causal_line_ranges[SM_CAUSAL_MAX_RANGES] SM_HIDDEN;
extern volatile uint32_t sm_causal_line_n SM_HIDDEN; /* 0: the whole function */

/* The hash of a function a sample hit lately (0: none), in the state the
 * processes of a job share on a node: the next experiment's; *offset the
 * sample's address from the function's start (for line mode). */
uint64_t sm_causal_candidate(uint64_t *offset) SM_HIDDEN;
void sm_causal_candidate_clear(void) SM_HIDDEN;

/* Timers and the handler.  job: the processes of a job share the delay
 * count with the others of their node (shared memory named by the job).
 * 0, or -1 after one line. */
int sm_causal_delay_init(const sm_config_t *cfg, int job) SM_HIDDEN;
void sm_causal_delay_thread_begin(sm_location_t *loc) SM_HIDDEN;
void sm_causal_delay_thread_end(sm_location_t *loc) SM_HIDDEN;
void sm_causal_delay_stop(void) SM_HIDDEN;
/* Delays inserted so far in this process (ns, the global count). */
uint64_t sm_causal_global_delay(void) SM_HIDDEN;
/* Samples so far in the chosen function, and each function's samples. */
uint64_t sm_causal_selected_samples(void) SM_HIDDEN;
uint64_t sm_causal_function_samples(uint32_t fn) SM_HIDDEN;
/* Totals for the summary: samples taken, time slept paying delays. */
uint64_t sm_causal_total_samples(void) SM_HIDDEN;
uint64_t sm_causal_paid_ns(void) SM_HIDDEN;
uint64_t sm_causal_period_ns(void) SM_HIDDEN;
const char *sm_causal_sample_source(void) SM_HIDDEN; /* for the summary */
uint32_t sm_causal_threads(void) SM_HIDDEN;

/* ------------------------------------------------------------ progress (causal_progress.c) */

#define SM_CAUSAL_MAX_POINTS 16

typedef struct sm_causal_counts {
    uint64_t visits[SM_CAUSAL_MAX_POINTS];     /* throughput points; latency ends */
    uint64_t arrivals[SM_CAUSAL_MAX_POINTS];   /* latency begins */
} sm_causal_counts_t;

/* Reads cfg's causal_progress (region names).  0, or -1 after one line. */
int sm_causal_progress_init(const sm_config_t *cfg) SM_HIDDEN;
/* Points defined so far, their names and kinds, and a copy of the counts. */
uint32_t sm_causal_points(void) SM_HIDDEN;
const char *sm_causal_point_name(uint32_t i) SM_HIDDEN;
int sm_causal_point_is_latency(uint32_t i) SM_HIDDEN;
void sm_causal_counts_now(sm_causal_counts_t *out) SM_HIDDEN;

/* ------------------------------------------------------------ experiments (causal.c) */

typedef struct sm_causal_exp {
    uint32_t no;               /* its number in the job's plan */
    int32_t fn;                /* index in the scope; -1: not in this process */
    uint64_t hash;             /* of the function's name */
    uint32_t line;             /* line mode: the source line chosen, else 0 */
    uint64_t offset;           /* line mode: an address of it, from the function's start */
    uint32_t speedup;          /* percent */
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    uint64_t delay_ns;         /* inserted while it ran */
    uint64_t selected_samples;
    uint32_t ranks;            /* that ran it (the job's sum at rank 0), 0: this one */
    sm_causal_counts_t before; /* the points' totals at its start */
    sm_causal_counts_t delta;  /* progress while it ran */
} sm_causal_exp_t;

/* The experiments run (complete ones), the run's start and end. */
uint32_t sm_causal_experiments(const sm_causal_exp_t **out) SM_HIDDEN;
uint32_t sm_causal_experiments_mut(sm_causal_exp_t **out) SM_HIDDEN; /* for the job's sums */
uint64_t sm_causal_startup_ns(void) SM_HIDDEN;
uint64_t sm_causal_end_ns(void) SM_HIDDEN;

uint64_t sm_causal_now_ns(void) SM_HIDDEN; /* CLOCK_MONOTONIC */

#endif
