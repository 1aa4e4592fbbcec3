/* Per-kernel GPU counter values (gpu_counters.h). */
#include "gpu_counters.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "location.h"
#include "metrics.h"
#include "profile.h"
#include "runtime.h"
#include "../util/fs.h"

#define SM_GC_MAX_METRICS 256

typedef struct sm_gc_row {
    const sm_profile_node_t *host; /* the launching call; NULL: unknown */
    uint64_t correlation, start, end;
    double value;
    sm_region_id_t region;
    sm_gpu_stream_t stream;
    uint32_t metric, covered, group;
    sm_gpu_launch_t launch;
} sm_gc_row_t;

/* Statistics per (stream, call path, kernel, metric), in a hash table; the
 * profile summary takes them (sm_gpu_counters_each). */
typedef struct sm_gc_stat {
    const sm_profile_node_t *host;
    sm_region_id_t region;
    uint32_t metric;
    uint32_t location; /* the stream's */
    sm_fstat_t st;
    struct sm_gc_stat *next;
} sm_gc_stat_t;

#define SM_GC_BUCKETS 4096
static pthread_mutex_t sm_gc_lock = PTHREAD_MUTEX_INITIALIZER;
static char *sm_gc_names[SM_GC_MAX_METRICS];
static sm_metric_id_t sm_gc_metric_ids[SM_GC_MAX_METRICS];
static uint32_t sm_gc_n_metrics;
static sm_gc_row_t *sm_gc_rows;
static size_t sm_gc_n_rows, sm_gc_cap_rows;
static uint64_t sm_gc_rows_dropped;
static sm_gc_stat_t *sm_gc_buckets[SM_GC_BUCKETS];
static uint32_t sm_gc_n_stats;
static int sm_gc_hooked;

static void sm_gc_finalize_hook(const sm_run_info_t *run);

uint32_t sm_gpu_counter_define(const char *name, const char *unit)
{
    if (!name || !*name)
        return UINT32_MAX;
    pthread_mutex_lock(&sm_gc_lock);
    uint32_t id = UINT32_MAX;
    for (uint32_t i = 0; i < sm_gc_n_metrics; i++)
        if (!strcmp(sm_gc_names[i], name))
            id = i;
    if (id == UINT32_MAX && sm_gc_n_metrics < SM_GC_MAX_METRICS) {
        /* The trace metric is named after the GPU metric. */
        sm_metric_id_t m = sm_metric_define_kind(name, unit, SM_METRIC_COUNTER);
        char *copy = strdup(name);
        if (m != SM_INVALID_ID && copy) {
            id = sm_gc_n_metrics++;
            sm_gc_names[id] = copy;
            sm_gc_metric_ids[id] = m;
        } else {
            free(copy);
        }
    }
    if (id != UINT32_MAX)
        sm_gc_hooked = 1;
    pthread_mutex_unlock(&sm_gc_lock);
    return id;
}

static sm_gc_stat_t *sm_gc_stat(uint32_t location, const sm_profile_node_t *host,
                                sm_region_id_t region, uint32_t metric)
{
    uint64_t h = ((uintptr_t)host * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)region << 20) ^ metric ^
                 ((uint64_t)location << 40);
    h = (h * 0xff51afd7ed558ccdull) >> 52;
    sm_gc_stat_t **b = &sm_gc_buckets[h % SM_GC_BUCKETS];
    for (sm_gc_stat_t *s = *b; s; s = s->next)
        if (s->host == host && s->region == region && s->metric == metric &&
            s->location == location)
            return s;
    sm_gc_stat_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->host = host;
    s->region = region;
    s->metric = metric;
    s->location = location;
    sm_fstat_clear(&s->st);
    s->next = *b;
    *b = s;
    sm_gc_n_stats++;
    return s;
}

