/* The crash-safe definitions journal (see journal.h). */
#define _GNU_SOURCE
#include "journal.h"
#include "clock.h"
#include "sig_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/fs.h"
#include "../util/hash.h"
#include "../util/log.h"

/* Address space for the whole journal is reserved at once (the file grows
 * under it): entries never move, appends never remap. */
#define SM_JOURNAL_SPACE (256ull << 20)
#define SM_JOURNAL_GROW (256u << 10)

static pthread_mutex_t sm_j_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *sm_j_map;       /* SM_JOURNAL_SPACE reserved */
static uint64_t sm_j_size;      /* of the file (allocated) */
static int sm_j_fd = -1;
static char *sm_j_path;
static int sm_j_on;
static int sm_j_full_said;

static sm_journal_head_t *sm_j_head(void)
{
    return (sm_journal_head_t *)sm_j_map;
}

static uint64_t sm_j_check(const sm_journal_head_t *h)
{
    uint64_t sum = sm_fnv(h->magic, sizeof h->magic, SM_FNV_START);
    return sm_fnv(&h->pid, offsetof(sm_journal_head_t, check) - offsetof(sm_journal_head_t, pid),
                  sum);
}

/* Room up to `end` in the file (its blocks allocated, so that writing through
 * the mapping never meets a full disk).  Lock held. */
static int sm_j_reserve(uint64_t end)
{
    if (end <= sm_j_size)
        return 0;
    if (end > SM_JOURNAL_SPACE)
        return -1;
    uint64_t want = (end + SM_JOURNAL_GROW - 1) / SM_JOURNAL_GROW * SM_JOURNAL_GROW;
    int rc;
    do
        rc = fallocate(sm_j_fd, 0, (off_t)sm_j_size, (off_t)(want - sm_j_size));
    while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno == EOPNOTSUPP)
        rc = ftruncate(sm_j_fd, (off_t)want);
    if (rc != 0)
        return -1;
    sm_j_size = want;
    return 0;
}

int sm_journal_open(const char *dir, const char *program, uint64_t start_realtime_ns,
                    uint64_t start_ticks)
{
    char path[PATH_MAX], host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "host");
    char safe[64];
    snprintf(safe, sizeof safe, "%s", host);
    for (char *c = safe; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '_';
    if (!dir || sm_mkdir_p(dir) != 0 ||
        snprintf(path, sizeof path, "%s/%016llx.%s.%d.defs", dir,
                 (unsigned long long)sm_job_hash(), safe, (int)getpid()) >= (int)sizeof path) {
        sm_warning("--crash-safe: cannot create the definitions journal in %s: %s; a killed "
                   "process cannot be recovered", dir ? dir : "(no folder)", strerror(errno));
        return -1;
    }
    pthread_mutex_lock(&sm_j_lock);
    int fd = sm_fs_create(path, O_RDWR, 0644);
    void *map = MAP_FAILED;
    if (fd >= 0)
        map = mmap(NULL, SM_JOURNAL_SPACE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                   fd, 0);
    int err = errno;
    if (map == MAP_FAILED) {
        pthread_mutex_unlock(&sm_j_lock);
        sm_warning("--crash-safe: cannot create the definitions journal %s: %s; a killed "
                   "process cannot be recovered", path, sm_fs_why(err));
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        return -1;
    }
    sm_j_fd = fd;
    sm_j_map = map;
    sm_j_size = 0;
    if (sm_j_reserve(SM_JOURNAL_HEAD) != 0) {
        err = errno;
        sm_sig_own_write_failed(err);
        munmap(map, SM_JOURNAL_SPACE);
        close(fd);
        unlink(path);
        sm_j_map = NULL;
        sm_j_fd = -1;
        pthread_mutex_unlock(&sm_j_lock);
        sm_warning("--crash-safe: cannot write the definitions journal %s: %s", path,
                   sm_fs_why(err));
        return -1;
    }
    sm_journal_head_t *h = sm_j_head();
    h->pid = getpid();
    h->start_realtime_ns = start_realtime_ns;
    h->start_ticks = start_ticks;
    snprintf(h->job, sizeof h->job, "%s", sm_job_id());
    snprintf(h->host, sizeof h->host, "%s", host);
    snprintf(h->program, sizeof h->program, "%s", program ? program : "");
    memcpy(h->magic, SM_JOURNAL_MAGIC, sizeof h->magic);
    h->check = sm_j_check(h);
    __atomic_store_n(&h->fill, 0, __ATOMIC_RELEASE);
    sm_j_path = strdup(path);
    __atomic_store_n(&sm_j_on, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sm_j_lock);
    return 0;
}

int sm_journal_on(void)
{
    return __atomic_load_n(&sm_j_on, __ATOMIC_ACQUIRE);
}

/* Appends one entry with the lock held; head is NULL for a clock point,
 * read here: under the lock, so that points are in the journal in the
 * order of their times (two threads that read the clock before taking the
 * lock could append them the other way round). */
