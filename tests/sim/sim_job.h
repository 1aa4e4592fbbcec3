/* A synthetic job for the scale harness: every rank's definitions and
 * profile, deterministic from (seed, rank), and the end-of-run exchange each
 * simulated rank runs on them (sim_procs.h): the real sm_unify_set for the
 * definitions, then the real profile step (sim_profile_step).
 *
 * The data, per rank r of P:
 * - regions: 11 of a skeleton (main, init, solve, exchange, finalize and
 *   six MPI functions), 40 kernels, all common to every rank; about 4 of 32
 *   "role" regions, chosen by r; ranks with r % SIM_OWN_EVERY == 5 one
 *   region of their own ("rank_R_io", io.c line R + 1).  Each rank defines them in its own
 *   order, so its ids differ from the others'.
 * - communicators: MPI_COMM_SELF, MPI_COMM_WORLD, the split by r % 4
 *   (leader r % 4), two pairwise ones ({r & ~1, r | 1} and {r & ~2, r | 2}),
 *   and an OpenMP team on ranks with two threads; three named metrics (one
 *   only on even ranks) and an attribute.
 * - profile: one or two threads; each thread's call tree is a subset of one
 *   catalogue of 240 call paths (depth up to 8) shared by the job, 20 to 200
 *   paths for the first thread, 20 to 120 for the second, plus main/rank_R_io
 *   where r has that region.  Visits and times are integers (ns, one tick a
 *   ns); main/solve has 10 visits of about 2 ms, five times that
 *   (SIM_PLANTED_FACTOR) on the planted ranks P/3 and P-2.
 *
 * The values of a thread's path are a pure function of (seed, rank, thread,
 * path), so a test computes the job's statistics directly from them.  With
 * `bounded`, the job has no definitions that grow with P (no pairwise
 * communicators, teams or regions of one rank's own). */
#ifndef SM_SIM_JOB_H
#define SM_SIM_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/profile.h"
#include "merge/profile_summary.h"
#include "merge/unify.h"

#define SIM_CATALOGUE 240
#define SIM_MAX_DEPTH 8
#define SIM_PLANTED_FACTOR 5
#define SIM_SOLVE_VISITS 10
#define SIM_OWN_EVERY 512

/* Global region indices: the skeleton, kernels, roles, then one of its own
 * per rank that has one (SIM_G_OWN + rank). */
enum {
    SIM_G_MAIN, SIM_G_INIT, SIM_G_SOLVE, SIM_G_EXCHANGE, SIM_G_FINALIZE,
    SIM_G_MPI_INIT, SIM_G_MPI_SEND, SIM_G_MPI_RECV, SIM_G_MPI_ALLREDUCE, SIM_G_MPI_BARRIER,
    SIM_G_MPI_FINALIZE,
    SIM_G_SKELETON,
    SIM_G_KERNELS = SIM_G_SKELETON, SIM_N_KERNELS = 40,
    SIM_G_ROLES = SIM_G_KERNELS + SIM_N_KERNELS, SIM_N_ROLES = 32,
    SIM_G_OWN = SIM_G_ROLES + SIM_N_ROLES,
};
/* Catalogue index of main/solve; SIM_PATH_OWN: main/rank_R_io. */
#define SIM_PATH_SOLVE 3u
#define SIM_PATH_OWN SIM_CATALOGUE

/* Phases of the exchange, as sim_stats_t reports them. */
enum { SIM_PH_SETUP, SIM_PH_UNIFY, SIM_PH_PROFILES, SIM_PH_LIVE };

typedef struct sim_path {
    int32_t parent;  /* catalogue index, -1 for main */
    uint32_t region; /* global region index */
    uint32_t depth;  /* main 1 */
} sim_path_t;

