/* Shared by the fuzz harnesses of the merge's readers (tests/fuzz/fuzz_*.c):
 * a private folder for the files the readers take by path, and the first
 * input byte as the harness's mode.
 *
 * Mode bit 0 set: the harness recomputes the file's checks (checksums,
 * lengths) after the fuzzer's changes, so that crafted contents reach the
 * parsers behind them, as a file made with intent would; clear: the bytes
 * as they are, which the checks must refuse or the readers survive. */
#ifndef SM_FUZZ_MERGE_COMMON_H
#define SM_FUZZ_MERGE_COMMON_H

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/core/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char fuzz_dir[256]; /* a short folder of /tmp (paths built on it stay well below PATH_MAX) */

/* Removes folder path and everything in it (the harness's own files). */
static void fuzz_rm_rf(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            fuzz_rm_rf(sub);
        else
            unlink(sub);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

static void fuzz_cleanup(void)
{
    if (fuzz_dir[0])
        fuzz_rm_rf(fuzz_dir);
}

/* Once per process: never measure the harness itself; a folder of its own. */
static void fuzz_setup(void)
{
    if (fuzz_dir[0])
        return;
    sm_runtime_discard_output();
    const char *base = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/sm-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(fuzz_dir)) {
        perror("mkdtemp");
        abort();
    }
    atexit(fuzz_cleanup);
}

/* data into a new file dir/name (made with its folders); its path in out. */
static int fuzz_write(const char *dir, const char *name, const uint8_t *data, size_t size,
                      char *out, size_t len)
{
    mkdir(dir, 0755);
    if ((size_t)snprintf(out, len, "%s/%s", dir, name) >= len)
        return -1; /* (never: the folder is short) */
    unlink(out);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    return done == size ? 0 : -1;
}

/* A name no earlier input used: the readers keep what they learnt of a
 * file by its path (and inode), and every input is a new file. */
static const char *fuzz_fresh_name(const char *prefix, const char *suffix)
{
    static unsigned long long n;
    static char name[128];
    snprintf(name, sizeof name, "%s%llu%s", prefix, ++n, suffix);
    return name;
}

#endif
