/* Several encoders at the end of the run: the program's CPU threads
 * encoded by several threads at once, each into an archive of its own whose
 * files are moved into the job's. */
#include "sm_build.h" /* from configure: _GNU_SOURCE, before any other */

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otf2_internal.h"
#include "../../core/buffer.h"
#include "../../core/cpus.h"
#include "../../util/log.h"

/* SYSMEASURE_OTF2_BACKGROUND=check writes its second archive with one
 * encoder: the tests compare the two. */
bool sm_otf2_one_encoder;

/* The end of the run with more than one CPU to use (sm_cpus_end_threads):
 * the program's threads are encoded by that many threads at once, each with
 * an event writer of its own in an archive of its own (w->stage).  While
 * the others start, the thread that ends the run takes, in location order,
 * what it writes alone: locations staged during the run (only moved, or
 * written here when that fails), GPU streams (sorted on reading) and
 * metric sources; then it is one of the encoders.  Each keeps its own
 * counts and timeline, added to the writer's at the end in location order,
 * so that the archive and timeline.json are those of one encoder. */
typedef struct sm_otf2_encoders {
    sm_otf2_writer_t *w;   /* the thread that ends the run */
    const uint32_t *todo;  /* the locations left to encode */
    uint32_t n_todo;
    uint32_t next;         /* atomic: the next of todo to take */
    int stop;              /* atomic: an encoder failed */
    uint64_t *n_events;
    sm_otf2_slot_t *slots; /* per location */
} sm_otf2_encoders_t;

typedef struct sm_otf2_encoder {
    sm_otf2_encoders_t *all;
    sm_otf2_writer_t w;
    pthread_t thread;
    char dir[4200]; /* its archive's folder (w.stage) */
} sm_otf2_encoder_t;

/* Moves what the location added to the timeline since `from` into its slot. */
static void sm_otf2_keep_lane(sm_otf2_writer_t *w, size_t from, sm_otf2_slot_t *s)
{
    sm_timeline_t *tl = w->timeline;
    if (!tl)
        return;
    if (tl->out.oom) {
        s->oom = true;
    } else if (tl->out.len > from) {
        sm_put_bytes(&s->lane, tl->out.p + from, tl->out.len - from);
        s->oom |= s->lane.oom;
    }
    tl->out.len = from;
}

static void sm_otf2_encode_some(sm_otf2_writer_t *w, sm_otf2_encoders_t *a)
{
    while (!__atomic_load_n(&a->stop, __ATOMIC_RELAXED)) {
        uint32_t k = __atomic_fetch_add(&a->next, 1, __ATOMIC_RELAXED);
        if (k >= a->n_todo)
            break;
        uint32_t i = a->todo[k];
        size_t from = w->timeline ? w->timeline->out.len : 0;
        w->slot = &a->slots[i];
        bool ok = sm_otf2_read_location(w, i) && sm_otf2_encode_location(w, i, &a->n_events[i]);
        sm_otf2_keep_lane(w, from, w->slot);
        w->slot = NULL;
        if (!ok) {
            __atomic_store_n(&a->stop, 1, __ATOMIC_RELAXED);
            break;
        }
    }
}

static void *sm_otf2_encoder_main(void *arg)
{
    sm_otf2_encoder_t *e = arg;
    sm_cpus_bind_end();
    sm_otf2_encode_some(&e->w, e->all);
    return NULL;
}

/* Encoder k's archive, in the spill folder: event files only, of the
 * job's chunk size, moved into the job's archive as they close. */
static bool sm_otf2_encoder_archive(sm_otf2_encoder_t *e, int k)
{
    static const OTF2_MemoryCallbacks memory = {sm_otf2_allocate, sm_otf2_free_all};
    sm_otf2_writer_t *x = &e->w;
    char spill[4096], traces[4400];
    if (sm_buffers_spill_dir(spill, sizeof spill) != 0 ||
        snprintf(e->dir, sizeof e->dir, "%s/otf2-end-%ld-%d", spill, (long)getpid(), k) >=
            (int)sizeof e->dir)
        return false;
    snprintf(traces, sizeof traces, "%s/%s", x->run->output_dir, SM_OTF2_ARCHIVE_NAME);
    if (!sm_otf2_fresh_dir(e->dir) || (mkdir(traces, 0777) != 0 && errno != EEXIST))
        return false;
    x->stage = e->dir;
    return sm_otf2_open_staging(&x->archive, e->dir, x->def_chunk, &memory) &&
           (!x->def_made || OTF2_Archive_OpenDefFiles(x->archive) == OTF2_SUCCESS);
}

