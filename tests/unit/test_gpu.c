/* The GPU layer's batch interface (gpu.h) on synthetic batches, through the
 * adapter table as a vendor backend uses it: devices and streams, clock
 * conversion, correlation (attribute on the host call, kernel time under the
 * launching call path), records in time order when batches come out of
 * order, the buffer budget (spills, nothing lost), losses counted, and the
 * end-of-run flush. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/adapter_api.h"
#include "core/clock.h"
#include "core/events.h"
#include "core/gpu.h"
#include "core/location.h"
#include "core/runtime.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

static const sm_adapter_api_t *api;
static sm_gpu_stream_t flush_stream;
static int flushed;

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct {
    uint64_t n, last, activities, backwards;
    uint64_t corr[8];
    uint64_t errors[8];
    uint32_t n_corr, n_errors;
} seen_t;

static int collect(const sm_record_t *r, void *arg)
{
    seen_t *s = arg;
    if (s->n++ && r->time < s->last)
        s->backwards++;
    s->last = r->time;
    if (r->kind == SM_REC_GPU_ACTIVITY)
        s->activities++;
    return 0;
}

/* Attributes of enter/leave records on the host thread. */
static int collect_attrs(const sm_record_t *r, void *arg)
{
    seen_t *s = arg;
    if ((r->kind != SM_REC_ENTER && r->kind != SM_REC_LEAVE) || !r->aux)
        return 0;
    const sm_record_attr_t *a = sm_record_payload(r);
    const char *name = sm_string_get(sm_attribute_get((sm_attribute_id_t)a->attribute)->name);
    if (!strcmp(name, "correlation id") && s->n_corr < 8)
        s->corr[s->n_corr++] = a->value.raw;
    if (!strcmp(name, "error code") && s->n_errors < 8)
        s->errors[s->n_errors++] = a->value.raw;
    return 0;
}

static int live_source(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    (void)ctx;
    return sm_buffer_for_each(sm_location_get(i), fn, arg);
}

static uint32_t stream_location(const char *name)
{
    for (uint32_t i = 0; i < sm_location_count(); i++)
        if (sm_location_get(i)->type == SM_LOCATION_GPU_STREAM &&
            !strcmp(sm_location_get(i)->name, name))
            return i;
    return SM_INVALID_ID;
}

static sm_gpu_activity_t kernel(sm_gpu_stream_t s, sm_region_id_t r, uint64_t t0, uint64_t t1,
                                uint64_t corr)
{
    sm_gpu_activity_t a;
    memset(&a, 0, sizeof a);
    a.start = t0;
    a.end = t1;
    a.correlation = corr;
    a.region = r;
    a.stream = s;
    a.kind = SM_GPU_KERNEL;
    a.launch.grid[0] = 128;
    a.launch.block[0] = 256;
    return a;
}

/* The backend's flush at the end of the run: its last batch is kept. */
static void backend_flush(void)
{
    flushed++;
    sm_gpu_activity_t a = kernel(flush_stream, SM_INVALID_ID, 10, 20, 0);
    a.kind = SM_GPU_SYNC;
    CHECK_EQ_U(api->gpu_activities(&a, 1, sizeof a), 1);
}

