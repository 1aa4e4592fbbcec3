/* Process files: write one in an ending process, read them back in
 * sysmeasure-merge (see process_file.h).  The layout is this machine's
 * integers in a fixed order, with a magic and a version; the reader checks
 * every length against the file. */
#include "process_file.h"
#include "../core/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/job.h"
#include "../core/location.h"
#include "../util/bytes.h"
#include "../util/fs.h"
#include "../util/hash.h"
#include "../util/log.h"
#include "profile_summary.h"

#define SM_PF_MAGIC 0x46504d53u /* "SMPF" */
#define SM_PF_VERSION 4u /* 2: checksummed head; 3: GPU devices of stream locations;
                            4: counts of the events beside enter/leave */

/* The fixed head: magic, version, the file's length, a checksum (FNV-1a,
 * 64 bits) of every byte after it, then rank, ranks and the job's identity,
 * so that even a damaged file names its rank and job. */
#define SM_PF_OFF_LEN 8u
#define SM_PF_OFF_SUM 16u
#define SM_PF_OFF_RANK 24u
#define SM_PF_HEAD (SM_PF_OFF_RANK + 8u + SM_JOB_ID_MAX)

#define SM_PF_PUT(b, v) sm_put_bytes((b), &(v), sizeof(v))

static void sm_pf_put_blob(sm_wbuf_t *b, const void *p, uint64_t n)
{
    SM_PF_PUT(b, n);
    sm_put_bytes(b, p ? p : "", n);
}

static void sm_pf_put_string(sm_wbuf_t *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    SM_PF_PUT(b, n);
    sm_put_bytes(b, s ? s : "", n);
}

/* Identity maps over this process's definitions (the merge maps them). */
static int sm_pf_identity(sm_id_maps_t *m)
{
    memset(m, 0, sizeof *m);
    m->n_strings = sm_string_count();
    m->n_regions = sm_region_count();
    m->n_attributes = sm_attribute_count();
    m->n_comms = sm_comm_count();
    uint32_t **arrays[] = {&m->strings, &m->regions, &m->attributes, &m->comms};
    uint32_t counts[] = {m->n_strings, m->n_regions, m->n_attributes, m->n_comms};
    for (int k = 0; k < 4; k++) {
        *arrays[k] = malloc(sizeof **arrays[k] * (counts[k] + 1u));
        if (!*arrays[k])
            return -1;
        for (uint32_t i = 0; i < counts[k]; i++)
            (*arrays[k])[i] = i;
    }
    return 0;
}

/* rank-<r>.<job>.smp */
static void sm_process_file_name(const sm_run_info_t *run, char *name, size_t len)
{
    snprintf(name, len, "rank-%u.%016llx.smp", (unsigned)run->rank,
             (unsigned long long)sm_job_hash());
}

