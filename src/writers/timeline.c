/* The timeline overview (see timeline.h): fine bins per location while the
 * events stream, lanes of SM_TL_BINS bins in timeline.json at rank 0.
 *
 * A location's fine bins start at its first event, 1 us wide; when an event
 * falls beyond the last bin, neighbouring bins are summed pairwise and the
 * width doubles, so a location of any length ends with between SM_TL_FINE/2
 * and SM_TL_FINE bins: at least 256 across the location, finer than the
 * lanes' bins.  Each event costs the bins its interval covers. */
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/gpu.h"
#include "../core/location.h"
#include "../merge/unify.h"
#include "../util/json.h"
#include "../util/grow.h"

#define SM_TL_FIRST_WIDTH 1000u /* ns */
#define SM_TL_THREAD_LANES 64   /* a lane per thread (per stream) up to this many */
#define SM_TL_MAX_LANES 64      /* beyond: ranks share lanes (report.html draws every lane:
                                 * its timeline does not grow with the ranks) */
/* Records of a process's part. */
enum { SM_TL_REC_LOCATION = 1, SM_TL_REC_METRIC = 2 };

const char *const sm_tl_name[SM_TL_COUNT] = {
    "compute outside regions", "user regions", "MPI", "OpenMP", "Kokkos", "GPU API", "other",
    "GPU kernels", "GPU copies and memsets", "idle (other threads outside regions)"};
const char *const sm_tl_color[SM_TL_COUNT] = {"#b8c4ce", "#4e79a7", "#e15759",
                                              "#59a14f", "#f28e2b", "#b07aa1",
                                              "#9c755f", "#edc948", "#76b7b2",
                                              "#e6e6e6"};

int sm_tl_kind_of_paradigm(const char *p)
{
    if (!p)
        return SM_TL_OTHER;
    if (!strcmp(p, "user"))
        return SM_TL_USER;
    if (!strcmp(p, "mpi"))
        return SM_TL_MPI;
    if (!strcmp(p, "openmp"))
        return SM_TL_OPENMP;
    if (!strcmp(p, "kokkos"))
        return SM_TL_KOKKOS;
    if (!strcmp(p, "cuda") || !strcmp(p, "hip") || !strcmp(p, "nccl") || !strcmp(p, "rccl"))
        return SM_TL_GPU_API;
    return SM_TL_OTHER;
}

int sm_tl_kind_of_gpu(unsigned k)
{
    switch (k) {
    case SM_GPU_KERNEL:
        return SM_TL_GPU_KERNEL;
    case SM_GPU_COPY_HTOD:
    case SM_GPU_COPY_DTOH:
    case SM_GPU_COPY_DTOD:
    case SM_GPU_COPY_HTOH:
    case SM_GPU_COPY_PEER:
    case SM_GPU_MEMSET:
        return SM_TL_GPU_COPY;
    default:
        return SM_TL_OTHER;
    }
}

sm_timeline_t *sm_timeline_new(void)
{
    return calloc(1, sizeof(sm_timeline_t));
}

void sm_timeline_free(sm_timeline_t *t)
{
    if (t)
        free(t->out.p);
    free(t);
}

void sm_timeline_begin(sm_timeline_t *t, uint32_t id, uint32_t type, const char *name)
{
    if (!t)
        return;
    t->id = id;
    t->type = type;
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    t->on = type == SM_LOCATION_CPU_THREAD || type == SM_LOCATION_GPU_STREAM;
    t->started = false;
    t->cur_width = 0;
    t->depth = 0;
    /* The process's first thread (location 0) is its main thread. */
    t->outside = type == SM_LOCATION_CPU_THREAD && id != 0 ? SM_TL_IDLE : SM_TL_OUTSIDE;
    t->used = 0;
    memset(t->bins, 0, sizeof t->bins);
}

/* The bins cover ns (the first time: start there). */
static void sm_tl_cover(sm_timeline_t *t, uint64_t ns)
{
    if (!t->started) {
        t->started = true;
        t->origin = t->last = ns;
        t->width = SM_TL_FIRST_WIDTH;
    }
    while (ns - t->origin >= t->width * SM_TL_FINE && t->width < UINT64_MAX / 4 / SM_TL_FINE) {
        for (uint32_t i = 0; i < SM_TL_FINE / 2; i++)
            for (int k = 0; k < SM_TL_COUNT; k++)
                t->bins[i][k] = t->bins[2 * i][k] + t->bins[2 * i + 1][k];
        memset(t->bins[SM_TL_FINE / 2], 0, sizeof t->bins[0] * (SM_TL_FINE / 2));
        t->width *= 2;
    }
}

