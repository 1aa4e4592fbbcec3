/* File-system helpers: see fs.h. */
#define _GNU_SOURCE
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int sm_mkdir_p_created(const char *path, char *created, size_t len)
{
    char buf[PATH_MAX];
    struct stat st;
    if (created && len)
        created[0] = '\0';
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) == 0) {
            if (created && len && !created[0])
                snprintf(created, len, "%s", buf);
        } else if (errno != EEXIST) {
            return -1;
        }
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

int sm_mkdir_p(const char *path)
{
    return sm_mkdir_p_created(path, NULL, 0);
}

void sm_fs_remove_empty(const char *path, const char *top)
{
    char buf[PATH_MAX];
    size_t top_len = strlen(top);
    if (!top_len || snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf ||
        strncmp(buf, top, top_len) != 0)
        return;
    /* rmdir removes only empty folders and never follows a link. */
    while (strlen(buf) >= top_len && rmdir(buf) == 0) {
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf)
            break;
        *slash = '\0';
    }
}

static int sm_fs_uid_ok(uid_t uid, int dirfd);
static void sm_fs_own_note(int fd);

void sm_fs_rmdir_own(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    int dirfd = AT_FDCWD;
    if (slash && snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path) < (int)sizeof dir)
        dirfd = sm_fs_open_dir(slash == path ? "/" : dir); /* the folder around it: as named */
    else if (slash)
        return;
    struct stat st;
    if ((dirfd >= 0 || dirfd == AT_FDCWD) &&
        fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        sm_fs_uid_ok(st.st_uid, dirfd))
        unlinkat(dirfd, name, AT_REMOVEDIR);
    if (dirfd >= 0)
        close(dirfd);
}

