/* sysmeasure-attach PID of a program not started under sysmeasure: the
 * core library loaded into it through ptrace (x86_64): its main thread is
 * stopped, made to call dlopen(libsysmeasure.so) and then
 * sysmeasure_injected_start(dir) (src/core/window.c), and let go.  The
 * process then has a control endpoint in dir/.control like a --dormant
 * one. */
#ifndef SM_INJECT_H
#define SM_INJECT_H

#include <stddef.h>

/* 0, or -1 with why (one line: the kernel refuses ptrace, another C
 * library, the call failed). */
int sm_inject_core(long pid, const char *dir, int process_sampling, char *why, size_t len);

#endif