/* [a, b) of this kind into the bins (a >= origin, covered).  Most events
 * fall in the bin of the one before: that bin is kept (cur, cur_lo) so that
 * they cost no division. */
static void sm_tl_add(sm_timeline_t *t, uint64_t a, uint64_t b, int kind)
{
    if (a < t->origin)
        a = t->origin;
    uint64_t bin = (a - t->origin) / t->width;
    if (b <= a || bin >= SM_TL_FINE) {
        /* Beyond the bins (times the widest bins cannot cover, which only
         * damaged or crafted input has): nothing to add, and the bin of
         * the last interval is forgotten, so that sm_timeline_until never
         * writes past bins[]. */
        t->cur_width = 0;
        return;
    }
    t->used |= 1u << kind;
    if (t->cur_width != t->width || a < t->cur_lo || a - t->cur_lo >= t->width) {
        t->cur = (uint32_t)bin;
        t->cur_lo = t->origin + (uint64_t)t->cur * t->width;
        t->cur_width = t->width;
    }
    uint64_t i = t->cur, lo = t->cur_lo;
    for (; i < SM_TL_FINE && a < b; i++, lo += t->width) {
        uint64_t hi = lo + t->width, e = b < hi ? b : hi;
        t->bins[i][kind] += e - a;
        a = e;
        if (a < b) {
            if (i + 1 == SM_TL_FINE) { /* the rest is beyond the last bin */
                t->cur_width = 0;
                break;
            }
            t->cur = (uint32_t)i + 1;
            t->cur_lo = hi;
        }
    }
}

/* sm_timeline_until's other cases: the location's first event, or an
 * interval beyond the bin of the last one. */
void sm_timeline_until_slow(sm_timeline_t *t, uint64_t ns)
{
    if (!t->started) {
        sm_tl_cover(t, ns); /* the location's first event: its bins start here */
        return;
    }
    if (ns <= t->last)
        return;
    int kind = sm_timeline_top_kind(t);
    uint64_t a = t->last;
    t->last = ns;
    sm_tl_cover(t, ns);
    sm_tl_add(t, a, ns, kind);
}

void sm_timeline_span(sm_timeline_t *t, uint64_t start, uint64_t end, int kind)
{
    if (!t || !t->on || end < start)
        return;
    if (!t->started || start < t->origin) {
        /* GPU activities come in time order on their stream (the writer
         * moves overlaps after the previous one). */
        sm_tl_cover(t, start);
        if (start < t->origin)
            start = t->origin;
    }
    sm_tl_cover(t, end);
    sm_tl_add(t, start, end, kind);
    if (end > t->last)
        t->last = end;
}

void sm_timeline_rescale(sm_timeline_t *t, uint64_t origin_ns, double ns_per_unit)
{
    if (!t || !t->started)
        return;
    t->origin = origin_ns;
    double w = (double)t->width * ns_per_unit;
    t->width = w < 1 ? 1 : (uint64_t)(w + 0.5);
    for (uint32_t i = 0; i < SM_TL_FINE; i++)
        for (int k = 0; k < SM_TL_COUNT; k++)
            t->bins[i][k] = (uint64_t)((double)t->bins[i][k] * ns_per_unit + 0.5);
    t->cur_width = 0;
}

/* A location's record (sm_timeline_end): kind, id, type, name, origin,
 * width, used, then SM_TL_FINE floats per kind used. */
#define SM_TL_NAME_BYTES sizeof(((sm_timeline_t *)0)->name)
enum { SM_TL_AT_NAME = 12, SM_TL_AT_ORIGIN = SM_TL_AT_NAME + SM_TL_NAME_BYTES,
       SM_TL_AT_WIDTH = SM_TL_AT_ORIGIN + 8,
       SM_TL_AT_BINS = SM_TL_AT_WIDTH + 8 + 4 };