void sm_process_file_remove(const sm_run_info_t *run)
{
    char name[64], dir[PATH_MAX];
    sm_process_file_name(run, name, sizeof name);
    snprintf(dir, sizeof dir, "%s/%s", run->output_dir, SM_PROCESS_FILE_DIR);
    int outfd = sm_fs_open_dir(run->output_dir);
    int dirfd = outfd >= 0 ? openat(outfd, SM_PROCESS_FILE_DIR,
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (dirfd >= 0) {
        unlinkat(dirfd, name, 0);
        close(dirfd);
    }
    if (outfd >= 0)
        close(outfd);
    sm_fs_rmdir_own(dir); /* the last rank to get here removes it */
}

static int sm_pf_write(const sm_run_info_t *run, const char *reason, int save_events);

int sm_process_file_write(const sm_run_info_t *run, const char *reason)
{
    return sm_pf_write(run, reason, 1);
}

int sm_process_file_write_first(const sm_run_info_t *run, const char *reason)
{
    return sm_pf_write(run, reason, 0);
}

static int sm_pf_write(const sm_run_info_t *run, const char *reason, int save_events)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], tmp[PATH_MAX + 200];
    uint32_t n_locations = sm_location_count();
    int failed = 0;

    /* Events first: every location's records into its spill file. */
    for (uint32_t i = 0; save_events && i < n_locations; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc->tracing && sm_buffer_save(loc) != 0)
            failed = 1;
    }

    sm_wbuf_t b = {0};
    uint32_t magic = SM_PF_MAGIC, version = SM_PF_VERSION;
    uint64_t placeholder = 0; /* length and checksum, filled in at the end */
    char job[SM_JOB_ID_MAX] = "";
    snprintf(job, sizeof job, "%s", sm_job_id());
    SM_PF_PUT(&b, magic);
    SM_PF_PUT(&b, version);
    SM_PF_PUT(&b, placeholder);
    SM_PF_PUT(&b, placeholder);
    SM_PF_PUT(&b, run->rank);
    SM_PF_PUT(&b, run->n_ranks);
    SM_PF_PUT(&b, job);
    int64_t pid = run->pid;
    SM_PF_PUT(&b, pid);
    char host[64] = "", program[256] = "", why[256] = "";
    snprintf(host, sizeof host, "%.63s", run->hostname);
    snprintf(program, sizeof program, "%s", run->program ? run->program : "");
    snprintf(why, sizeof why, "%s", reason ? reason : "");
    SM_PF_PUT(&b, host);
    SM_PF_PUT(&b, program);
    SM_PF_PUT(&b, why);
    uint32_t argc = run->argv && run->argc > 0 ? (uint32_t)run->argc : 0;
    SM_PF_PUT(&b, argc);
    for (uint32_t i = 0; i < argc; i++)
        sm_pf_put_string(&b, run->argv[i]);
    /* The configuration, as text with where each value came from. */
    uint32_t n_config = run->config ? SM_CONFIG_COUNT : 0;
    SM_PF_PUT(&b, n_config);
    for (uint32_t i = 0; i < n_config; i++) {
        char value[4096];
        sm_config_format(run->config, &sm_config_vars[i], value, sizeof value);
        uint32_t source = run->config->source[i];
        sm_pf_put_string(&b, sm_config_vars[i].env);
        sm_pf_put_string(&b, value);
        SM_PF_PUT(&b, source);
    }
    /* Metadata the program declared (Kokkos). */
    uint32_t n_meta = sm_runtime_metadata_count();
    SM_PF_PUT(&b, n_meta);
    for (uint32_t i = 0; i < n_meta; i++) {
        const char *key = "", *value = "";
        sm_runtime_metadata_get(i, &key, &value);
        sm_pf_put_string(&b, key);
        sm_pf_put_string(&b, value);
    }
    SM_PF_PUT(&b, run->start_realtime_ns);
    SM_PF_PUT(&b, run->end_realtime_ns);
    SM_PF_PUT(&b, run->start_time);
    SM_PF_PUT(&b, run->end_time);
    sm_clock_params_t clock;
    sm_clock_export(&clock);
    SM_PF_PUT(&b, clock);
    SM_PF_PUT(&b, run->spills);
    SM_PF_PUT(&b, run->spilled_bytes);
    SM_PF_PUT(&b, run->dropped_records);
    SM_PF_PUT(&b, run->unmatched_leaves);
    SM_PF_PUT(&b, run->record_count);
    SM_PF_PUT(&b, run->record_words);

    sm_defset_t *defs = sm_defset_from_process(run->rank);
    uint64_t len = 0;
    void *blob = defs ? sm_defset_serialize(defs, &len) : NULL;
    failed |= blob == NULL;
    sm_pf_put_blob(&b, blob, blob ? len : 0);
    free(blob);
    sm_defset_free(defs);

    sm_id_maps_t identity;
    sm_profile_summary_t *summary = NULL;
    blob = NULL;
    len = 0;
    if (run->config && run->config->profile && sm_pf_identity(&identity) == 0 &&
        (summary = sm_profile_summarize()) != NULL)
        blob = sm_profile_summary_serialize(summary, &identity, run->rank, &len);
    sm_pf_put_blob(&b, blob, blob ? len : 0);
    free(blob);
    sm_profile_summary_free(summary);
    sm_id_maps_free(&identity);

    /* Messages sent, per receiving rank, over all threads. */
    uint32_t n = run->n_ranks ? run->n_ranks : 1;
    SM_PF_PUT(&b, n);
    for (uint32_t k = 0; k < n; k++) {
        uint64_t pair[2] = {0, 0};
        for (uint32_t i = 0; i < n_locations; i++) {
            const sm_location_t *loc = sm_location_get(i);
            if (loc->msg_matrix && k < loc->msg_matrix_n) {
                pair[0] += loc->msg_matrix[2 * k];
                pair[1] += loc->msg_matrix[2 * k + 1];
            }
        }
        sm_put_bytes(&b, pair, sizeof pair);
    }

    SM_PF_PUT(&b, n_locations);
    sm_image_t self;
    sm_image_live(&self, run->rank, NULL, run->start_time, run->end_time);
    for (uint32_t i = 0; i < n_locations; i++) {
        const sm_location_t *loc = sm_location_get(i);
        sm_image_location_t il;
        if (self.location(self.ctx, i, &il) != 0)
            memset(&il, 0, sizeof il);
        uint32_t w[3] = {il.id, il.type, il.creator};
        sm_put_bytes(&b, w, sizeof w);
        SM_PF_PUT(&b, il.name);
        sm_pf_put_string(&b, il.creation_path);
        free(il.creation_path);
        const char *events = sm_buffer_spill_path(loc);
        const char *base = events ? strrchr(events, '/') : NULL;
        sm_pf_put_string(&b, base ? base + 1 : NULL);
        SM_PF_PUT(&b, il.has_device);
        if (il.has_device)
            SM_PF_PUT(&b, il.device);
    }
    /* The sampled metrics' summaries (process sampling, Kokkos memory),
     * last: a file without them still reads. */
    blob = sm_metrics_serialize(&len);
    sm_pf_put_blob(&b, blob, blob ? len : 0);
    free(blob);

    if (b.oom) {
        sm_error("writing the process file of rank %u failed: out of memory", (unsigned)run->rank);
        free(b.p);
        return -1;
    }
    uint64_t total = b.len, sum = sm_fnv(b.p + SM_PF_OFF_RANK, b.len - SM_PF_OFF_RANK, SM_FNV_START);
    memcpy(b.p + SM_PF_OFF_LEN, &total, sizeof total);
    memcpy(b.p + SM_PF_OFF_SUM, &sum, sizeof sum);

    /* <output>/.ranks: a folder of ours (fs.h).  The file is written under
     * a new name of this process's, then renamed into place: an earlier
     * job's file of the same rank, or a link planted there, is replaced,
     * never written through. */
    snprintf(dir, sizeof dir, "%s/%s", run->output_dir, SM_PROCESS_FILE_DIR);
    /* rank-<r>.<job>.smp: the files of two jobs in one folder do not
     * replace each other (the merge tells them apart by the job in them). */
    char name[64], tmpname[96];
    sm_process_file_name(run, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmpname, sizeof tmpname, ".rank-%u.smp.%ld.tmp", (unsigned)run->rank, (long)getpid());
    snprintf(tmp, sizeof tmp, "%s/%s", dir, tmpname);
    int outfd = sm_fs_open_dir(run->output_dir), dirfd = -1, fd = -1;
    if (outfd >= 0)
        dirfd = sm_fs_mkdir_at(outfd, SM_PROCESS_FILE_DIR, 0755);
    int saved = errno;
    if (dirfd < 0) {
        sm_error("writing process file %s failed: %s is not usable: %s", path, dir,
                 sm_fs_why(saved));
        if (outfd >= 0)
            close(outfd);
        free(b.p);
        return -1;
    }
    close(outfd);
    fd = sm_fs_create_at(dirfd, tmpname, O_WRONLY, 0644);
    if (fd < 0 && (errno == EEXIST || errno == SM_FS_SYMLINK) && unlinkat(dirfd, tmpname, 0) == 0)
        fd = sm_fs_create_at(dirfd, tmpname, O_WRONLY, 0644); /* an earlier pid's, dead */
    const uint8_t *p = b.p;
    uint64_t left = b.len;
    while (fd >= 0 && left) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        p += k;
        left -= (uint64_t)k;
    }
    saved = errno;
    if (fd < 0 || left || close(fd) != 0 || renameat(dirfd, tmpname, dirfd, name) != 0) {
        sm_error("writing process file %s failed: %s", fd < 0 ? tmp : path,
                 sm_fs_why(fd < 0 || left ? saved : errno));
        if (fd >= 0)
            unlinkat(dirfd, tmpname, 0);
        close(dirfd);
        free(b.p);
        return -1;
    }
    close(dirfd);
    free(b.p);
    return failed ? -1 : 0;
}