static void sm_otf2_encoder_archive_close(sm_otf2_encoder_t *e)
{
    sm_otf2_writer_t *x = &e->w;
    /* A failed writer's buffers may be broken (see writer_open): left open. */
    if (x->archive && !x->writer_open) {
        OTF2_Archive_CloseEvtFiles(x->archive);
        if (x->def_made)
            OTF2_Archive_CloseDefFiles(x->archive);
        OTF2_Archive_Close(x->archive);
    }
    x->archive = NULL;
    if (x->stage)
        nftw(e->dir, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Encoder k's writer: the shared parts of w, its own archive and
 * per-location state.  False: this encoder is not used. */
static bool sm_otf2_encoder_init(sm_otf2_encoder_t *e, sm_otf2_encoders_t *a, int k)
{
    const sm_otf2_writer_t *w = a->w;
    sm_otf2_writer_t *x = &e->w;
    memset(x, 0, sizeof *x);
    x->run = w->run;
    x->job = w->job;
    x->n_ranks = w->n_ranks;
    x->n_comms = w->n_comms;
    x->mpi_comms = w->mpi_comms;
    x->team_comms = w->team_comms;
    x->nccl_comms = w->nccl_comms;
    x->rccl_comms = w->rccl_comms;
    x->img = w->img;
    x->named_metric = w->named_metric;
    x->n_named_strings = w->n_named_strings;
    x->counters = w->counters;
    x->n_counters = w->n_counters;
    x->failed_code = OTF2_SUCCESS;
    memcpy(x->gpu_attr, w->gpu_attr, sizeof x->gpu_attr);
    x->n_contexts = w->n_contexts;
    x->region_kind = w->region_kind;
    x->n_region_kinds = w->n_region_kinds;
    x->def_chunk = w->def_chunk;
    x->def_made = w->def_made;
    e->all = a;
    if (!sm_otf2_encoder_archive(e, k) || !(x->attrs = OTF2_AttributeList_New()) ||
        (w->timeline && !(x->timeline = sm_timeline_new()))) {
        if (x->attrs)
            OTF2_AttributeList_Delete(x->attrs);
        sm_otf2_encoder_archive_close(e);
        return false;
    }
    return true;
}

/* An encoder's counts and failures into w's; its archive closed, its
 * memory freed. */
static void sm_otf2_encoder_done(sm_otf2_writer_t *w, sm_otf2_encoder_t *e)
{
    sm_otf2_writer_t *x = &e->w;
    sm_otf2_encoder_archive_close(e);
    w->unknown_comm += x->unknown_comm;
    w->clamps += x->clamps;
    w->skipped_attrs += x->skipped_attrs;
    w->gpu_overlaps += x->gpu_overlaps;
    w->thread_events |= x->thread_events;
    w->metric_events |= x->metric_events;
    if (x->any_time) {
        if (!w->any_time || x->min_ns < w->min_ns)
            w->min_ns = x->min_ns;
        if (!w->any_time || x->max_ns > w->max_ns)
            w->max_ns = x->max_ns;
        w->any_time = true;
    }
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason) {
        w->failed_code = x->failed_code;
        w->failed_reason = x->failed_reason;
    }
    w->writer_open |= x->writer_open; /* (then the archive is left open) */
    if (x->spill_failures &&
        (!w->spill_failures || x->spill_failure_index < w->spill_failure_index)) {
        w->spill_failure_index = x->spill_failure_index;
        memcpy(w->first_spill_failure, x->first_spill_failure, sizeof w->first_spill_failure);
    }
    w->spill_failures += x->spill_failures;
    w->nest.dropped += x->nest.dropped;
    w->nest.closed += x->nest.closed;
    sm_nesting_free(&x->nest);
    OTF2_AttributeList_Delete(x->attrs);
    free(x->loc.creation_path);
    free(x->samples);
    sm_timeline_free(x->timeline);
}

bool sm_otf2_encode_parallel(sm_otf2_writer_t *w, uint64_t *n_events, int threads)
{
    const sm_image_t *img = w->img;
    uint32_t n = img->n_locations;
    uint32_t *todo = malloc(sizeof *todo * n);
    sm_otf2_slot_t *slots = calloc(n, sizeof *slots);
    sm_otf2_encoder_t *enc = calloc((size_t)threads, sizeof *enc);
    sm_otf2_encoders_t a = {.w = w, .todo = todo, .n_events = n_events, .slots = slots};
    free(w->def_made);
    w->def_made = calloc(n ? n : 1, 1); /* NULL (out of memory): the defs as before */
    bool ok = sm_otf2_got(w, todo && slots && enc ? todo : NULL, strerror(ENOMEM));

    /* The threads' locations not staged during the run go to the encoders
     * (this thread among them), which start at once; meanwhile this thread
     * takes, in location order, what it writes alone. */
    uint32_t *alone = malloc(sizeof *alone * (n ? n : 1)), n_alone = 0, n_end = 0;
    ok = ok && sm_otf2_got(w, alone, strerror(ENOMEM));
    for (uint32_t i = 0; ok && i < n; i++) {
        if (!(ok = sm_otf2_read_location(w, i)))
            break;
        if (w->loc.type == SM_LOCATION_CPU_THREAD && !sm_otf2_bg_may_take(w, w->loc.id))
            todo[a.n_todo++] = i;
        else
            alone[n_alone++] = i;
    }
    int started = 0;
    for (int k = 1; ok && k < threads && (uint32_t)k < a.n_todo; k++) {
        if (!sm_otf2_encoder_init(&enc[started], &a, k))
            break;
        if (sm_internal_thread_create(&enc[started].thread, 0, sm_otf2_encoder_main,
                                      &enc[started]) != 0) {
            sm_otf2_encoder_done(w, &enc[started]);
            break;
        }
        started++;
    }
    for (uint32_t j = 0; ok && j < n_alone; j++) {
        uint32_t i = alone[j];
        if (!(ok = sm_otf2_read_location(w, i)))
            break;
        size_t from = w->timeline ? w->timeline->out.len : 0;
        w->slot = &slots[i];
        if (!sm_otf2_bg_take(w, &n_events[i])) { /* (else: staged, moved) */
            ok = sm_otf2_encode_location(w, i, &n_events[i]);
            n_end++;
        }
        sm_otf2_keep_lane(w, from, &slots[i]);
        w->slot = NULL;
    }
    if (ok) {
        sm_info(2, "OTF2: %" PRIu32 " of %" PRIu32 " locations encoded at the end by %d thread%s",
                a.n_todo + n_end, n, started + 1, started ? "s" : "");
        sm_otf2_encode_some(w, &a);
    } else {
        __atomic_store_n(&a.stop, 1, __ATOMIC_RELAXED);
    }
    free(alone);
    for (int k = 0; k < started; k++) {
        pthread_join(enc[k].thread, NULL);
        sm_otf2_encoder_done(w, &enc[k]);
    }
    ok = ok && !__atomic_load_n(&a.stop, __ATOMIC_RELAXED) &&
         a.next >= a.n_todo && w->failed_code == OTF2_SUCCESS && !w->failed_reason;

    /* The lanes and metric samples, in location order. */
    for (uint32_t i = 0; slots && i < n; i++) {
        sm_otf2_slot_t *s = &slots[i];
        if (w->timeline) {
            if (s->oom)
                w->timeline->out.oom = true; /* no timeline rather than a wrong one */
            sm_put_bytes(&w->timeline->out, s->lane.p, s->lane.len);
            for (uint64_t j = 0; j < s->n_metrics; j++)
                sm_timeline_metric(w->timeline, s->metrics[j].ns, s->metrics[j].id,
                                   s->metrics[j].value);
        }
        free(s->lane.p);
        free(s->metrics);
    }
    free(slots);
    free(todo);
    free(enc);
    return ok;
}