uint64_t sm_timeline_record_origin(const uint8_t *rec, size_t len)
{
    return len >= SM_TL_AT_BINS ? sm_le64_load(rec + SM_TL_AT_ORIGIN) : 0;
}

void sm_timeline_rescale_record(uint8_t *rec, size_t len, const char *name, uint64_t origin_ns,
                                double ns_per_unit)
{
    if (len < SM_TL_AT_BINS)
        return;
    snprintf((char *)rec + SM_TL_AT_NAME, SM_TL_NAME_BYTES, "%s", name);
    sm_le64_store(rec + SM_TL_AT_ORIGIN, origin_ns);
    double w = (double)sm_le64_load(rec + SM_TL_AT_WIDTH) * ns_per_unit;
    sm_le64_store(rec + SM_TL_AT_WIDTH, w < 1 ? 1 : (uint64_t)(w + 0.5));
    for (size_t at = SM_TL_AT_BINS; at + sizeof(float) <= len; at += sizeof(float)) {
        float v;
        memcpy(&v, rec + at, sizeof v);
        v = (float)((double)v * ns_per_unit);
        memcpy(rec + at, &v, sizeof v);
    }
}

void sm_timeline_end(sm_timeline_t *t)
{
    if (!t || !t->on || !t->used)
        return;
    sm_put_u32(&t->out, SM_TL_REC_LOCATION);
    sm_put_u32(&t->out, t->id);
    sm_put_u32(&t->out, t->type);
    sm_put_bytes(&t->out, t->name, sizeof t->name);
    sm_put_u64(&t->out, t->origin);
    sm_put_u64(&t->out, t->width);
    sm_put_u32(&t->out, t->used);
    for (int k = 0; k < SM_TL_COUNT; k++) {
        if (!(t->used & (1u << k)))
            continue;
        float v[SM_TL_FINE];
        for (uint32_t i = 0; i < SM_TL_FINE; i++)
            v[i] = (float)t->bins[i][k];
        sm_put_bytes(&t->out, v, sizeof v);
    }
    t->on = false;
}

void sm_timeline_metric(sm_timeline_t *t, uint64_t ns, uint32_t id, uint64_t value)
{
    if (!t)
        return;
    sm_tl_metric_t *m = NULL;
    for (uint32_t i = 0; i < t->n_metrics && !m; i++)
        if (t->metrics[i].id == id)
            m = &t->metrics[i];
    if (!m) {
        if (t->n_metrics == SM_TL_METRICS)
            return;
        m = &t->metrics[t->n_metrics++];
        memset(m, 0, sizeof *m);
        m->id = id;
        m->origin = ns;
        m->width = SM_TL_FIRST_WIDTH;
    }
    if (ns < m->origin)
        ns = m->origin;
    while (ns - m->origin >= m->width * SM_TL_FINE && m->width < UINT64_MAX / 4 / SM_TL_FINE) {
        for (uint32_t i = 0; i < SM_TL_FINE / 2; i++) {
            m->sum[i] = m->sum[2 * i] + m->sum[2 * i + 1];
            m->count[i] = m->count[2 * i] + m->count[2 * i + 1];
            m->max[i] = m->max[2 * i] > m->max[2 * i + 1] ? m->max[2 * i] : m->max[2 * i + 1];
        }
        memset(&m->sum[SM_TL_FINE / 2], 0, sizeof m->sum[0] * (SM_TL_FINE / 2));
        memset(&m->max[SM_TL_FINE / 2], 0, sizeof m->max[0] * (SM_TL_FINE / 2));
        memset(&m->count[SM_TL_FINE / 2], 0, sizeof m->count[0] * (SM_TL_FINE / 2));
        m->width *= 2;
    }
    uint64_t i = (ns - m->origin) / m->width;
    if (i >= SM_TL_FINE)
        return; /* beyond the widest bins: a damaged or crafted time */
    m->sum[i] += (double)value;
    if (!m->count[i]++ || (double)value > m->max[i])
        m->max[i] = (double)value;
}

void sm_timeline_end_process(sm_timeline_t *t)
{
    for (uint32_t k = 0; t && k < t->n_metrics; k++) {
        const sm_tl_metric_t *m = &t->metrics[k];
        sm_put_u32(&t->out, SM_TL_REC_METRIC);
        sm_put_u32(&t->out, m->id);
        sm_put_u64(&t->out, m->origin);
        sm_put_u64(&t->out, m->width);
        sm_put_bytes(&t->out, m->sum, sizeof m->sum);
        sm_put_bytes(&t->out, m->max, sizeof m->max);
        sm_put_bytes(&t->out, m->count, sizeof m->count);
    }
}

