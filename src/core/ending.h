/* How a measured process ends: once, completely, with the status it would
 * have had without sysmeasure.
 *
 * - exit(): the first thread to call it ends the process; another thread
 *   calling it meanwhile waits for that end (as a thread-safe exit does), so
 *   the end-of-run write is never cut short and the first exit code stays.
 *   A return from main takes the same way.
 * - Signals whose default action ends the process: where the disposition is
 *   SIG_DFL, sysmeasure's handler has the output written, then the process
 *   dies by the same signal (default action, so the wait status is
 *   unchanged).  A signal sent to the process (kill: Slurm, mpirun, a
 *   timeout) is handed to sysmeasure's ending thread and the handler
 *   returns, so that the thread it interrupted leaves whatever lock it held
 *   (malloc's, stdio's) before the write needs it; a fault, a signal the
 *   program raised at itself, and one that lands inside sysmeasure's own
 *   code are written on the thread itself (ending.c says why).  A
 *   signal that arrives while the output is being written is held until the
 *   write is done, whichever thread it lands on.  What the application
 *   ignores or handles stays the application's: its sigaction/signal calls
 *   go to the kernel, and it sees SIG_DFL where sysmeasure's handler stands
 *   in for the default. */
#ifndef SM_ENDING_H
#define SM_ENDING_H

#include <stdbool.h>
#include "compiler.h"

/* Where the end-of-run write stands. */
enum {
    SM_END_RUNNING = 0,  /* nothing written yet */
    SM_END_WRITING = 1,  /* a thread writes; nothing it waits for can be lost */
    SM_END_SAVED = 2,    /* this process's data is on disk; the rest waits on
                          * other processes (MPI_Finalize) */
    SM_END_DONE = 3
};

/* Installs the handler on every terminating signal whose disposition is
 * SIG_DFL (the runtime calls it once, at init). */
void sm_ending_install(void) SM_HIDDEN;

/* Whether sysmeasure's handler stands for sig's default action now (the
 * program set no handler of its own). */
bool sm_ending_stands_for(int sig) SM_HIDDEN;

/* The calling thread starts the end-of-run write: 0, or -1 when another
 * thread already did (then the caller must not write). */
int sm_ending_begin_write(void) SM_HIDDEN;
/* The write reached the point where this process's data is on disk. */
void sm_ending_saved(void) SM_HIDDEN;
/* The write is over.  A signal held meanwhile ends the process now, by that
 * signal; at_exit: the process is in exit(), so the application's stdio is
 * flushed first, as exit() would have. */
void sm_ending_end_write(bool at_exit) SM_HIDDEN;
/* Waits until the write another thread does is over (not from a signal
 * handler). */
void sm_ending_wait_done(void) SM_HIDDEN;
int sm_ending_phase(void) SM_HIDDEN;
/* The calling thread is the one writing. */
bool sm_ending_writer_is_self(void) SM_HIDDEN;

/* Claims the end of the process for the calling thread (exit, return from
 * main); a second thread that calls it waits for the process to end. */
void sm_ending_exit_gate(void) SM_HIDDEN;

/* A forked child starts over (no write of its own, no claim). */
void sm_ending_after_fork_child(void) SM_HIDDEN;
/* A forked child that measures on (after daemon(), or of a program's
 * family): its own ending thread. */
void sm_ending_child_measures(void) SM_HIDDEN;
/* The calling thread is about to create a thread (the program's or one of
 * sysmeasure's): the process's ending thread starts first, if it has none
 * yet (ending.c says why not before). */
void sm_ending_before_thread(void) SM_HIDDEN;

#endif
