/* What the fuzz harnesses share: a scratch folder for the files a reader
 * reads by path, the corpus files a harness takes as the other files of an
 * output folder, and the check that a refusal is one line.  Each harness
 * aborts when what must hold for every input does not (libFuzzer and the
 * replay driver both report an abort as a failure). */
#ifndef SM_FUZZ_COMMON_H
#define SM_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SM_FUZZ_SRCDIR
#define SM_FUZZ_SRCDIR "."
#endif

/* A check of the harness: a failure prints what and aborts. */
#define SM_FUZZ_ASSERT(cond, ...)                                                   \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz harness: %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                  \
            abort();                                                                \
        }                                                                           \
    } while (0)

static char sm_fuzz_dir_path[256];

/* The scratch folder and what the harness put there (files only). */
static inline void sm_fuzz_dir_remove(void)
{
    DIR *d = opendir(sm_fuzz_dir_path);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", sm_fuzz_dir_path, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(sm_fuzz_dir_path);
}

/* The harness's scratch folder (in memory where /dev/shm is), made once,
 * removed at exit. */
static inline const char *sm_fuzz_dir(void)
{
    if (!sm_fuzz_dir_path[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(sm_fuzz_dir_path, sizeof sm_fuzz_dir_path, "%s/sm-fuzz-XXXXXX", base);
        SM_FUZZ_ASSERT(mkdtemp(sm_fuzz_dir_path) != NULL, "no scratch folder in %s", base);
        atexit(sm_fuzz_dir_remove);
    }
    return sm_fuzz_dir_path;
}

/* data[n] as the file name in the scratch folder; its path in path. */
static inline void sm_fuzz_put(const char *name, const void *data, size_t n, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", sm_fuzz_dir(), name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    SM_FUZZ_ASSERT(fd >= 0, "cannot create %s", path);
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        SM_FUZZ_ASSERT(w > 0, "cannot write %s", path);
        p += w;
        n -= (size_t)w;
    }
    close(fd);
}

/* tests/fuzz/corpus/<harness>/<seed> (of $SM_SRCDIR, else the tree this
 * was built from), read whole: the harness's other files. */
static inline char *sm_fuzz_seed(const char *harness, const char *seed, size_t *n)
{
    const char *src = getenv("SM_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/%s/%s", src ? src : SM_FUZZ_SRCDIR, harness,
             seed);
    FILE *f = fopen(path, "rb");
    SM_FUZZ_ASSERT(f != NULL, "cannot read the seed %s (set SM_SRCDIR)", path);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0)
        if ((len += got) == cap)
            buf = realloc(buf, cap *= 2);
    fclose(f);
    SM_FUZZ_ASSERT(buf != NULL, "out of memory reading %s", path);
    *n = len;
    return buf;
}

/* A refusal's message: there, and one line without control characters
 * (a line break or a terminal's escape sequence from the file). */
static inline void sm_fuzz_one_line(const char *err)
{
    SM_FUZZ_ASSERT(err[0] != '\0', "a refusal without a message");
    for (const unsigned char *p = (const unsigned char *)err; *p; p++)
        SM_FUZZ_ASSERT(*p >= 0x20 && *p != 0x7f, "a control character (0x%02x) in: %s", *p, err);
}

#endif
