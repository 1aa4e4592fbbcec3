/* The replay driver of a fuzz harness (tests/fuzz/fuzz_NAME.c), built
 * normally (gcc, no libFuzzer) as the unit test tests/unit/test-fuzz-NAME:
 * it feeds files to the harness's LLVMFuzzerTestOneInput, one call each,
 * as libFuzzer would.
 *
 *   test-fuzz-NAME                every file of tests/fuzz/corpus/NAME and
 *                                 tests/fuzz/regress/NAME (of $SM_SRCDIR,
 *                                 else the source tree it was built from)
 *   test-fuzz-NAME FILE|FOLDER..  those files (a crash found by
 *                                 `make check-fuzz`, to debug it)
 *
 * The harness checks what must hold for every input (it aborts when not);
 * here each input must also return within SM_REPLAY_SECONDS (a hang is a
 * failure, as libFuzzer's -timeout makes it), and the corpus must not be
 * empty.  Exit 0 with one line per folder, 1 on the first failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef SM_FUZZ_NAME
#error "SM_FUZZ_NAME: the harness's name (the Makefile defines it)"
#endif
#ifndef SM_FUZZ_SRCDIR
#define SM_FUZZ_SRCDIR "."
#endif

/* Longer than any input takes (most take microseconds). */
#define SM_REPLAY_SECONDS 20

static const char *sm_replay_current = "";

static void sm_replay_timeout(int sig)
{
    (void)sig;
    static const char msg[] = "test-fuzz: an input ran longer than 20 s (a hang): ";
    ssize_t w = write(2, msg, sizeof msg - 1);
    w = write(2, sm_replay_current, strlen(sm_replay_current));
    w = write(2, "\n", 1);
    (void)w;
    _exit(1);
}

/* One file through the harness: 0, or -1 when it cannot be read. */
static int sm_replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "test-fuzz: cannot read %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "test-fuzz: out of memory reading %s\n", path);
        return -1;
    }
    /* An exact-size copy, so that ASan (where built with it) sees reads
     * past the input's end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    sm_replay_current = path;
    alarm(SM_REPLAY_SECONDS);
    LLVMFuzzerTestOneInput(exact, n);
    alarm(0);
    free(exact);
    return 0;
}

static int sm_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of folder (sorted, for a stable order); *count adds
 * them.  0, or -1 on a failure.  A missing folder is empty when optional. */
static int sm_replay_folder(const char *folder, int optional, unsigned *count)
{
    DIR *d = opendir(folder);
    if (!d) {
        if (optional)
            return 0;
        fprintf(stderr, "test-fuzz: cannot open %s\n", folder);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, cap * sizeof *names);
            if (!more)
                break;
            names = more;
        }
        if (asprintf(&names[n], "%s/%s", folder, e->d_name) < 0)
            break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, sm_by_name);
    int rc = 0;
    unsigned here = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            rc = sm_replay_file(names[i]);
            here++;
        }
        free(names[i]);
    }
    free(names);
    printf("%s: %u input%s replayed\n", folder, here, here == 1 ? "" : "s");
    *count += here;
    return rc;
}

/* A harness may set itself up once (libFuzzer calls it before the first
 * input; the merge's harnesses make their folder there). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int main(int argc, char **argv)
{
    signal(SIGALRM, sm_replay_timeout);
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    unsigned count = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            struct stat st;
            int folder = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode);
            if ((folder ? sm_replay_folder(argv[i], 0, &count) : sm_replay_file(argv[i])) != 0)
                return 1;
            count += !folder;
        }
        printf("test-fuzz-%s: %u inputs, no failure\n", SM_FUZZ_NAME, count);
        return 0;
    }
    const char *src = getenv("SM_SRCDIR");
    char corpus[4096], regress[4096];
    snprintf(corpus, sizeof corpus, "%s/tests/fuzz/corpus/%s", src ? src : SM_FUZZ_SRCDIR,
             SM_FUZZ_NAME);
    snprintf(regress, sizeof regress, "%s/tests/fuzz/regress/%s", src ? src : SM_FUZZ_SRCDIR,
             SM_FUZZ_NAME);
    if (sm_replay_folder(corpus, 0, &count) != 0 || sm_replay_folder(regress, 1, &count) != 0)
        return 1;
    if (!count) {
        fprintf(stderr, "test-fuzz-%s: the corpus %s is empty\n", SM_FUZZ_NAME, corpus);
        return 1;
    }
    printf("test-fuzz-%s: %u inputs, no failure\n", SM_FUZZ_NAME, count);
    return 0;
}
