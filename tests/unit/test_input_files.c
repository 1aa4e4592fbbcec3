/* Input files (src/util/fs.c): what sm_fs_open_input and sm_fs_read_input
 * take and refuse, by how a file is reached (named, found, own), the size
 * cap to the byte, and the words of each refusal; the number checks of the
 * JSON reader (sm_jv_whole, sm_jv_finite). */
#define _GNU_SOURCE
#include "util/fs.h"
#include "util/json_read.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/sm-test-input-XXXXXX";

static const char *at(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static void put(const char *name, const char *text, size_t n)
{
    FILE *f = fopen(at(name), "wb");
    CHECK(f && fwrite(text, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* The errno of a read that must fail (0 when it read). */
static int refused(const char *name, sm_fs_input_t how, size_t max)
{
    size_t len = 0;
    errno = 0;
    char *buf = sm_fs_read_input(at(name), how, max, &len);
    int e = buf ? 0 : errno;
    free(buf);
    return e;
}

static const char *why(const char *name, sm_fs_input_t how, int err, size_t max)
{
    static char buf[300];
    return sm_fs_input_why(at(name), how, err, max, buf, sizeof buf);
}

static void test_kinds(void)
{
    put("plain", "0123456789", 10);
    CHECK(symlink(at("plain"), at("link")) == 0);
    CHECK(symlink("/dev/zero", at("zero")) == 0);
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    CHECK(mkdir(at("folder"), 0700) == 0);

    size_t len = 0;
    char *buf = sm_fs_read_input(at("plain"), SM_FS_INPUT_FOUND, 100, &len);
    CHECK(buf && len == 10 && !strcmp(buf, "0123456789"));
    free(buf);
    /* A link: followed where the user named the path, not where found. */
    CHECK_EQ_U(refused("link", SM_FS_INPUT_NAMED, 100), 0);
    CHECK_EQ_U(refused("link", SM_FS_INPUT_FOUND, 100), SM_FS_SYMLINK);
    CHECK_STR(why("link", SM_FS_INPUT_FOUND, SM_FS_SYMLINK, 100),
              "is a symbolic link (not followed)");
    /* What is no regular file is refused without waiting or reading. */
    CHECK_EQ_U(refused("zero", SM_FS_INPUT_NAMED, 100), SM_FS_NOT_REGULAR);
    CHECK_STR(why("zero", SM_FS_INPUT_NAMED, SM_FS_NOT_REGULAR, 100),
              "is a character device, not a regular file");
    CHECK_EQ_U(refused("fifo", SM_FS_INPUT_NAMED, 100), SM_FS_NOT_REGULAR);
    CHECK_STR(why("fifo", SM_FS_INPUT_NAMED, SM_FS_NOT_REGULAR, 100),
              "is a FIFO, not a regular file");
    CHECK_EQ_U(refused("folder", SM_FS_INPUT_NAMED, 100), EISDIR);
    CHECK_STR(why("folder", SM_FS_INPUT_NAMED, EISDIR, 100), "is a folder");
    CHECK_EQ_U(refused("none", SM_FS_INPUT_NAMED, 100), ENOENT);
    CHECK_STR(why("none", SM_FS_INPUT_NAMED, ENOENT, 100),
              "cannot be read: No such file or directory");
    CHECK(sm_fs_input_refused(SM_FS_NOT_REGULAR) && !sm_fs_input_refused(ENOENT));
}

static void test_cap(void)
{
    /* The cap to the byte: max bytes are read, max + 1 are refused. */
    CHECK_EQ_U(refused("plain", SM_FS_INPUT_FOUND, 10), 0);
    CHECK_EQ_U(refused("plain", SM_FS_INPUT_FOUND, 9), SM_FS_TOO_LARGE);
    CHECK_STR(why("plain", SM_FS_INPUT_FOUND, SM_FS_TOO_LARGE, 1u << 20),
              "is larger than 1 MiB");
    /* A file larger than a page, read in several steps. */
    size_t n = 3 * 4096 + 17;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    put("big", big, n);
    size_t len = 0;
    char *buf = sm_fs_read_input(at("big"), SM_FS_INPUT_FOUND, n, &len);
    CHECK(buf && len == n && !memcmp(buf, big, n) && buf[n] == '\0');
    free(buf);
    CHECK_EQ_U(refused("big", SM_FS_INPUT_FOUND, n - 1), SM_FS_TOO_LARGE);
    free(big);
}

static void test_own(void)
{
    /* Only what this process opened as an output in this run. */
    int dirfd = sm_fs_open_dir(dir);
    int fd = sm_fs_open_output_at(dirfd, "written.json");
    CHECK(fd >= 0 && write(fd, "{}", 2) == 2);
    close(fd);
    close(dirfd);
    CHECK_EQ_U(refused("written.json", SM_FS_INPUT_OWN, 100), 0);
    CHECK_EQ_U(refused("plain", SM_FS_INPUT_OWN, 100), SM_FS_NOT_THIS_RUN);
    CHECK_STR(why("plain", SM_FS_INPUT_OWN, SM_FS_NOT_THIS_RUN, 100),
              "was not written by this run (not read)");
    /* Put in its place afterwards: no longer the file written (also where
     * it gets the inode of the file written: a new birth time). */
    struct stat before, after;
    struct statx sx;
    CHECK(stat(at("written.json"), &before) == 0 && unlink(at("written.json")) == 0);
    put("written.json", "{}", 2);
    CHECK(stat(at("written.json"), &after) == 0);
    if (before.st_ino == after.st_ino &&
        (statx(AT_FDCWD, at("written.json"), 0, STATX_BTIME, &sx) != 0 ||
         !(sx.stx_mask & STATX_BTIME)))
        fprintf(stderr, "note: the file system keeps no birth time and gave the new file the "
                "old inode: the case cannot be told apart here\n");
    else
        CHECK_EQ_U(refused("written.json", SM_FS_INPUT_OWN, 100), SM_FS_NOT_THIS_RUN);
    CHECK_EQ_U(refused("fifo", SM_FS_INPUT_OWN, 100), SM_FS_NOT_REGULAR);
}

static void test_numbers(void)
{
    char err[300];
    uint64_t x = 0;
    double d = 0;
    const char *doc = "{\"a\": 3, \"neg\": -3, \"half\": 1.5, \"big\": 1e300, \"s\": \"3\", "
                      "\"n\": null}";
    sm_jv_t *v = sm_jv_parse(doc, strlen(doc), NULL, err, sizeof err);
    CHECK(v != NULL);
    CHECK(sm_jv_whole(v, "", "a", 1, 4, 9, &x, err, sizeof err) == 0 && x == 3);
    CHECK(sm_jv_whole(v, "", "absent", 1, 4, 9, &x, err, sizeof err) == 0 && x == 9);
    CHECK(sm_jv_whole(v, "", "n", 1, 4, 9, &x, err, sizeof err) == 0 && x == 9);
    CHECK(sm_jv_whole(v, "", "neg", 1, 4, 9, &x, err, sizeof err) == -1);
    CHECK_STR(err, "\"neg\" is -3 (expected a whole number from 1 to 4)");
    CHECK(sm_jv_whole(v, "x[2]", "half", 0, 4, 0, &x, err, sizeof err) == -1);
    CHECK_STR(err, "x[2]: \"half\" is 1.5 (expected a whole number from 0 to 4)");
    CHECK(sm_jv_whole(v, "", "big", 0, 4, 0, &x, err, sizeof err) == -1);
    CHECK(sm_jv_whole(v, "", "s", 0, 4, 0, &x, err, sizeof err) == -1);
    CHECK_STR(err, "\"s\" is a string (expected a whole number from 0 to 4)");
    CHECK(sm_jv_finite(v, "", "big", 0, &d, err, sizeof err) == 0 && d == 1e300);
    CHECK(sm_jv_finite(v, "", "s", 0, &d, err, sizeof err) == -1);
    sm_jv_free(v);
    v = sm_jv_parse("{\"inf\": 1e999}", 14, NULL, err, sizeof err);
    CHECK(v && sm_jv_finite(v, "", "inf", 0, &d, err, sizeof err) == -1);
    CHECK_STR(err, "\"inf\" is inf (expected a finite number)");
    sm_jv_free(v);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    test_kinds();
    test_cap();
    test_own();
    test_numbers();
    const char *names[] = {"plain", "link", "zero", "fifo", "big", "written.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(at(names[i]));
    rmdir(at("folder"));
    rmdir(dir);
    return UNIT_RESULT();
}