typedef struct sim_job {
    /* ---- set by the caller */
    uint32_t n_ranks;
    uint64_t seed;
    bool keep_maps;  /* every rank's maps, for a test (all_maps) */
    bool live;       /* also replay live.c's other collectives */
    /* Where the union goes: every rank (live.c today), or rank 0 only. */
    sm_unify_scope_t scope;
    /* Definitions that do not grow with P: no pairwise communicators, no
     * teams, no regions of one rank's own (the unification's own cost). */
    bool bounded;
    bool unify_only; /* no profile step */
    /* ---- made by sim_job_init */
    uint32_t planted[2];
    sim_path_t paths[SIM_CATALOGUE];
    uint32_t *split_members[4]; /* the split by rank % 4, shared read-only */
    uint32_t split_size[4];
    /* ---- results */
    sm_defset_t *global;           /* the union at rank 0 */
    sm_id_maps_t *all_maps;        /* [n_ranks] with keep_maps */
    sm_profile_summary_t *summary; /* the job's, at rank 0 */
    uint32_t failures;             /* ranks whose exchange failed */
    uint64_t root_blob_bytes;      /* rank 0's own profile blob */
} sim_job_t;

int sim_job_init(sim_job_t *job, uint32_t n_ranks, uint64_t seed);
void sim_job_free(sim_job_t *job);

/* The code of every simulated rank (a sim_rank_fn; arg: the sim_job_t). */
void sim_job_rank(const sm_procs_t *procs, void *arg);

/* The profile step: every rank's blob in, the job's summary out at rank 0
 * (NULL elsewhere).  Today pipeline.c's step (sm_tree_gather, then
 * sm_profile_summary_from_blobs); when the reduction up the tree lands,
 * sm_profiles_reduce(procs, blob, len, n_ranks) replaces its body. */
sm_profile_summary_t *sim_profile_step(const sm_procs_t *procs, const void *blob, uint64_t len,
                                       uint32_t n_ranks);

/* ---- the synthetic data, for direct computations */

/* Region g's name (buf for a rank's own), file (NULL) and line. */
const char *sim_region_name(uint32_t g, char *buf, size_t size);
const char *sim_region_file(uint32_t g);
uint32_t sim_region_line(uint32_t g);
uint8_t sim_region_paradigm(uint32_t g);

/* Whether rank r has its own region; its number of threads (1 or 2). */
bool sim_rank_has_own(uint32_t r);
uint32_t sim_rank_threads(const sim_job_t *job, uint32_t r);
/* The regions rank r defines, in its order (ids 0, 1, ...): their count;
 * out has room for SIM_G_OWN + 1. */
uint32_t sim_rank_regions(const sim_job_t *job, uint32_t r, uint32_t *out);

/* Thread t of rank r: which catalogue paths it has (sel[SIM_CATALOGUE + 1],
 * the last for main/rank_R_io). */
void sim_thread_paths(const sim_job_t *job, uint32_t r, uint32_t t, bool *sel);

/* The values of path p (catalogue index or SIM_PATH_OWN) on thread t of
 * rank r, its children in sel counted in incl. */
typedef struct sim_values {
    uint64_t visits, incl, excl, sent, received;
} sim_values_t;
void sim_thread_values(const sim_job_t *job, uint32_t r, uint32_t t, const bool *sel,
                       sim_values_t *v /* [SIM_CATALOGUE + 1] */);

/* The communicators rank r defines, in its order. */
typedef struct sim_comm {
    sm_comm_key_t key; /* a team's leader: SM_COMM_LEADER_PROCESS */
    const char *name;
    uint32_t size;
    const uint32_t *members; /* NULL: world or self */
    uint32_t parent;         /* index in the rank's list, or SM_COMM_NONE */
    uint32_t pair[2];        /* storage of a pair's members */
} sim_comm_t;
uint32_t sim_rank_comms(const sim_job_t *job, uint32_t r, sim_comm_t *out /* [6] */);

/* Rank r's definitions as a set (the real sm_defset_from_lists). */
sm_defset_t *sim_rank_defset(const sim_job_t *job, uint32_t r);

#endif
