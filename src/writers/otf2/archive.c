/* The OTF2 archive of the job, from open to close (sm_otf2_write_images):
 * every process writes its locations' event and local definition files,
 * sends rank 0 what the global definitions need of it, and rank 0 writes
 * them and timeline.json.  Then the output that runs it all. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */
#include "../../finalize/pipeline.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otf2_internal.h"
#include "../../core/buffer.h"
#include "../../core/clock.h"
#include "../../core/cpus.h"
#include "../../core/write_behind.h"
#include "../../util/log.h"

/* Attributes of a GPU activity's Enter, in payload order (gpu.c defines
 * them in every process that has GPU streams). */
static const char *const sm_otf2_gpu_attr_names[SM_OTF2_GPU_ATTRS] = {
    "correlation id", "bytes",  "grid x",  "grid y",  "grid z", "block x", "block y",
    "block z",        "registers per thread", "static shared memory", "dynamic shared memory"};

/* What keeping the enters and leaves nested changed (nesting.h), with -v. */
static void sm_otf2_note_nesting(const sm_nesting_t *n)
{
    if (n->dropped || n->closed)
        sm_info(1, "OTF2: %" PRIu64 " leaves of regions whose enter was not recorded left out, "
                "%" PRIu64 " regions left with the region around them (a signal handler of the "
                "program jumped out of sysmeasure's recording of an event)", n->dropped,
                n->closed);
}

/* ---------------------------------------------------------------- what rank 0 learns */

/* What the global definitions need of one image (its time range, flags set
 * while its events were written, and its locations with their event
 * counts): a header, then each location. */
