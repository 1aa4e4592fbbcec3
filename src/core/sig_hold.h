/* Signals held off the application's thread while sysmeasure is inside one
 * of its short sections that take a lock or write a file.
 *
 * A signal handler of the program may leave by siglongjmp: a lock taken by
 * the code it interrupted stays taken for ever, and the next thread to want
 * it (the writer thread, the end of the run) waits for ever.  So the places
 * where an application thread takes a lock of sysmeasure's (a new chunk, a
 * definition, a thread's first event, a call path's first visit) block every
 * signal that can be blocked, except the faults of the thread itself; a
 * signal that comes meanwhile is delivered when the section ends.  Two
 * system calls, on those rare paths only: never on an enter or a leave that
 * stays in its chunk.  Sections nest (a definition inside a new chunk): an
 * inner one changes the mask only where it blocks more.
 *
 * The end-of-run write holds the signals whose handler is the program's
 * (which may jump), not those that sysmeasure's own handler stands for
 * (ending.h): that handler holds them until the write is over, then ends the
 * process by them, and it ends a rank at once where its data is on disk and
 * the rest waits on other ranks.
 *
 * A section that writes files (io) also keeps from the program the SIGXFSZ
 * that sysmeasure's own writes raise past a file size limit (ulimit -f),
 * whose default action would end the program: the write fails with EFBIG,
 * which sysmeasure reports, and the signal is discarded (one more system
 * call, only after such a failure).  A SIGXFSZ that the program itself
 * keeps blocked is left alone. */
#ifndef SM_SIG_HOLD_H
#define SM_SIG_HOLD_H

#include <signal.h>
#include <stdbool.h>
#include "compiler.h"

typedef enum sm_sig_section {
    SM_SIG_LOCKS,     /* locks, malloc: every signal but the faults */
    SM_SIG_LOCKS_IO,  /* the same, and files written (SIGXFSZ dropped) */
    SM_SIG_END_WRITE  /* the end of the run: the program's handlers, SIGXFSZ */
} sm_sig_section_t;

void sm_sig_hold(sm_sig_section_t section) SM_HIDDEN;
/* A signal whose handler is sysmeasure's own, takes no lock and returns
 * (the sampling timer's): not held, so that a sample lands where it falls. */
void sm_sig_let_through(int sig) SM_HIDDEN;
/* Ends the innermost section: its signals are delivered (those of an
 * outer section when that one ends). */
void sm_sig_release(void) SM_HIDDEN;
/* Whether the calling thread is changing its mask for a section (what a
 * signal handler interrupted: sysmeasure's own code, ending.c). */
bool sm_sig_switching_mask(void) SM_HIDDEN;
/* A write of sysmeasure's on the calling thread failed with err: EFBIG
 * raised a SIGXFSZ, which the io section drops at its end (the end-of-run
 * write looks for one in any case: its writes are a library's too). */
void sm_sig_own_write_failed(int err) SM_HIDDEN;

#endif
