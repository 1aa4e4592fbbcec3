/* sysmeasure-merge's work on one folder (see merge.h). */
#define _GNU_SOURCE
#include "merge.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/buffer.h"
#include "../core/events.h"
#include "../core/job_folder.h"
#include "../core/journal.h"
#include "../core/runtime.h"
#include "../util/fs.h"
#include "../util/grow.h"
#include "../util/log.h"
#include "../finalize/comm_pairs.h"
#include "../finalize/pipeline.h"
#include "../writers/summary_common.h"
#include "../writers/writers.h"
#include "image.h"
#include "process_file.h"
#include "profile_summary.h"
#include "recover.h"
#include "unify.h"

#define SM_RECOVERED_REASON "killed; recovered from its crash-safe files"

/* Why a rank is missing, when nothing else is known of it. */
#define SM_MISSING_NO_FILE "no process file: killed or lost before it wrote one, " \
                           "and no crash-safe files (--crash-safe keeps a killed rank's events)"

#define SM_MISSING_EVENTS_ONLY "no process file, only its spill file: without the " \
                               "definitions of its process file its events cannot be named"

/* A file in FOLDER/.spill, and whose file its header says it is. */
typedef enum { SM_MS_EVENTS, SM_MS_JOURNAL } sm_ms_kind_t;
typedef struct sm_ms_file {
    char *name;
    char *path;
    sm_ms_kind_t kind;
    int ok;                  /* header readable and intact */
    char job[SM_JOB_ID_MAX];
    char host[64];
    int64_t pid;
    uint32_t rank;           /* SM_SPILL_NO_RANK: not in the header */
    int crash_safe;
    int used;                /* read by the merge (removed after it) */
} sm_ms_file_t;

/* A process file that could not be read, by the rank its head names. */
typedef struct sm_ms_damaged {
    uint32_t rank;
    char *why;
} sm_ms_damaged_t;

/* The jobs found in the folder: identity, ranks found, the program. */
typedef struct sm_merge_job {
    char id[SM_JOB_ID_MAX];
    uint32_t files;
    char program[64];
    uint64_t end_ns; /* the latest end of its ranks (wall clock) */
} sm_merge_job_t;

typedef struct sm_merge {
    const char *folder;
    const char *want;
    char ranks_dir[PATH_MAX + 16], spill_dir[PATH_MAX + 16];
    sm_ms_file_t *spill;          /* everything in .spill */
    uint32_t n_spill, cap_spill;
    sm_process_file_t **files;    /* by rank, once loaded */
    uint32_t n_files, cap_files;
    uint32_t n_from_ranks;        /* of them from .ranks (the rest recovered) */
    sm_ms_damaged_t *dmg;         /* damaged files with a rank */
    uint32_t n_dmg, cap_dmg;
    uint32_t damaged;             /* files that could not be read at all */
    uint32_t refused;             /* events refused (not the process's) */
    char **ranks_used;            /* process files read, for the clean-up */
    uint32_t n_ranks_used, cap_ranks_used;
    sm_merge_job_t *jobs;
    uint32_t n_jobs;
    uint32_t other;               /* files of other jobs */
} sm_merge_t;

static int sm_merge_recovered(const sm_process_file_t *f)
{
    return strcmp(f->reason, SM_RECOVERED_REASON) == 0;
}

