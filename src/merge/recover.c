/* Rebuilding a killed process's part of the job from its crash-safe files
 * (see recover.h). */
#define _GNU_SOURCE
#include "recover.h"

#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/journal.h"
#include "../core/location.h"
#include "../util/log.h"
#include "profile_summary.h"
#include "../util/grow.h"

/* ---------------------------------------------------------------- the journal */

#define SM_REC_MAX_RANKS SM_PF_MAX_RANKS
/* How far back a clock point may be and still be the process's (a thread
 * descheduled between reading the clocks and appending them). */
#define SM_REC_POINT_SLACK_NS 1000000000ull

typedef struct sm_rec_state {
    sm_defs_lists_t l;
    uint32_t cap_strings, cap_regions, cap_attributes, cap_comms, cap_metrics, cap_contexts;
    sm_image_location_t *locs;
    uint32_t n_locs, cap_locs;
    uint32_t rank, n_ranks;
    sm_clock_params_t clock;
    int have_clock;
    uint64_t point_ticks[2], point_ns[2]; /* first and last calibration points */
    int points;
    int oom;
    uint64_t invalid; /* entries whose check holds but whose contents do not */
    uint32_t max_id;  /* no id reaches it: the entries the file can hold */
} sm_rec_state_t;

/* Makes room for index id in a table (entries zeroed); -1 out of memory,
 * or an id no journal of max_id entries can hold (ids are dense: every
 * definition has an entry of its own, so a larger one is damage or
 * crafted, and would only cost memory). */
