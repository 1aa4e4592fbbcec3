/* sysmeasure-merge FOLDER: the archive and summaries of a job that could not
 * finish them itself (a rank called MPI_Abort, was killed, or the program
 * never called MPI_Finalize).  Each rank left a process file in
 * FOLDER/.ranks and its events in FOLDER/.spill; this reads them all and
 * runs the same unification and writers as MPI_Finalize would have, in one
 * process. */
#include "sm_build.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/events.h"
#include "../core/runtime.h"
#include "../merge/gpu_passes.h"
#include "../merge/image.h"
#include "../merge/process_file.h"
#include "../merge/profile_summary.h"
#include "../merge/recover.h"
#include "../merge/unify.h"
#include "../util/log.h"
#include "../writers/perfetto.h"
#include "../writers/writers.h"
#include "../util/grow.h"

enum { SM_MERGE_OK = 0, SM_MERGE_FAILED = 1, SM_MERGE_USAGE = 2 };

static void sm_merge_usage(FILE *f)
{
    fprintf(f, "usage: sysmeasure-merge [-v] [--job ID] [--perfetto] FOLDER\n"
               "       sysmeasure-merge --gpu-passes FOLDER\n"
               "Writes FOLDER/traces.otf2, profile.txt, profile.json, profile.csv,\n"
               "metadata.json and report.html from the process files that the ranks of\n"
               "a job left in FOLDER/.ranks when they could not write them together\n"
               "(MPI_Abort, a signal, no MPI_Finalize), and, for processes run with\n"
               "--crash-safe and killed without a word (kill -9), from their crash-safe\n"
               "files in FOLDER/.spill.  When the folder holds the files\n"
               "of several jobs, --job ID names the one to merge (the error lists them).\n"
               "--perfetto also writes trace.pftrace (Perfetto's format, for ui.perfetto.dev),\n"
               "as the job's own --perfetto would have.\n"
               "--gpu-passes merges the application-mode passes FOLDER/pass0, pass1, ...\n"
               "(sysmeasure-passes runs them) by rank, call path, kernel and n-th launch:\n"
               "FOLDER/counter_collection.csv, profile_gpu_counters.txt/.json/.csv and\n"
               "gpu_passes.json, which lists the launches not in every pass.\n");
}

#define SM_RECOVERED_REASON "killed; recovered from its crash-safe files"

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

/* The jobs found in the folder: identity, ranks found, the program. */
typedef struct {
    char id[SM_JOB_ID_MAX];
    uint32_t files;
    char program[64];
    uint64_t end_ns; /* the latest end of its ranks (wall clock) */
} sm_merge_job_t;

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

/* Every rank-*.smp in FOLDER/.ranks of one job, by rank.  Damaged files are
 * said (one line each) and counted in *damaged; files of another job than
 * `want` are left out.  Exits when there is nothing to merge or the folder
 * holds several jobs and none is named. */
