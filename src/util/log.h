/* sysmeasure's own messages: one line each on stderr, prefixed "sysmeasure: "
 * (a tool's own name in the tools: "sysmeasure-merge: ").
 * Never on stdout, which belongs to the application. */
#ifndef SM_LOG_H
#define SM_LOG_H

#include "../core/compiler.h"

void sm_log_set_verbosity(int level) SM_HIDDEN;
/* The name the lines start with; a string that lives as long as the
 * process (a tool's main sets it first thing). */
void sm_log_set_program(const char *name) SM_HIDDEN;
int sm_log_verbosity(void) SM_HIDDEN;
void sm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2))) SM_HIDDEN;
void sm_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2))) SM_HIDDEN;
/* Makes text fit in one line of a message: each control character (a line
 * break, an escape sequence's ESC, DEL) becomes '?'.  Every message passes
 * through it; so do messages built from a file's content before they are
 * handed on (a reader's err). */
void sm_log_one_line(char *text) SM_HIDDEN;
/* Printed when the verbosity is at least level. */
void sm_info(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3))) SM_HIDDEN;
/* -v -v: the end of a timed step, "end of run: DONE took N ms" since the
 * previous call (done NULL: only starts the next step), so that a slow end
 * of run says where its time went. */
void sm_log_step(const char *done) SM_HIDDEN;

#endif