size_t sm_gpu_counters(const sm_gpu_counter_value_t *v, size_t n, size_t stride)
{
    if (!v || !n || !sm_gpu_taking())
        return 0;
    if (!stride)
        stride = sizeof *v;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        sm_gpu_counter_value_t x;
        memset(&x, 0, sizeof x);
        memcpy(&x, (const uint8_t *)v + i * stride, stride < sizeof x ? stride : sizeof x);
        if (x.metric >= __atomic_load_n(&sm_gc_n_metrics, __ATOMIC_ACQUIRE))
            continue;
        sm_location_t *loc = sm_gpu_stream_location(x.stream);
        if (!loc)
            continue;
        /* The trace: a metric on the stream at the kernel's end. */
        pthread_mutex_lock(&loc->lock);
        if (!loc->closed && loc->tracing) {
            sm_metric_def_t m;
            if (sm_metric_get(sm_gc_metric_ids[x.metric], &m) == 0) {
                uint64_t w[2] = {x.value <= 0 ? 0 : (uint64_t)llround(x.value), m.unit};
                sm_event_record(loc, SM_REC_METRIC_NAMED, m.name, 0, x.end, w, 2);
            }
        }
        pthread_mutex_unlock(&loc->lock);
        const sm_profile_node_t *host = sm_gpu_correlation_node(x.correlation);
        pthread_mutex_lock(&sm_gc_lock);
        sm_gc_stat_t *s = sm_gc_stat(loc->id, host, x.region, x.metric);
        if (s)
            sm_fstat_add(&s->st, x.value, x.covered);
        if (sm_gc_n_rows == sm_gc_cap_rows && sm_gc_cap_rows < SM_GPU_COUNTER_ROWS_MAX) {
            size_t cap = sm_gc_cap_rows ? sm_gc_cap_rows * 2 : 4096;
            sm_gc_row_t *grown = realloc(sm_gc_rows, cap * sizeof *grown);
            if (grown) {
                sm_gc_rows = grown;
                sm_gc_cap_rows = cap;
            }
        }
        if (sm_gc_n_rows < sm_gc_cap_rows) {
            sm_gc_rows[sm_gc_n_rows++] =
                (sm_gc_row_t){host,    x.correlation, x.start,  x.end,     x.value, x.region,
                              x.stream, x.metric,     x.covered, x.group,  x.launch};
        } else {
            sm_gc_rows_dropped++;
        }
        pthread_mutex_unlock(&sm_gc_lock);
        kept++;
    }
    return kept;
}

/* ---------------------------------------------------------------- output */

/* "main > solve > cudaLaunchKernel" into buf. */
static void sm_gc_path(const sm_profile_node_t *n, char *buf, size_t len)
{
    const sm_profile_node_t *chain[256];
    uint32_t d = 0;
    for (; n && n->parent && d < 256; n = n->parent)
        chain[d++] = n;
    size_t at = 0;
    buf[0] = '\0';
    while (d-- && at + 1 < len) {
        const char *name = sm_region_name(chain[d]->region);
        int w = snprintf(buf + at, len - at, "%s%s", at ? " > " : "", name ? name : "?");
        if (w < 0)
            break;
        at += (size_t)w;
    }
    if (at >= len)
        buf[len - 1] = '\0';
}

/* A CSV field: quoted, quotes doubled. */
static void sm_gc_csv(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static FILE *sm_gc_open(const char *dir, const char *base, const char *ext, uint32_t rank,
                        uint32_t n_ranks)
{
    char name[128];
    if (n_ranks > 1)
        snprintf(name, sizeof name, "%s.rank%u.%s", base, rank, ext);
    else
        snprintf(name, sizeof name, "%s.%s", base, ext);
    int fd = sm_fs_open_output(dir, name);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f)
        close(fd);
    return f;
}

static int sm_gc_row_order(const void *a, const void *b)
{
    const sm_gc_row_t *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->correlation != y->correlation)
        return x->correlation < y->correlation ? -1 : 1;
    return x->metric < y->metric ? -1 : x->metric > y->metric;
}

/* The n-th launch of each (call path, kernel): counted over distinct
 * correlations in time order. */
typedef struct sm_gc_nth {
    const sm_profile_node_t *host;
    sm_region_id_t region;
    uint64_t last_correlation, count;
} sm_gc_nth_t;