/* ---------------------------------------------------------------- reading */

#define SM_PF_GET(r, v) sm_get_copy((r), &(v), sizeof(v))

static void *sm_pf_get_blob(sm_rbuf_t *r, uint64_t *len)
{
    SM_PF_GET(r, *len);
    const void *at = sm_get_bytes(r, *len);
    void *copy = at ? malloc(*len ? *len : 1) : NULL;
    if (copy)
        memcpy(copy, at, *len);
    else
        r->bad = 1;
    return copy;
}

static char *sm_pf_get_string(sm_rbuf_t *r)
{
    uint32_t n = 0;
    SM_PF_GET(r, n);
    const char *at = (const char *)sm_get_bytes(r, n);
    return at ? strndup(at, n) : NULL;
}

void sm_process_file_free(sm_process_file_t *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; f->locations && i < f->n_locations; i++) {
        free(f->locations[i].creation_path);
        if (f->events)
            free(f->events[i]);
    }
    for (int i = 0; f->argv && i < f->argc; i++)
        free(f->argv[i]);
    free(f->argv);
    for (uint32_t i = 0; f->metadata && i < f->n_metadata2; i++)
        free(f->metadata[i]);
    free(f->metadata);
    if (f->have_config)
        sm_config_free(&f->config);
    free(f->locations);
    free(f->events);
    free(f->defs);
    free(f->profile);
    free(f->metrics);
    free(f->matrix_row);
    free(f->path);
    sm_id_maps_free(&f->maps);
    free(f);
}