int sm_fs_open_dir(const char *path)
{
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Whether uid is ours: this user, or the owner of the folder it sits in
 * (dirfd; root on a file system that maps root to another user makes
 * files it cannot see as its own, and the folder's owner could change
 * anything in it anyway). */
static int sm_fs_uid_ok(uid_t uid, int dirfd)
{
    struct stat parent;
    if (uid == geteuid())
        return 1;
    if (dirfd == AT_FDCWD)
        return stat(".", &parent) == 0 && parent.st_uid == uid;
    return fstat(dirfd, &parent) == 0 && parent.st_uid == uid;
}

/* Whether st (of an opened or lstat'ed entry in dirfd) is a folder of ours. */
static int sm_fs_own_dir(const struct stat *st, int dirfd)
{
    if (S_ISLNK(st->st_mode)) {
        errno = SM_FS_SYMLINK;
        return -1;
    }
    if (!S_ISDIR(st->st_mode)) {
        errno = SM_FS_NOT_PLAIN;
        return -1;
    }
    if (!sm_fs_uid_ok(st->st_uid, dirfd)) {
        errno = SM_FS_NOT_OURS;
        return -1;
    }
    return 0;
}

int sm_fs_mkdir_at(int dirfd, const char *name, mode_t mode)
{
    struct stat st;
    if (mkdirat(dirfd, name, mode) != 0) {
        if (errno != EEXIST)
            return -1;
        /* There already: only a real folder of ours is taken. */
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || sm_fs_own_dir(&st, dirfd) != 0)
            return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOTDIR &&
            fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            errno = SM_FS_SYMLINK; /* swapped for a link meanwhile */
        return -1;
    }
    /* What was opened is what was checked (it could have been swapped). */
    if (fstat(fd, &st) != 0 || sm_fs_own_dir(&st, dirfd) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int sm_fs_mkdir_own(const char *path)
{
    char parent[PATH_MAX], leaf[NAME_MAX + 1];
    if (snprintf(parent, sizeof parent, "%s", path) >= (int)sizeof parent) {
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    snprintf(leaf, sizeof leaf, "%s", slash ? slash + 1 : parent);
    int dirfd = AT_FDCWD;
    if (slash) {
        slash[slash == parent] = '\0'; /* "/name": the parent is "/" */
        if (sm_mkdir_p(parent) != 0 || (dirfd = sm_fs_open_dir(parent)) < 0)
            return -1;
    }
    int fd = sm_fs_mkdir_at(dirfd, leaf, 0755);
    int e = errno;
    if (dirfd >= 0)
        close(dirfd);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

int sm_fs_create_at(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) {
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            errno = SM_FS_SYMLINK;
        else
            errno = EEXIST;
    }
    return fd;
}

/* The folder part of path, opened: a real folder of ours, not a link. */
static int sm_fs_open_parent(const char *path, const char **name)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        *name = path;
        return AT_FDCWD;
    }
    *name = slash + 1;
    if (slash == path) {
        snprintf(dir, sizeof dir, "/");
        return sm_fs_open_dir(dir);
    }
    if ((size_t)(slash - path) >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    /* The folder's own parent path is followed; its last component not. */
    char *up = strrchr(dir, '/');
    int base = AT_FDCWD;
    const char *leaf = dir;
    if (up) {
        leaf = up + 1;
        if (up == dir) {
            base = sm_fs_open_dir("/");
        } else {
            *up = '\0';
            base = sm_fs_open_dir(dir);
        }
        if (base < 0)
            return -1;
    }
    int fd = openat(base, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    struct stat st;
    if (fd < 0 && e == ENOTDIR && fstatat(base, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        e = SM_FS_SYMLINK;
    if (fd >= 0 && (fstat(fd, &st) != 0 || sm_fs_own_dir(&st, base) != 0)) {
        e = errno;
        close(fd);
        fd = -1;
    }
    if (base >= 0)
        close(base);
    errno = e;
    return fd;
}

int sm_fs_create(const char *path, int flags, mode_t mode)
{
    const char *name;
    int dirfd = sm_fs_open_parent(path, &name);
    if (dirfd < 0 && dirfd != AT_FDCWD)
        return -1;
    int fd = sm_fs_create_at(dirfd, name, flags, mode);
    int e = errno;
    if (dirfd >= 0)
        close(dirfd);
    errno = e;
    return fd;
}

int sm_fs_open_output_at(int dirfd, const char *name)
{
    int fd = sm_fs_create_at(dirfd, name, O_WRONLY, 0644);
    if (fd >= 0)
        sm_fs_own_note(fd); /* (what a later writer may read back: SM_FS_INPUT_OWN) */
    if (fd >= 0 || errno != EEXIST)
        return fd;
    /* An earlier run's file: looked at before it is opened (opening a
     * device or a fifo can have effects of its own), and again after. */
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (S_ISLNK(st.st_mode)) {
        errno = SM_FS_SYMLINK;
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
        errno = SM_FS_NOT_PLAIN;
        return -1;
    }
    if (!sm_fs_uid_ok(st.st_uid, dirfd)) {
        errno = SM_FS_NOT_OURS;
        return -1;
    }
    fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat now;
    int e = 0;
    if (fstat(fd, &now) != 0)
        e = errno;
    else if (now.st_dev != st.st_dev || now.st_ino != st.st_ino || !S_ISREG(now.st_mode) ||
             now.st_nlink != 1)
        e = SM_FS_NOT_PLAIN;
    else if (!sm_fs_uid_ok(now.st_uid, dirfd))
        e = SM_FS_NOT_OURS;
    else if (fcntl(fd, F_SETFL, O_WRONLY) != 0 || ftruncate(fd, 0) != 0)
        e = errno;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    sm_fs_own_note(fd);
    return fd;
}

int sm_fs_open_output(const char *dir, const char *name)
{
    int dirfd = sm_fs_open_dir(dir);
    if (dirfd < 0)
        return -1;
    int fd = sm_fs_open_output_at(dirfd, name);
    int e = errno;
    close(dirfd);
    errno = e;
    return fd;
}

const char *sm_fs_why(int err)
{
    switch (err) {
    case SM_FS_SYMLINK: return "a symbolic link is in its place (not followed; left as it is)";
    case SM_FS_NOT_OURS: return "something of another user is in its place (left as it is)";
    case SM_FS_NOT_PLAIN:
        return "something that is not a plain file or folder of this user is in its place "
               "(left as it is)";
    case EFBIG: return sm_fs_size_limit_text();
    default: return strerror(err);
    }
}

/* ---------------------------------------------------------------- input files */

/* The outputs this process opened in this run (sm_fs_open_output_at), by
 * device, inode and birth time (where the file system keeps one: an inode
 * freed and given to a file put in its place is another file), for
 * SM_FS_INPUT_OWN: a ring written without a lock (an output may be written
 * at a fatal signal, on any thread).  A run writes a few dozen outputs; one
 * that wrote more than the ring holds reads its oldest back as not its
 * own, which only leaves them out. */
#define SM_FS_OWN_SLOTS 256
static struct sm_fs_own {
    uint64_t dev, ino, born; /* born: birth time in ns, 0 unknown */
    uint32_t ready;
} sm_fs_own[SM_FS_OWN_SLOTS];
static uint32_t sm_fs_own_next;

/* fd's device, inode and birth time (0 where the file system has none). */
static int sm_fs_identity(int fd, uint64_t *dev, uint64_t *ino, uint64_t *born)
{
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) != 0) {
        /* (no statx: an old kernel, a container's filter) */
        struct stat st;
        if (fstat(fd, &st) != 0)
            return -1;
        *dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
        *ino = st.st_ino;
        *born = 0;
        return 0;
    }
    *dev = (uint64_t)sx.stx_dev_major << 32 | sx.stx_dev_minor;
    *ino = sx.stx_ino;
    *born = sx.stx_mask & STATX_BTIME
                ? (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec + 1
                : 0;
    return 0;
}

static void sm_fs_own_note(int fd)
{
    uint64_t dev, ino, born;
    if (sm_fs_identity(fd, &dev, &ino, &born) != 0)
        return;
    struct sm_fs_own *o =
        &sm_fs_own[__atomic_fetch_add(&sm_fs_own_next, 1, __ATOMIC_RELAXED) % SM_FS_OWN_SLOTS];
    __atomic_store_n(&o->ready, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&o->dev, dev, __ATOMIC_RELAXED);
    __atomic_store_n(&o->ino, ino, __ATOMIC_RELAXED);
    __atomic_store_n(&o->born, born, __ATOMIC_RELAXED);
    __atomic_store_n(&o->ready, 1, __ATOMIC_RELEASE);
}

static int sm_fs_own_is(int fd)
{
    uint64_t dev, ino, born;
    if (sm_fs_identity(fd, &dev, &ino, &born) != 0)
        return 0;
    for (uint32_t i = 0; i < SM_FS_OWN_SLOTS; i++) {
        const struct sm_fs_own *o = &sm_fs_own[i];
        if (__atomic_load_n(&o->ready, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&o->dev, __ATOMIC_RELAXED) == dev &&
            __atomic_load_n(&o->ino, __ATOMIC_RELAXED) == ino &&
            __atomic_load_n(&o->born, __ATOMIC_RELAXED) == born)
            return 1;
    }
    return 0;
}

/* errno for what st is, when it is not a regular file (0 when it is). */
static int sm_fs_input_kind(const struct stat *st)
{
    if (S_ISLNK(st->st_mode))
        return SM_FS_SYMLINK;
    if (S_ISDIR(st->st_mode))
        return EISDIR;
    return S_ISREG(st->st_mode) ? 0 : SM_FS_NOT_REGULAR;
}

int sm_fs_open_input(const char *path, sm_fs_input_t how, struct stat *st)
{
    /* Looked at before it is opened: opening a device can have effects of
     * its own; then the opened file itself is checked (it may have been
     * swapped meanwhile). */
    struct stat before, now;
    int follow = how == SM_FS_INPUT_NAMED;
    if ((follow ? stat(path, &before) : lstat(path, &before)) != 0)
        return -1;
    int e = sm_fs_input_kind(&before);
    if (e) {
        errno = e;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0)
        return -1; /* (a link put in its place meanwhile: ELOOP, SM_FS_SYMLINK) */
    if (fstat(fd, &now) != 0)
        e = errno;
    else if ((e = sm_fs_input_kind(&now)) != 0)
        ;
    else if (how == SM_FS_INPUT_OWN && !sm_fs_own_is(fd))
        e = SM_FS_NOT_THIS_RUN;
    else if (fcntl(fd, F_SETFL, 0) != 0) /* blocking again, for stdio */
        e = errno;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    if (st)
        *st = now;
    return fd;
}

char *sm_fs_read_input(const char *path, sm_fs_input_t how, size_t max, size_t *len)
{
    struct stat st;
    int fd = sm_fs_open_input(path, how, &st);
    if (fd < 0)
        return NULL;
    if (st.st_size < 0 || (uint64_t)st.st_size > max) {
        close(fd);
        errno = SM_FS_TOO_LARGE;
        return NULL;
    }
    /* Its size and one byte more (the end, or a file that grew), at least
     * a page (files whose size says nothing); never beyond max + 1. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (cap < 4096)
        cap = 4096 < max + 1 ? 4096 : max + 1;
    char *buf = malloc(cap + 1);
    int e = buf ? 0 : ENOMEM;
    while (!e) {
        if (n == cap) {
            if (cap > max) {
                e = SM_FS_TOO_LARGE;
                break;
            }
            size_t more = cap <= (max + 1) / 2 ? 2 * cap : max + 1;
            char *grown = realloc(buf, more + 1);
            if (!grown) {
                e = ENOMEM;
                break;
            }
            buf = grown;
            cap = more;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            e = errno;
        else if (k == 0)
            break;
        else
            n += (size_t)k;
    }
    close(fd);
    if (!e && n > max)
        e = SM_FS_TOO_LARGE;
    if (e) {
        free(buf);
        errno = e;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int sm_fs_input_refused(int err)
{
    return err == SM_FS_SYMLINK || err == EISDIR || err == SM_FS_NOT_REGULAR ||
           err == SM_FS_TOO_LARGE || err == SM_FS_NOT_THIS_RUN;
}

const char *sm_fs_input_why(const char *path, sm_fs_input_t how, int err, size_t max, char *buf,
                            size_t len)
{
    struct stat st;
    const char *what = "something else";
    switch (err) {
    case SM_FS_SYMLINK:
        snprintf(buf, len, "is a symbolic link (not followed)");
        break;
    case EISDIR:
        snprintf(buf, len, "is a folder");
        break;
    case SM_FS_NOT_REGULAR:
        if ((how == SM_FS_INPUT_NAMED ? stat(path, &st) : lstat(path, &st)) == 0)
            what = S_ISFIFO(st.st_mode)  ? "a FIFO"
                   : S_ISCHR(st.st_mode) ? "a character device"
                   : S_ISBLK(st.st_mode) ? "a block device"
                   : S_ISSOCK(st.st_mode) ? "a socket"
                                          : what;
        snprintf(buf, len, "is %s, not a regular file", what);
        break;
    case SM_FS_TOO_LARGE:
        if (max >= (1u << 30) && max % (1u << 30) == 0)
            snprintf(buf, len, "is larger than %zu GiB", max >> 30);
        else if (max >= (1u << 20) && max % (1u << 20) == 0)
            snprintf(buf, len, "is larger than %zu MiB", max >> 20);
        else
            snprintf(buf, len, "is larger than %zu bytes", max);
        break;
    case SM_FS_NOT_THIS_RUN:
        snprintf(buf, len, "was not written by this run (not read)");
        break;
    default:
        snprintf(buf, len, "cannot be read: %s", strerror(err));
    }
    return buf;
}

const char *sm_fs_size_limit_text(void)
{
    static __thread char text[128];
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        snprintf(text, sizeof text, "File too large: past the file size limit of this process "
                 "(ulimit -f), %llu bytes", (unsigned long long)lim.rlim_cur);
    else
        snprintf(text, sizeof text, "%s", strerror(EFBIG));
    return text;
}

/* See fs.h. */
int sm_fs_find_library(const char *name, char *lib, size_t len, char *tried, size_t tlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *dirs[3];
    const char *subdirs[3];
    int count = 0;
    tried[0] = '\0';
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        dirs[count] = exe;
        subdirs[count++] = "/.libs/";
        /* the installation this launcher belongs to, wherever it was moved */
        dirs[count] = exe;
        subdirs[count++] = "/../lib/";
    }
#ifdef SM_LIBDIR
    dirs[count] = SM_LIBDIR;
    subdirs[count++] = "/";
#endif
    for (int i = 0; i < count; i++) {
        snprintf(lib, len, "%s%s%s", dirs[i], subdirs[i], name);
        if (access(lib, R_OK) == 0)
            return 0;
        size_t t = strlen(tried);
        snprintf(tried + t, tlen - t, "%s%s", t ? ", " : "", lib);
    }
    return -1;
}
