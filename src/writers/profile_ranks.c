/* profile-ranks.csv: every thread's rows, written by the rank that holds
 * them.  One file for the job, one row per (rank, thread, call path) the
 * thread was on, columns
 *
 *   rank, thread (its index on the rank, by location id), location, depth
 *   (0: top level), region, path (names joined with " > "; the innermost
 *   SM_PATH_NAMES, "... > " first, where deeper), visits,
 *   incl_ns, excl_ns (sums), incl_min_ns, incl_max_ns, excl_min_ns,
 *   excl_max_ns (per visit; empty without visits), bytes_sent,
 *   bytes_received, then per PAPI event of the job "<event> incl",
 *   "<event> excl" (empty: the rank did not count it)
 *
 * in ns converted once per thread with its rank's tick length (the values
 * the job's statistics are made of: profile_stats.h).  Nothing passes
 * through rank 0's memory: each rank formats its rows, rank 0 gathers the
 * sizes (one number a rank), creates the file with the header and hands
 * every rank its offset, and each rank writes its rows there.
 * sysmeasure-merge, which holds every rank's blob, writes all the rows
 * itself. */
#include "summary_common.h"
#include "../finalize/pipeline.h"
#include "../merge/profile_reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "../util/bytes.h"
#include "../util/fs.h"
#include "../util/log.h"

#define SM_RANKS_FILE "profile-ranks.csv"

/* The job's counter names: the columns. */
typedef struct sm_prk_columns {
    uint32_t n;
    char (*names)[SM_SUMMARY_COUNTER_NAME];
} sm_prk_columns_t;

/* A growing text buffer. */
typedef struct sm_prk_buf {
    char *p;
    size_t len, cap;
    bool oom;
} sm_prk_buf_t;