void sm_process_file_fix_checks(uint8_t *data, size_t len)
{
    if (len < SM_PF_HEAD)
        return;
    uint64_t total = len, sum = sm_fnv(data + SM_PF_OFF_RANK, len - SM_PF_OFF_RANK, SM_FNV_START);
    memcpy(data + SM_PF_OFF_LEN, &total, sizeof total);
    memcpy(data + SM_PF_OFF_SUM, &sum, sizeof sum);
}

/* The whole file, if it is a regular file; NULL with err otherwise. */
static uint8_t *sm_pf_slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size, have = 0;
    uint8_t *data = malloc(size ? size : 1);
    while (data && have < size) {
        ssize_t n = read(fd, data + have, size - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    close(fd);
    if (!data)
        snprintf(err, errlen, "reading %s: out of memory", path);
    *len = have;
    return data;
}

sm_process_file_t *sm_process_file_read(const char *path, sm_process_file_head_t *head,
                                        char *err, size_t errlen)
{
    memset(head, 0, sizeof *head);
    size_t len = 0;
    uint8_t *data = sm_pf_slurp(path, &len, err, errlen);
    if (!data)
        return NULL;
    uint32_t magic = 0, version = 0;
    uint64_t total = 0, sum = 0;
    if (len >= 8) {
        memcpy(&magic, data, 4);
        memcpy(&version, data + 4, 4);
    }
    if (magic != SM_PF_MAGIC) {
        snprintf(err, errlen, "%s is not a sysmeasure process file%s", path,
                 len < 8 ? " (it is nearly empty: truncated?)" : "");
        free(data);
        return NULL;
    }
    if (version != SM_PF_VERSION) {
        snprintf(err, errlen, "%s is a process file of another sysmeasure version (format %u; "
                 "this one reads %u)", path, (unsigned)version, (unsigned)SM_PF_VERSION);
        free(data);
        return NULL;
    }
    if (len < SM_PF_HEAD) {
        snprintf(err, errlen, "%s is truncated (%zu bytes, less than its head): the data of "
                 "one rank (which, it does not say) is lost", path, len);
        free(data);
        return NULL;
    }
    memcpy(&total, data + SM_PF_OFF_LEN, 8);
    memcpy(&sum, data + SM_PF_OFF_SUM, 8);
    memcpy(&head->rank, data + SM_PF_OFF_RANK, 4);
    memcpy(&head->n_ranks, data + SM_PF_OFF_RANK + 4, 4);
    memcpy(head->job, data + SM_PF_OFF_RANK + 8, SM_JOB_ID_MAX);
    head->job[SM_JOB_ID_MAX - 1] = '\0';
    head->have_head = 1;
    const char *lost = "its definitions, threads, profile, message counts and the events in "
                       "its spill files";
    if (len < total) {
        snprintf(err, errlen, "%s is truncated (%zu of %llu bytes): rank %u's data (%s) is lost",
                 path, len, (unsigned long long)total, (unsigned)head->rank, lost);
        free(data);
        return NULL;
    }
    if (len != total || sm_fnv(data + SM_PF_OFF_RANK, len - SM_PF_OFF_RANK, SM_FNV_START) != sum) {
        snprintf(err, errlen, "%s is damaged (%s): rank %u's data (%s) is lost", path,
                 len != total ? "longer than written" : "checksum mismatch", (unsigned)head->rank,
                 lost);
        free(data);
        return NULL;
    }
    /* Its checks hold: what it says must be possible too (a file made to
     * pass them is refused here, not sized by). */
    if (head->rank >= head->n_ranks || head->n_ranks > SM_PF_MAX_RANKS) {
        snprintf(err, errlen, "%s is damaged (rank %u of %u ranks): its data is lost", path,
                 (unsigned)head->rank, (unsigned)head->n_ranks);
        free(data);
        return NULL;
    }

    sm_process_file_t *f = calloc(1, sizeof *f);
    sm_rbuf_t r = {data + SM_PF_HEAD, data + len, false};
    if (!f) {
        snprintf(err, errlen, "reading %s: out of memory", path);
        free(data);
        return NULL;
    }
    f->rank = head->rank;
    f->n_ranks = head->n_ranks;
    memcpy(f->job, head->job, sizeof f->job);
    f->path = strdup(path);
    SM_PF_GET(&r, f->pid);
    SM_PF_GET(&r, f->hostname);
    SM_PF_GET(&r, f->program);
    SM_PF_GET(&r, f->reason);
    f->hostname[sizeof f->hostname - 1] = f->program[sizeof f->program - 1] = '\0';
    f->reason[sizeof f->reason - 1] = '\0';
    uint32_t argc = 0;
    SM_PF_GET(&r, argc);
    if (!r.bad && argc <= len / 4)
        f->argv = calloc(argc + 1u, sizeof *f->argv);
    for (uint32_t i = 0; f->argv && i < argc && !r.bad; i++)
        f->argv[f->argc++] = sm_pf_get_string(&r);
    r.bad |= !f->argv;
    uint32_t n_config = 0;
    SM_PF_GET(&r, n_config);
    char cfg_err[256];
    static char *const no_env[] = {NULL};
    f->have_config = n_config > 0 && sm_config_load(&f->config, no_env, cfg_err, sizeof cfg_err) == 0;
    for (uint32_t i = 0; i < n_config && !r.bad; i++) {
        char *name = sm_pf_get_string(&r), *value = sm_pf_get_string(&r);
        uint32_t source = 0;
        SM_PF_GET(&r, source);
        /* Variables this version does not know are skipped. */
        for (size_t k = 0; f->have_config && name && value && k < SM_CONFIG_COUNT; k++)
            if (!strcmp(sm_config_vars[k].env, name) &&
                sm_config_set(&f->config, &sm_config_vars[k], value,
                              (sm_config_source_t)source, cfg_err, sizeof cfg_err) == 0)
                f->config.source[k] = (sm_config_source_t)source;
        free(name);
        free(value);
    }
    uint32_t n_meta = 0;
    SM_PF_GET(&r, n_meta);
    if (!r.bad && n_meta <= len / 8)
        f->metadata = calloc(2u * n_meta + 1u, sizeof *f->metadata);
    for (uint32_t i = 0; f->metadata && i < 2 * n_meta && !r.bad; i++)
        f->metadata[f->n_metadata2++] = sm_pf_get_string(&r);
    r.bad |= !f->metadata;
    SM_PF_GET(&r, f->start_realtime_ns);
    SM_PF_GET(&r, f->end_realtime_ns);
    SM_PF_GET(&r, f->start_ticks);
    SM_PF_GET(&r, f->end_ticks);
    SM_PF_GET(&r, f->clock);
    SM_PF_GET(&r, f->spills);
    SM_PF_GET(&r, f->spilled_bytes);
    SM_PF_GET(&r, f->dropped_records);
    SM_PF_GET(&r, f->unmatched_leaves);
    SM_PF_GET(&r, f->record_count);
    SM_PF_GET(&r, f->record_words);
    f->defs = sm_pf_get_blob(&r, &f->defs_len);
    f->profile = sm_pf_get_blob(&r, &f->profile_len);
    uint32_t n_row = 0;
    SM_PF_GET(&r, n_row);
    if (!r.bad && (uint64_t)n_row * 16u <= (uint64_t)(r.end - r.p)) {
        f->matrix_row = malloc(16u * (size_t)(n_row ? n_row : 1));
        if (f->matrix_row)
            sm_get_copy(&r, f->matrix_row, 16u * (uint64_t)n_row);
    }
    r.bad |= n_row != f->n_ranks || !f->matrix_row;
    SM_PF_GET(&r, f->n_locations);
    if (!r.bad && f->n_locations <= len / 16) {
        f->locations = calloc(f->n_locations + 1u, sizeof *f->locations);
        f->events = calloc(f->n_locations + 1u, sizeof *f->events);
    }
    r.bad |= !f->locations || !f->events;
    char *slash = strrchr(f->path, '/');
    for (uint32_t i = 0; !r.bad && i < f->n_locations; i++) {
        sm_image_location_t *l = &f->locations[i];
        uint32_t w[3];
        SM_PF_GET(&r, w);
        l->id = w[0];
        l->type = w[1];
        l->creator = w[2];
        SM_PF_GET(&r, l->name);
        l->name[sizeof l->name - 1] = '\0';
        char *cp = sm_pf_get_string(&r);
        l->creation_path = cp && cp[0] ? cp : NULL;
        if (!l->creation_path)
            free(cp);
        char *ev = sm_pf_get_string(&r);
        /* The spill files sit in <output>/.spill, beside <output>/.ranks. */
        if (ev && ev[0] && slash) {
            size_t need = (size_t)(slash - f->path) + strlen(ev) + 16;
            f->events[i] = malloc(need);
            if (f->events[i])
                snprintf(f->events[i], need, "%.*s/../.spill/%s", (int)(slash - f->path),
                         f->path, ev);
        }
        free(ev);
        SM_PF_GET(&r, l->has_device);
        if (l->has_device) {
            SM_PF_GET(&r, l->device);
            l->device.name[sizeof l->device.name - 1] = '\0';
            l->device.uuid[sizeof l->device.uuid - 1] = '\0';
            l->device.pci_bus_id[sizeof l->device.pci_bus_id - 1] = '\0';
        }
    }
    if (!r.bad && r.p < r.end)
        f->metrics = sm_pf_get_blob(&r, &f->metrics_len);
    free(data);
    if (r.bad) {
        snprintf(err, errlen, "%s is damaged (its checksum holds, its contents do not): rank "
                 "%u's data is lost", path, (unsigned)head->rank);
        sm_process_file_free(f);
        return NULL;
    }
    return f;
}

/* ---------------------------------------------------------------- as an image */

static int sm_pf_location(void *ctx, uint32_t i, sm_image_location_t *out)
{
    const sm_process_file_t *f = ctx;
    if (i >= f->n_locations)
        return -1;
    *out = f->locations[i];
    out->creation_path = f->locations[i].creation_path ? strdup(f->locations[i].creation_path) : NULL;
    return 0;
}

static int sm_pf_records(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    sm_process_file_t *f = ctx;
    if (i >= f->n_locations)
        return -1;
    char owner[32];
    snprintf(owner, sizeof owner, "rank %u", (unsigned)f->rank);
    int rc = f->events[i] ? sm_spill_file_for_each_of(f->events[i], f->locations[i].id, owner,
                                                      fn, arg)
                          : 0;
    if (rc < 0) { /* damaged chunks: said (what was lost, and whose), the rest is written */
        f->damaged++;
        rc = 0;
    }
    return rc;
}

/* A GPU stream's records in time order (its batches arrived in any order). */
static int sm_pf_for_each(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    const sm_process_file_t *f = ctx;
    if (i < f->n_locations && f->locations[i].type == SM_LOCATION_GPU_STREAM)
        return sm_gpu_for_each_in_order(sm_pf_records, ctx, i, fn, arg);
    return sm_pf_records(ctx, i, fn, arg);
}

void sm_process_file_image(sm_process_file_t *f, sm_image_t *img)
{
    memset(img, 0, sizeof *img);
    img->rank = f->rank;
    img->maps = &f->maps;
    img->n_locations = f->n_locations;
    img->start_ticks = f->start_ticks;
    img->end_ticks = f->end_ticks;
    img->ctx = f;
    img->location = sm_pf_location;
    img->for_each = sm_pf_for_each;
    sm_clock_job_of(&f->clock, &img->clock);
}