void sm_timeline_reset(sm_timeline_t *t)
{
    if (!t)
        return;
    t->out.len = 0;
    t->out.oom = false;
    t->n_metrics = 0;
}

/* ---------------------------------------------------------------- rank 0 */

typedef struct sm_tl_lane {
    uint32_t rank, last_rank, locations;
    bool gpu, one; /* GPU streams; one location (named by it) */
    char name[80];
    double bins[SM_TL_BINS][SM_TL_COUNT];
} sm_tl_lane_t;

/* A sampled metric across the ranks: per bin the sum and count (mean) and
 * the largest value. */
typedef struct sm_tl_series {
    uint32_t id;
    double sum[SM_TL_BINS], max[SM_TL_BINS];
    uint64_t count[SM_TL_BINS];
} sm_tl_series_t;

typedef struct sm_tl_job {
    sm_tl_lane_t *lanes;
    uint32_t n, cap;
    sm_tl_series_t *series;
    uint32_t n_series, series_cap;
    uint64_t start, end;
    double bin_ns;
} sm_tl_job_t;

/* The lane of this location (the last one when it is the same group). */
static sm_tl_lane_t *sm_tl_lane(sm_tl_job_t *j, uint32_t rank, uint32_t group, bool gpu,
                                bool one, const char *name)
{
    uint32_t first = rank / group * group;
    if (!one) /* the group's lane of this kind, already open? (lanes in rank order) */
        for (uint32_t i = j->n; i-- > 0 && j->lanes[i].rank >= first;)
            if (j->lanes[i].gpu == gpu && !j->lanes[i].one)
                return &j->lanes[i];
    if (j->n == j->cap && SM_GROW(j->lanes, j->cap, 16) != 0)
        return NULL;
    sm_tl_lane_t *l = &j->lanes[j->n++];
    memset(l, 0, sizeof *l);
    l->rank = first;
    l->last_rank = first + group - 1;
    l->gpu = gpu;
    l->one = one;
    if (one)
        l->rank = l->last_rank = rank;
    if (one)
        snprintf(l->name, sizeof l->name, "rank %u %s", (unsigned)rank, name);
    else if (group > 1)
        snprintf(l->name, sizeof l->name, "ranks %u-%u%s", (unsigned)first,
                 (unsigned)(first + group - 1), gpu ? " GPU" : "");
    else
        snprintf(l->name, sizeof l->name, "rank %u%s", (unsigned)rank, gpu ? " GPU" : "");
    return l;
}

/* One location's fine bins onto the lane's bins. */
static void sm_tl_spread(const sm_tl_job_t *j, sm_tl_lane_t *l, int kind, const uint8_t *v,
                         uint64_t origin, uint64_t width)
{
    for (uint32_t i = 0; i < SM_TL_FINE; i++) {
        float x;
        memcpy(&x, v + (size_t)i * sizeof x, sizeof x);
        if (x <= 0)
            continue;
        double a = (double)(origin + i * width) - (double)j->start, b = a + (double)width;
        if (b <= 0 || a >= (double)(j->end - j->start))
            continue;
        long first = (long)floor(a / j->bin_ns), last = (long)floor((b - 1e-9) / j->bin_ns);
        for (long k = first < 0 ? 0 : first; k <= last && k < SM_TL_BINS; k++) {
            double lo = k * j->bin_ns, hi = lo + j->bin_ns;
            double o = (b < hi ? b : hi) - (a > lo ? a : lo);
            if (o > 0)
                l->bins[k][kind] += x * o / (double)width;
        }
    }
}