static int sm_merge_by_rank(const void *a, const void *b)
{
    const sm_process_file_t *x = *(sm_process_file_t *const *)a;
    const sm_process_file_t *y = *(sm_process_file_t *const *)b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int sm_merge_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* ---------------------------------------------------------------- what .spill holds */

/* Reads the header of every file in .spill (events and journals). */
static void sm_merge_scan_spill(sm_merge_t *m)
{
    DIR *d = opendir(m->spill_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        int events = sm_merge_has_suffix(e->d_name, ".events");
        if (!events && !sm_merge_has_suffix(e->d_name, ".defs"))
            continue;
        if (m->n_spill == m->cap_spill && SM_GROW(m->spill, m->cap_spill, 16) != 0)
            break;
        sm_ms_file_t *f = &m->spill[m->n_spill];
        memset(f, 0, sizeof *f);
        f->name = strdup(e->d_name);
        if (!f->name || asprintf(&f->path, "%s/%s", m->spill_dir, e->d_name) < 0) {
            free(f->name);
            break;
        }
        f->kind = events ? SM_MS_EVENTS : SM_MS_JOURNAL;
        f->rank = SM_SPILL_NO_RANK;
        if (events) {
            sm_spill_report_t id;
            f->ok = sm_spill_file_identity(f->path, &id) == 0;
            if (f->ok) {
                memcpy(f->job, id.job, sizeof f->job);
                memcpy(f->host, id.host, sizeof f->host);
                f->pid = id.pid;
                f->rank = id.rank;
                f->crash_safe = id.crash_safe;
            }
        } else {
            sm_journal_head_t h;
            char err[64];
            f->ok = sm_journal_peek(f->path, &h, err, sizeof err) == 0;
            if (f->ok) {
                memcpy(f->job, h.job, sizeof f->job);
                memcpy(f->host, h.host, sizeof f->host);
                f->pid = h.pid;
            }
        }
        m->n_spill++;
    }
    if (d)
        closedir(d);
}

/* Whether spill file s was written by the process (job, pid, host, rank;
 * rank UINT32_MAX or an unknown rank in the header: not compared). */
static int sm_merge_is_of(const sm_ms_file_t *s, const char *job, int64_t pid, const char *host,
                          uint32_t rank)
{
    return s->ok && !strcmp(s->job, job) && s->pid == pid &&
           (!s->host[0] || !host[0] || !strcmp(s->host, host)) &&
           (s->rank == SM_SPILL_NO_RANK || rank == UINT32_MAX || s->rank == rank);
}

static sm_ms_file_t *sm_merge_spill_named(sm_merge_t *m, const char *name, sm_ms_kind_t kind)
{
    for (uint32_t i = 0; i < m->n_spill; i++)
        if (m->spill[i].kind == kind && !strcmp(m->spill[i].name, name))
            return &m->spill[i];
    return NULL;
}

static sm_ms_file_t *sm_merge_spill_of(sm_merge_t *m, sm_ms_kind_t kind, const char *job,
                                       int64_t pid, const char *host, uint32_t rank)
{
    for (uint32_t i = 0; i < m->n_spill; i++)
        if (m->spill[i].kind == kind && sm_merge_is_of(&m->spill[i], job, pid, host, rank))
            return &m->spill[i];
    return NULL;
}

/* "rank R (pid P on H)" or "pid P on H" of a header. */
static void sm_merge_whose(const sm_ms_file_t *s, char *buf, size_t len)
{
    if (!s || !s->ok)
        snprintf(buf, len, "an unknown process (its header is damaged)");
    else if (s->rank != SM_SPILL_NO_RANK)
        snprintf(buf, len, "rank %u (pid %lld on %s)", (unsigned)s->rank, (long long)s->pid,
                 s->host);
    else
        snprintf(buf, len, "pid %lld on %s", (long long)s->pid, s->host);
}

/* The events file of a process (rank, pid, host of job), named `name` by the
 * process itself: that file when its header agrees, else the file whose
 * header names the process (said in one line), else NULL (said: its events
 * are lost).  what: "its process file" or "its journal". */
static sm_ms_file_t *sm_merge_place(sm_merge_t *m, const char *name, const char *job,
                                    uint32_t rank, int64_t pid, const char *host,
                                    const char *what, int must_exist)
{
    sm_ms_file_t *named = sm_merge_spill_named(m, name, SM_MS_EVENTS);
    if (named && (!named->ok || sm_merge_is_of(named, job, pid, host, rank)))
        return named; /* its own (a damaged header: its frames tell the rest) */
    sm_ms_file_t *found = sm_merge_spill_of(m, SM_MS_EVENTS, job, pid, host, rank);
    char theirs[160] = "";
    if (named)
        sm_merge_whose(named, theirs, sizeof theirs);
    if (found) {
        if (named)
            fprintf(stderr, "sysmeasure-merge: %s/%s, which %s names, holds the events of %s: "
                    "rank %u's events read from %s (its header names rank %u, pid %lld on %s)\n",
                    m->spill_dir, name, what, theirs, (unsigned)rank, found->name,
                    (unsigned)rank, (long long)pid, host);
        else
            fprintf(stderr, "sysmeasure-merge: %s/%s, which %s names, is missing: rank %u's "
                    "events read from %s (its header names rank %u, pid %lld on %s)\n",
                    m->spill_dir, name, what, (unsigned)rank, found->name, (unsigned)rank,
                    (long long)pid, host);
        return found;
    }
    if (!named && !must_exist)
        return NULL; /* (a process killed before its first event has none) */
    if (named)
        sm_error("%s/%s, which %s names, holds the events of %s, and no file in %s holds those "
                 "of rank %u (pid %lld on %s): rank %u's events are lost", m->spill_dir, name,
                 what, theirs, m->spill_dir, (unsigned)rank, (long long)pid, host, (unsigned)rank);
    else
        sm_error("cannot open spill file %s/%s, which %s names: it is missing, and no file in "
                 "%s holds the events of rank %u (pid %lld on %s): the archive lacks them",
                 m->spill_dir, name, what, m->spill_dir, (unsigned)rank, (long long)pid, host);
    m->refused++;
    return NULL;
}

/* Every location of process file f reads its events from the file whose
 * header names f's process. */
static void sm_merge_place_events(sm_merge_t *m, sm_process_file_t *f)
{
    for (uint32_t i = 0; i < f->n_locations; i++) {
        if (!f->events[i])
            continue;
        /* All locations of a process share one file: placed once (the
         * locations before i that named it were changed with it). */
        int seen = 0;
        for (uint32_t k = 0; k < i && !seen; k++)
            seen = f->events[k] && !strcmp(f->events[k], f->events[i]);
        if (seen)
            continue;
        char *slash = strrchr(f->events[i], '/');
        char name[NAME_MAX + 1];
        snprintf(name, sizeof name, "%s", slash ? slash + 1 : f->events[i]);
        sm_ms_file_t *s = sm_merge_place(m, name, f->job, f->rank, f->pid, f->hostname,
                                         "its process file", 1);
        char *was = strdup(f->events[i]);
        for (uint32_t k = i; was && k < f->n_locations; k++) {
            if (!f->events[k] || strcmp(f->events[k], was) != 0)
                continue;
            free(f->events[k]);
            f->events[k] = s ? strdup(s->path) : NULL;
        }
        free(was);
        if (s)
            s->used = 1;
    }
}

/* ---------------------------------------------------------------- loading */

static int sm_merge_add_file(sm_merge_t *m, sm_process_file_t *f)
{
    uint32_t j = 0;
    while (j < m->n_jobs && strcmp(m->jobs[j].id, f->job) != 0)
        j++;
    if (j == m->n_jobs) {
        sm_merge_job_t *more = realloc(m->jobs, sizeof *m->jobs * (m->n_jobs + 1));
        if (!more)
            return -1;
        m->jobs = more;
        memset(&m->jobs[j], 0, sizeof m->jobs[j]);
        snprintf(m->jobs[j].id, sizeof m->jobs[j].id, "%s", f->job);
        snprintf(m->jobs[j].program, sizeof m->jobs[j].program, "%.63s", f->program);
        m->n_jobs++;
    }
    m->jobs[j].files++;
    if (f->end_realtime_ns > m->jobs[j].end_ns)
        m->jobs[j].end_ns = f->end_realtime_ns;
    if (m->n_files == m->cap_files && SM_GROW(m->files, m->cap_files, 16) != 0)
        return -1;
    m->files[m->n_files++] = f;
    return 0;
}

static void sm_merge_add_damaged(sm_merge_t *m, uint32_t rank, const char *err)
{
    if (m->n_dmg == m->cap_dmg && SM_GROW(m->dmg, m->cap_dmg, 8) != 0)
        return;
    /* The reason, short: what the one line said after the path. */
    const char *why = strstr(err, " is ");
    char *copy = NULL;
    if (asprintf(&copy, "its process file%s", why ? why : " cannot be read") < 0)
        return;
    m->dmg[m->n_dmg++] = (sm_ms_damaged_t){rank, copy};
}

/* "ID (2 process files, program P), ID (...)" into buf. */
static void sm_merge_list_jobs(const sm_merge_job_t *jobs, uint32_t n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && o < len; i++) {
        char when[32] = "?";
        time_t t = (time_t)(jobs[i].end_ns / 1000000000u);
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        o += (size_t)snprintf(buf + o, len - o, "%s%s (%u process file%s, program %s, ended %s)",
                              i ? ", " : "", jobs[i].id, (unsigned)jobs[i].files,
                              jobs[i].files == 1 ? "" : "s", jobs[i].program, when);
    }
}

