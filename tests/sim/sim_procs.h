/* A job of P simulated ranks in one process, for the scale harness
 * (bench/bench-scale, tests/unit/test-scale).
 *
 * Every rank is a coroutine (ucontext) on its own small stack, cut from one
 * MAP_NORESERVE mapping and given back (MADV_DONTNEED) when the rank ends.
 * The ranks talk through sm_procs_t exactly as the end of a real run does
 * over MPI: send appends a copy to the destination's mailbox (eager, never
 * blocks), recv switches to the scheduler until the message is there;
 * bcast, barrier, gather and the allreduces are built over send/recv the way
 * an MPI library builds them (binomial trees; a dissemination barrier), so
 * the messages and their sizes are those a real job would exchange.  The
 * scheduler is deterministic: sweeps over the ranks in rank order, resuming
 * each one that can go on.
 *
 * What it measures, per rank: its own CPU time (CLOCK_THREAD_CPUTIME_ID
 * between the switches, without the transport's bookkeeping and without
 * the sections the rank marks as untimed, where the synthetic data is
 * made), and two virtual clocks that give the critical path, the time the
 * real job would wait for:
 *   - cpu: a rank's clock advances by its own CPU time; a received message
 *     moves it to at least the sender's clock at the send (network free);
 *   - net: the same with a simple network: a send keeps the sender busy
 *     len / SIM_NET_BYTES_PER_S, and the message arrives SIM_NET_LATENCY_S
 *     after that.
 * The largest clock over the ranks at the end of a phase is the critical
 * path up to there (the longest chain of dependent work and messages).
 * Also: the messages rank 0 received, per phase, and, when the program
 * reports its allocations (sim_mem_note, from a malloc wrapper), every
 * rank's live bytes and rank 0's peak. */
#ifndef SM_SIM_PROCS_H
#define SM_SIM_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/procs.h"

#define SIM_MAX_PHASES 8
#define SIM_NET_LATENCY_S 2e-6     /* per message */
#define SIM_NET_BYTES_PER_S 10e9   /* one link, 10 GB/s */

/* The code of one rank: runs in the rank's coroutine. */
typedef void (*sim_rank_fn)(const sm_procs_t *procs, void *arg);

typedef struct sim_phase_stats {
    const char *name;           /* NULL: phase not used */
    double crit_cpu_s;          /* largest cpu clock at the phase's end */
    double crit_net_s;          /* the same with the network model */
    double all_cpu_s;           /* sum of every rank's CPU time in it */
    double root_cpu_s;          /* rank 0's own CPU time in it */
    double max_cpu_s;           /* the largest one rank's CPU time in it */
    uint32_t max_cpu_rank;
    double last_cpu_s;          /* rank P-1's (a leaf of every tree) */
    uint64_t root_msgs, root_bytes, root_max_msg; /* received by rank 0 */
    uint64_t all_msgs, all_bytes;                 /* every message sent */
    int64_t root_peak_bytes;    /* rank 0's live bytes, highest in the phase */
} sim_phase_stats_t;

typedef struct sim_stats {
    uint32_t n_ranks;
    double wall_s;           /* the whole simulation, one core */
    double ranks_cpu_s;      /* sum of the ranks' timed CPU time */
    double untimed_s;        /* CPU time in untimed sections (synthetic data) */
    double crit_cpu_s, crit_net_s; /* at the end */
    uint64_t switches;       /* coroutine switches */
    uint64_t sweeps;         /* scheduler sweeps over the ranks */
    size_t max_stack_bytes;  /* the most stack one rank touched */
    int64_t root_peak_bytes; /* over the whole run */
    sim_phase_stats_t phase[SIM_MAX_PHASES];
} sim_stats_t;

/* Runs fn on n_ranks simulated ranks until all return.  0, or -1 (a rank
 * blocked for ever, a stack overflowed, out of memory: message printed). */
int sim_run(uint32_t n_ranks, sim_rank_fn fn, void *arg, sim_stats_t *stats);

/* From a rank: phase k (< SIM_MAX_PHASES) starts now; name for the report. */
void sim_phase(uint32_t k, const char *name);
/* From a rank: the CPU time between these two is not the exchange's
 * (making the synthetic data); nestable. */
void sim_untimed_begin(void);
void sim_untimed_end(void);

/* The rank running now, or -1 (the scheduler, or outside sim_run). */
extern int64_t sim_current;
/* For a malloc wrapper: delta bytes allocated (> 0) or freed (< 0) by the
 * running rank.  Safe to call at any time (it never allocates). */
void sim_mem_note(int64_t delta);

#endif