static void *sm_otf2_proc_blob(sm_otf2_writer_t *w, const uint64_t *n_events, uint64_t *len)
{
    const sm_image_t *img = w->img;
    sm_wbuf_t b = {0};
    sm_otf2_proc_info_t h = {
        .n_locations = img->n_locations,
        .any_time = w->any_time,
        .thread_events = w->thread_events,
        .metric_events = w->metric_events,
        .min_ns = w->min_ns,
        .max_ns = w->max_ns,
        .run_start_ns = sm_clock_job_ns(&img->clock, img->start_ticks),
        .run_end_ns = sm_clock_job_ns(&img->clock, img->end_ticks),
    };
    if (!w->any_time) {
        h.min_ns = sm_clock_job_ns(&img->clock, img->start_ticks);
        h.max_ns = sm_clock_job_ns(&img->clock, img->end_ticks);
    }
    sm_put_bytes(&b, &h, sizeof h);
    for (uint32_t i = 0; i < img->n_locations; i++) {
        sm_otf2_loc_info_t li;
        sm_image_location_t il;
        memset(&li, 0, sizeof li);
        if (img->location(img->ctx, i, &il) != 0) {
            b.oom = true;
            break;
        }
        li.id = il.id;
        li.type = il.type;
        li.n_events = n_events[i];
        li.creator = il.creator;
        memcpy(li.name, il.name, sizeof li.name);
        li.has_device = il.has_device;
        li.device = il.device;
        uint32_t plen = il.creation_path ? (uint32_t)strlen(il.creation_path) : 0;
        h.any_gpu |= il.type == SM_LOCATION_GPU_STREAM;
        sm_put_bytes(&b, &li, sizeof li);
        sm_put_bytes(&b, &plen, sizeof plen);
        sm_put_bytes(&b, il.creation_path ? il.creation_path : "", plen);
        free(il.creation_path);
    }
    /* Then this image's timeline bins (sm_timeline_t's out). */
    sm_timeline_end_process(w->timeline);
    uint64_t tl_len = w->timeline && !w->timeline->out.oom ? w->timeline->out.len : 0;
    sm_put_u64(&b, tl_len);
    if (tl_len)
        sm_put_bytes(&b, w->timeline->out.p, tl_len);
    if (!b.oom)
        memcpy(b.p, &h, sizeof h); /* any_gpu is known now */
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

static void sm_otf2_procs_free(sm_otf2_proc_info_t *procs, uint32_t n)
{
    for (uint32_t r = 0; procs && r < n; r++) {
        for (uint32_t i = 0; procs[r].locations && i < procs[r].n_locations; i++)
            free(procs[r].locations[i].creation_path);
        free(procs[r].locations);
    }
    free(procs);
}

/* Rank 0: every process's part, by rank.  NULL on malformed input. */
static sm_otf2_proc_info_t *sm_otf2_procs_parse(const void *all, uint64_t len, uint32_t n_ranks)
{
    sm_otf2_proc_info_t *procs = calloc(n_ranks, sizeof *procs);
    const uint8_t *p = all, *end = p + len, *blob;
    uint32_t rank;
    uint64_t blen;
    bool bad = !procs;
    while (!bad && (p = sm_tree_next(p, end, &rank, &blob, &blen)) != NULL) {
        const uint8_t *q = blob, *qend = blob + blen;
        sm_otf2_proc_info_t h;
        if (rank >= n_ranks || blen < sizeof h || procs[rank].locations) {
            bad = true;
            break;
        }
        memcpy(&h, q, sizeof h);
        q += sizeof h;
        h.locations = calloc(h.n_locations ? h.n_locations : 1, sizeof *h.locations);
        if (!h.locations || h.n_locations > blen / sizeof(sm_otf2_loc_info_t)) {
            free(h.locations);
            bad = true;
            break;
        }
        procs[rank] = h;
        procs[rank].timeline = NULL; /* (the sender's pointer) */
        procs[rank].timeline_len = 0;
        for (uint32_t i = 0; i < h.n_locations && !bad; i++) {
            sm_otf2_loc_info_t *li = &procs[rank].locations[i];
            uint32_t plen;
            if ((uint64_t)(qend - q) < sizeof *li + sizeof plen) {
                bad = true;
                break;
            }
            memcpy(li, q, sizeof *li);
            q += sizeof *li;
            li->name[sizeof li->name - 1] = '\0';
            li->creation_path = NULL;
            memcpy(&plen, q, sizeof plen);
            q += sizeof plen;
            if ((uint64_t)(qend - q) < plen) {
                bad = true;
                break;
            }
            if (li->creator != SM_INVALID_ID)
                li->creation_path = strndup((const char *)q, plen);
            q += plen;
        }
        uint64_t tl_len = 0;
        if (!bad && (uint64_t)(qend - q) >= sizeof tl_len) {
            memcpy(&tl_len, q, sizeof tl_len);
            q += sizeof tl_len;
            if (tl_len <= (uint64_t)(qend - q)) {
                procs[rank].timeline = tl_len ? q : NULL;
                procs[rank].timeline_len = tl_len;
            }
        }
    }
    if (bad) {
        sm_otf2_procs_free(procs, n_ranks);
        return NULL;
    }
    return procs;
}

/* ---------------------------------------------------------------- the archive */

/* OTF2 will not overwrite an archive: a run that reuses an --output folder
 * replaces the archive of the run before (as the other writers replace
 * their files).  Only the archive's own three names are touched. */
static void sm_otf2_remove_previous(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, SM_OTF2_ARCHIVE_NAME);
    if (access(path, F_OK) == 0)
        nftw(path, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(path, sizeof path, "%s/%s.otf2", dir, SM_OTF2_ARCHIVE_NAME);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.def", dir, SM_OTF2_ARCHIVE_NAME);
    unlink(path);
}

/* Whether any process failed so far (all processes take the same path
 * afterwards, so no one waits in a collective the others left). */
static bool sm_otf2_any_failed(sm_otf2_writer_t *w, bool failed_here)
{
    const sm_procs_t *p = w->job->procs;
    uint64_t v = failed_here;
    if (p->size > 1 && p->allreduce_max_u64(p->ctx, &v, 1) != 0)
        v = 1;
    return v != 0;
}

/* One image's events; its part of the global definitions appended to seq
 * (as sm_tree_gather would: rank, length, bytes). */
static bool sm_otf2_write_image_events(sm_otf2_writer_t *w, const sm_image_t *img,
                                       sm_wbuf_t *seq)
{
    w->img = img;
    sm_timeline_reset(w->timeline);
    w->any_time = w->thread_events = w->metric_events = false;
    w->min_ns = w->max_ns = 0;
    uint64_t *n_events = calloc(img->n_locations ? img->n_locations : 1, sizeof *n_events);
    bool ok = sm_otf2_got(w, n_events, strerror(ENOMEM));
    int threads = img->parallel && !sm_otf2_one_encoder ? sm_cpus_end_threads() : 1;
    bool parallel = threads > 1 && img->n_locations > 1;
    /* A CPU more than the encoders need: OTF2's file writes go to it. */
    bool behind = threads > 1 && img->n_locations < (uint32_t)threads &&
                  sm_wb_hook((const void *)OTF2_Archive_Open) == 0 && sm_wb_start() == 0;
    uint64_t behind_bytes = behind ? sm_wb_bytes() : 0;
    if (ok && parallel)
        ok = sm_otf2_encode_parallel(w, n_events, threads);
    for (uint32_t i = 0; ok && !parallel && i < img->n_locations; i++)
        ok = sm_otf2_write_location_events(w, i, &n_events[i]);
    uint64_t back = img->parallel ? sm_buffers_taken_back() : 0;
    if (back)
        sm_info(2, "OTF2: %" PRIu64 " chunks spilled unencoded were read back and encoded "
                "during the run", back);
    if (behind) {
        sm_wb_stop();
        sm_info(2, "OTF2: %.1f MB of event files written by a second thread",
                (double)(sm_wb_bytes() - behind_bytes) / 1e6);
    }
    uint64_t len = 0;
    void *blob = ok ? sm_otf2_proc_blob(w, n_events, &len) : NULL;
    ok = ok && sm_otf2_got(w, blob, strerror(ENOMEM));
    if (ok) {
        sm_put_bytes(seq, &img->rank, sizeof img->rank);
        sm_put_bytes(seq, &len, sizeof len);
        sm_put_bytes(seq, blob, len);
        ok = sm_otf2_got(w, seq->oom ? NULL : seq->p, strerror(ENOMEM));
    }
    free(blob);
    free(n_events);
    return ok;
}

/* sysmeasure-merge: ranks that left no data get an empty location (see the
 * global definitions), and readers want its event and definition files. */
static bool sm_otf2_empty_ranks(sm_otf2_writer_t *w, const sm_image_t *imgs, uint32_t n_imgs,
                                bool events)
{
    bool ok = true;
    for (uint32_t r = 0; ok && w->job->procs->size == 1 && r < w->n_ranks; r++) {
        uint32_t k = 0;
        while (k < n_imgs && imgs[k].rank != r)
            k++;
        if (k < n_imgs)
            continue;
        OTF2_LocationRef ref = sm_otf2_location_ref(r, 0);
        if (events) {
            OTF2_EvtWriter *e = OTF2_Archive_GetEvtWriter(w->archive, ref);
            ok = sm_otf2_got(w, e, "cannot create an event writer") &&
                 sm_otf2_ok(w, OTF2_Archive_CloseEvtWriter(w->archive, e));
        } else {
            OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(w->archive, ref);
            ok = sm_otf2_got(w, d, "cannot create a definition writer") &&
                 sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d));
        }
    }
    return ok;
}

