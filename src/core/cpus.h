/* The CPUs a process may use, and where sysmeasure's writer thread may run
 * without taking processor time from the program (SYSMEASURE_OTF2_BACKGROUND
 * = auto, manual section 9).  cpu_set_t: the includer defines _GNU_SOURCE
 * first. */
#ifndef SM_CPUS_H
#define SM_CPUS_H

#include <sched.h>
#include <stddef.h>

#include "compiler.h"

/* A kernel CPU list ("0-3,8,10-11") into set.  0, or -1 (not a list). */
int sm_cpus_parse_list(const char *text, cpu_set_t *set) SM_HIDDEN;

/* "0-3,8" for set, into out (cut at len). */
void sm_cpus_format(const cpu_set_t *set, char *out, size_t len) SM_HIDDEN;

/* The CPUs the processes of this one's cpuset cgroup may use, online ones
 * only (the node's when no cpuset is found); what told it into source. */
int sm_cpus_node(cpu_set_t *set, const char **source) SM_HIDDEN;

/* Slurm's tasks on node node_id from a list such as "2(x3),1" (as in
 * SLURM_STEP_TASKS_PER_NODE); 0 when it is not there. */
long sm_cpus_slurm_tasks(const char *per_node, long node_id) SM_HIDDEN;

/* The rule, apart from the machine.  own: the process's affinity mask;
 * node: sm_cpus_node; need: processes on the node times their threads.
 * Returns 1 (spare CPUs in own: the writer thread runs there, *writer =
 * own), 2 (spare CPUs on the node outside own: *writer = those) or 0. */
int sm_cpus_writer_place(const cpu_set_t *own, const cpu_set_t *node, long need,
                         cpu_set_t *writer) SM_HIDDEN;

/* Where the writer thread runs: set once at the start (the rule above),
 * applied by the writer thread to itself when it starts. */
void sm_cpus_set_writer(const cpu_set_t *set) SM_HIDDEN;
void sm_cpus_bind_writer(void) SM_HIDDEN;

/* The end of the run: how many threads may encode the trace, and where.
 * By then the program's threads are done, so a process may use its share
 * of the CPUs: those of its mask and, where the launcher said how many
 * processes run on the node (known), the node's, divided among them.
 * Returns that count (1 or more, at most SM_CPUS_END_MAX), the CPUs in
 * *set. */
#define SM_CPUS_END_MAX 16
int sm_cpus_end_share(const cpu_set_t *own, const cpu_set_t *node, long local, int known,
                      cpu_set_t *set) SM_HIDDEN;
/* Set once at the start; threads 0 leaves the default: the CPUs of the
 * process's mask (sysmeasure-merge). */
void sm_cpus_set_end(const cpu_set_t *set, int threads) SM_HIDDEN;
int sm_cpus_end_threads(void) SM_HIDDEN;
/* The calling thread (an encoder of the end) onto those CPUs. */
void sm_cpus_bind_end(void) SM_HIDDEN;

#endif