static sm_process_file_t **sm_merge_load(const char *folder, const char *want, uint32_t *count,
                                         uint32_t *damaged)
{
    char dir[PATH_MAX + 16], path[PATH_MAX + 300], err[PATH_MAX + 600];
    snprintf(dir, sizeof dir, "%s/%s", folder, SM_PROCESS_FILE_DIR);
    DIR *d = opendir(dir);
    int ranks_errno = errno;
    /* Crash-safe journals (<job>.<host>.<pid>.defs) of processes killed
     * without a word: read after the process files, for the processes that
     * left none. */
    char spill[PATH_MAX + 16];
    snprintf(spill, sizeof spill, "%s/.spill", folder);
    DIR *sd = opendir(spill);
    if (!d && !sd) {
        sm_error("%s has no process files (%s: %s): nothing to merge", folder, dir,
                 strerror(ranks_errno));
        exit(SM_MERGE_FAILED);
    }
    sm_process_file_t **files = NULL;
    sm_merge_job_t *jobs = NULL;
    uint32_t n = 0, cap = 0, n_jobs = 0, other = 0, n_from_ranks = 0;
    struct dirent *e;
    *damaged = 0;
    int journals = 0;
    for (;;) {
        if (!d && !journals) {
            journals = 1;
            n_from_ranks = n;
            d = sd;
            sd = NULL;
            if (!d)
                break;
        }
        if ((e = readdir(d)) == NULL) {
            closedir(d);
            d = NULL;
            if (journals)
                break;
            continue;
        }
        size_t len = strlen(e->d_name);
        sm_process_file_head_t head;
        memset(&head, 0, sizeof head);
        sm_process_file_t *f = NULL;
        if (journals) {
            if (len < 6 || strcmp(e->d_name + len - 5, ".defs") != 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", spill, e->d_name);
            char jjob[SM_JOB_ID_MAX], jhost[64];
            int64_t jpid = 0;
            if (sm_recover_peek(path, jjob, sizeof jjob, &jpid, jhost, sizeof jhost) != 0) {
                sm_error("%s is not a sysmeasure definitions journal (or it is damaged): "
                         "the events of the process that wrote it cannot be named; left out",
                         path);
                ++*damaged;
                continue;
            }
            int has_file = 0;
            for (uint32_t i = 0; i < n_from_ranks && !has_file; i++)
                has_file = files[i]->pid == jpid && !strcmp(files[i]->hostname, jhost);
            if (has_file)
                continue; /* it wrote its process file: that one holds everything */
            if (want && strcmp(jjob, want) != 0) {
                sm_info(1, "%s belongs to job %s: left out", path, jjob);
                other++;
                continue;
            }
            uint64_t events = 0;
            f = sm_recover_process(path, &events, err, sizeof err);
            if (!f) {
                sm_error("%s", err);
                ++*damaged;
                continue;
            }
            fprintf(stderr, "sysmeasure-merge: rank %u (pid %lld on %s) left no process file "
                    "(killed): recovered from its crash-safe files, %llu events\n",
                    (unsigned)f->rank, (long long)f->pid, f->hostname,
                    (unsigned long long)events);
        } else {
            if (strncmp(e->d_name, "rank-", 5) != 0 || len < 5 ||
                strcmp(e->d_name + len - 4, ".smp"))
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            f = sm_process_file_read(path, &head, err, sizeof err);
        }
        const char *job = f ? f->job : head.have_head ? head.job : NULL;
        if (want && job && strcmp(job, want) != 0) {
            sm_info(1, "%s belongs to job %s: left out", path, job);
            sm_process_file_free(f);
            other++;
            continue;
        }
        if (!f) {
            sm_error("%s", err);
            ++*damaged;
            continue;
        }
        uint32_t j = 0;
        while (j < n_jobs && strcmp(jobs[j].id, f->job) != 0)
            j++;
        if (j == n_jobs) {
            sm_merge_job_t *more = realloc(jobs, sizeof *jobs * (n_jobs + 1));
            if (!more) {
                sm_error("out of memory");
                exit(SM_MERGE_FAILED);
            }
            jobs = more;
            memset(&jobs[j], 0, sizeof jobs[j]);
            snprintf(jobs[j].id, sizeof jobs[j].id, "%s", f->job);
            snprintf(jobs[j].program, sizeof jobs[j].program, "%.63s", f->program);
            n_jobs++;
        }
        jobs[j].files++;
        if (f->end_realtime_ns > jobs[j].end_ns)
            jobs[j].end_ns = f->end_realtime_ns;
        if (n == cap && SM_GROW(files, cap, 16) != 0) {
            sm_error("out of memory");
            exit(SM_MERGE_FAILED);
        }
        files[n++] = f;
    }
    char list[4096];
    sm_merge_list_jobs(jobs, n_jobs, list, sizeof list);
    if (n_jobs > 1) {
        sm_error("%s holds the process files of %u jobs: %s; name the one to merge with "
                 "--job ID", dir, (unsigned)n_jobs, list);
        exit(SM_MERGE_FAILED);
    }
    if (!n && want && other) {
        sm_error("%s has no process file of job %s (%u of other jobs; sysmeasure-merge -v "
                 "names them)", dir, want, (unsigned)other);
        exit(SM_MERGE_FAILED);
    }
    if (!n) {
        sm_error("%s has no readable process files (.ranks/rank-*.smp): nothing to merge", folder);
        exit(SM_MERGE_FAILED);
    }
    if (other)
        sm_warning("%u process file%s of other jobs left out (job %s merged)", (unsigned)other,
                   other == 1 ? "" : "s", want);
    free(jobs);
    qsort(files, n, sizeof *files, sm_merge_by_rank);
    for (uint32_t i = 1; i < n; i++)
        if (files[i]->rank == files[i - 1]->rank) {
            sm_error("%s and %s are both rank %u of job %s", files[i - 1]->path, files[i]->path,
                     (unsigned)files[i]->rank, files[i]->job);
            exit(SM_MERGE_FAILED);
        }
    *count = n;
    return files;
}

int main(int argc, char **argv)
{
    int verbose = 0, argi = 1;
    const char *want = NULL;
    int perfetto = 0; /* --perfetto, or the job's own configuration */
    int gpu_passes = 0;
    sm_runtime_discard_output(); /* never measure ourselves */
    for (; argi < argc && argv[argi][0] == '-'; argi++) {
        if (!strcmp(argv[argi], "--job") || !strncmp(argv[argi], "--job=", 6)) {
            want = argv[argi][5] == '=' ? argv[argi] + 6 : argi + 1 < argc ? argv[++argi] : NULL;
            if (!want || !*want) {
                sm_error("--job needs the identity of a job (the error that lists the jobs "
                         "names them)");
                return SM_MERGE_USAGE;
            }
        } else if (!strcmp(argv[argi], "--perfetto")) {
            perfetto = 1;
        } else if (!strcmp(argv[argi], "--gpu-passes")) {
            gpu_passes = 1;
        } else if (!strcmp(argv[argi], "-h") || !strcmp(argv[argi], "--help")) {
            sm_merge_usage(stdout);
            return SM_MERGE_OK;
        } else if (!strcmp(argv[argi], "-v") || !strcmp(argv[argi], "--verbose")) {
            verbose++;
        } else if (!strcmp(argv[argi], "--version")) {
            printf("sysmeasure-merge %s\n", PACKAGE_VERSION);
            return SM_MERGE_OK;
        } else {
            sm_error("unknown option '%s' (sysmeasure-merge --help)", argv[argi]);
            return SM_MERGE_USAGE;
        }
    }
    if (argi + 1 != argc) {
        sm_error(argi >= argc ? "no folder given (usage: sysmeasure-merge FOLDER)"
                              : "one folder only (usage: sysmeasure-merge FOLDER)");
        return SM_MERGE_USAGE;
    }
    sm_log_set_verbosity(verbose);
    char folder[PATH_MAX];
    struct stat st;
    if (stat(argv[argi], &st) != 0 || !S_ISDIR(st.st_mode)) {
        sm_error("%s is not a folder%s%s", argv[argi], errno ? ": " : "",
                 errno ? strerror(errno) : "");
        return SM_MERGE_USAGE;
    }
    if (!realpath(argv[argi], folder))
        snprintf(folder, sizeof folder, "%s", argv[argi]);
    if (gpu_passes)
        return sm_gpu_passes_merge(folder);

    uint32_t n_files = 0, damaged = 0;
    sm_process_file_t **files = sm_merge_load(folder, want, &n_files, &damaged);
    uint32_t n_ranks = 0;
    for (uint32_t i = 0; i < n_files; i++) {
        if (files[i]->n_ranks > n_ranks)
            n_ranks = files[i]->n_ranks;
        if (files[i]->rank + 1 > n_ranks)
            n_ranks = files[i]->rank + 1;
    }
    if (n_files + damaged < n_ranks)
        sm_warning("%u of the job's %u ranks left a process file; the output has only theirs "
                   "(a rank killed with SIGKILL writes nothing, unless it ran with --crash-safe)",
                   (unsigned)n_files, (unsigned)n_ranks);
    for (uint32_t i = 0; i < n_files; i++) {
        sm_info(1, "rank %u (pid %lld on %s): %s", (unsigned)files[i]->rank,
                (long long)files[i]->pid, files[i]->hostname, files[i]->reason);
        if (strstr(files[i]->reason, SM_PF_EVENTS_CUT))
            sm_warning("rank %u (pid %lld on %s) was killed while it saved its events: its "
                       "profile is complete, its trace lacks the events it still held in memory",
                       (unsigned)files[i]->rank, (long long)files[i]->pid, files[i]->hostname);
    }

    /* Definitions, unified in rank order (rank 0's ids stay as they were). */
    sm_defset_t *defs = sm_defset_new();
    if (!defs) {
        sm_error("out of memory");
        return SM_MERGE_FAILED;
    }
    for (uint32_t i = 0; i < n_files; i++)
        if (sm_defset_merge_blob(defs, files[i]->defs, files[i]->defs_len, &files[i]->maps) != 0) {
            sm_error("the definitions in %s are damaged", files[i]->path);
            return SM_MERGE_FAILED;
        }

    /* The job as the writers see it: one process holding every rank. */
    sm_job_process_t *processes = calloc(n_ranks, sizeof *processes);
    uint64_t *messages = calloc((size_t)n_ranks * n_ranks, sizeof *messages);
    uint64_t *bytes = calloc((size_t)n_ranks * n_ranks, sizeof *bytes);
    sm_image_t *imgs = calloc(n_files, sizeof *imgs);
    if (!processes || !messages || !bytes || !imgs) {
        sm_error("out of memory");
        return SM_MERGE_FAILED;
    }
    uint64_t any_message = 0;
    for (uint32_t r = 0; r < n_ranks; r++) {
        processes[r].rank = r;
        processes[r].hostname[0] = '\0'; /* a rank that left no data */
    }
    sm_run_info_t run;
    memset(&run, 0, sizeof run);
    run.output_dir = folder;
    run.rank = 0;
    run.n_ranks = n_ranks;
    run.clock_source = "merged";
    for (uint32_t i = 0; i < n_files; i++) {
        sm_process_file_t *f = files[i];
        processes[f->rank].pid = f->pid;
        memcpy(processes[f->rank].hostname, f->hostname, sizeof processes[f->rank].hostname);
        for (uint32_t k = 0; k < f->n_ranks && k < n_ranks; k++) {
            messages[(size_t)f->rank * n_ranks + k] = f->matrix_row[2 * k];
            bytes[(size_t)f->rank * n_ranks + k] = f->matrix_row[2 * k + 1];
            any_message += f->matrix_row[2 * k];
        }
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
    run.program = files[0]->program;
    run.argc = files[0]->argc;
    run.argv = files[0]->argv;
    run.config = files[0]->have_config ? &files[0]->config : NULL;
    /* Declared metadata (Kokkos), as rank 0 would have written it. */
    for (uint32_t i = 0; i + 1 < files[0]->n_metadata2; i += 2)
        sm_runtime_metadata_set(files[0]->metadata[i], files[0]->metadata[i + 1]);
    run.pid = (pid_t)files[0]->pid;
    snprintf(run.hostname, sizeof run.hostname, "%s", files[0]->hostname);
    /* Ticks of another process mean nothing here: durations come from the
     * wall-clock dates. */
    run.start_time = run.end_time = 0;

    sm_job_t job = {
        .procs = sm_procs_single(),
        .n_ranks = n_ranks,
        .defs = defs,
        .maps = &files[0]->maps,
        .processes = processes,
        .matrix_messages = any_message ? messages : NULL,
        .matrix_bytes = any_message ? bytes : NULL,
    };
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
    job.metrics = mseq;
    job.metrics_len = mseq ? (uint64_t)(q - mseq) : 0;
    int failures = 0;
    failures += sm_otf2_write_images(&run, &job, imgs, n_files) != 0;

    /* Profiles: each rank's, in the job's region ids, as the tree would
     * have gathered them. */
    uint64_t seq_len = 0;
    for (uint32_t i = 0; i < n_files; i++)
        seq_len += sizeof(uint32_t) + sizeof(uint64_t) + files[i]->profile_len;
    uint8_t *seq = malloc(seq_len ? seq_len : 1), *p = seq;
    int profiles = 0;
    for (uint32_t i = 0; seq && i < n_files; i++) {
        sm_process_file_t *f = files[i];
        if (!f->profile_len)
            continue;
        if (sm_profile_summary_remap(f->profile, f->profile_len, f->maps.regions,
                                     f->maps.n_regions) != 0) {
            sm_error("the profile in %s is damaged; it is left out", f->path);
            continue;
        }
        memcpy(p, &f->rank, sizeof f->rank);
        memcpy(p + sizeof f->rank, &f->profile_len, sizeof f->profile_len);
        memcpy(p + sizeof f->rank + sizeof f->profile_len, f->profile, f->profile_len);
        p += sizeof f->rank + sizeof f->profile_len + f->profile_len;
        profiles++;
    }
    if (profiles) {
        sm_profile_summary_t *summary =
            sm_profile_summary_from_blobs(seq, (uint64_t)(p - seq), n_ranks);
        if (!summary) {
            sm_error("building the profile summary of the job failed");
            failures++;
        } else {
            failures += sm_profile_write_text(&run, &job, summary) != 0;
            failures += sm_profile_write_json(&run, &job, summary) != 0;
            failures += sm_profile_write_csv(&run, &job, summary) != 0;
            sm_profile_summary_free(summary);
        }
    }
    free(seq);
    if (job.matrix_messages)
        failures += sm_comm_matrix_write(&run, &job) != 0;
    free(mseq);
    int meta_failed = sm_metadata_write_json(&run, &job) != 0;
    failures += meta_failed;
    if (!meta_failed && (!run.config || run.config->report)) { /* it reads the files just written */
        char err[PATH_MAX + 200];
        int rc = sm_report_write_html(folder, err, sizeof err);
        if (rc == SM_REPORT_NOT_OUTPUT)
            sm_error("writing %s/report.html failed: %s", folder, err);
        failures += rc != 0;
    }
    if ((perfetto || (run.config && run.config->perfetto)) && (!run.config || run.config->trace)) {
        char err[PATH_MAX + 600];
        int rc = sm_perfetto_write(folder, NULL, err, sizeof err);
        if (rc == SM_PERFETTO_NOT_OUTPUT || rc == SM_PERFETTO_UNAVAILABLE)
            sm_error("no %s/trace.pftrace: %s", folder, err);
        failures += rc != 0;
    }

    if (failures) {
        sm_error("%d of the outputs in %s could not be written (see above)", failures, folder);
        return SM_MERGE_FAILED;
    }
    if (damaged) {
        /* What could be merged is written; the damage is not silent. */
        fprintf(stderr, "sysmeasure-merge: %u of %u ranks merged into %s; %u process file%s "
                "damaged (see above), their data is missing\n", (unsigned)n_files,
                (unsigned)n_ranks, folder, (unsigned)damaged, damaged == 1 ? "" : "s");
        return SM_MERGE_FAILED;
    }
    fprintf(stderr, "sysmeasure-merge: %u of %u ranks merged into %s\n", (unsigned)n_files,
            (unsigned)n_ranks, folder);
    for (uint32_t i = 0; i < n_files; i++)
        sm_process_file_free(files[i]);
    free(files);
    free(imgs);
    free(processes);
    free(messages);
    free(bytes);
    sm_defset_free(defs);
    return SM_MERGE_OK;
}
