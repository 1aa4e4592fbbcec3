/* Source locations for code addresses: file, line and column from the DWARF
 * debug information of the loaded object (elfutils libdw), when the object
 * was built with -g or its separate debug file is installed.  Without libdw
 * at build time every lookup fails and callers keep their other names.
 * Slow and thread-safe: each object's debug information is opened once and
 * kept for the life of the process; callers cache what they get. */
#ifndef SM_SRCLOC_H
#define SM_SRCLOC_H

#include <stdint.h>
#include "../core/compiler.h"

typedef struct sm_srcloc {
    char file[512];  /* as the compiler recorded it, usually absolute */
    uint32_t line;
    uint32_t column; /* 0 when the compiler recorded none */
} sm_srcloc_t;

/* addr must lie inside an instruction: for a return address, pass the
 * address less 1, which is inside the call.  0 when a line was found, else
 * -1 (out cleared). */
int sm_srcloc_lookup(const void *addr, sm_srcloc_t *out) SM_HIDDEN;

/* For a function's entry address: the file and line of the function's
 * declaration (where its definition begins in the source), else what
 * sm_srcloc_lookup gives.  0 or -1 likewise. */
int sm_srcloc_function(const void *addr, sm_srcloc_t *out) SM_HIDDEN;

/* The file's last path component. */
const char *sm_srcloc_basename(const char *file) SM_HIDDEN;

#endif
