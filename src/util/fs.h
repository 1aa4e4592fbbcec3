/* File-system helpers shared by the runtime and the tools. */
#ifndef SM_FS_H
#define SM_FS_H

#include "../core/compiler.h"

/* mkdir -p: creates path and its missing parents (0755).  A folder that
 * appears meanwhile (another rank, another thread) is fine; a component that
 * exists but is not a folder is ENOTDIR.  0, or -1 with errno. */
int sm_mkdir_p(const char *path) SM_HIDDEN;

#endif
