/* File-system helpers shared by the runtime and the tools.
 *
 * Every file and folder sysmeasure creates or writes goes through the
 * sm_fs_* calls below: relative to an open folder descriptor, never
 * following a symbolic link in the last component, creating exclusively
 * where the file must be new, and reusing a folder only when it is a real
 * folder owned by this user.  What cannot be made safe fails with one of
 * the errno values that sm_fs_why() explains; the caller says so in one line
 * and skips that file. */
#ifndef SM_FS_H
#define SM_FS_H

#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "../core/compiler.h"

/* errno values for things in the way (set by the calls below). */
#define SM_FS_SYMLINK ELOOP   /* a symbolic link (not followed) */
#define SM_FS_NOT_OURS EPERM  /* another user's file or folder */
#define SM_FS_NOT_PLAIN EINVAL /* not a regular file / not a folder / several links */

/* mkdir -p: creates path and its missing parents (0755).  A folder that
 * appears meanwhile (another rank, another thread) is fine; a component that
 * exists but is not a folder is ENOTDIR.  0, or -1 with errno. */
int sm_mkdir_p(const char *path) SM_HIDDEN;

/* Like sm_mkdir_p, and *created gets the topmost folder it created (empty
 * when it created none), for sm_fs_remove_empty. */
int sm_mkdir_p_created(const char *path, char *created, size_t len) SM_HIDDEN;

/* Removes path and its parents up to and including top, each only while it
 * is an empty folder (what sm_mkdir_p_created made, when nothing was put in). */
void sm_fs_remove_empty(const char *path, const char *top) SM_HIDDEN;

/* rmdir path when it is an empty real folder owned by this user. */
void sm_fs_rmdir_own(const char *path) SM_HIDDEN;

/* A folder named by its path (symbolic links in it are followed: the user
 * or sysmeasure chose that path), opened as the base of the *_at calls.
 * Descriptor (close-on-exec) or -1 with errno. */
int sm_fs_open_dir(const char *path) SM_HIDDEN;

/* Folder `name` in dirfd: made (mode), or taken when it is already there as
 * a real folder owned by this user; never through a symbolic link.  An open
 * descriptor of it, or -1 with errno (SM_FS_* above, or the system's). */
int sm_fs_mkdir_at(int dirfd, const char *name, mode_t mode) SM_HIDDEN;

/* The same for the last component of path (its parents: sm_mkdir_p).
 * 0 or -1 with errno. */
int sm_fs_mkdir_own(const char *path) SM_HIDDEN;

/* A new file `name` in dirfd: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC added to
 * flags.  Descriptor or -1 with errno (EEXIST: something is there). */
int sm_fs_create_at(int dirfd, const char *name, int flags, mode_t mode) SM_HIDDEN;

/* A new file by path: its folder must be a real folder owned by this user
 * (not a symbolic link), then as sm_fs_create_at.  For spill files. */
int sm_fs_create(const char *path, int flags, mode_t mode) SM_HIDDEN;

/* An output file `name` in dirfd, for writing from the start: created new,
 * or, when there is one, reused only if it is a regular file of this user
 * with a single link (an earlier run's output), then emptied.  Descriptor
 * or -1 with errno. */
int sm_fs_open_output_at(int dirfd, const char *name) SM_HIDDEN;

/* The same by folder path and name. */
int sm_fs_open_output(const char *dir, const char *name) SM_HIDDEN;

/* Words for the errno of a failed sm_fs_* call: "it is a symbolic link
 * (not followed)", "it belongs to another user", for EFBIG the file size
 * limit (sm_fs_size_limit_text), or strerror(err). */
const char *sm_fs_why(int err) SM_HIDDEN;

/* ---- input files ----
 * Every file sysmeasure reads (a config, filter or GPU metrics file, the
 * JSON files of an output folder, an OTF2 anchor, a counter table) is
 * opened here: without blocking (a FIFO or a device in its place costs
 * nothing), checked to be a regular file, and read up to a size cap, so
 * that no file can hang a reader or grow its memory without bound. */

/* How an input file may be reached. */
typedef enum sm_fs_input {
    /* A path the user named (--config, --filter, ...): symbolic links are
     * followed (the user chose the path), the file they lead to must be a
     * regular file. */
    SM_FS_INPUT_NAMED,
    /* A file sysmeasure looks up by name in a folder (profile.json of an
     * output folder): never through a symbolic link. */
    SM_FS_INPUT_FOUND,
    /* A file this process wrote in this run (sm_fs_open_output*), read back
     * by a later writer: as FOUND, and only that very file (device and
     * inode); whatever else is in its place is not read. */
    SM_FS_INPUT_OWN
} sm_fs_input_t;

/* errno values of the input calls beside SM_FS_SYMLINK and the system's. */
#define SM_FS_NOT_REGULAR EINVAL  /* a FIFO, a device, a socket */
#define SM_FS_TOO_LARGE EFBIG     /* larger than the reader's cap */
#define SM_FS_NOT_THIS_RUN ESTALE /* SM_FS_INPUT_OWN: not written by this process in this run */

/* path opened for reading (O_RDONLY, close-on-exec, blocking again after
 * the checks) as how allows, *st its fstat.  Descriptor or -1 with errno
 * (EISDIR for a folder). */
int sm_fs_open_input(const char *path, sm_fs_input_t how, struct stat *st) SM_HIDDEN;

/* The whole file at path (sm_fs_open_input) in a malloc'd buffer with a NUL
 * after its *len bytes, or NULL with errno (SM_FS_TOO_LARGE beyond max
 * bytes, also for a file that grows while it is read). */
char *sm_fs_read_input(const char *path, sm_fs_input_t how, size_t max, size_t *len) SM_HIDDEN;

/* Words for the errno of a failed input call, to follow the file's name:
 * "is a symbolic link (not followed)", "is a FIFO, not a regular file",
 * "is a folder", "is larger than 1 MiB", "was not written by this run",
 * or "cannot be read: " and strerror(err).  buf holds them. */
const char *sm_fs_input_why(const char *path, sm_fs_input_t how, int err, size_t max, char *buf,
                            size_t len) SM_HIDDEN;

/* Whether err is one of the input calls' own (not a system error). */
int sm_fs_input_refused(int err) SM_HIDDEN;

/* Why a write failed with EFBIG: "File too large: past the file size limit
 * of this process (ulimit -f), N bytes" (the limit read now). */
const char *sm_fs_size_limit_text(void) SM_HIDDEN;

/* One of sysmeasure's libraries: the build tree's (.libs beside the running
 * executable), then the one installed beside it (../lib), then the one in
 * the configured libdir.  0 with its path in lib, or -1 with the places
 * tried in `tried`. */
int sm_fs_find_library(const char *name, char *lib, size_t len, char *tried, size_t tlen) SM_HIDDEN;

#endif