/* Steps that are collective in OTF2 run on every process; after each, all
 * agree whether to go on. */
/* The job's ids of the attributes GPU activities carry (by name). */
static void sm_otf2_find_gpu_attrs(sm_otf2_writer_t *w)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = sm_defset_attribute_count(d);
    for (uint32_t k = 0; k < SM_OTF2_GPU_ATTRS; k++) {
        w->gpu_attr[k] = OTF2_UNDEFINED_ATTRIBUTE;
        for (uint32_t i = 0; i < n; i++) {
            const sm_attribute_def_t *a = sm_defset_attribute_get(d, i);
            const char *name = a ? sm_defset_string_get(d, a->name) : NULL;
            if (name && a->type == SM_ATTR_INT64 && strcmp(name, sm_otf2_gpu_attr_names[k]) == 0) {
                w->gpu_attr[k] = i;
                break;
            }
        }
    }
}

/* Rank 0: timeline.json over the job's run (from the first process's start
 * to the last one's end; events outside it, such as a GPU's stray
 * timestamps, are left out of the picture).  A failure is reported there
 * and leaves the archive as it is. */
static void sm_otf2_timeline(sm_otf2_writer_t *w, const sm_otf2_proc_info_t *infos)
{
    const uint8_t **blobs = calloc(w->n_ranks, sizeof *blobs);
    uint64_t *lens = calloc(w->n_ranks, sizeof *lens), lo = 0, hi = 0;
    bool any = false;
    for (uint32_t r = 0; blobs && lens && r < w->n_ranks; r++) {
        blobs[r] = infos[r].timeline;
        lens[r] = infos[r].timeline_len;
        const sm_otf2_proc_info_t *p = &infos[r];
        bool run = p->run_end_ns > p->run_start_ns;
        if (!run && !p->any_time)
            continue;
        uint64_t a = run ? p->run_start_ns : p->min_ns, b = run ? p->run_end_ns : p->max_ns;
        if (!any || a < lo)
            lo = a;
        if (!any || b > hi)
            hi = b;
        any = true;
    }
    if (blobs && lens && any)
        sm_timeline_write_json(w->run->output_dir, w->job->defs, w->n_ranks, blobs, lens, lo, hi);
    else if (!blobs || !lens)
        sm_error("writing %s/timeline.json failed: %s", w->run->output_dir, strerror(ENOMEM));
    free(blobs);
    free(lens);
}