static void sm_tl_series_add(sm_tl_job_t *j, uint32_t id, uint64_t origin, uint64_t width,
                             const uint8_t *sum, const uint8_t *max, const uint8_t *count)
{
    sm_tl_series_t *m = NULL;
    for (uint32_t i = 0; i < j->n_series && !m; i++)
        if (j->series[i].id == id)
            m = &j->series[i];
    if (!m) {
        if (j->n_series == j->series_cap && SM_GROW(j->series, j->series_cap, 8) != 0)
            return;
        m = &j->series[j->n_series++];
        memset(m, 0, sizeof *m);
        m->id = id;
    }
    for (uint32_t i = 0; i < SM_TL_FINE; i++) {
        uint32_t c;
        double s, x;
        memcpy(&c, count + (size_t)i * sizeof c, sizeof c);
        if (!c)
            continue;
        memcpy(&s, sum + (size_t)i * sizeof s, sizeof s);
        memcpy(&x, max + (size_t)i * sizeof x, sizeof x);
        /* the bin's samples at its middle */
        double mid = (double)origin + (i + 0.5) * (double)width - (double)j->start;
        long k = (long)floor(mid / j->bin_ns);
        k = k < 0 ? 0 : k >= SM_TL_BINS ? SM_TL_BINS - 1 : k;
        if (!m->count[k] || x > m->max[k])
            m->max[k] = x;
        m->sum[k] += s;
        m->count[k] += c;
    }
}

/* Walks every location of the parts: counting (j NULL) or binning. */
static void sm_tl_walk(sm_tl_job_t *j, uint32_t n_ranks, const uint8_t *const *blob,
                       const uint64_t *len, uint32_t group, bool per_thread, bool per_stream,
                       uint32_t *n_cpu, uint32_t *n_gpu)
{
    for (uint32_t r = 0; r < n_ranks; r++) {
        sm_rbuf_t b = {blob[r], blob[r] ? blob[r] + len[r] : NULL, false};
        while (blob[r] && sm_remaining(&b) > 0 && !b.bad) {
            if (sm_get_u32(&b) == SM_TL_REC_METRIC) {
                uint32_t id = sm_get_u32(&b);
                uint64_t origin = sm_get_u64(&b), width = sm_get_u64(&b);
                const uint8_t *sum = sm_get_bytes(&b, SM_TL_FINE * sizeof(double));
                const uint8_t *max = sm_get_bytes(&b, SM_TL_FINE * sizeof(double));
                const uint8_t *count = sm_get_bytes(&b, SM_TL_FINE * sizeof(uint32_t));
                if (j && !b.bad)
                    sm_tl_series_add(j, id, origin, width, sum, max, count);
                continue;
            }
            sm_get_u32(&b); /* id */
            uint32_t type = sm_get_u32(&b);
            char name[64];
            sm_get_copy(&b, name, sizeof name);
            name[sizeof name - 1] = '\0';
            uint64_t origin = sm_get_u64(&b), width = sm_get_u64(&b);
            uint32_t used = sm_get_u32(&b);
            bool gpu = type == SM_LOCATION_GPU_STREAM;
            sm_tl_lane_t *l = NULL;
            if (j)
                l = sm_tl_lane(j, r, group, gpu, gpu ? per_stream : per_thread, name);
            else
                ++*(gpu ? n_gpu : n_cpu);
            if (l)
                l->locations++;
            for (int k = 0; k < SM_TL_COUNT && !b.bad; k++) {
                if (!(used & (1u << k)))
                    continue;
                const uint8_t *v = sm_get_bytes(&b, SM_TL_FINE * sizeof(float));
                if (v && l && width)
                    sm_tl_spread(j, l, k, v, origin, width);
            }
        }
    }
}

/* "metrics": per sampled metric its name, unit, and per bin the mean and
 * the largest value across ranks (null: no sample in the bin). */
static void sm_tl_metrics_json(sm_json_t *o, const sm_tl_job_t *j, const sm_defset_t *defs)
{
    sm_json_key(o, "metrics");
    sm_json_array_begin(o);
    for (uint32_t i = 0; i < j->n_series; i++) {
        const sm_tl_series_t *m = &j->series[i];
        const sm_named_metric_def_t *d = defs ? sm_defset_metric_get(defs, m->id) : NULL;
        sm_json_object_begin(o);
        sm_json_field_string(o, "name", d ? sm_defset_string_get(defs, d->name) : "?");
        sm_json_field_string(o, "unit", d ? sm_defset_string_get(defs, d->unit) : "");
        for (int k = 0; k < 2; k++) {
            sm_json_key(o, k ? "max" : "mean");
            sm_json_array_begin_inline(o);
            for (uint32_t b = 0; b < SM_TL_BINS; b++) {
                if (!m->count[b])
                    sm_json_null(o);
                else
                    sm_json_double(o, k ? m->max[b] : m->sum[b] / (double)m->count[b]);
            }
            sm_json_array_end(o);
        }
        sm_json_object_end(o);
    }
    sm_json_array_end(o);
}

