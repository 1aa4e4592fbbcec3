/* The job's timeline overview for report.html: per location, the time spent
 * in each kind of work (paradigm of the innermost region; kernels and copies
 * on GPU streams) in time bins.  It is computed while the OTF2 writer streams
 * the events (no second pass over the trace): each process bins its own
 * locations finely, rank 0 receives them with the archive's other per-process
 * data, reduces them to SM_TL_BINS bins per lane and writes timeline.json,
 * which report.html (and sysmeasure-report) draw from.  The sampled metrics
 * (memory, power) are binned alike: per bin the mean and the largest value,
 * across the ranks. */
#ifndef SM_TIMELINE_H
#define SM_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../util/bytes.h"

/* The kinds of work, as a reader thinks of them (also the report's "where
 * the time went"); "outside" is the main thread's time in no region at all,
 * "idle" another thread's (an OpenMP worker between parallel regions, an
 * MPI library's progress thread: waiting, as far as anything measured
 * says). */
enum {
    SM_TL_OUTSIDE,
    SM_TL_USER,
    SM_TL_MPI,
    SM_TL_OPENMP,
    SM_TL_KOKKOS,
    SM_TL_GPU_API,
    SM_TL_OTHER,
    SM_TL_GPU_KERNEL,
    SM_TL_GPU_COPY,
    SM_TL_IDLE,
    SM_TL_COUNT
};
extern const char *const sm_tl_name[SM_TL_COUNT] SM_HIDDEN;
extern const char *const sm_tl_color[SM_TL_COUNT] SM_HIDDEN;
/* The kind of a region of this paradigm ("mpi", "user", ...: sm_paradigm_name). */
int sm_tl_kind_of_paradigm(const char *paradigm) SM_HIDDEN;
/* The kind of a GPU activity (sm_gpu_activity_kind_t). */
int sm_tl_kind_of_gpu(unsigned gpu_kind) SM_HIDDEN;

#define SM_TL_BINS 300     /* bins of a lane in timeline.json */
#define SM_TL_FINE 512     /* fine bins of a location while its events stream */
#define SM_TL_DEPTH 256    /* region nesting followed; deeper keeps the kind */

#define SM_TL_METRICS 32   /* sampled metrics followed per process */

/* A sampled metric's values of one process in fine bins (sum, count, max). */
typedef struct sm_tl_metric {
    uint32_t id; /* the job's named metric */
    uint64_t origin, width;
    double sum[SM_TL_FINE], max[SM_TL_FINE];
    uint32_t count[SM_TL_FINE];
} sm_tl_metric_t;

/* One process's part, built location by location. */
typedef struct sm_timeline {
    sm_wbuf_t out; /* finished locations */
    /* The location being read. */
    uint32_t id, type;
    char name[64];
    bool on, started;
    uint64_t origin, width, last;
    uint64_t cur_lo, cur_width; /* the bin of the last interval (sm_tl_add) */
    uint32_t cur;
    uint32_t depth;
    uint8_t outside; /* the kind of time in no region: SM_TL_OUTSIDE or SM_TL_IDLE */
    uint8_t stack[SM_TL_DEPTH];
    uint32_t used; /* bit per kind */
    uint64_t bins[SM_TL_FINE][SM_TL_COUNT]; /* ns (integers: no conversion per event) */
    /* Sampled metrics, on whichever location they come. */
    sm_tl_metric_t metrics[SM_TL_METRICS];
    uint32_t n_metrics;
} sm_timeline_t;

/* malloc'd, zeroed; NULL when out of memory (then no timeline is made). */
sm_timeline_t *sm_timeline_new(void) SM_HIDDEN;
void sm_timeline_free(sm_timeline_t *t) SM_HIDDEN;
/* Starts a location (type: sm_location_type_t); metric locations are not lanes. */
void sm_timeline_begin(sm_timeline_t *t, uint32_t id, uint32_t type, const char *name) SM_HIDDEN;
/* A region of this kind entered / the innermost left at ns (times rise). */
/* (Inline below: the writer calls them for every event.) */
void sm_timeline_until_slow(sm_timeline_t *t, uint64_t ns) SM_HIDDEN;

