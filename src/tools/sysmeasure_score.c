/* sysmeasure-score DIR [-g [FILE]] [-r]: the trace size of a run, per region.
 *
 * DIR is a sysmeasure output folder (of a finished run, or one completed by
 * sysmeasure-merge).  Its profile.json gives every region's visits per
 * thread; its metadata.json the counts of the events beside enter/leave
 * (fork/join, teams, tasks, locks, messages, collectives, GPU activities,
 * attributes), which the runtime counts whether it traces or not.  From
 * these the tool estimates what a full trace of the same run takes:
 *
 *  - in the OTF2 event files: each enter and leave is a timestamp record
 *    (1 type byte + 8 bytes) and the event (1 type byte + the region
 *    reference, compressed); each other event its record as OTF2 encodes it
 *    (sm_score_kinds), with a timestamp where it has a time of its own;
 *  - the definitions: fixed records, each region with its name, each source
 *    file, each location (its definition and its two files' headers);
 *  - in memory, per process (the buffer budget, --buffer-size): 16 bytes per
 *    enter or leave, and the records of the other events as counted.
 *
 * -g writes a filter file (--filter reads it as it is) that excludes the
 * user and compiler regions under 1 us per visit that take more than 1% of
 * the trace (the heuristic of scorep-score), and prints the size the trace
 * would have with it.  Exit status: 0; 2 for bad usage or an unreadable
 * folder. */
#include "sm_build.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/event_record.h"
#include "../core/events.h"
#include "../core/runtime.h"
#include "../util/filter.h"
#include "../util/json_read.h"
#include "../util/log.h"
#include "../util/grow.h"

/* OTF2's encoding (bytes). */
#define SM_TS_BYTES 9     /* timestamp record: type byte + 8-byte time */
#define SM_TYPE_BYTES 1   /* event record type */
#define SM_MEM_RECORD 16  /* sm_record_t */
/* Definitions: the region record beside its name string (type, length,
 * compressed references, role, paradigm, flags, lines), a string record
 * beside its text, and per location its definition and the headers of its
 * event and local definition files. */
#define SM_DEF_PER_REGION 16
#define SM_DEF_PER_STRING 4
#define SM_DEF_PER_LOCATION 60
/* The anchor file, clock, paradigms; per process its system tree node and
 * location group; with OpenMP its paradigm, the team communicators and the
 * team-size attributes (measured on small runs: these constants are
 * calibrated, not derived). */
#define SM_ARCHIVE_FIXED 220
#define SM_DEF_PER_PROCESS 60
#define SM_DEF_OPENMP 350

/* A compressed uint32 or uint64 of typical small size: length byte + 1. */
#define SM_C 2

/* OTF2 bytes of one record of each kind beside enter/leave: fixed part per
 * record, part per payload word, and whether it has a time of its own (a
 * timestamp record: the others share the enter's or leave's time). */
static const struct {
    unsigned fixed, per_word, own_time;
} sm_score_kinds[SM_REC_KIND_COUNT] = {
#define SM_RECORD_KIND(id, name, family, fixed, per_word, own_time) \
    [SM_REC_##id] = {fixed, per_word, own_time},
#include "../core/record_kinds.def"
#undef SM_RECORD_KIND
};

/* An attribute list: type, length, count; per attribute its reference, a
 * type byte and the value (compressed). */
#define SM_ATTR_LIST 3
#define SM_ATTR_EACH (1 + 1 + 3)

typedef struct sm_score_region {
    const char *name, *paradigm, *file;
    long line;
    uint64_t visits;
    double incl_ns, excl_ns;
    uint64_t *rank_visits; /* [n_ranks] */
    uint64_t ref_bytes;
} sm_score_region_t;

typedef struct sm_score {
    sm_score_region_t *r;
    size_t n, cap;
    uint32_t n_ranks;
    uint64_t messages;  /* from the communication matrix (older folders) */
} sm_score_t;

/* A count of the files as a whole number (a damaged value: 0, or the
 * largest; a conversion out of range would be undefined). */
static uint64_t sm_score_count(double x)
{
    return !(x > 0) ? 0 : x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
}

static int sm_score_fail(const char *fmt, const char *a, const char *b)
{
    sm_error(fmt, a, b);
    return 2;
}

/* OTF2's compressed uint32: a length byte, then the significant bytes. */
static unsigned sm_compressed_size(uint64_t v)
{
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 8;
    }
    return 1 + n;
}