static void sm_j_append(uint32_t kind, const void *head, uint32_t head_len, const void *tail,
                        uint32_t tail_len)
{
    if (!sm_journal_on())
        return;
    /* On the application's threads (definitions, new threads, new chunks):
     * no handler may jump out while the lock is held, and growing the file
     * may meet a file size limit (sig_hold.h). */
    sm_sig_hold(SM_SIG_LOCKS_IO);
    pthread_mutex_lock(&sm_j_lock);
    if (!sm_j_map) {
        pthread_mutex_unlock(&sm_j_lock);
        sm_sig_release();
        return;
    }
    uint64_t point[2];
    if (!head) {
        point[0] = sm_clock_now();
        point[1] = sm_clock_monotonic_ns();
        head = point;
        head_len = sizeof point;
    }
    sm_journal_head_t *h = sm_j_head();
    uint64_t fill = h->fill, len = (uint64_t)head_len + tail_len;
    uint64_t at = SM_JOURNAL_HEAD + fill, step = (sizeof(sm_journal_entry_t) + len + 7) & ~7ull;
    if (len > UINT32_MAX - 16 || sm_j_reserve(at + step) != 0) {
        sm_sig_own_write_failed(errno);
        if (!sm_j_full_said++)
            sm_warning("--crash-safe: the definitions journal %s cannot grow (%s); "
                       "definitions made from now on are not in it", sm_j_path,
                       strerror(errno));
        pthread_mutex_unlock(&sm_j_lock);
        sm_sig_release();
        return;
    }
    uint8_t *p = sm_j_map + at;
    sm_journal_entry_t e = {kind, (uint32_t)len, 0};
    e.check = sm_fnv(&e, offsetof(sm_journal_entry_t, check), SM_FNV_START);
    e.check = sm_fnv(head, head_len, e.check);
    e.check = sm_fnv(tail, tail_len, e.check);
    memcpy(p, &e, sizeof e);
    if (head_len)
        memcpy(p + sizeof e, head, head_len);
    if (tail_len)
        memcpy(p + sizeof e + head_len, tail, tail_len);
    /* The entry is complete before the fill word says so. */
    __atomic_store_n(&h->fill, fill + step, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sm_j_lock);
    sm_sig_release();
}

void sm_journal_add(uint32_t kind, const void *head, uint32_t head_len, const void *tail,
                    uint32_t tail_len)
{
    static const uint8_t none;
    sm_j_append(kind, head ? head : &none, head ? head_len : 0, tail, tail_len);
}

void sm_journal_add_clock_point(void)
{
    sm_j_append(SM_J_CLOCK_POINT, NULL, 0, NULL, 0);
}

int sm_journal_move(const char *dir)
{
    pthread_mutex_lock(&sm_j_lock);
    int rc = 0;
    if (sm_j_path && dir) {
        const char *base = strrchr(sm_j_path, '/');
        char path[PATH_MAX];
        if (sm_mkdir_p(dir) != 0 ||
            snprintf(path, sizeof path, "%s/%s", dir, base ? base + 1 : sm_j_path) >=
                (int)sizeof path ||
            rename(sm_j_path, path) != 0) {
            rc = -1;
        } else {
            free(sm_j_path);
            sm_j_path = strdup(path);
        }
    }
    pthread_mutex_unlock(&sm_j_lock);
    return rc;
}

void sm_journal_done(void)
{
    pthread_mutex_lock(&sm_j_lock);
    __atomic_store_n(&sm_j_on, 0, __ATOMIC_RELEASE);
    if (sm_j_path)
        unlink(sm_j_path);
    if (sm_j_fd >= 0)
        close(sm_j_fd);
    sm_j_fd = -1;
    /* The mapping stays: a definer may be between its test and its append. */
    free(sm_j_path);
    sm_j_path = NULL;
    pthread_mutex_unlock(&sm_j_lock);
}

void sm_journal_after_daemon_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_j_lock = m;
}

void sm_journal_after_fork_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_j_lock = m;
    if (!sm_j_map)
        return;
    sm_j_on = 0;
    /* Private pages at the same place: nothing the child does reaches the file. */
    if (mmap(sm_j_map, SM_JOURNAL_SPACE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, sm_j_fd, 0) == MAP_FAILED)
        mmap(sm_j_map, SM_JOURNAL_SPACE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    sm_j_map = NULL;
    sm_j_fd = -1;
    sm_j_path = NULL;
}

void sm_journal_image_fix_checks(uint8_t *data, size_t len)
{
    sm_journal_head_t h;
    if (len < SM_JOURNAL_HEAD)
        return;
    memcpy(&h, data, sizeof h);
    h.check = sm_j_check(&h);
    memcpy(data, &h, sizeof h);
    uint64_t end = h.fill < len - SM_JOURNAL_HEAD ? SM_JOURNAL_HEAD + h.fill : len;
    for (uint64_t at = SM_JOURNAL_HEAD; at + sizeof(sm_journal_entry_t) <= end;) {
        sm_journal_entry_t e;
        memcpy(&e, data + at, sizeof e);
        if (e.len > end - at - sizeof e)
            break;
        e.check = sm_fnv(&e, offsetof(sm_journal_entry_t, check), SM_FNV_START);
        e.check = sm_fnv(data + at + sizeof e, e.len, e.check);
        memcpy(data + at, &e, sizeof e);
        at += (sizeof e + (uint64_t)e.len + 7) & ~7ull;
    }
}

