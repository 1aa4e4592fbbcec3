/* Where every thread of this process is now, for sysmeasure-stacks: each
 * thread is sent a signal whose handler takes its call stack (and, through
 * an adapter's note, the MPI call it waits in: function, peer, tag,
 * communicator); the control thread (window.h) names the frames and
 * writes them as text:
 *   process PID HOST rank R of N
 *   thread TID NAME
 *   call FUNCTION peer-kind PEER tag TAG comm COMM      (a thread in MPI)
 *   frame FUNCTION OBJECT                              (innermost first)
 *   silent TID NAME                                    (did not answer) */
#ifndef SM_STACKS_H
#define SM_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include "adapter_api.h"
#include "compiler.h"

/* The adapter's note of a thread's current call (one adapter: MPI). */
void sm_stacks_set_call_note(sm_call_note_fn fn) SM_HIDDEN;

/* Every thread's stack into the file path (written whole, then renamed).
 * 0, or -1 with why. */
int sm_stacks_write(const char *path, uint32_t rank, uint32_t n_ranks, char *why,
                    size_t len) SM_HIDDEN;

#endif