/* The process files of .ranks (one job's). */
static int sm_merge_load_ranks(sm_merge_t *m)
{
    DIR *d = opendir(m->ranks_dir);
    struct dirent *e;
    char path[PATH_MAX + 300], err[PATH_MAX + 600];
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "rank-", 5) != 0 || !sm_merge_has_suffix(e->d_name, ".smp"))
            continue;
        snprintf(path, sizeof path, "%s/%s", m->ranks_dir, e->d_name);
        sm_process_file_head_t head;
        sm_process_file_t *f = sm_process_file_read(path, &head, err, sizeof err);
        const char *job = f ? f->job : head.have_head ? head.job : NULL;
        if (m->want && job && strcmp(job, m->want) != 0) {
            sm_info(1, "%s belongs to job %s: left out", path, job);
            sm_process_file_free(f);
            m->other++;
            continue;
        }
        if (!f) {
            sm_error("%s", err);
            m->damaged++;
            if (head.have_head)
                sm_merge_add_damaged(m, head.rank, err);
            continue;
        }
        /* The name is the writer's, the header is what counts. */
        unsigned named = 0;
        if (sscanf(e->d_name, "rank-%u.", &named) == 1 && named != f->rank)
            fprintf(stderr, "sysmeasure-merge: %s is named for rank %u, but its header says "
                    "rank %u (pid %lld on %s): merged as rank %u\n", path, named,
                    (unsigned)f->rank, (long long)f->pid, f->hostname, (unsigned)f->rank);
        if (sm_merge_add_file(m, f) != 0) {
            sm_process_file_free(f);
            sm_error("out of memory");
            closedir(d);
            return -1;
        }
    }
    if (d)
        closedir(d);
    m->n_from_ranks = m->n_files;
    return 0;
}

