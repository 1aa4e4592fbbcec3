/* Long names made short for tables: C++ template arguments collapsed and a
 * cap on the characters, so that a table stays on the screen.  The full
 * name stays in the machine-readable files (and on hover in report.html). */
#ifndef SM_ABBREV_H
#define SM_ABBREV_H

#include <stdbool.h>
#include <stddef.h>
#include "../core/compiler.h"

/* The width tables give a name (characters, not bytes). */
#define SM_ABBREV_WIDTH 60

/* name into out (room bytes, NUL-terminated): each outermost <...> with
 * something in it becomes "<...>" (a '<' without its '>', as in
 * operator<, is kept), then at most max_chars characters (UTF-8), the last
 * three "..." when cut.  Returns whether out differs from name. */
bool sm_abbrev(const char *name, char *out, size_t room, size_t max_chars) SM_HIDDEN;

#endif