static void sm_prk_room(sm_prk_buf_t *b, size_t n)
{
    if (b->oom || b->len + n + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void sm_prk_printf(sm_prk_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sm_prk_printf(sm_prk_buf_t *b, const char *fmt, ...)
{
    for (int pass = 0; pass < 2 && !b->oom; pass++) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        sm_prk_room(b, (size_t)n);
    }
}

/* A CSV field: quoted when it has a comma, a quote or a line break;
 * control characters become '?' (as sm_csv_field). */
static void sm_prk_field(sm_prk_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    sm_prk_room(b, 2 * n + 2);
    if (b->oom)
        return;
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    char *o = b->p + b->len;
    if (quote)
        *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"')
            *o++ = '"';
        *o++ = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
    }
    if (quote)
        *o++ = '"';
    b->len = (size_t)(o - b->p);
}

static void sm_prk_header(sm_prk_buf_t *b, const sm_prk_columns_t *c)
{
    sm_prk_printf(b, "rank,thread,location,depth,region,path,visits,incl_ns,excl_ns,incl_min_ns,"
                     "incl_max_ns,excl_min_ns,excl_max_ns,bytes_sent,bytes_received");
    for (uint32_t k = 0; k < c->n; k++)
        for (int excl = 0; excl < 2; excl++) {
            char col[SM_SUMMARY_COUNTER_NAME + 8];
            snprintf(col, sizeof col, "%s %s", c->names[k], excl ? "excl" : "incl");
            sm_prk_printf(b, ",");
            sm_prk_field(b, col);
        }
    sm_prk_printf(b, "\n");
}

typedef struct sm_prk_walk {
    sm_prk_buf_t *b;
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    uint32_t rank, member;
    double npt;
    int32_t column_of[SM_SUMMARY_MAX_COUNTERS]; /* the rank's counter k -> column, -1 */
    int32_t counter_of[SM_SUMMARY_MAX_COUNTERS]; /* column -> the rank's counter, -1 */
    uint32_t n_columns;
    char *path;
    size_t path_cap;
} sm_prk_walk_t;

/* "a > b > c" of p into w->path. */
static bool sm_prk_path(sm_prk_walk_t *w, const sm_cpath_t *p)
{
    return sm_cpath_joined(w->job, p, &w->path, &w->path_cap);
}

static void sm_prk_row(const sm_cpath_t *p, void *arg)
{
    sm_prk_walk_t *w = arg;
    const sm_profile_summary_t *s = w->s;
    if (p->depth == 0 || w->b->oom)
        return;
    const sm_cpath_member_t *m = &p->members[w->member];
    if (!sm_member_on_path(m))
        return;
    if (!sm_prk_path(w, p)) {
        w->b->oom = true;
        return;
    }
    sm_prk_printf(w->b, "%u,%u,%u,%u,", (unsigned)w->rank, (unsigned)w->member,
                  (unsigned)s->member_location[w->member], (unsigned)(p->depth - 1));
    sm_prk_field(w->b, sm_job_region_name(w->job, p->region));
    sm_prk_printf(w->b, ",");
    sm_prk_field(w->b, w->path);
    sm_prk_printf(w->b, ",%llu,%llu,%llu", (unsigned long long)m->visits,
                  (unsigned long long)sm_ticks_ns(m->incl.sum, w->npt),
                  (unsigned long long)sm_ticks_ns(m->excl.sum, w->npt));
    if (m->visits)
        sm_prk_printf(w->b, ",%llu,%llu,%llu,%llu",
                      (unsigned long long)sm_ticks_ns(m->incl.min, w->npt),
                      (unsigned long long)sm_ticks_ns(m->incl.max, w->npt),
                      (unsigned long long)sm_ticks_ns(m->excl.min, w->npt),
                      (unsigned long long)sm_ticks_ns(m->excl.max, w->npt));
    else
        sm_prk_printf(w->b, ",,,,");
    sm_prk_printf(w->b, ",%llu,%llu", (unsigned long long)m->bytes_sent,
                  (unsigned long long)m->bytes_received);
    for (uint32_t c = 0; c < w->n_columns; c++) {
        int32_t k = w->counter_of[c];
        if (k >= 0 && m->counters)
            sm_prk_printf(w->b, ",%llu,%llu", (unsigned long long)m->counters[k].sum,
                          (unsigned long long)m->counters[s->n_counters + (uint32_t)k].sum);
        else
            sm_prk_printf(w->b, ",,");
    }
    sm_prk_printf(w->b, "\n");
}

/* The rows of one rank's blob, appended to b; false when the blob is
 * malformed (said) or memory ran out. */
static bool sm_prk_rank_rows(sm_prk_buf_t *b, const sm_job_t *job, const sm_prk_columns_t *c,
                             const void *blob, uint64_t len, uint32_t rank)
{
    if (!blob || !len)
        return true; /* a rank without a profile (said) */
    sm_profile_summary_t *s = sm_profile_summary_of_rank(blob, len, rank);
    if (!s)
        return false;
    sm_prk_walk_t w = {.b = b, .job = job, .s = s, .rank = rank, .n_columns = c->n};
    w.npt = s->rank_ns_per_tick ? s->rank_ns_per_tick[0] : s->ns_per_tick;
    for (uint32_t col = 0; col < c->n; col++) {
        w.counter_of[col] = -1;
        for (uint32_t k = 0; k < s->n_counters; k++)
            if (!strcmp(s->counter_names[k], c->names[col]))
                w.counter_of[col] = (int32_t)k;
    }
    for (w.member = 0; w.member < s->n_members && !b->oom; w.member++)
        sm_cpath_walk(&s->root, sm_prk_row, &w);
    free(w.path);
    sm_profile_summary_free(s);
    return !b->oom;
}

/* ---------------------------------------------------------------- one process (a merge) */

static int sm_prk_write_all(sm_finalize_t *f, const sm_prk_columns_t *c)
{
    sm_prk_buf_t b = {0};
    sm_prk_header(&b, c);
    /* Rank order, whatever the order of the records. */
    const uint8_t *p = f->profiles, *end = p ? p + f->profiles_len : NULL;
    uint32_t n = 0, rank;
    const uint8_t *blob;
    uint64_t len;
    for (const uint8_t *q = p; q && q < end && (q = sm_tree_next(q, end, &rank, &blob, &len));)
        n++;
    struct sm_prk_rec {
        uint32_t rank;
        const uint8_t *blob;
        uint64_t len;
    } *recs = calloc(n ? n : 1, sizeof *recs);
    if (!recs) {
        free(b.p);
        sm_error("%s/%s not written: %s", f->run->output_dir, SM_RANKS_FILE, strerror(ENOMEM));
        return -1;
    }
    n = 0;
    for (const uint8_t *q = p; q && q < end && (q = sm_tree_next(q, end, &rank, &blob, &len));)
        recs[n++] = (struct sm_prk_rec){rank, blob, len};
    for (uint32_t i = 1; i < n; i++) /* (insertion: records come nearly sorted) */
        for (uint32_t k = i; k > 0 && recs[k - 1].rank > recs[k].rank; k--) {
            struct sm_prk_rec t = recs[k];
            recs[k] = recs[k - 1];
            recs[k - 1] = t;
        }
    sm_out_t o;
    if (sm_out_open(&o, f->run->output_dir, SM_RANKS_FILE) != 0) {
        free(recs);
        free(b.p);
        return -1;
    }
    sm_out_printf(&o, "%.*s", (int)b.len, b.p ? b.p : "");
    for (uint32_t i = 0; i < n && !o.err; i++) {
        b.len = 0;
        if (!sm_prk_rank_rows(&b, &f->job, c, recs[i].blob, recs[i].len, recs[i].rank) && b.oom)
            sm_out_fail(&o, ENOMEM);
        else if (b.len && fwrite(b.p, 1, b.len, o.f) != b.len)
            sm_out_fail(&o, errno);
    }
    free(recs);
    free(b.p);
    return sm_out_close(&o);
}

/* ---------------------------------------------------------------- every rank its rows */

/* Rank 0's counter names to every rank: n, then fixed-size names. */
static int sm_prk_share_columns(sm_finalize_t *f, sm_prk_columns_t *c)
{
    const sm_procs_t *procs = f->procs;
    void *buf = NULL;
    uint64_t len = 0;
    if (procs->rank == 0) {
        const sm_profile_summary_t *s = f->summary;
        uint32_t n = s ? s->n_counters : 0;
        len = sizeof n + (uint64_t)n * SM_SUMMARY_COUNTER_NAME;
        buf = calloc(1, len);
        if (buf) {
            memcpy(buf, &n, sizeof n);
            if (n)
                memcpy((char *)buf + sizeof n, s->counter_names, (size_t)n * SM_SUMMARY_COUNTER_NAME);
        } else {
            len = 0;
        }
    }
    if (procs->size > 1 && procs->bcast(procs->ctx, 0, &buf, &len) != 0) {
        free(buf);
        return -1;
    }
    uint32_t n = 0;
    if (buf && len >= sizeof n)
        memcpy(&n, buf, sizeof n);
    if (n > SM_SUMMARY_MAX_COUNTERS || len != sizeof n + (uint64_t)n * SM_SUMMARY_COUNTER_NAME)
        n = 0;
    c->n = n;
    c->names = n ? malloc((size_t)n * SM_SUMMARY_COUNTER_NAME) : NULL;
    if (n && c->names) {
        memcpy(c->names, (char *)buf + sizeof n, (size_t)n * SM_SUMMARY_COUNTER_NAME);
        for (uint32_t k = 0; k < n; k++)
            c->names[k][SM_SUMMARY_COUNTER_NAME - 1] = '\0';
    } else {
        c->n = 0;
    }
    free(buf);
    return 0;
}

/* Writes all of buf at offset; 0 or an errno. */
static int sm_prk_pwrite(int fd, const char *buf, size_t len, uint64_t offset)
{
    while (len) {
        ssize_t n = pwrite(fd, buf, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        buf += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

/* What rank 0 hands every rank: whether the file is there, which file it
 * is (device, inode: a rank opens that one or none), and each rank's
 * offset. */
typedef struct sm_prk_plan {
    uint64_t ok, dev, ino;
    uint64_t offset[]; /* [size] */
} sm_prk_plan_t;

static int sm_prk_write_parallel(sm_finalize_t *f, const sm_prk_columns_t *c)
{
    const sm_procs_t *procs = f->procs;
    const char *dir = f->run->output_dir;
    sm_prk_buf_t rows = {0};
    bool mine = sm_prk_rank_rows(&rows, &f->job, c, f->profiles, f->profiles_len, procs->rank);
    if (!mine && rows.oom)
        sm_error("%s/%s: the rows of rank %u are left out: %s", dir, SM_RANKS_FILE,
                 (unsigned)procs->rank, strerror(ENOMEM));
    uint64_t size = mine ? rows.len : 0;
    uint64_t *sizes = procs->rank == 0 ? calloc(procs->size, sizeof *sizes) : NULL;
    int failed = procs->gather(procs->ctx, 0, &size, sizeof size, sizes) != 0;

    uint64_t plan_len = sizeof(sm_prk_plan_t) + (uint64_t)procs->size * sizeof(uint64_t);
    sm_prk_plan_t *plan = NULL;
    int fd = -1;
    if (procs->rank == 0) {
        plan = calloc(1, plan_len);
        sm_prk_buf_t head = {0};
        sm_prk_header(&head, c);
        if (plan && sizes && !head.oom && !failed) {
            fd = sm_fs_open_output(dir, SM_RANKS_FILE);
            struct stat st;
            if (fd < 0) {
                sm_error("%s/%s not written: %s", dir, SM_RANKS_FILE, sm_fs_why(errno));
            } else if (fstat(fd, &st) != 0 || sm_prk_pwrite(fd, head.p, head.len, 0) != 0) {
                sm_error("writing %s/%s failed: %s", dir, SM_RANKS_FILE, strerror(errno));
            } else {
                plan->ok = 1;
                plan->dev = (uint64_t)st.st_dev;
                plan->ino = (uint64_t)st.st_ino;
                uint64_t at = head.len;
                for (uint32_t r = 0; r < procs->size; r++) {
                    plan->offset[r] = at;
                    at += sizes[r];
                }
            }
        } else if (!failed) {
            sm_error("%s/%s not written: %s", dir, SM_RANKS_FILE, strerror(ENOMEM));
        }
        free(head.p);
        if (!plan)
            plan_len = 0;
    }
    void *shared = plan;
    if (procs->size > 1 && procs->bcast(procs->ctx, 0, &shared, &plan_len) != 0)
        failed = 1;
    plan = shared;
    int rc = failed ? -1 : 0;
    if (plan && plan_len == sizeof *plan + (uint64_t)procs->size * sizeof(uint64_t) && plan->ok &&
        !failed) {
        if (procs->rank != 0) {
            /* The file rank 0 made, and only that one (never through a link). */
            char *path = malloc(strlen(dir) + sizeof SM_RANKS_FILE + 2);
            if (path)
                sprintf(path, "%s/%s", dir, SM_RANKS_FILE);
            fd = path ? open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY) : -1;
            struct stat st;
            if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                            (uint64_t)st.st_dev != plan->dev || (uint64_t)st.st_ino != plan->ino)) {
                close(fd);
                fd = -1;
                errno = SM_FS_NOT_PLAIN;
            }
            if (fd < 0) {
                sm_error("%s/%s: the rows of rank %u are left out: %s", dir, SM_RANKS_FILE,
                         (unsigned)procs->rank, sm_fs_why(errno));
                rc = -1;
            }
            free(path);
        }
        int e = fd >= 0 && rows.len ? sm_prk_pwrite(fd, rows.p, rows.len,
                                                     plan->offset[procs->rank]) : 0;
        if (e) {
            sm_error("writing %s/%s failed on rank %u: %s", dir, SM_RANKS_FILE,
                     (unsigned)procs->rank, sm_fs_why(e));
            rc = -1;
        }
    } else if (procs->rank == 0) {
        rc = -1; /* (said above) */
    }
    if (fd >= 0 && close(fd) != 0 && rc == 0) {
        sm_error("writing %s/%s failed: %s", dir, SM_RANKS_FILE, strerror(errno));
        rc = -1;
    }
    free(plan);
    free(sizes);
    free(rows.p);
    return rc;
}

static bool sm_profile_ranks_wanted(const sm_finalize_t *f)
{
    return f->profile; /* (the same on every rank: all take part) */
}

static int sm_profile_ranks_write(sm_finalize_t *f)
{
    sm_prk_columns_t c = {0};
    int rc;
    if (f->profiles_gathered) {
        if (f->summary) {
            c.n = f->summary->n_counters;
            c.names = f->summary->counter_names;
        }
        rc = sm_prk_write_all(f, &c);
        return rc;
    }
    if (sm_prk_share_columns(f, &c) != 0) {
        sm_error("%s/%s not written: a transfer failed", f->run->output_dir, SM_RANKS_FILE);
        return -1;
    }
    rc = sm_prk_write_parallel(f, &c);
    free(c.names);
    return rc;
}

const sm_output_t sm_output_profile_ranks = {
    .file = SM_RANKS_FILE,
    .who = SM_OUTPUT_EVERY_RANK_AFTER_PROFILES,
    .wanted = sm_profile_ranks_wanted,
    .write = sm_profile_ranks_write,
};