static void sm_fmt_bytes(double n, char *out, size_t len)
{
    static const struct {
        const char *unit;
        double size;
    } u[] = {{"G", 1073741824.0}, {"M", 1048576.0}, {"K", 1024.0}};
    for (int i = 0; i < 3; i++)
        if (n >= u[i].size) {
            snprintf(out, len, "%.2f %siB", n / u[i].size, u[i].unit);
            return;
        }
    snprintf(out, len, "%.0f B", n);
}

/* An enter and a leave per visit, each with its timestamp record.  OpenMP
 * regions end together with others about half the time (an implicit
 * barrier with its parallel region on the team's workers, a lock's wait
 * region as the construct is entered), and then share the timestamp: a
 * leave takes half of one (calibrated on the OpenMP test programs). */
static uint64_t sm_region_event_bytes(const sm_score_region_t *r)
{
    uint64_t per_visit = 2 * (SM_TS_BYTES + SM_TYPE_BYTES + r->ref_bytes);
    if (strcmp(r->paradigm, "openmp") == 0)
        return r->visits * (per_visit - SM_TS_BYTES) + r->visits * SM_TS_BYTES / 2;
    return r->visits * per_visit;
}

static int sm_str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static sm_score_region_t *sm_score_region(sm_score_t *s, const char *name, const char *paradigm,
                                          const char *file, long line)
{
    for (size_t i = 0; i < s->n; i++) {
        sm_score_region_t *r = &s->r[i];
        if (r->line == line && strcmp(r->name, name) == 0 && strcmp(r->paradigm, paradigm) == 0 &&
            sm_str_eq(r->file, file))
            return r;
    }
    if (s->n == s->cap && SM_GROW(s->r, s->cap, 256) != 0)
        return NULL;
    sm_score_region_t *r = &s->r[s->n];
    memset(r, 0, sizeof *r);
    r->rank_visits = calloc(s->n_ranks ? s->n_ranks : 1, sizeof *r->rank_visits);
    if (!r->rank_visits)
        return NULL;
    r->name = name;
    r->paradigm = paradigm;
    r->file = file;
    r->line = line;
    s->n++;
    return r;
}

static int sm_by_visits(const void *a, const void *b)
{
    const sm_score_region_t *x = a, *y = b;
    return x->visits < y->visits ? 1 : x->visits > y->visits ? -1 : 0;
}