static int sm_gc_write_rows(const char *dir, uint32_t rank, uint32_t n_ranks)
{
    FILE *f = sm_gc_open(dir, "counter_collection", "csv", rank, n_ranks);
    if (!f)
        return 1;
    qsort(sm_gc_rows, sm_gc_n_rows, sizeof *sm_gc_rows, sm_gc_row_order);
    fprintf(f, "Correlation_Id,Rank,Device,Stream,Kernel_Name,Call_Path,Launch,Grid_Size,"
               "Block_Size,Registers,Shared_Memory,Group,Launches_Covered,Counter_Name,"
               "Counter_Value,Start_Timestamp,End_Timestamp\n");
    sm_gc_nth_t *nth = NULL;
    size_t n_nth = 0, cap_nth = 0;
    char path[4096];
    for (size_t i = 0; i < sm_gc_n_rows; i++) {
        const sm_gc_row_t *r = &sm_gc_rows[i];
        size_t k = 0;
        while (k < n_nth && !(nth[k].host == r->host && nth[k].region == r->region))
            k++;
        if (k == n_nth) {
            if (n_nth == cap_nth) {
                size_t cap = cap_nth ? cap_nth * 2 : 64;
                sm_gc_nth_t *grown = realloc(nth, cap * sizeof *grown);
                if (!grown)
                    break;
                nth = grown;
                cap_nth = cap;
            }
            nth[n_nth++] = (sm_gc_nth_t){r->host, r->region, 0, 0};
        }
        if (nth[k].last_correlation != r->correlation || !nth[k].count) {
            nth[k].last_correlation = r->correlation;
            nth[k].count++;
        }
        const sm_gpu_launch_t *l = &r->launch;
        sm_location_t *loc = sm_gpu_stream_location(r->stream);
        sm_gpu_device_t dev = loc ? sm_gpu_location_device(loc->id) : SM_GPU_NONE;
        const sm_gpu_device_def_t *d = dev != SM_GPU_NONE ? sm_gpu_device_get(dev) : NULL;
        fprintf(f, "%" PRIu64 ",%u,%u,%u,", r->correlation, rank, d ? d->ordinal : 0,
                (unsigned)r->stream);
        const char *kname = sm_region_name(r->region);
        sm_gc_csv(f, kname ? kname : "?");
        fputc(',', f);
        sm_gc_path(r->host, path, sizeof path);
        sm_gc_csv(f, path);
        fprintf(f,
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%u,%u,", nth[k].count,
                (uint64_t)l->grid[0] * l->grid[1] * l->grid[2] *
                    ((uint64_t)l->block[0] * l->block[1] * l->block[2]),
                (uint64_t)l->block[0] * l->block[1] * l->block[2], l->registers,
                l->shared_static + l->shared_dynamic, r->group, r->covered ? r->covered : 1);
        sm_gc_csv(f, sm_gc_names[r->metric]);
        fprintf(f, ",%.17g,%" PRIu64 ",%" PRIu64 "\n", r->value, sm_clock_to_job_ns(r->start),
                sm_clock_to_job_ns(r->end));
    }
    free(nth);
    return fclose(f) != 0;
}

void sm_gpu_counters_each(sm_gpu_counter_stat_fn fn, void *arg)
{
    pthread_mutex_lock(&sm_gc_lock);
    for (uint32_t b = 0; b < SM_GC_BUCKETS; b++)
        for (const sm_gc_stat_t *s = sm_gc_buckets[b]; s; s = s->next)
            fn(s->location, s->host, s->region, sm_gc_names[s->metric], &s->st, arg);
    pthread_mutex_unlock(&sm_gc_lock);
}

int sm_gpu_counters_write(const char *dir, uint32_t rank, uint32_t n_ranks)
{
    pthread_mutex_lock(&sm_gc_lock);
    int failed = 0;
    if (sm_gc_n_stats)
        failed += sm_gc_write_rows(dir, rank, n_ranks);
    pthread_mutex_unlock(&sm_gc_lock);
    return failed;
}

/* After the backends' flush (their hook was registered first). */
static void sm_gc_finalize_hook(const sm_run_info_t *run)
{
    pthread_mutex_lock(&sm_gc_lock);
    int counted = sm_gc_hooked;
    pthread_mutex_unlock(&sm_gc_lock);
    if (!counted) /* no GPU counter defined */
        return;
    const char *dir = sm_runtime_output_dir();
    char err[256];
    if (!dir || sm_runtime_make_output_dir(err, sizeof err) != 0)
        return;
    if (sm_gpu_counters_write(dir, run->rank, run->n_ranks) != 0)
        sm_runtime_add_note("GPU counters: counter_collection.csv could not be written");
    if (sm_gc_rows_dropped) {
        char note[200];
        snprintf(note, sizeof note,
                 "GPU counters: %" PRIu64 " values beyond %u rows are in the profile's "
                 "statistics but not in counter_collection.csv",
                 sm_gc_rows_dropped, SM_GPU_COUNTER_ROWS_MAX);
        sm_runtime_add_note(note);
    }
}

const sm_subsystem_t sm_gpu_counters_subsystem = {
    .name = "GPU counters",
    .flush = sm_gc_finalize_hook, /* after the GPU's flush (plugins.def order) */
};