/* The definition chunk size: small when one process writes the archive and
 * a generous estimate of its largest definition file (the global one: every
 * string, region, location and group; a location's mapping tables) stays
 * far below OTF2's 4 MiB file buffer, and its largest record (a group of all
 * locations, 10 bytes a member) fits a small chunk; else SM_OTF2_DEF_CHUNK.
 * (All processes of an MPI job must agree before they know the locations.) */
static uint64_t sm_otf2_def_chunk(const sm_otf2_writer_t *w, const sm_image_t *imgs,
                                  uint32_t n_imgs)
{
    if (w->job->procs->size > 1)
        return SM_OTF2_DEF_CHUNK;
    const sm_defset_t *d = w->job->defs;
    uint64_t locs = w->n_ranks, est = 0;
    for (uint32_t k = 0; k < n_imgs; k++)
        locs += imgs[k].n_locations;
    for (uint32_t i = 0, n = sm_defset_string_count(d); i < n && est < SM_OTF2_DEF_CHUNK; i++) {
        const char *str = sm_defset_string_get(d, i);
        est += (str ? strlen(str) : 0) + 16;
    }
    est += 64ull * (sm_defset_region_count(d) + sm_defset_metric_count(d) +
                    sm_defset_attribute_count(d) + locs) +
           16ull * locs * (sm_defset_comm_count(d) + 8);
    return est < SM_OTF2_DEF_CHUNK / 4 && locs * 10 < SM_OTF2_DEF_CHUNK_SMALL / 2
               ? SM_OTF2_DEF_CHUNK_SMALL : SM_OTF2_DEF_CHUNK;
}

