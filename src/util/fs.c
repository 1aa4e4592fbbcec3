/* File-system helpers. */
#include "fs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int sm_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    struct stat st;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        if (stat(buf, &st) != 0)
            return -1;
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        *p = c;
        if (c == '\0')
            return 0;
    }
}