static int sm_rec_grow(void **table, uint32_t *n, uint32_t *cap, size_t size, uint32_t id,
                       uint32_t max_id)
{
    if (id >= (1u << 26) || id >= max_id)
        return -1;
    if (id >= *cap) {
        uint32_t c = *cap ? *cap : 64;
        while (c <= id)
            c *= 2;
        void *grown = realloc(*table, (size_t)c * size);
        if (!grown)
            return -1;
        memset((char *)grown + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
        *table = grown;
        *cap = c;
    }
    if (id >= *n)
        *n = id + 1;
    return 0;
}

#define SM_REC_GROW(s, field, capfield, id)                                                    \
    sm_rec_grow((void **)&(s)->l.field, &(s)->l.n_##field, &(s)->capfield, sizeof *(s)->l.field, \
                (id), (s)->max_id)

/* Whether clock parameters from a journal can be used: a tick between
 * 1 ps and 1 ms, offsets of less than a day (a crafted or damaged entry
 * would otherwise put the events anywhere in 2^64 ns). */
static int sm_rec_clock_ok(const sm_clock_params_t *c)
{
    if (!(c->ns_per_tick > 1e-3 && c->ns_per_tick < 1e6))
        return 0;
    for (int k = 0; k < 2; k++)
        if (c->have_offset[k] && (c->offset_ns[k] > 86400000000000ll ||
                                  c->offset_ns[k] < -86400000000000ll))
            return 0;
    return 1;
}

static int sm_rec_entry(uint32_t kind, const uint8_t *p, uint32_t len, void *arg)
{
    sm_rec_state_t *s = arg;
    uint32_t id = 0;
    if (len >= 4)
        memcpy(&id, p, 4);
    switch (kind) {
    case SM_J_STRING:
        if (len < 4 || SM_REC_GROW(s, strings, cap_strings, id) != 0)
            break;
        free(s->l.strings[id]);
        s->l.strings[id] = strndup((const char *)p + 4, len - 4);
        break;
    case SM_J_REGION:
        if (len >= 4 + sizeof(sm_region_def_t) && SM_REC_GROW(s, regions, cap_regions, id) == 0) {
            sm_region_def_t *r = &s->l.regions[id];
            memcpy(r, p + 4, sizeof *r);
            if (r->paradigm >= SM_PARADIGM_COUNT || r->role >= SM_ROLE_COUNT) {
                s->invalid++; /* named, but of no known kind */
                r->paradigm = r->paradigm < SM_PARADIGM_COUNT ? r->paradigm : 0;
                r->role = r->role < SM_ROLE_COUNT ? r->role : SM_ROLE_CODE;
            }
        }
        break;
    case SM_J_ATTRIBUTE:
        if (len >= 4 + sizeof(sm_attribute_def_t) &&
            SM_REC_GROW(s, attributes, cap_attributes, id) == 0)
            memcpy(&s->l.attributes[id], p + 4, sizeof(sm_attribute_def_t));
        break;
    case SM_J_COMM: {
        sm_journal_comm_t e;
        if (len < sizeof e)
            break;
        memcpy(&e, p, sizeof e);
        /* Members: all of them (size) or none. */
        if ((e.n_members && e.n_members != e.size) || e.size > (1u << 26)) {
            s->invalid++;
            break;
        }
        if ((uint64_t)len < sizeof e + 4ull * e.n_members || SM_REC_GROW(s, comms, cap_comms, e.id))
            break;
        sm_comm_def_t *c = &s->l.comms[e.id];
        free(c->members);
        c->key = e.key;
        c->name = e.name;
        c->size = e.size;
        c->parent = e.parent;
        c->members = NULL;
        if (e.n_members && (c->members = malloc(4u * e.n_members)) != NULL)
            memcpy(c->members, p + sizeof e, 4u * e.n_members);
        break;
    }
    case SM_J_METRIC:
        if (len >= 16 && SM_REC_GROW(s, metrics, cap_metrics, id) == 0) {
            uint32_t w[4];
            memcpy(w, p, sizeof w);
            s->l.metrics[id] = (sm_named_metric_def_t){w[1], w[2], w[3]};
        }
        break;
    case SM_J_CONTEXT:
        if (len >= 4 + sizeof(sm_context_def_t) && SM_REC_GROW(s, contexts, cap_contexts, id) == 0)
            memcpy(&s->l.contexts[id], p + 4, sizeof(sm_context_def_t));
        break;
    case SM_J_LOCATION: {
        sm_journal_location_t e;
        if (len < sizeof e)
            break;
        memcpy(&e, p, sizeof e);
        if (e.type > SM_LOCATION_METRIC) {
            s->invalid++;
            break;
        }
        if (sm_rec_grow((void **)&s->locs, &s->n_locs, &s->cap_locs, sizeof *s->locs, e.id,
                        s->max_id) != 0)
            break;
        sm_image_location_t *l = &s->locs[e.id];
        l->id = e.id;
        l->type = e.type;
        l->creator = e.creator;
        memcpy(l->name, e.name, sizeof l->name);
        l->name[sizeof l->name - 1] = '\0';
        break;
    }
    case SM_J_RANK:
        if (len >= 8) {
            uint32_t r[2];
            memcpy(r, p, sizeof r);
            if (r[0] < r[1] && r[1] <= SM_REC_MAX_RANKS) {
                s->rank = r[0];
                s->n_ranks = r[1];
            } else {
                s->invalid++;
            }
        }
        break;
    case SM_J_CLOCK:
        if (len >= sizeof s->clock) {
            sm_clock_params_t c;
            memcpy(&c, p, sizeof c);
            if (sm_rec_clock_ok(&c)) {
                s->clock = c;
                s->have_clock = 1;
            } else {
                s->invalid++;
            }
        }
        break;
    case SM_J_CLOCK_POINT:
        if (len >= 16) {
            uint64_t ticks, ns;
            memcpy(&ticks, p, 8);
            memcpy(&ns, p + 8, 8);
            /* Points come in time order: one that goes back (or leaps more
             * than a year ahead) is not the process's.  Up to
             * SM_REC_POINT_SLACK_NS back is a point of another thread
             * appended late (journals of versions that read the clocks
             * before the journal's lock): skipped, the later one kept. */
            if (s->points && (ticks < s->point_ticks[1] || ns < s->point_ns[1])) {
                if (ns + SM_REC_POINT_SLACK_NS < s->point_ns[1] ||
                    ns > s->point_ns[1] + SM_REC_POINT_SLACK_NS)
                    s->invalid++;
                break;
            }
            if (s->points && ns - s->point_ns[1] > 366ull * 86400000000000ull) {
                s->invalid++;
                break;
            }
            int k = s->points ? 1 : 0;
            s->point_ticks[k] = ticks;
            s->point_ns[k] = ns;
            if (!s->points) {
                s->point_ticks[1] = s->point_ticks[0];
                s->point_ns[1] = s->point_ns[0];
            }
            s->points++;
        }
        break;
    default: /* a kind of a later version: skipped */
        break;
    }
    return 0;
}

static void sm_rec_lists_free(sm_defs_lists_t *l)
{
    for (uint32_t i = 0; i < l->n_strings; i++)
        free(l->strings[i]);
    for (uint32_t i = 0; i < l->n_comms; i++)
        free(l->comms[i].members);
    free(l->strings);
    free(l->regions);
    free(l->attributes);
    free(l->comms);
    free(l->metrics);
    free(l->contexts);
}

int sm_recover_peek(const char *journal_path, char *job, size_t job_len, int64_t *pid,
                    char *host, size_t host_len, char *err, size_t errlen)
{
    sm_journal_head_t h;
    if (sm_journal_peek(journal_path, &h, err, errlen) != 0)
        return -1;
    snprintf(job, job_len, "%s", h.job);
    snprintf(host, host_len, "%s", h.host);
    *pid = h.pid;
    return 0;
}

/* ---------------------------------------------------------------- the profile */

typedef struct sm_rec_frame {
    sm_profile_node_t *node; /* &profile.fold: folded below the depth limit */
    uint64_t start, child;
} sm_rec_frame_t;

typedef struct sm_rec_thread {
    sm_profile_t profile;
    sm_rec_frame_t *stack;
    uint32_t depth, cap;
    uint64_t last, events;
} sm_rec_thread_t;

static void sm_rec_leave(sm_rec_thread_t *t, uint64_t time)
{
    sm_rec_frame_t *f = &t->stack[--t->depth];
    uint64_t d = time > f->start ? time - f->start : 0;
    if (f->node == &t->profile.fold)
        return; /* its time stays with the ancestor, as its own */
    f->node->visits++;
    sm_stat_add(&f->node->incl, d);
    sm_stat_add(&f->node->excl, d > f->child ? d - f->child : 0);
    if (t->depth)
        t->stack[t->depth - 1].child += d;
}

static int sm_rec_profile_record(const sm_record_t *r, void *arg)
{
    sm_rec_thread_t *t = arg;
    t->events++;
    if (r->kind == SM_REC_CALLING_CONTEXT_SAMPLE)
        return 0;
    if (r->time > t->last)
        t->last = r->time;
    if (r->kind == SM_REC_ENTER) {
        if (t->depth == t->cap && SM_GROW(t->stack, t->cap, 64) != 0)
            return -1;
        sm_profile_node_t *parent = &t->profile.root;
        for (uint32_t k = t->depth; k > 0; k--)
            if (t->stack[k - 1].node != &t->profile.fold) {
                parent = t->stack[k - 1].node;
                break;
            }
        sm_profile_node_t *node = t->depth && t->stack[t->depth - 1].node == &t->profile.fold
                                      ? &t->profile.fold
                                      : sm_profile_child(&t->profile, parent, r->ref);
        t->stack[t->depth++] = (sm_rec_frame_t){node, r->time, 0};
    } else if (r->kind == SM_REC_LEAVE && t->depth) {
        sm_rec_leave(t, r->time);
    }
    return 0;
}

/* ---------------------------------------------------------------- rebuilding */

sm_process_file_t *sm_recover_process(const char *journal_path, const char *events_path,
                                      uint64_t *events, char *err, size_t errlen)
{
    *events = 0;
    sm_rec_state_t s;
    memset(&s, 0, sizeof s);
    s.n_ranks = 1;
    struct stat jst;
    uint64_t entries = stat(journal_path, &jst) == 0 && jst.st_size > 0
                           ? (uint64_t)jst.st_size / sizeof(sm_journal_entry_t) : 0;
    s.max_id = entries < (1u << 26) ? (uint32_t)entries : (1u << 26);
    sm_journal_head_t head;
    sm_journal_damage_t damage;
    if (sm_journal_read(journal_path, &head, sm_rec_entry, &s, &damage, err, errlen) != 0) {
        sm_rec_lists_free(&s.l);
        free(s.locs);
        return NULL;
    }
    sm_process_file_t *f = calloc(1, sizeof *f);
    if (f && (damage.damaged_runs || s.invalid)) {
        /* What is left of the definitions is used; the damage is said, and
         * the merge ends with 1. */
        char what[160] = "";
        if (damage.damaged_runs)
            snprintf(what, sizeof what, "%llu bytes of entries fail their checks (from offset "
                     "%llu, %u place%s)", (unsigned long long)damage.damaged_bytes,
                     (unsigned long long)damage.first_damaged, (unsigned)damage.damaged_runs,
                     damage.damaged_runs == 1 ? "" : "s");
        if (s.invalid)
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%llu entr%s hold "
                     "impossible values", damage.damaged_runs ? ", " : "",
                     (unsigned long long)s.invalid, s.invalid == 1 ? "y" : "ies");
        sm_error("definitions journal %s (rank %u, pid %lld on %s) is damaged: %s; the "
                 "definitions in them are left out (regions, threads or the clock may be "
                 "unnamed or estimated)", journal_path, (unsigned)s.rank, (long long)head.pid,
                 head.host, what);
        f->damaged++;
    }
    if (!f) {
        snprintf(err, errlen, "recovering %s: out of memory", journal_path);
        sm_rec_lists_free(&s.l);
        free(s.locs);
        return NULL;
    }
    f->path = strdup(journal_path);
    f->rank = s.rank;
    f->n_ranks = s.n_ranks ? s.n_ranks : 1;
    snprintf(f->job, sizeof f->job, "%s", head.job);
    f->pid = head.pid;
    snprintf(f->hostname, sizeof f->hostname, "%s", head.host);
    snprintf(f->program, sizeof f->program, "%s", head.program);
    snprintf(f->reason, sizeof f->reason, "%s", "killed; recovered from its crash-safe files");
    f->argv = calloc(1, sizeof *f->argv);
    f->metadata = calloc(1, sizeof *f->metadata);
    f->start_realtime_ns = head.start_realtime_ns;
    f->start_ticks = head.start_ticks;
    if (s.have_clock)
        f->clock = s.clock;
    /* A TSC clock is calibrated at the end of a run, which a killed process
     * never reached: its own calibration points stand in. */
    double rate = s.points >= 2 && s.point_ticks[1] > s.point_ticks[0] + 1000
                      ? (double)(s.point_ns[1] - s.point_ns[0]) /
                            (double)(s.point_ticks[1] - s.point_ticks[0])
                      : 0.0;
    if (s.points >= 2 && s.point_ticks[1] > s.point_ticks[0] + 1000 &&
        s.point_ns[1] > s.point_ns[0] + 10000000u && rate > 1e-3 && rate < 1e6) {
        f->clock.tick0 = s.point_ticks[0];
        f->clock.mono0 = s.point_ns[0];
        f->clock.ns_per_tick = rate;
    } else if (s.points && f->clock.ns_per_tick <= 0) {
        f->clock.tick0 = s.point_ticks[0];
        f->clock.mono0 = s.point_ns[0];
        f->clock.ns_per_tick = 1.0;
    }

    /* Definitions: every table filled up to its count (a gap, which only a
     * damaged journal leaves, gets an empty name). */
    sm_defset_t *defs = sm_defset_from_lists(&s.l, f->rank);
    f->defs = defs ? sm_defset_serialize(defs, &f->defs_len) : NULL;
    sm_defset_free(defs);

    /* Locations: those the journal names; events from the spill file. */
    f->n_locations = s.n_locs;
    f->locations = calloc(s.n_locs + 1u, sizeof *f->locations);
    f->events = calloc(s.n_locs + 1u, sizeof *f->events);
    f->matrix_row = calloc(2u * (size_t)f->n_ranks, sizeof *f->matrix_row);
    /* (aligned: a profile's nodes are cache-line aligned) */
    sm_rec_thread_t *threads = aligned_alloc(64, (s.n_locs + 1u) * sizeof *threads);
    if (threads)
        memset(threads, 0, (s.n_locs + 1u) * sizeof *threads);
    sm_summary_thread_t *st = calloc(s.n_locs + 1u, sizeof *st);
    if (!f->argv || !f->metadata || !f->defs || !f->locations || !f->events || !f->matrix_row ||
        !threads || !st) {
        snprintf(err, errlen, "recovering %s: out of memory or damaged definitions",
                 journal_path);
        free(threads);
        free(st);
        sm_rec_lists_free(&s.l);
        free(s.locs);
        sm_process_file_free(f);
        return NULL;
    }
    sm_spill_report_t report;
    memset(&report, 0, sizeof report);
    int have_events = events_path && sm_spill_file_check(events_path, &report) >= 0;
    f->damaged += events_path && !have_events; /* said by the check */
    char owner[32];
    snprintf(owner, sizeof owner, "rank %u", (unsigned)f->rank);
    uint64_t last = f->start_ticks;
    uint32_t n_threads = 0;
    for (uint32_t i = 0; i < s.n_locs; i++) {
        f->locations[i] = s.locs[i];
        f->locations[i].id = i;
        f->locations[i].creation_path = NULL;
        if (!f->locations[i].name[0])
            snprintf(f->locations[i].name, sizeof f->locations[i].name, "Thread %u", i);
        if (!have_events)
            continue;
        f->events[i] = strdup(events_path);
        sm_rec_thread_t *t = &threads[i];
        sm_profile_init(&t->profile);
        sm_spill_file_for_each_of(events_path, i, owner, sm_rec_profile_record, t);
        *events += t->events;
        while (t->depth) /* open at the kill: left at the last event */
            sm_rec_leave(t, t->last);
        if (t->last > last)
            last = t->last;
        if (f->locations[i].type == SM_LOCATION_CPU_THREAD && t->events) {
            st[n_threads].location = i;
            st[n_threads].name = f->locations[i].name;
            st[n_threads].creator = f->locations[i].creator;
            st[n_threads].root = &t->profile.root;
            n_threads++;
        }
    }
    f->end_ticks = last;
    double ns_per_tick = f->clock.ns_per_tick > 0 ? f->clock.ns_per_tick : 1.0;
    /* (a duration beyond a year is not this process's: crafted or damaged
     * times; the end is then its start) */
    double run_ns = last > f->start_ticks ? (double)(last - f->start_ticks) * ns_per_tick : 0.0;
    f->end_realtime_ns = f->start_realtime_ns +
                         (run_ns > 0 && run_ns < 366.0 * 86400e9 ? (uint64_t)run_ns : 0);
    if (n_threads) {
        sm_profile_summary_t *sum = sm_profile_summary_from_threads(st, n_threads, ns_per_tick);
        if (sum)
            f->profile = sm_profile_summary_serialize(sum, NULL, f->rank, &f->profile_len);
        sm_profile_summary_free(sum);
    }
    for (uint32_t i = 0; i < s.n_locs; i++) {
        if (have_events)
            sm_profile_free(&threads[i].profile);
        free(threads[i].stack);
    }
    free(threads);
    free(st);
    sm_rec_lists_free(&s.l);
    free(s.locs);
    f->live_chunks = report.live_chunks;
    f->live_records = report.live_records;
    f->live_cut_bytes = report.live_cut_bytes;
    return f;
}

