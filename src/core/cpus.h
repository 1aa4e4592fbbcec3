/* The CPUs a process may use, and where sysmeasure's writer thread may run
 * without taking processor time from the program (SYSMEASURE_OTF2_BACKGROUND
 * = auto, manual section 9). */
#ifndef SM_CPUS_H
#define SM_CPUS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
/* Where the writer thread runs: set once at the start (the rule above),
 * applied by the writer thread to itself when it starts. */
void sm_cpus_set_writer(const cpu_set_t *set) SM_HIDDEN;
void sm_cpus_bind_writer(void) SM_HIDDEN;

#endif
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

/* The rule, apart from the machine so that it can be tested.  own: the
 * process's affinity mask; node: sm_cpus_node; need: processes on the node
 * times their threads.  Returns 1 (the writer thread may run inside own,
 * there are spare CPUs in it), 2 (on the node's CPUs outside own: writer
 * gets them) or 0 (no spare CPU). */
int sm_cpus_writer_place(const cpu_set_t *own, const cpu_set_t *node, long need,
                         cpu_set_t *writer) SM_HIDDEN;

/* Where the writer thread runs: set once at the start (the rule above),
 * applied by the writer thread to itself when it starts. */
void sm_cpus_set_writer(const cpu_set_t *set) SM_HIDDEN;
void sm_cpus_bind_writer(void) SM_HIDDEN;

#endif
