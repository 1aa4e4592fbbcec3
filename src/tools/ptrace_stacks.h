/* The call stacks of a process not started under sysmeasure, through
 * ptrace and libunwind-ptrace, for sysmeasure-stacks PID: each thread is
 * stopped (PTRACE_SEIZE, PTRACE_INTERRUPT) for the time its stack is read,
 * then let go.  The same text as a sysmeasure process's control thread
 * writes (src/core/stacks.h). */
#ifndef SM_PTRACE_STACKS_H
#define SM_PTRACE_STACKS_H

#include <stddef.h>

/* Why the kernel would not let us trace pid, in one line ("" and 0 when it
 * may): another tracer, another user, kernel.yama.ptrace_scope. */
int sm_ptrace_refusal(long pid, char *why, size_t len);

/* Every thread's stack of pid into the file path.  0, or -1 with why. */
int sm_ptrace_stacks(long pid, const char *path, char *why, size_t len);

#endif