int sm_timeline_write_json(const char *dir, const sm_defset_t *defs, uint32_t n_ranks,
                           const uint8_t *const *blob, const uint64_t *len, uint64_t start_ns,
                           uint64_t end_ns)
{
    uint32_t n_cpu = 0, n_gpu = 0;
    sm_tl_walk(NULL, n_ranks, blob, len, 1, false, false, &n_cpu, &n_gpu);
    /* A lane per thread and stream while they are few; else per rank, and
     * beyond SM_TL_MAX_LANES a lane per group of ranks. */
    bool per_thread = n_cpu <= SM_TL_THREAD_LANES, per_stream = n_gpu <= SM_TL_THREAD_LANES;
    uint32_t group = 1;
    if (!per_thread || !per_stream) {
        uint32_t per_rank = 1 + (n_gpu > 0);
        while ((uint64_t)(n_ranks + group - 1) / group * per_rank > SM_TL_MAX_LANES)
            group *= 2;
    }
    sm_tl_job_t j = {.start = start_ns, .end = end_ns > start_ns ? end_ns : start_ns + 1};
    j.bin_ns = (double)(j.end - j.start) / SM_TL_BINS;
    sm_tl_walk(&j, n_ranks, blob, len, group, per_thread, per_stream, NULL, NULL);

    sm_json_t o;
    if (sm_json_open(&o, dir, "timeline.json") != 0) {
        free(j.lanes);
        return -1;
    }
    sm_json_object_begin(&o);
    sm_json_field_uint(&o, "version", 1);
    sm_json_field_uint(&o, "start_ns", j.start);
    sm_json_field_uint(&o, "end_ns", j.end);
    sm_json_field_uint(&o, "bins", SM_TL_BINS);
    sm_json_field_double(&o, "bin_ns", j.bin_ns);
    sm_json_field_uint(&o, "ranks_per_lane", group);
    sm_json_key(&o, "kinds");
    sm_json_array_begin_inline(&o);
    for (int k = 0; k < SM_TL_COUNT; k++)
        sm_json_string(&o, sm_tl_name[k]);
    sm_json_array_end(&o);
    /* Per lane and kind: the share of the lane's time (bin x locations) in
     * that kind, per mille. */
    sm_json_key(&o, "lanes");
    sm_json_array_begin(&o);
    for (uint32_t i = 0; i < j.n; i++) {
        const sm_tl_lane_t *l = &j.lanes[i];
        sm_json_object_begin(&o);
        sm_json_field_string(&o, "name", l->name);
        sm_json_field_uint(&o, "rank", l->rank);
        sm_json_field_uint(&o, "last_rank", l->last_rank < n_ranks ? l->last_rank : n_ranks - 1);
        sm_json_field_string(&o, "kind", l->gpu ? "gpu" : "cpu");
        sm_json_field_uint(&o, "locations", l->locations);
        sm_json_key(&o, "per_mille");
        sm_json_object_begin(&o);
        double full = j.bin_ns * (l->locations ? l->locations : 1);
        for (int k = 0; k < SM_TL_COUNT; k++) {
            bool any = false;
            for (uint32_t b = 0; b < SM_TL_BINS && !any; b++)
                any = l->bins[b][k] * 1000 / full >= 0.5;
            if (!any)
                continue;
            sm_json_key(&o, sm_tl_name[k]);
            sm_json_array_begin_inline(&o);
            for (uint32_t b = 0; b < SM_TL_BINS; b++) {
                long v = lround(l->bins[b][k] * 1000 / full);
                sm_json_int(&o, v > 1000 ? 1000 : v);
            }
            sm_json_array_end(&o);
        }
        sm_json_object_end(&o);
        sm_json_object_end(&o);
    }
    sm_json_array_end(&o);
    sm_tl_metrics_json(&o, &j, defs);
    sm_json_object_end(&o);
    free(j.lanes);
    free(j.series);
    return sm_json_close(&o);
}