int sm_journal_peek(const char *path, sm_journal_head_t *head, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    sm_journal_head_t h;
    ssize_t n = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = pread(fd, &h, sizeof h, 0);
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h.magic, SM_JOURNAL_MAGIC, sizeof h.magic) != 0 ||
        h.check != sm_j_check(&h)) {
        snprintf(err, errlen, "%s is not a sysmeasure definitions journal of this version, or "
                 "its header is damaged: the events of the process that wrote it cannot be "
                 "named; left out", path);
        return -1;
    }
    h.job[sizeof h.job - 1] = h.host[sizeof h.host - 1] = h.program[sizeof h.program - 1] = '\0';
    *head = h;
    return 0;
}

/* Whether a whole entry whose check holds starts at data + at (end: the
 * end of the complete entries); its length in *len. */
static int sm_j_entry_ok(const uint8_t *data, uint64_t at, uint64_t end, sm_journal_entry_t *e)
{
    if (at + sizeof *e > end)
        return 0;
    memcpy(e, data + at, sizeof *e);
    if (e->kind == 0 || e->len > end - at - sizeof *e)
        return 0;
    uint64_t check = sm_fnv(e, offsetof(sm_journal_entry_t, check), SM_FNV_START);
    return sm_fnv(data + at + sizeof *e, e->len, check) == e->check;
}

int sm_journal_read(const char *path, sm_journal_head_t *head, sm_journal_fn fn, void *arg,
                    sm_journal_damage_t *damage, char *err, size_t errlen)
{
    sm_journal_damage_t none;
    if (!damage)
        damage = &none;
    memset(damage, 0, sizeof *damage);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot read %s: %s", path, fd < 0 ? strerror(errno)
                                                                  : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* No journal is larger than the space it is written in. */
    uint64_t size = (uint64_t)st.st_size;
    if (size > SM_JOURNAL_SPACE)
        size = SM_JOURNAL_SPACE;
    uint8_t *data = size >= SM_JOURNAL_HEAD ? malloc(size) : NULL;
    uint64_t have = 0;
    while (data && have < size) {
        ssize_t n = pread(fd, data + have, size - have, (off_t)have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (uint64_t)n;
    }
    close(fd);
    sm_journal_head_t h;
    if (!data || have < SM_JOURNAL_HEAD) {
        snprintf(err, errlen, "%s is not a sysmeasure definitions journal (too short)", path);
        free(data);
        return -1;
    }
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, "SMJRNL", 6) == 0 && memcmp(h.magic, SM_JOURNAL_MAGIC, sizeof h.magic)) {
        snprintf(err, errlen, "%s is a definitions journal of another sysmeasure version "
                 "(%.8s; this one reads %s)", path, h.magic, SM_JOURNAL_MAGIC);
        free(data);
        return -1;
    }
    if (memcmp(h.magic, SM_JOURNAL_MAGIC, sizeof h.magic) != 0 || h.check != sm_j_check(&h)) {
        snprintf(err, errlen, "%s is not a sysmeasure definitions journal, or its header is "
                 "damaged", path);
        free(data);
        return -1;
    }
    h.job[sizeof h.job - 1] = h.host[sizeof h.host - 1] = h.program[sizeof h.program - 1] = '\0';
    if (head)
        *head = h;
    /* The fill word is not covered by the header's check: a damaged one
     * reads at most the whole file, each entry still checked. */
    uint64_t end = h.fill < have - SM_JOURNAL_HEAD ? SM_JOURNAL_HEAD + h.fill : have;
    int rc = 0;
    for (uint64_t at = SM_JOURNAL_HEAD; at + sizeof(sm_journal_entry_t) <= end && rc == 0;) {
        sm_journal_entry_t e;
        if (!sm_j_entry_ok(data, at, end, &e)) {
            /* Damaged: the next whole entry is looked for, 8 bytes on at a
             * time (entries are 8-byte aligned; a false match would need
             * a 64-bit check to hold by chance). */
            uint64_t from = at;
            do
                at += 8;
            while (at + sizeof(sm_journal_entry_t) <= end && !sm_j_entry_ok(data, at, end, &e));
            int found = at + sizeof(sm_journal_entry_t) <= end;
            uint64_t to = found ? at : end;
            int unused = !found; /* zeros to the end: room never written (a fill
                                  * word damaged upwards), not damage */
            for (uint64_t k = from; unused && k < to; k++)
                unused = data[k] == 0;
            if (unused)
                break;
            if (!damage->damaged_runs++)
                damage->first_damaged = from;
            damage->damaged_bytes += to - from;
            continue;
        }
        damage->entries++;
        rc = fn(e.kind, data + at + sizeof e, e.len, arg);
        at += (sizeof e + (uint64_t)e.len + 7) & ~7ull;
    }
    free(data);
    return rc < 0 ? rc : 0;
}