static bool sm_otf2_write_archive(sm_otf2_writer_t *w, const sm_image_t *imgs, uint32_t n_imgs,
                                  bool *others_failed)
{
    static const OTF2_FlushCallbacks flush = {sm_otf2_pre_flush, NULL};
    static const OTF2_MemoryCallbacks memory = {sm_otf2_allocate, sm_otf2_free_all};
    const sm_run_info_t *run = w->run;
    const sm_procs_t *procs = w->job->procs;
    char description[512];
    bool ok;

    if (procs->rank == 0)
        sm_otf2_remove_previous(run->output_dir);
    if (procs->size > 1)
        procs->barrier(procs->ctx);
    w->def_chunk = sm_otf2_def_chunk(w, imgs, n_imgs);
    w->archive = OTF2_Archive_Open(run->output_dir, SM_OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
                                   SM_OTF2_EVT_CHUNK, w->def_chunk,
                                   OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    ok = sm_otf2_got(w, w->archive, "cannot create the archive") &&
         sm_otf2_ok(w, OTF2_Archive_SetFlushCallbacks(w->archive, &flush, NULL)) &&
         sm_otf2_ok(w, OTF2_Archive_SetMemoryCallbacks(w->archive, &memory, NULL));
    if (ok && procs->otf2_collectives(procs->ctx, w->archive) != 0) {
        w->failed_reason = "cannot set up the collective operations of the archive";
        ok = false;
    }
    if (w->n_ranks > 1)
        snprintf(description, sizeof description, "sysmeasure trace of %s (%" PRIu32 " ranks)",
                 run->program ? run->program : "a program", w->n_ranks);
    else
        snprintf(description, sizeof description, "sysmeasure trace of %s (pid %ld on %s)",
                 run->program ? run->program : "a program", (long)run->pid,
                 run->hostname[0] ? run->hostname : "unknown");
    ok = ok && sm_otf2_ok(w, OTF2_Archive_SetCreator(w->archive, "sysmeasure " PACKAGE_VERSION)) &&
         sm_otf2_ok(w, OTF2_Archive_SetMachineName(w->archive,
                                                   run->hostname[0] ? run->hostname : "unknown")) &&
         sm_otf2_ok(w, OTF2_Archive_SetDescription(w->archive, description));
    if (ok) {
        w->attrs = OTF2_AttributeList_New();
        ok = sm_otf2_got(w, w->attrs, strerror(ENOMEM));
    }
    sm_otf2_find_gpu_attrs(w);
    if (sm_otf2_any_failed(w, !ok))
        goto others;

    /* Events, one location at a time. */
    sm_wbuf_t seq = {0};
    ok = sm_otf2_ok(w, OTF2_Archive_OpenEvtFiles(w->archive));
    for (uint32_t k = 0; ok && k < n_imgs; k++)
        ok = sm_otf2_write_image_events(w, &imgs[k], &seq);
    ok = ok && sm_otf2_empty_ranks(w, imgs, n_imgs, true);
    if (sm_otf2_any_failed(w, !ok)) {
        free(seq.p);
        goto others;
    }
    ok = sm_otf2_ok(w, OTF2_Archive_CloseEvtFiles(w->archive));

    /* Local definitions: none, but readers expect a file per location;
     * those encoded during the run map their ids and ticks to the job's. */
    ok = ok && sm_otf2_ok(w, OTF2_Archive_OpenDefFiles(w->archive));
    for (uint32_t k = 0; ok && k < n_imgs; k++) {
        for (uint32_t i = 0; ok && i < imgs[k].n_locations; i++) {
            sm_image_location_t il;
            ok = imgs[k].location(imgs[k].ctx, i, &il) == 0;
            if (!ok)
                break;
            free(il.creation_path);
            if (n_imgs == 1 && w->def_made && w->def_made[i])
                continue; /* made by an encoder */
            OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(
                w->archive, sm_otf2_location_ref(imgs[k].rank, il.id));
            w->writer_open = d != NULL;
            ok = sm_otf2_got(w, d, "cannot create a definition writer") &&
                 sm_otf2_bg_local_defs(w, d, &imgs[k], il.id) &&
                 sm_otf2_ok(w, OTF2_Archive_CloseDefWriter(w->archive, d));
            if (ok)
                w->writer_open = false;
        }
    }
    ok = ok && sm_otf2_empty_ranks(w, imgs, n_imgs, false) &&
         sm_otf2_ok(w, OTF2_Archive_CloseDefFiles(w->archive));
    if (sm_otf2_any_failed(w, !ok)) {
        free(seq.p);
        goto others;
    }

    /* What the global definitions need of every process, at rank 0: the
     * images of this process (all of them when merging), or one per process
     * along the tree. */
    void *all = seq.p;
    uint64_t all_len = seq.len;
    if (procs->size > 1) {
        const uint8_t *blob = NULL;
        uint64_t blen = 0;
        uint32_t r;
        sm_tree_next(seq.p, seq.p + seq.len, &r, &blob, &blen);
        all = NULL;
        if (sm_tree_gather(procs, blob ? (const void *)blob : "", blen, &all, &all_len) != 0)
            ok = sm_otf2_got(w, NULL, "cannot gather the locations of the job");
        free(seq.p);
    }
    if (ok && procs->rank == 0) {
        sm_otf2_proc_info_t *infos = sm_otf2_procs_parse(all, all_len, w->n_ranks);
        ok = sm_otf2_got(w, infos, "the locations of another process could not be read");
        OTF2_GlobalDefWriter *g = ok ? OTF2_Archive_GetGlobalDefWriter(w->archive) : NULL;
        w->writer_open = g != NULL;
        ok = ok && sm_otf2_got(w, g, "cannot create the global definition writer") &&
             sm_otf2_write_global_defs(w, g, infos) &&
             sm_otf2_ok(w, OTF2_Archive_CloseGlobalDefWriter(w->archive, g));
        if (ok)
            w->writer_open = false;
        if (ok)
            sm_otf2_timeline(w, infos);
        sm_otf2_procs_free(infos, w->n_ranks);
    }
    free(all);
    if (sm_otf2_any_failed(w, !ok))
        goto others;

    OTF2_ErrorCode rc = OTF2_Archive_Close(w->archive);
    w->archive = NULL;
    sm_otf2_pool_release();
    return sm_otf2_ok(w, rc);

others:
    /* A process failed: if it was another, this one says nothing more; the
     * archive stays open (closing is collective and may flush broken
     * buffers, see writer_open). */
    *others_failed = ok;
    w->archive = NULL;
    return false;
}

int sm_otf2_write_images(const sm_run_info_t *run, const sm_job_t *job, const sm_image_t *imgs,
                         uint32_t n_imgs)
{
    sm_otf2_writer_t w;
    memset(&w, 0, sizeof w);
    w.run = run;
    w.job = job;
    w.n_ranks = job->n_ranks ? job->n_ranks : job->procs->size;
    w.n_comms = sm_defset_comm_count(job->defs);
    w.n_contexts = sm_defset_context_count(job->defs);
    for (uint32_t c = 0; c < w.n_comms; c++) {
        sm_comm_key_t key = sm_defset_comm_get(job->defs, c)->key;
        if (sm_comm_key_is_team(key))
            w.team_comms = true;
        else if (sm_comm_key_is_hashed(key) && (key.leader & SM_COMM_LEADER_HASHED_AMD))
            w.rccl_comms = true;
        else if (sm_comm_key_is_hashed(key))
            w.nccl_comms = true;
        else
            w.mpi_comms = true;
    }
    w.failed_code = OTF2_SUCCESS;
    w.timeline = sm_timeline_new();
    w.n_region_kinds = sm_defset_region_count(job->defs);
    w.region_kind = malloc(w.n_region_kinds + 1u);
    for (uint32_t i = 0; w.region_kind && i < w.n_region_kinds; i++) {
        const sm_region_def_t *rd = sm_defset_region_get(job->defs, i);
        w.region_kind[i] = (uint8_t)(rd ? sm_tl_kind_of_paradigm(sm_paradigm_name(rd->paradigm))
                                        : SM_TL_OTHER);
    }
    if (!w.region_kind || !w.timeline) { /* out of memory: no timeline */
        sm_timeline_free(w.timeline);
        w.timeline = NULL;
        w.n_region_kinds = 0;
    }
    w.n_named_strings = sm_defset_string_count(job->defs);
    w.named_metric = malloc(sizeof *w.named_metric * (w.n_named_strings + 1u));
    for (uint32_t i = 0; w.named_metric && i < w.n_named_strings; i++)
        w.named_metric[i] = SM_INVALID_ID;
    for (uint32_t i = 0; w.named_metric && i < sm_defset_metric_count(job->defs); i++)
        w.named_metric[sm_defset_metric_get(job->defs, i)->name] = i;
    if (!w.named_metric)
        w.n_named_strings = 0; /* out of memory: named metrics are left out */
    uint32_t n_metrics = sm_defset_metric_count(job->defs);
    w.counters = malloc(sizeof *w.counters * (n_metrics + 1u));
    for (uint32_t i = 0; w.counters && i < n_metrics && w.n_counters < 255; i++)
        if (sm_defset_metric_get(job->defs, i)->kind == SM_METRIC_COUNTER)
            w.counters[w.n_counters++] = i;

    memset(&sm_otf2_reported, 0, sizeof sm_otf2_reported);
    sm_otf2_reported.code = OTF2_SUCCESS;
    OTF2_ErrorCallback previous = OTF2_Error_RegisterCallback(sm_otf2_error_callback,
                                                              &sm_otf2_reported);
    bool others_failed = false;
    bool ok = sm_otf2_write_archive(&w, imgs, n_imgs, &others_failed);
    if (!ok && !others_failed)
        sm_otf2_report_failure(&w);
    if (w.attrs)
        OTF2_AttributeList_Delete(w.attrs);
    free(w.loc.creation_path);
    free(w.named_metric);
    free(w.counters);
    sm_otf2_pool_release();
    free(w.samples);
    free(w.def_made);
    sm_timeline_free(w.timeline);
    free(w.region_kind);
    sm_nesting_free(&w.nest);
    OTF2_Error_RegisterCallback(previous, NULL);
    sm_otf2_note_nesting(&w.nest);

    if (!ok)
        return others_failed ? 0 : -1;
    if (w.clamps)
        sm_info(1, "OTF2: %" PRIu64 " timestamps that went backwards on their location were clamped",
                w.clamps);
    if (w.gpu_overlaps)
        sm_info(1, "OTF2: %" PRIu64 " GPU activities overlapped the previous one on their stream "
                "and were moved after it", w.gpu_overlaps);
    if (w.skipped_attrs)
        sm_info(1, "OTF2: %" PRIu64 " event attributes were unknown or repeated and left out",
                w.skipped_attrs);
    if (w.unknown_comm)
        sm_info(1, "OTF2: %" PRIu64 " message events on an unnamed communicator were left out",
                w.unknown_comm);
    if (w.spill_failures) {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: cannot read back the spilled events of "
                 "%s%s", run->output_dir, SM_OTF2_ARCHIVE_NAME, w.first_spill_failure,
                 w.spill_failures > 1 ? " and of others; the archive lacks them"
                                      : "; the archive lacks them");
        return -1;
    }
    sm_info(2, "OTF2: wrote %s/%s.otf2", run->output_dir, SM_OTF2_ARCHIVE_NAME);
    return 0;
}

/* ---------------------------------------------------------------- the output */

static bool sm_otf2_output_wanted(const sm_finalize_t *f)
{
    return f->trace;
}

static int sm_otf2_output_write(sm_finalize_t *f)
{
    return f->images ? sm_otf2_write_images(f->run, &f->job, f->images, f->n_images)
                     : sm_otf2_write(f->run, &f->job);
}

const sm_output_t sm_output_otf2 = {
    .file = "traces.otf2",
    .who = SM_OUTPUT_EVERY_RANK,
    .wanted = sm_otf2_output_wanted,
    .write = sm_otf2_output_write,
};