/* The kind of the thread's innermost region (SM_TL_OUTSIDE: none). */
static inline int sm_timeline_top_kind(const sm_timeline_t *t)
{
    return t->depth ? t->stack[(t->depth > SM_TL_DEPTH ? SM_TL_DEPTH : t->depth) - 1]
                    : t->outside;
}

/* Time since the last event of a thread goes to its innermost region.  The
 * common case, both ends in the bin of the last interval, is here. */
static inline void sm_timeline_until(sm_timeline_t *t, uint64_t ns)
{
    uint64_t a = t->last;
    if (t->started && ns > a && t->cur_width == t->width && a >= t->cur_lo &&
        ns - t->cur_lo <= t->width) {
        int kind = sm_timeline_top_kind(t);
        t->last = ns;
        t->bins[t->cur][kind] += ns - a;
        t->used |= 1u << kind;
    } else {
        sm_timeline_until_slow(t, ns);
    }
}

static inline void sm_timeline_enter(sm_timeline_t *t, uint64_t ns, int kind)
{
    if (!t || !t->on)
        return;
    sm_timeline_until(t, ns);
    if (t->depth < SM_TL_DEPTH)
        t->stack[t->depth] = (uint8_t)kind;
    t->depth++;
}

static inline void sm_timeline_leave(sm_timeline_t *t, uint64_t ns)
{
    if (!t || !t->on)
        return;
    sm_timeline_until(t, ns);
    if (t->depth)
        t->depth--;
}
/* Work of this kind from start to end (a GPU activity). */
void sm_timeline_span(sm_timeline_t *t, uint64_t start, uint64_t end, int kind) SM_HIDDEN;
/* The location was binned in another unit (clock ticks, while the run went
 * on): its bins to ns, with `origin_ns` the bins' start and `ns_per_unit`
 * the rate (the bins' edges are then exact to within a ns per bin). */
void sm_timeline_rescale(sm_timeline_t *t, uint64_t origin_ns, double ns_per_unit) SM_HIDDEN;
/* The same for one location's finished record (the bytes sm_timeline_end
 * appended, in other units): named name, at origin_ns, widths and bins
 * times ns_per_unit.  Keeps a closed location in a few KiB instead of its
 * whole sm_timeline_t. */
void sm_timeline_rescale_record(uint8_t *rec, size_t len, const char *name, uint64_t origin_ns,
                                double ns_per_unit) SM_HIDDEN;
/* The origin of such a record (its unit). */
uint64_t sm_timeline_record_origin(const uint8_t *rec, size_t len) SM_HIDDEN;
/* Ends the location, appending it to t->out when it holds any time. */
void sm_timeline_end(sm_timeline_t *t) SM_HIDDEN;
/* A sample of the job's named metric `id` at ns. */
void sm_timeline_metric(sm_timeline_t *t, uint64_t ns, uint32_t id, uint64_t value) SM_HIDDEN;
/* After the process's last location: appends its metrics to t->out. */
void sm_timeline_end_process(sm_timeline_t *t) SM_HIDDEN;
/* Starts the next process (sysmeasure-merge writes several). */
void sm_timeline_reset(sm_timeline_t *t) SM_HIDDEN;

/* Rank 0: timeline.json in dir from the processes' parts (blob[r], len[r]
 * of rank r: t->out of its process; NULL: none) over [start_ns, end_ns].
 * 0; -1 after one line naming the file and the problem. */
struct sm_defset;
int sm_timeline_write_json(const char *dir, const struct sm_defset *defs, uint32_t n_ranks,
                           const uint8_t *const *blob, const uint64_t *len, uint64_t start_ns,
                           uint64_t end_ns) SM_HIDDEN;

#endif
