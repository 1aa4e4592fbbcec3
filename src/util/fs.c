/* File-system helpers: see fs.h. */
#define _GNU_SOURCE
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