static int sm_by_bytes(const void *a, const void *b)
{
    uint64_t x = sm_region_event_bytes(*(const sm_score_region_t *const *)a);
    uint64_t y = sm_region_event_bytes(*(const sm_score_region_t *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static int sm_by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The most ranks a profile.json may name (a larger number is damage). */
#define SM_SCORE_MAX_RANKS (1u << 20)

/* The regions of profile.json, merged over call paths and threads: 0; -1
 * out of memory; -2 with err when a number in it cannot be (damage). */
static int sm_score_read(sm_score_t *s, const sm_jv_t *profile, char *err, size_t errlen)
{
    uint64_t x, rank, visits, line;
    if (sm_jv_whole(profile, "", "ranks", 1, SM_SCORE_MAX_RANKS, 1, &x, err, errlen) != 0)
        return -2;
    s->n_ranks = (uint32_t)x;
    const sm_jv_t *cps = sm_jv_get(profile, "callpaths");
    for (uint32_t i = 0; i < sm_jv_len(cps); i++) {
        const sm_jv_t *cp = sm_jv_at(cps, i);
        const char *name = sm_jv_str(cp, "region");
        const char *paradigm = sm_jv_str(cp, "paradigm");
        char where[96];
        snprintf(where, sizeof where, "callpaths[%u]", (unsigned)i);
        if (!name)
            continue;
        if (sm_jv_whole(cp, where, "line", 0, INT32_MAX, 0, &line, err, errlen) != 0)
            return -2;
        sm_score_region_t *r = sm_score_region(s, name, paradigm ? paradigm : "user",
                                               sm_jv_str(cp, "file"), (long)line);
        if (!r)
            return -1;
        const sm_jv_t *pt = sm_jv_get(cp, "per_thread");
        for (uint32_t k = 0; k < sm_jv_len(pt); k++) {
            const sm_jv_t *t = sm_jv_at(pt, k);
            snprintf(where, sizeof where, "callpaths[%u].per_thread[%u]", (unsigned)i, (unsigned)k);
            if (sm_jv_whole(t, where, "visits", 0, (uint64_t)1 << 53, 0, &visits, err, errlen) ||
                sm_jv_whole(t, where, "rank", 0, s->n_ranks - 1, 0, &rank, err, errlen))
                return -2;
            r->visits += visits;
            r->incl_ns += sm_jv_num(sm_jv_get(t, "inclusive"), "sum", 0);
            r->excl_ns += sm_jv_num(sm_jv_get(t, "exclusive"), "sum", 0);
            r->rank_visits[rank] += visits;
        }
    }
    /* Each visit lies on one call path, so the inclusive sums over paths
     * divided by the visits is the mean inclusive time per visit (the
     * heuristic's), also for recursion, where the total counts nested time
     * more than once; the exclusive total is exact. */
    qsort(s->r, s->n, sizeof *s->r, sm_by_visits);
    /* The archive numbers regions in order of definition, which the
     * profile does not keep: every reference is taken at the size of the
     * largest. */
    unsigned ref = sm_compressed_size(s->n > 1 ? s->n - 1 : 1);
    for (size_t i = 0; i < s->n; i++)
        s->r[i].ref_bytes = ref;
    const sm_jv_t *m = sm_jv_get(profile, "comm_matrix");
    const sm_jv_t *msgs = sm_jv_get(m, "messages");
    if (msgs && msgs->type == SM_JV_NUMBER)
        s->messages = sm_score_count(msgs->num);
    return 0;
}

/* OTF2 bytes of the events beside enter/leave that metadata.json counts
 * ({kind: [records, words]}); *known: whether the folder has the counts. */
static uint64_t sm_score_other_events(const sm_jv_t *records, uint64_t *gpu_bytes, int *known)
{
    uint64_t total = 0;
    *gpu_bytes = 0;
    *known = records && records->type == SM_JV_OBJECT;
    for (int k = 0; *known && k < SM_REC_KIND_COUNT; k++) {
        const sm_jv_t *e = sm_jv_get(records, sm_record_kind_name((sm_record_kind_t)k));
        if (!e)
            continue;
        uint64_t n = sm_score_count(sm_jv_at(e, 0) ? sm_jv_at(e, 0)->num : 0);
        uint64_t words = sm_score_count(sm_jv_at(e, 1) ? sm_jv_at(e, 1)->num : 0);
        if (k == SM_REC_ENTER || k == SM_REC_LEAVE) {
            total += n * SM_ATTR_LIST + words * SM_ATTR_EACH; /* words: attributes */
            continue;
        }
        if (k == SM_REC_GPU_ACTIVITY) {
            /* Enter and leave are the stream's region visits; beside them
             * the attributes: correlation id and bytes (copies, 3 words),
             * correlation id and 9 launch figures (kernels, 8 words). */
            uint64_t kernels = words > 3 * n ? (words - 3 * n) / 5 : 0;
            uint64_t attrs = 10 * kernels + 2 * (n - kernels);
            *gpu_bytes = n * SM_ATTR_LIST + attrs * SM_ATTR_EACH;
            total += *gpu_bytes;
            continue;
        }
        total += n * (sm_score_kinds[k].fixed + (sm_score_kinds[k].own_time ? SM_TS_BYTES : 0)) +
                 words * sm_score_kinds[k].per_word;
    }
    return total;
}

static void sm_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure-score DIR [-g [FILE]] [-r]\n"
               "\n"
               "Estimates the trace size of a sysmeasure run per region, and proposes a filter.\n"
               "\n"
               "Options:\n"
               "  DIR        output folder of a sysmeasure run\n"
               "  -g [FILE]  write a filter file proposing to exclude small, frequent regions\n"
               "             (default FILE: sysmeasure-score.filter)\n"
               "  -r         list every region (default: the 30 largest)\n"
               "  -h, --help  show this help and exit\n"
               "  --version   show the version and exit\n"
               "\n"
               "Examples:\n"
               "  sysmeasure-score run1 -g small.filter\n"
               "      The trace size per region; small.filter leaves out the small, frequent\n"
               "      ones (sysmeasure --filter=small.filter ./app uses it).\n");
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-score");
    sm_runtime_discard_output(); /* never measure ourselves */
    signal(SIGPIPE, SIG_DFL);    /* sysmeasure-score DIR | head */
    const char *dir = NULL, *gfile = NULL;
    int all = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sm_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("sysmeasure-score %s\n", PACKAGE_VERSION);
            return 0;
        } else if (!strcmp(a, "-r")) {
            all = 1;
        } else if (!strcmp(a, "-g")) {
            gfile = "sysmeasure-score.filter";
            if (i + 1 < argc && argv[i + 1][0] != '-' && (dir || i + 2 < argc))
                gfile = argv[++i];
        } else if (!strncmp(a, "-g", 2)) {
            gfile = a + 2;
        } else if (a[0] == '-' && a[1]) {
            return sm_score_fail("unknown option '%s'%s (usage: sysmeasure-score DIR [-g [FILE]] "
                                 "[-r])", a, "");
        } else if (!dir) {
            dir = a;
        } else {
            return sm_score_fail("one folder expected, not also '%s'%s (usage: sysmeasure-score "
                                 "DIR [-g [FILE]] [-r])", a, "");
        }
    }
    if (!dir)
        return sm_score_fail("a folder expected%s%s (usage: sysmeasure-score DIR [-g [FILE]] "
                             "[-r])", "", "");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return sm_score_fail("%s: not a folder%s", dir, "");

    char path[PATH_MAX], err[512];
    snprintf(path, sizeof path, "%s/profile.json", dir);
    if (access(path, F_OK) != 0)
        return sm_score_fail("%s: no profile.json (run with --profile, or complete an "
                             "interrupted job with sysmeasure-merge first)%s", dir, "");
    /* What the score does not read: the call paths' spreads and counters. */
    static const char *const skip[] = {"across_threads", "across_ranks", "counters", "derived",
                                       "mpi", "processes", "creation_path", NULL};
    int unread;
    sm_jv_t *profile = sm_jv_parse_file(path, SM_FS_INPUT_FOUND, skip, err, sizeof err, &unread);
    if (!profile)
        return sm_score_fail(unread ? "%s %s" : "%s: %s", path, err);
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    static const char *const meta_skip[] = {"configuration", "locations", "metadata", "metrics",
                                            NULL};
    /* (NULL: an older folder) */
    sm_jv_t *meta = sm_jv_parse_file(path, SM_FS_INPUT_FOUND, meta_skip, err, sizeof err, NULL);

    sm_score_t s = {0};
    snprintf(path, sizeof path, "%s/profile.json", dir);
    int read = sm_score_read(&s, profile, err, sizeof err);
    if (read == -2)
        return sm_score_fail("%s is damaged: %s", path, err);
    if (read != 0) {
        sm_error("out of memory");
        return 2;
    }

    /* Events. */
    uint64_t event_total = 0;
    for (size_t i = 0; i < s.n; i++)
        event_total += sm_region_event_bytes(&s.r[i]);
    uint64_t gpu_bytes = 0;
    int counted = 0;
    uint64_t other_total = sm_score_other_events(sm_jv_get(meta, "records"), &gpu_bytes,
                                                 &counted);
    if (!counted) /* a folder without the counts: messages from the matrix */
        other_total = s.messages * 2 * (2 + 3 * SM_C + 3);
    /* Definitions. */
    const sm_jv_t *threads = sm_jv_get(profile, "threads");
    uint32_t n_locations = sm_jv_len(threads) ? sm_jv_len(threads) : 1;
    uint64_t defs = SM_ARCHIVE_FIXED + (uint64_t)s.n_ranks * SM_DEF_PER_PROCESS +
                    (uint64_t)n_locations * SM_DEF_PER_LOCATION;
    for (uint32_t i = 0; i < sm_jv_len(threads); i++) {
        const char *name = sm_jv_str(sm_jv_at(threads, i), "name");
        defs += SM_DEF_PER_STRING + (name ? strlen(name) + 1 : 1);
    }
    for (size_t i = 0; i < s.n; i++)
        if (strcmp(s.r[i].paradigm, "openmp") == 0) {
            defs += SM_DEF_OPENMP;
            break;
        }
    const char **files = calloc(s.n + 1, sizeof *files);
    size_t n_files = 0;
    for (size_t i = 0; i < s.n; i++) {
        defs += SM_DEF_PER_REGION + SM_DEF_PER_STRING + strlen(s.r[i].name) + 1;
        if (s.r[i].file && files)
            files[n_files++] = s.r[i].file;
    }
    if (files) {
        qsort(files, n_files, sizeof *files, sm_by_name);
        for (size_t i = 0; i < n_files; i++)
            if (i == 0 || strcmp(files[i], files[i - 1]) != 0)
                defs += SM_DEF_PER_STRING + strlen(files[i]) + 1;
        free(files);
    }
    uint64_t total = event_total + other_total + defs;

    /* Memory per process: enter/leave of each rank, plus the other events'
     * records of the largest process. */
    uint32_t mem_rank = 0;
    uint64_t mem_max = 0;
    for (uint32_t k = 0; k < s.n_ranks; k++) {
        uint64_t m = 0;
        for (size_t i = 0; i < s.n; i++)
            m += 2 * s.r[i].rank_visits[k] * SM_MEM_RECORD;
        if (m > mem_max || k == 0) {
            mem_max = m;
            mem_rank = k;
        }
    }
    mem_max += sm_score_count(sm_jv_num(meta, "records_bytes_max_process", 0));

    char b1[32], b2[32];
    const char *program = sm_jv_str(profile, "program");
    printf("sysmeasure-score: %s (%s, %u process%s)\n", dir, program ? program : "?", s.n_ranks,
           s.n_ranks == 1 ? "" : "es");
    sm_fmt_bytes((double)total, b1, sizeof b1);
    printf("estimated trace size         : %s (%llu bytes: events %llu, other events %llu, "
           "definitions %llu)\n",
           b1, (unsigned long long)total, (unsigned long long)event_total,
           (unsigned long long)other_total, (unsigned long long)defs);
    sm_fmt_bytes((double)mem_max, b1, sizeof b1);
    printf("estimated memory per process : %s (largest: rank %u; 16 bytes per enter/leave); a "
           "--buffer-size of at least this keeps the whole trace in memory\n",
           b1, mem_rank);
    if (!counted)
        printf("(this folder has no counts of the events beside enter/leave: only its messages "
               "are estimated, from the communication matrix)\n");
    printf("\n");

    /* Per paradigm, largest first. */
    typedef struct {
        const char *name;
        uint64_t visits, bytes;
        double excl;
    } sm_par_t;
    sm_par_t *par = calloc(s.n + 1, sizeof *par);
    size_t n_par = 0;
    for (size_t i = 0; par && i < s.n; i++) {
        size_t k = 0;
        while (k < n_par && strcmp(par[k].name, s.r[i].paradigm) != 0)
            k++;
        if (k == n_par)
            par[n_par++].name = s.r[i].paradigm;
        par[k].visits += s.r[i].visits;
        par[k].excl += s.r[i].excl_ns;
        par[k].bytes += sm_region_event_bytes(&s.r[i]);
    }
    for (size_t a = 0; a < n_par; a++) /* (few: a selection sort) */
        for (size_t b = a + 1; b < n_par; b++)
            if (par[b].bytes > par[a].bytes) {
                sm_par_t t = par[a];
                par[a] = par[b];
                par[b] = t;
            }
    printf("%-12s %14s %14s %12s %7s\n", "paradigm", "visits", "time excl [s]", "bytes",
           "share");
    for (size_t k = 0; k < n_par; k++)
        printf("%-12s %14llu %14.6f %12llu %6.2f%%\n", par[k].name,
               (unsigned long long)par[k].visits, par[k].excl / 1e9,
               (unsigned long long)par[k].bytes,
               total ? 100.0 * (double)par[k].bytes / (double)total : 0.0);
    if (other_total)
        printf("%-12s %14s %14s %12llu %6.2f%%\n", "(other)", "", "",
               (unsigned long long)other_total, 100.0 * (double)other_total / (double)total);
    free(par);
    printf("\n");

    printf("%-10s %12s %14s %14s %14s %12s %7s  %s\n", "paradigm", "visits", "time incl [s]",
           "time excl [s]", "time/visit[us]", "bytes", "share", "region");
    sm_score_region_t **shown = calloc(s.n + 1, sizeof *shown);
    if (!shown) {
        sm_error("out of memory");
        return 2;
    }
    for (size_t i = 0; i < s.n; i++)
        shown[i] = &s.r[i];
    qsort(shown, s.n, sizeof *shown, sm_by_bytes);
    size_t n_shown = all || s.n <= 30 ? s.n : 30;
    for (size_t i = 0; i < n_shown; i++) {
        const sm_score_region_t *r = shown[i];
        double per_visit = r->visits ? r->incl_ns / (double)r->visits / 1000.0 : 0.0;
        uint64_t bytes = sm_region_event_bytes(r);
        printf("%-10s %12llu %14.6f %14.6f %14.3f %12llu %6.2f%%  %s", r->paradigm,
               (unsigned long long)r->visits, r->incl_ns / 1e9, r->excl_ns / 1e9, per_visit,
               (unsigned long long)bytes, total ? 100.0 * (double)bytes / (double)total : 0.0,
               r->name);
        if (r->file) {
            const char *base = strrchr(r->file, '/');
            printf(" (%s:%ld)", base ? base + 1 : r->file, r->line);
        }
        printf("\n");
    }
    if (n_shown < s.n)
        printf("... %zu more regions (-r lists them all)\n", s.n - n_shown);

    int rc = 0;
    if (gfile) {
        /* The proposal: small, frequent user and compiler regions. */
        const char **names = calloc(s.n + 1, sizeof *names);
        size_t n_names = 0;
        uint64_t saved = 0;
        for (size_t i = 0; names && i < s.n; i++) {
            const sm_score_region_t *r = &s.r[i];
            uint64_t bytes = sm_region_event_bytes(r);
            if ((strcmp(r->paradigm, "user") == 0 || strcmp(r->paradigm, "compiler") == 0) &&
                r->visits && r->excl_ns / (double)r->visits < 1000.0 &&
                (double)bytes > 0.01 * (double)total) {
                names[n_names++] = r->name;
                saved += bytes;
            }
        }
        if (names)
            qsort(names, n_names, sizeof *names, sm_by_name);
        size_t n_unique = 0;
        for (size_t i = 0; i < n_names; i++)
            if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
                names[n_unique++] = names[i];
        FILE *f = fopen(gfile, "w");
        if (!f || !names) {
            sm_error("%s: %s", gfile, f ? "out of memory" : strerror(errno));
            if (f)
                fclose(f);
            rc = 2;
        } else {
            char abs[PATH_MAX];
            fprintf(f, "# written by sysmeasure-score -g from %s\n",
                    realpath(dir, abs) ? abs : dir);
            fprintf(f, "# regions under 1 us per visit taking more than 1%% of the trace; "
                       "estimated trace size %llu bytes, %llu with this filter\n",
                    (unsigned long long)total, (unsigned long long)(total - saved));
            fprintf(f, "SCOREP_REGION_NAMES_BEGIN\n");
            for (size_t i = 0; i < n_unique; i++) {
                size_t len = 2 * strlen(names[i]) + 1;
                char *esc = malloc(len);
                if (esc) {
                    sm_filter_escape(names[i], esc, len);
                    fprintf(f, "  EXCLUDE %s\n", esc);
                    free(esc);
                }
            }
            fprintf(f, "SCOREP_REGION_NAMES_END\n");
            if (fclose(f) != 0) {
                sm_error("%s: %s", gfile, strerror(errno));
                rc = 2;
            } else {
                sm_fmt_bytes((double)(total - saved), b2, sizeof b2);
                printf("\nfilter written to %s: %zu region%s excluded; estimated trace size with "
                       "it: %s (%llu bytes)\n",
                       gfile, n_unique, n_unique == 1 ? "" : "s", b2,
                       (unsigned long long)(total - saved));
            }
        }
        free(names);
    }
    free(shown);
    for (size_t i = 0; i < s.n; i++)
        free(s.r[i].rank_visits);
    free(s.r);
    sm_jv_free(profile);
    sm_jv_free(meta);
    return rc;
}