/* Crash-safe journals of processes that left no process file. */
static int sm_merge_load_journals(sm_merge_t *m)
{
    char err[PATH_MAX + 600];
    for (uint32_t i = 0; i < m->n_spill; i++) {
        sm_ms_file_t *j = &m->spill[i];
        if (j->kind != SM_MS_JOURNAL)
            continue;
        if (!j->ok) {
            sm_error("%s is not a sysmeasure definitions journal of this version (or it is "
                     "damaged): the events of the process that wrote it cannot be named; left "
                     "out", j->path);
            m->damaged++;
            continue;
        }
        int has_file = 0;
        for (uint32_t k = 0; k < m->n_from_ranks && !has_file; k++)
            has_file = m->files[k]->pid == j->pid && !strcmp(m->files[k]->hostname, j->host) &&
                       !strcmp(m->files[k]->job, j->job);
        if (has_file) {
            j->used = 1; /* it wrote its process file: that one holds everything */
            continue;
        }
        if (m->want && strcmp(j->job, m->want) != 0) {
            sm_info(1, "%s belongs to job %s: left out", j->path, j->job);
            m->other++;
            continue;
        }
        /* Its events: the crash-safe file of its name, if that is its. */
        char name[NAME_MAX + 1];
        snprintf(name, sizeof name, "%.*s.events", (int)(strlen(j->name) - 5), j->name);
        sm_ms_file_t *ev = sm_merge_place(m, name, j->job, UINT32_MAX, j->pid, j->host,
                                          "its journal", 0);
        uint64_t events = 0;
        sm_process_file_t *f = sm_recover_process(j->path, ev ? ev->path : NULL, &events, err,
                                                  sizeof err);
        if (!f) {
            sm_error("%s", err);
            m->damaged++;
            continue;
        }
        j->used = 1;
        if (ev)
            ev->used = 1;
        char live[256] = "";
        if (f->live_chunks)
            snprintf(live, sizeof live, " (%llu in %llu chunk%s being written at the kill)",
                     (unsigned long long)f->live_records, (unsigned long long)f->live_chunks,
                     f->live_chunks == 1 ? "" : "s");
        if (ev)
            fprintf(stderr, "sysmeasure-merge: rank %u (pid %lld on %s) left no process file "
                    "(killed): recovered from its crash-safe files, %llu events%s\n",
                    (unsigned)f->rank, (long long)f->pid, f->hostname,
                    (unsigned long long)events, live);
        else
            fprintf(stderr, "sysmeasure-merge: rank %u (pid %lld on %s) left no process file "
                    "(killed) and no crash-safe events file: only its definitions are "
                    "recovered\n", (unsigned)f->rank, (long long)f->pid, f->hostname);
        if (sm_merge_add_file(m, f) != 0) {
            sm_process_file_free(f);
            sm_error("out of memory");
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- cleaning up */

static int sm_merge_remove_entry(const char *path, const struct stat *st, int type,
                                 struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Removes what the merge read (the process files and the .spill files of
 * the job merged); the folders go when empty.  Bytes freed in *bytes. */
static void sm_merge_clean(sm_merge_t *m, uint32_t *removed, uint64_t *bytes, uint32_t *left)
{
    *removed = 0;
    *bytes = 0;
    struct stat st;
    for (uint32_t i = 0; i < m->n_ranks_used; i++)
        if (m->ranks_used[i] && lstat(m->ranks_used[i], &st) == 0 &&
            unlink(m->ranks_used[i]) == 0) {
            ++*removed;
            *bytes += (uint64_t)st.st_size;
        }
    for (uint32_t i = 0; i < m->n_spill; i++)
        if (m->spill[i].used && lstat(m->spill[i].path, &st) == 0 &&
            unlink(m->spill[i].path) == 0) {
            ++*removed;
            *bytes += (uint64_t)st.st_blocks * 512u; /* crash-safe files are allocated ahead */
        }
    /* The OTF2 archive a merged process was encoding during the run
     * (.spill/otf2-<pid>): never finished, the merge wrote the archive. */
    for (uint32_t i = 0; i < m->n_files; i++) {
        char dir[PATH_MAX + 48];
        snprintf(dir, sizeof dir, "%s/otf2-%lld", m->spill_dir, (long long)m->files[i]->pid);
        if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
            nftw(dir, sm_merge_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    *left = 0;
    const char *dirs[2] = {m->ranks_dir, m->spill_dir};
    for (int k = 0; k < 2; k++) {
        DIR *d = opendir(dirs[k]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            *left += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        if (d)
            closedir(d);
        sm_fs_rmdir_own(dirs[k]);
    }
}

static void sm_merge_free(sm_merge_t *m)
{
    for (uint32_t i = 0; i < m->n_files; i++)
        sm_process_file_free(m->files[i]);
    free(m->files);
    for (uint32_t i = 0; i < m->n_spill; i++) {
        free(m->spill[i].name);
        free(m->spill[i].path);
    }
    free(m->spill);
    for (uint32_t i = 0; i < m->n_dmg; i++)
        free(m->dmg[i].why);
    free(m->dmg);
    for (uint32_t i = 0; i < m->n_ranks_used; i++)
        free(m->ranks_used[i]);
    free(m->ranks_used);
    free(m->jobs);
}

/* ---------------------------------------------------------------- writing */

/* The outputs from the loaded files (the job's n_ranks ranks; processes[]
 * says which are missing).  Failures counted in *failures. */
/* The closing line's MPI share of the job just merged (pipeline.h). */
static char sm_merge_summary_line[320];

static int sm_merge_write(sm_merge_t *m, const sm_merge_options_t *opt, uint32_t n_ranks,
                          sm_job_process_t *processes, const char *const *missing)
{
    sm_process_file_t **files = m->files;
    uint32_t n_files = m->n_files;
    const char *folder = m->folder;
    int failures = 0;

    /* Definitions, unified in rank order (rank 0's ids stay as they were). */
    sm_defset_t *defs = sm_defset_new();
    if (!defs) {
        sm_error("out of memory");
        return 1;
    }
    for (uint32_t i = 0; i < n_files; i++)
        if (sm_defset_merge_blob(defs, files[i]->defs, files[i]->defs_len, &files[i]->maps) != 0) {
            sm_error("the definitions in %s are damaged", files[i]->path);
            sm_defset_free(defs);
            return 1;
        }

    /* The job as the writers see it: one process holding every rank. */
    /* The communication matrix as its pairs that talk (comm_pairs.h). */
    uint64_t n_pairs = 0;
    for (uint32_t i = 0; i < n_files; i++)
        for (uint32_t k = 0; k < files[i]->n_ranks && k < n_ranks; k++)
            n_pairs += files[i]->matrix_row[2 * k] || files[i]->matrix_row[2 * k + 1];
    sm_comm_pair_t *pairs = n_pairs ? malloc(sizeof *pairs * n_pairs) : NULL;
    uint64_t used_pairs = 0;
    sm_image_t *imgs = calloc(n_files, sizeof *imgs);
    if ((n_pairs && !pairs) || !imgs) {
        sm_error("out of memory");
        free(pairs);
        free(imgs);
        sm_defset_free(defs);
        return 1;
    }
    sm_run_info_t run;
    memset(&run, 0, sizeof run);
    run.output_dir = folder;
    run.rank = 0;
    run.n_ranks = n_ranks;
    run.clock_source = "merged";
    for (uint32_t i = 0; i < n_files; i++) {
        sm_process_file_t *f = files[i];
        for (uint32_t k = 0; k < f->n_ranks && k < n_ranks; k++)
            if (f->matrix_row[2 * k] || f->matrix_row[2 * k + 1])
                pairs[used_pairs++] = (sm_comm_pair_t){f->rank, k, f->matrix_row[2 * k],
                                                       f->matrix_row[2 * k + 1]};
        if (sm_merge_recovered(f))
            sm_recover_image(f, &imgs[i]);
        else
            sm_process_file_image(f, &imgs[i]);
        run.spills += f->spills;
        run.spilled_bytes += f->spilled_bytes;
        run.dropped_records += f->dropped_records;
        run.unmatched_leaves += f->unmatched_leaves;
        for (int k = 0; k < SM_REC_KIND_COUNT; k++) {
            run.record_count[k] += f->record_count[k];
            run.record_words[k] += f->record_words[k];
        }
        uint64_t mine = sm_record_count_bytes(f->record_count, f->record_words);
        if (mine > run.record_bytes_max)
            run.record_bytes_max = mine;
        if (!run.start_realtime_ns || f->start_realtime_ns < run.start_realtime_ns)
            run.start_realtime_ns = f->start_realtime_ns;
        if (f->end_realtime_ns > run.end_realtime_ns)
            run.end_realtime_ns = f->end_realtime_ns;
    }
    sm_comm_pairs_sort(pairs, &used_pairs);
    run.program = files[0]->program;
    run.argc = files[0]->argc;
    run.argv = files[0]->argv;
    run.config = files[0]->have_config ? &files[0]->config : NULL;
    /* Declared metadata (Kokkos), as rank 0 would have written it. */
    for (uint32_t i = 0; i + 1 < files[0]->n_metadata2; i += 2)
        sm_runtime_metadata_set(files[0]->metadata[i], files[0]->metadata[i + 1]);
    /* A rank whose trace stopped before a disk limit put its note there
     * (trace_space.h): the summary says it, for every such rank. */
    static char stop_note[1400];
    uint32_t stopped = 0;
    for (uint32_t i = 0; i < n_files; i++)
        for (uint32_t k = 0; k + 1 < files[i]->n_metadata2; k += 2)
            if (!strcmp(files[i]->metadata[k], "trace_stopped") && !stopped++)
                snprintf(stop_note, sizeof stop_note, "rank %u: %s", (unsigned)files[i]->rank,
                         files[i]->metadata[k + 1]);
    if (stopped && run.n_notes < SM_RUN_MAX_NOTES) {
        size_t len = strlen(stop_note);
        if (stopped > 1 && len < sizeof stop_note)
            snprintf(stop_note + len, sizeof stop_note - len, " (the trace stopped in %u ranks)",
                     (unsigned)stopped);
        run.notes[run.n_notes++] = stop_note;
    }
    run.pid = (pid_t)files[0]->pid;
    snprintf(run.hostname, sizeof run.hostname, "%s", files[0]->hostname);
    /* Ticks of another process mean nothing here: durations come from the
     * wall-clock dates. */
    run.start_time = run.end_time = 0;

    sm_finalize_t fin = {
        .procs = sm_procs_single(),
        .run = &run,
        .job = {
            .procs = sm_procs_single(),
            .n_ranks = n_ranks,
            .defs = defs,
            .maps = &files[0]->maps,
            .processes = processes,
            .missing = missing,
            .matrix_pairs = used_pairs ? pairs : NULL,
            .matrix_pairs_n = used_pairs,
        },
        .images = imgs,
        .n_images = n_files,
        .profiles_gathered = true,
        .trace = !run.config || run.config->trace,
        .profile = !run.config || run.config->profile,
        .report = !run.config || run.config->report,
        .perfetto = opt->perfetto || (run.config && run.config->perfetto),
    };
    for (uint32_t i = 0; i < n_files; i++)
        if (files[i]->rank == 0)
            fin.job.rank0_image = &imgs[i]; /* its locations for metadata.json */
    /* The sampled metrics of every rank, as the tree would have gathered them. */
    uint64_t mlen = 0;
    for (uint32_t i = 0; i < n_files; i++)
        mlen += sizeof(uint32_t) + sizeof(uint64_t) + files[i]->metrics_len;
    uint8_t *mseq = malloc(mlen ? mlen : 1), *q = mseq;
    for (uint32_t i = 0; mseq && i < n_files; i++) {
        sm_process_file_t *f = files[i];
        memcpy(q, &f->rank, sizeof f->rank);
        memcpy(q + sizeof f->rank, &f->metrics_len, sizeof f->metrics_len);
        if (f->metrics_len)
            memcpy(q + sizeof f->rank + sizeof f->metrics_len, f->metrics, f->metrics_len);
        q += sizeof f->rank + sizeof f->metrics_len + f->metrics_len;
    }
    fin.job.metrics = mseq;
    fin.job.metrics_len = mseq ? (uint64_t)(q - mseq) : 0;

    /* Profiles: each rank's, in the job's region ids, as the tree would
     * have gathered them. */
    uint64_t seq_len = 0;
    for (uint32_t i = 0; i < n_files; i++)
        seq_len += sizeof(uint32_t) + sizeof(uint64_t) + files[i]->profile_len;
    uint8_t *seq = malloc(seq_len ? seq_len : 1), *p = seq;
    for (uint32_t i = 0; seq && i < n_files; i++) {
        sm_process_file_t *f = files[i];
        if (!f->profile_len)
            continue;
        if (sm_profile_summary_remap(f->profile, f->profile_len, f->maps.regions,
                                     f->maps.n_regions) != 0) {
            sm_error("the profile in %s is damaged; it is left out", f->path);
            f->damaged++;
            continue;
        }
        memcpy(p, &f->rank, sizeof f->rank);
        memcpy(p + sizeof f->rank, &f->profile_len, sizeof f->profile_len);
        memcpy(p + sizeof f->rank + sizeof f->profile_len, f->profile, f->profile_len);
        p += sizeof f->rank + sizeof f->profile_len + f->profile_len;
    }
    fin.profiles = seq;
    fin.profiles_len = seq ? (uint64_t)(p - seq) : 0;

    /* The same pipeline as the end of a live run (src/finalize). */
    failures += sm_finalize_run(&fin);
    snprintf(sm_merge_summary_line, sizeof sm_merge_summary_line, "%s", fin.summary_line);
    free(seq);
    free(mseq);
    free(imgs);
    free(pairs);
    sm_defset_free(defs);
    return failures;
}

/* ---------------------------------------------------------------- the merge */

sm_merge_status_t sm_merge_folder(const char *folder, const sm_merge_options_t *opt)
{
    sm_merge_t m;
    memset(&m, 0, sizeof m);
    m.folder = folder;
    m.want = opt->job;
    snprintf(m.ranks_dir, sizeof m.ranks_dir, "%s/%s", folder, SM_PROCESS_FILE_DIR);
    snprintf(m.spill_dir, sizeof m.spill_dir, "%s/.spill", folder);
    struct stat st;
    int have_ranks = stat(m.ranks_dir, &st) == 0 && S_ISDIR(st.st_mode);
    int ranks_errno = errno;
    int have_spill = stat(m.spill_dir, &st) == 0 && S_ISDIR(st.st_mode);
    if (!have_ranks && !have_spill) {
        sm_error("%s has no process files (%s: %s): nothing to merge", folder, m.ranks_dir,
                 strerror(ranks_errno));
        return SM_MERGE_FAILED;
    }
    sm_merge_status_t status = SM_MERGE_FAILED;
    sm_job_process_t *processes = NULL;
    const char **missing = NULL;
    sm_merge_scan_spill(&m);
    if (sm_merge_load_ranks(&m) != 0 || sm_merge_load_journals(&m) != 0)
        goto out;
    char list[4096];
    sm_merge_list_jobs(m.jobs, m.n_jobs, list, sizeof list);
    if (m.n_jobs > 1) {
        sm_error("%s holds the process files of %u jobs: %s; name the one to merge with "
                 "--job ID", m.ranks_dir, (unsigned)m.n_jobs, list);
        goto out;
    }
    if (!m.n_files && m.want && m.other) {
        sm_error("%s has no process file of job %s (%u of other jobs; sysmeasure-merge -v "
                 "names them)", m.ranks_dir, m.want, (unsigned)m.other);
        goto out;
    }
    if (!m.n_files) {
        sm_error("%s has no readable process files (.ranks/rank-*.smp): nothing to merge", folder);
        goto out;
    }
    if (m.other)
        sm_warning("%u process file%s of other jobs left out (job %s merged)", (unsigned)m.other,
                   m.other == 1 ? "" : "s", m.want);
    qsort(m.files, m.n_files, sizeof *m.files, sm_merge_by_rank);
    for (uint32_t i = 1; i < m.n_files; i++)
        if (m.files[i]->rank == m.files[i - 1]->rank) {
            sm_error("%s and %s are both rank %u of job %s", m.files[i - 1]->path,
                     m.files[i]->path, (unsigned)m.files[i]->rank, m.files[i]->job);
            goto out;
        }
    /* Events: each process file's from the file whose header is its. */
    for (uint32_t i = 0; i < m.n_files; i++)
        if (!sm_merge_recovered(m.files[i]))
            sm_merge_place_events(&m, m.files[i]);

    /* The job's ranks, and those that left nothing: named, with why. */
    uint32_t n_ranks = 0;
    for (uint32_t i = 0; i < m.n_files; i++) {
        if (m.files[i]->n_ranks > n_ranks)
            n_ranks = m.files[i]->n_ranks;
        if (m.files[i]->rank + 1 > n_ranks)
            n_ranks = m.files[i]->rank + 1;
    }
    processes = calloc(n_ranks, sizeof *processes);
    missing = calloc(n_ranks, sizeof *missing);
    if (!processes || !missing) {
        sm_error("out of memory");
        goto out;
    }
    for (uint32_t r = 0; r < n_ranks; r++) {
        processes[r].rank = r;
        missing[r] = SM_MISSING_NO_FILE;
        /* Its spill file without its process file: events without names. */
        for (uint32_t s = 0; s < m.n_spill; s++)
            if (m.spill[s].kind == SM_MS_EVENTS && m.spill[s].ok && m.spill[s].rank == r &&
                !strcmp(m.spill[s].job, m.files[0]->job))
                missing[r] = SM_MISSING_EVENTS_ONLY;
    }
    for (uint32_t i = 0; i < m.n_dmg; i++)
        if (m.dmg[i].rank < n_ranks)
            missing[m.dmg[i].rank] = m.dmg[i].why;
    for (uint32_t i = 0; i < m.n_files; i++) {
        sm_process_file_t *f = m.files[i];
        processes[f->rank].pid = f->pid;
        missing[f->rank] = NULL;
        memcpy(processes[f->rank].hostname, f->hostname, sizeof processes[f->rank].hostname);
    }
    if (m.n_files < n_ranks) {
        sm_job_t j = {.n_ranks = n_ranks, .processes = processes, .missing = missing};
        char missing[2048];
        sm_job_missing_text(&j, missing, sizeof missing);
        fprintf(stderr, "sysmeasure-merge: %u of the job's %u ranks left a process file or "
                "crash-safe files; missing: %s\n", (unsigned)m.n_files, (unsigned)n_ranks,
                missing);
    }
    for (uint32_t i = 0; i < m.n_files; i++) {
        sm_info(1, "rank %u (pid %lld on %s): %s", (unsigned)m.files[i]->rank,
                (long long)m.files[i]->pid, m.files[i]->hostname, m.files[i]->reason);
        if (strstr(m.files[i]->reason, SM_PF_EVENTS_CUT))
            sm_warning("rank %u (pid %lld on %s) was killed while it saved its events: its "
                       "profile is complete, its trace lacks the events it still held in memory",
                       (unsigned)m.files[i]->rank, (long long)m.files[i]->pid,
                       m.files[i]->hostname);
    }

    int failures = sm_merge_write(&m, opt, n_ranks, processes,
                                  m.n_files < n_ranks ? missing : NULL);
    uint32_t incomplete = 0; /* ranks whose files were damaged in parts */
    for (uint32_t i = 0; i < m.n_files; i++)
        incomplete += m.files[i]->damaged != 0;
    if (failures) {
        sm_error("%d of the outputs in %s could not be written (see above)", failures, folder);
        goto out;
    }
    if (m.damaged || incomplete || m.refused) {
        /* What could be merged is written; the damage is not silent, and
         * the files stay for a look. */
        fprintf(stderr, "sysmeasure-merge: %u of %u ranks merged into %s; %u file%s damaged or "
                "not the process's (see above): %s; the files are kept in .ranks and .spill\n",
                (unsigned)m.n_files, (unsigned)n_ranks, folder,
                (unsigned)(m.damaged + incomplete + m.refused),
                m.damaged + incomplete + m.refused == 1 ? "" : "s",
                incomplete || m.refused ? "what they held is missing from the output"
                                        : "their data is missing");
        goto out;
    }
    status = SM_MERGE_OK;
    if (opt->keep && opt->live)
        goto out;
    if (opt->keep) {
        fprintf(stderr, "sysmeasure-merge: %u of %u ranks merged into %s (its process and "
                "crash-safe files kept: --keep)%s\n", (unsigned)m.n_files, (unsigned)n_ranks,
                folder, sm_merge_summary_line);
        goto out;
    }
    /* Everything merged is in the outputs now: the files it came from go. */
    for (uint32_t i = 0; i < m.n_files; i++) {
        sm_process_file_t *f = m.files[i];
        if (!sm_merge_recovered(f) &&
            (m.n_ranks_used < m.cap_ranks_used || SM_GROW(m.ranks_used, m.cap_ranks_used, 16) == 0))
            m.ranks_used[m.n_ranks_used++] = strdup(f->path);
        for (uint32_t k = 0; k < f->n_locations; k++)
            for (uint32_t s = 0; f->events[k] && s < m.n_spill; s++)
                if (!strcmp(m.spill[s].path, f->events[k]))
                    m.spill[s].used = 1;
    }
    /* The bookkeeping of a job without MPI that the merge completes
     * (job_folder.h) goes with its files. */
    sm_job_folder_remove(folder, sm_job_hash_of(m.files[0]->job));
    uint32_t removed, left;
    uint64_t freed;
    sm_merge_clean(&m, &removed, &freed, &left);
    if (opt->live)
        goto out;
    char rest[160] = "";
    if (left)
        snprintf(rest, sizeof rest, "; %u file%s kept there: of ranks not merged (their events "
                 "without names) or of other jobs", (unsigned)left, left == 1 ? "" : "s");
    fprintf(stderr, "sysmeasure-merge: %u of %u ranks merged into %s (the %u files merged, "
            "%.1f MB, removed from .ranks and .spill%s)%s\n", (unsigned)m.n_files,
            (unsigned)n_ranks, folder, (unsigned)removed, (double)freed / 1e6, rest,
            sm_merge_summary_line);
out:
    free(processes);
    free(missing);
    sm_merge_free(&m);
    return status;
}