int main(void)
{
    /* SM_TEST_KEEP_OUTPUT=DIR: write the output there and keep it
     * (test_perfetto.py converts its archive, which has GPU streams). */
    char dir[4096] = "/tmp/sm-test-gpu-XXXXXX";
    const char *keep = getenv("SM_TEST_KEEP_OUTPUT");
    if (keep && *keep)
        snprintf(dir, sizeof dir, "%s", keep);
    else if (!mkdtemp(dir))
        return 1;
    setenv("SYSMEASURE_OUTPUT", dir, 1);
    setenv("SYSMEASURE_BUFFER_SIZE", "1M", 1); /* small: the streams spill */
    setenv("SYSMEASURE_BUFFER_CHUNK_SIZE", "64K", 1);
    unsetenv("SYSMEASURE_ENABLE");
    api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    CHECK(api && SM_ADAPTER_API_HAS(api, note));
    if (!api)
        return 1;
    sm_gpu_device_info_t info = {SM_GPU_VENDOR_NVIDIA, 0, "Test GPU", "GPU-0000", "0000:01:00.0"};
    CHECK(api->gpu_device_define(&info) == SM_GPU_NONE); /* core not up */
    CHECK_EQ_U(api->runtime_init_forced(), 0);

    /* ---- devices and streams */
    sm_gpu_device_t d0 = api->gpu_device_define(&info);
    CHECK(d0 != SM_GPU_NONE);
    CHECK_EQ_U(api->gpu_device_define(&info), d0);
    info.ordinal = 1;
    sm_gpu_device_t d1 = api->gpu_device_define(&info);
    CHECK(d1 != d0 && d1 != SM_GPU_NONE);
    sm_gpu_stream_t s0 = api->gpu_stream_define(d0, 7, NULL);
    CHECK(s0 != SM_GPU_NONE);
    CHECK_EQ_U(api->gpu_stream_define(d0, 7, NULL), s0);
    sm_gpu_stream_t s1 = api->gpu_stream_define(d0, 8, "order test");
    sm_gpu_stream_t s2 = api->gpu_stream_define(d1, 7, "budget test");
    flush_stream = api->gpu_stream_define(d1, 9, "flush test");
    CHECK(s1 != s0 && s2 != s0 && s2 != s1);
    CHECK(api->gpu_stream_define(99, 1, NULL) == SM_GPU_NONE);
    uint32_t l0 = stream_location("CUDA 0 stream 7");
    CHECK(l0 != SM_INVALID_ID);
    CHECK_EQ_U(sm_gpu_location_device(l0), d0);
    CHECK(!strcmp(sm_gpu_device_get(d1)->uuid, "GPU-0000"));

    /* ---- clock conversion: each host clock to ticks, back to ns */
    sm_clock_finish();
    uint64_t m = now_ns(CLOCK_MONOTONIC);
    CHECK_NEAR((double)sm_clock_to_ns(api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, m)), (double)m, 2000);
    CHECK_NEAR((double)sm_clock_to_ns(api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, m - 1000000)),
               (double)(m - 1000000), 2000);
    uint64_t r = now_ns(CLOCK_REALTIME), m2 = now_ns(CLOCK_MONOTONIC);
    CHECK_NEAR((double)sm_clock_to_ns(api->gpu_ticks(SM_GPU_CLOCK_REALTIME, r)), (double)m2, 5000);
    uint64_t b = now_ns(CLOCK_BOOTTIME), m3 = now_ns(CLOCK_MONOTONIC);
    CHECK_NEAR((double)sm_clock_to_ns(api->gpu_ticks(SM_GPU_CLOCK_BOOTTIME, b)), (double)m3, 5000);

    /* ---- correlation: the launch call carries the id; the kernel's time
     * goes under the launching call path on the stream */
    sm_region_id_t outer = api->region_define("solver", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t launch =
        api->region_define("cudaLaunchKernel", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t malloc_r =
        api->region_define("cudaMalloc", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t kern = api->region_define("axpy", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_FUNCTION);
    api->enter(outer);
    api->gpu_api_enter(launch, 42);
    uint64_t t_launch = sm_clock_now();
    api->gpu_api_leave(launch, 0);
    api->gpu_api_enter(malloc_r, 43);
    api->gpu_api_leave(malloc_r, 2); /* failed: error code 2 */
    api->leave(outer);
    sm_gpu_activity_t k = kernel(s0, kern, t_launch + 1000, t_launch + 5000, 42);
    sm_gpu_activity_t lost = kernel(s0, kern, t_launch + 6000, t_launch + 7000, 999);
    CHECK_EQ_U(api->gpu_activities(&k, 1, sizeof k), 1);
    CHECK_EQ_U(api->gpu_activities(&lost, 1, sizeof lost), 1);
    seen_t host;
    memset(&host, 0, sizeof host);
    sm_buffer_for_each(sm_location_current(), collect_attrs, &host);
    CHECK_EQ_U(host.n_corr, 2);
    CHECK_EQ_U(host.corr[0], 42);
    CHECK_EQ_U(host.n_errors, 1);
    CHECK_EQ_U(host.errors[0], 2);
    /* ---- per-kernel counter values: under the launching path in the
     * profile's statistics (profile_gpu_counters.csv below); the kernel of
     * an unknown launch at the stream's top */
    CHECK(SM_ADAPTER_API_HAS(api, gpu_counters));
    uint32_t inst = api->gpu_counter_define("smsp__inst_executed.sum", "instructions");
    CHECK(inst != UINT32_MAX);
    sm_gpu_counter_value_t cv[3];
    memset(cv, 0, sizeof cv);
    for (int i = 0; i < 3; i++) {
        cv[i].correlation = i < 2 ? 42 : 999;
        cv[i].start = t_launch + 1000;
        cv[i].end = t_launch + 5000;
        cv[i].region = kern;
        cv[i].stream = s0;
        cv[i].metric = inst;
        cv[i].covered = 1;
        cv[i].value = i == 0 ? 1000 : i == 1 ? 3000 : 77;
    }
    CHECK_EQ_U(api->gpu_counters(cv, 3, sizeof cv[0]), 3);
    const sm_location_t *loc0 = sm_location_get(l0);
    const sm_profile_node_t *n = loc0->profile.root.first_child;
    CHECK(n && n->region == outer && n->visits == 0); /* the host path, mirrored */
    n = n ? n->first_child : NULL;
    CHECK(n && n->region == launch && n->visits == 0);
    n = n ? n->first_child : NULL;
    CHECK(n && n->region == kern && n->visits == 1 && n->incl.sum == 4000);
    /* unknown correlation: at the stream's top level */
    const sm_profile_node_t *top = loc0->profile.root.first_child;
    CHECK(top && top->next_sibling && top->next_sibling->region == kern &&
          top->next_sibling->visits == 1);

    /* ---- time order: batches out of order, records read back in order */
    sm_gpu_activity_t late[3], early[3];
    for (int i = 0; i < 3; i++) {
        late[i] = kernel(s1, kern, 3000 + 100 * i, 3050 + 100 * i, 0);
        early[i] = kernel(s1, kern, 1000 + 100 * i, 1050 + 100 * i, 0);
    }
    api->gpu_activities(late, 3, sizeof late[0]);
    api->gpu_activities(early, 3, sizeof early[0]);
    uint32_t l1 = stream_location("order test");
    seen_t raw, ordered;
    memset(&raw, 0, sizeof raw);
    memset(&ordered, 0, sizeof ordered);
    sm_buffer_for_each(sm_location_get(l1), collect, &raw);
    CHECK(raw.backwards > 0); /* stored as they came */
    CHECK_EQ_U(sm_gpu_for_each_in_order(live_source, NULL, l1, collect, &ordered), 0);
    CHECK_EQ_U(ordered.backwards, 0);
    CHECK_EQ_U(ordered.activities, 6);

    /* an older, shorter activity layout (the backend's stride) */
    sm_gpu_activity_t old = kernel(s1, kern, 5000, 5100, 0);
    CHECK_EQ_U(api->gpu_activities(&old, 1, offsetof(sm_gpu_activity_t, launch)), 1);

    /* ---- the budget: far more than 1 MiB of activities spill, none lost */
    enum { N = 40000 };
    sm_gpu_activity_t *many = calloc(N, sizeof *many);
    for (uint64_t i = 0; i < N; i++) /* in reverse order, in batches */
        many[i] = kernel(s2, kern, 2000000 - 40 * i, 2000000 - 40 * i + 20, 0);
    size_t kept = 0;
    for (int i = 0; i < N; i += 1000)
        kept += api->gpu_activities(many + i, 1000, sizeof *many);
    CHECK_EQ_U(kept, N);
    uint32_t l2 = stream_location("budget test");
    CHECK(sm_location_get(l2)->buffer.spills > 0);
    CHECK_EQ_U(sm_location_get(l2)->buffer.dropped_records, 0);
    seen_t all;
    memset(&all, 0, sizeof all);
    CHECK_EQ_U(sm_gpu_for_each_in_order(live_source, NULL, l2, collect, &all), 0);
    CHECK_EQ_U(all.activities, N);
    CHECK_EQ_U(all.backwards, 0);
    free(many);

    /* ---- losses: counted, never silent */
    uint64_t before = sm_gpu_dropped_count();
    api->gpu_dropped(5);
    sm_gpu_activity_t bad = kernel(4000, kern, 1, 2, 0); /* no such stream */
    CHECK_EQ_U(api->gpu_activities(&bad, 1, sizeof bad), 0);
    CHECK_EQ_U(sm_gpu_dropped_count() - before, 6);

    /* ---- end of run: the backend's flush runs, its last batch is kept;
     * nothing is taken after it */
    CHECK_EQ_U(api->gpu_on_flush(backend_flush), 0);
    uint32_t lf = stream_location("flush test");
    sm_runtime_finalize();
    CHECK_EQ_U(flushed, 1);
    memset(&all, 0, sizeof all);
    sm_buffer_for_each(sm_location_get(lf), collect, &all);
    CHECK_EQ_U(all.activities, 1);
    CHECK_EQ_U(api->gpu_activities(&k, 1, sizeof k), 0);
    const char *key, *value;
    int found = 0;
    for (uint32_t i = 0; i < sm_runtime_metadata_count(); i++)
        if (sm_runtime_metadata_get(i, &key, &value) == 0 && !strcmp(key, "gpu_dropped_records"))
            found = !strcmp(value, "6");
    CHECK(found);
    /* the summary's GPU section: the kernel under its launching path */
    char path[256], text[65536] = "";
    snprintf(path, sizeof path, "%s/profile.txt", dir);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[len] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "GPU kernels") != NULL);
    CHECK(strstr(text, "solver > cudaLaunchKernel => axpy") != NULL);
    CHECK(strstr(text, "synchronize") != NULL);
    static char page[1 << 20];
    CHECK(strstr(text, "GPU counters per kernel and launching call path") != NULL);
    CHECK(strstr(text, "  axpy\n    from solver > cudaLaunchKernel\n") != NULL);
    snprintf(path, sizeof path, "%s/profile_gpu_counters.csv", dir);
    f = fopen(path, "r");
    len = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[len] = '\0';
    if (f)
        fclose(f);
    /* 2 values from solver > cudaLaunchKernel (mean 2000, stddev 1000),
     * 1 from an unknown launch; the kernel's row has all 3 */
    CHECK(strstr(page, "\npath,axpy,solver > cudaLaunchKernel,smsp__inst_executed.sum,2,2,4000,"
                       "2000,1000,3000,1000,1,4000,4000,0,4000,0,0\n") != NULL);
    CHECK(strstr(page, "\npath,axpy,,smsp__inst_executed.sum,1,1,77,77,77,77,0,") != NULL);
    CHECK(strstr(page, "\nkernel,axpy,,smsp__inst_executed.sum,3,3,4077,1359,77,3000,") != NULL);
    snprintf(path, sizeof path, "%s/counter_collection.csv", dir);
    f = fopen(path, "r");
    len = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[len] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(page, ",\"axpy\",\"solver > cudaLaunchKernel\",1,") != NULL);
    /* report.html: the GPU section; timeline.json: the streams' lanes with
     * their kernels */
    snprintf(path, sizeof path, "%s/report.html", dir);
    f = fopen(path, "r");
    len = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[len] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(page, "<h2 id=gpu>GPU kernels and copies</h2>") != NULL);
    CHECK(strstr(page, "id=gpu-kernel-table") && strstr(page, "<td class=path>axpy</td>"));
    CHECK(strstr(page, "data-kind=\"gpu\" data-main=\"GPU kernels\"") != NULL);
    snprintf(path, sizeof path, "%s/timeline.json", dir);
    f = fopen(path, "r");
    len = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[len] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(page, "\"kind\": \"gpu\"") && strstr(page, "\"GPU kernels\": ["));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (keep && *keep)
        fprintf(stderr, "output kept in %s\n", dir);
    else if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return unit_failures;
}