/* ---------------------------------------------------------------- the image */

typedef struct sm_rec_close {
    sm_record_fn fn;
    void *arg;
    uint32_t *open;
    uint32_t depth, cap;
    uint64_t last;
    int oom;
} sm_rec_close_t;

static int sm_rec_close_record(const sm_record_t *r, void *arg)
{
    sm_rec_close_t *c = arg;
    if (r->kind != SM_REC_CALLING_CONTEXT_SAMPLE && r->time > c->last)
        c->last = r->time;
    if (r->kind == SM_REC_ENTER) {
        if (c->depth == c->cap && SM_GROW(c->open, c->cap, 64) != 0) {
            c->oom = 1;
            return c->fn(r, c->arg);
        }
        c->open[c->depth++] = r->ref;
    } else if (r->kind == SM_REC_LEAVE && c->depth) {
        c->depth--;
    }
    return c->fn(r, c->arg);
}

static int sm_rec_for_each(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    const sm_process_file_t *f = ctx;
    if (i >= f->n_locations || !f->events[i])
        return 0;
    sm_rec_close_t c = {.fn = fn, .arg = arg};
    char owner[32];
    snprintf(owner, sizeof owner, "rank %u", (unsigned)f->rank);
    int rc = sm_spill_file_for_each_of(f->events[i], f->locations[i].id, owner,
                                       sm_rec_close_record, &c);
    if (rc < 0) { /* damaged chunks: said, and counted for the merge's status */
        ((sm_process_file_t *)ctx)->damaged++;
        rc = 0;
    }
    while (rc >= 0 && c.depth && !c.oom) {
        sm_record_t leave = {.time = c.last, .kind = SM_REC_LEAVE, .ref = c.open[--c.depth]};
        int r2 = fn(&leave, arg);
        if (r2 != 0) {
            rc = r2;
            break;
        }
    }
    free(c.open);
    return rc;
}

void sm_recover_image(sm_process_file_t *f, sm_image_t *img)
{
    sm_process_file_image(f, img);
    img->for_each = sm_rec_for_each;
}
