/* Windows of a --dormant run (SYSMEASURE_DORMANT): measurement switched on
 * and off from outside by sysmeasure-attach, each window written as the
 * process files of an output folder of its own, which the tool merges.
 *
 * The control endpoint is a folder of files, so that it reaches processes
 * on other nodes through a shared file system (Unix sockets do not cross
 * nodes there): <output>/.control/
 *   <host>.<pid>           this process's endpoint (pid, host, program)
 *   request                a request to every process of the job
 *   <host>.<pid>.request   a request to this process alone
 *   <host>.<pid>.state     this process's answer
 * A request is one line "SEQ on FOLDER", "SEQ off" or "SEQ stacks" (written
 * under another name and renamed into place); the answer "SEQ
 * on|written|ended|stacks|failed|busy TEXT" (stacks: every thread's call
 * stack in <host>.<pid>.stacks, stacks.h).  A thread of ours waits for requests in poll() on an inotify
 * descriptor of the folder (at once for changes made on this node), waking
 * once a second to read the files again (changes made on another node,
 * which inotify does not see); it never spins. */
#ifndef SM_WINDOW_H
#define SM_WINDOW_H

#include "compiler.h"

#define SM_WINDOW_CONTROL_DIR ".control"

/* At the start of a --dormant process (or one with SYSMEASURE_CONTROL: its
 * endpoint answers stacks requests only): its endpoint and its control
 * thread.  0, or -1 after one line (the process runs on). */
int sm_window_start(void) SM_HIDDEN;

/* The run ends (exit, MPI_Finalize; not from a signal handler): a window
 * still open is written first, then the endpoint goes. */
void sm_window_at_end(void) SM_HIDDEN;

/* In a forked child: the parent's endpoint and thread are not its own. */
void sm_window_after_fork_child(void) SM_HIDDEN;

#endif
