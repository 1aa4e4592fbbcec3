/* The core's side of the AMD libraries, through the adapter table as they
 * use it: marks (one timestamp), async-range lanes (overlapping ranges on
 * separate lanes, each lane nested and in time order), attributes on enter
 * and leave, and an AMD activity (rocm_deliver.c) placed by the GPU layer
 * on a stream location of its queue with its times, correlation and bytes.
 * The activity is written here from the layout, not captured from a GPU. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/adapter_api.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "gpu/rocm/rocm_deliver.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

typedef struct {
    sm_record_t rec[16];
    uint64_t words[16][4];
    uint32_t n;
} seen_t;

static int collect(const sm_record_t *r, void *arg)
{
    seen_t *s = arg;
    if (r->kind != SM_REC_ENTER && r->kind != SM_REC_LEAVE && r->kind != SM_REC_GPU_ACTIVITY)
        return 0;
    if (s->n < 16) {
        s->rec[s->n] = *r;
        const uint64_t *w = sm_record_payload(r);
        for (uint32_t k = 0; k < 4 && k < r->words; k++)
            s->words[s->n][k] = w[k];
        s->n++;
    }
    return 0;
}

static sm_location_t *find(const char *name, sm_location_type_t type)
{
    for (uint32_t i = 0; i < sm_location_count(); i++) {
        sm_location_t *l = sm_location_get(i);
        if (l && l->type == type && (!name || !strcmp(l->name, name)))
            return l;
    }
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
    unsetenv("SYSMEASURE_ENABLE");
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!api || !SM_ADAPTER_API_HAS(api, sample_put)) {
        CHECK(!"the adapter table has the entries of the AMD libraries");
        return 1;
    }
    CHECK(api->attribute_define("early", SM_ATTR_INT64) == SM_INVALID_ID); /* core not up */
    CHECK_EQ_U(api->runtime_init_forced(), 0);
    sm_runtime_discard_output();

    /* A mark: enter and leave at one time, the attribute on the enter. */
    sm_attribute_id_t id = api->attribute_define("roctx range id", SM_ATTR_INT64);
    CHECK(id != SM_INVALID_ID);
    CHECK_EQ_U(api->attribute_define("roctx range id", SM_ATTR_INT64), id);
    sm_region_id_t mark = api->region_define("tick", NULL, 0, SM_PARADIGM_USER, SM_ROLE_ARTIFICIAL);
    sm_adapter_attr_t a = {id, 42};
    api->mark(mark, &a, 1);
    seen_t s;
    memset(&s, 0, sizeof s);
    sm_buffer_for_each(sm_location_current(), collect, &s);
    CHECK_EQ_U(s.n, 2);
    CHECK(s.rec[0].kind == SM_REC_ENTER && s.rec[1].kind == SM_REC_LEAVE);
    CHECK_EQ_U(s.rec[0].time, s.rec[1].time);
    CHECK_EQ_U(s.rec[0].aux, 1);    /* one attribute */
    CHECK_EQ_U(s.words[0][0], id);  /* attribute, value */
    CHECK_EQ_U(s.words[0][1], 42);
    CHECK(sm_location_current()->sp == sm_location_current()->stack); /* nothing left open */

    /* Async ranges arrive at their stops: B inside A's time stops first,
     * then A (overlaps B: a second lane), then C after both (lane 0). */
    sm_region_id_t ra = api->region_define("A", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t rb = api->region_define("B", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t rc = api->region_define("C", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    uint64_t t0 = api->now();
    api->async_range(rb, t0 + 10, t0 + 20, NULL, 0);
    api->async_range(ra, t0, t0 + 30, &a, 1);
    api->async_range(rc, t0 + 40, t0 + 50, NULL, 0);
    sm_location_t *l0 = find("async ranges 0", SM_LOCATION_CPU_THREAD);
    sm_location_t *l1 = find("async ranges 1", SM_LOCATION_CPU_THREAD);
    CHECK(l0 && l1 && !find("async ranges 2", SM_LOCATION_CPU_THREAD));
    if (l0 && l1) {
        memset(&s, 0, sizeof s);
        sm_buffer_for_each(l0, collect, &s);
        CHECK_EQ_U(s.n, 4);
        CHECK(s.rec[0].ref == rb && s.rec[2].ref == rc);
        CHECK_EQ_U(s.rec[0].time, t0 + 10);
        CHECK_EQ_U(s.rec[1].time, t0 + 20);
        CHECK_EQ_U(s.rec[2].time, t0 + 40);
        CHECK_EQ_U(s.rec[3].time, t0 + 50);
        CHECK(l0->begin_time <= t0 + 10);
        memset(&s, 0, sizeof s);
        sm_buffer_for_each(l1, collect, &s);
        CHECK_EQ_U(s.n, 2);
        CHECK(s.rec[0].ref == ra && s.rec[0].kind == SM_REC_ENTER && s.rec[0].aux == 1);
        CHECK_EQ_U(s.rec[0].time, t0);
        CHECK_EQ_U(s.rec[1].time, t0 + 30);
        CHECK(l1->begin_time <= t0);
        /* The profile counts them like a thread's regions. */
        CHECK_EQ_U(sm_profile_child(&l0->profile, &l0->profile.root, rb)->visits, 1);
        CHECK_EQ_U(sm_profile_child(&l1->profile, &l1->profile.root, ra)->incl.sum, 30);
    }

    /* An AMD kernel activity into the GPU layer. */
    uint64_t start = mono_ns();
    sm_rocm_activity_t k = {start, start + 5000, 77, 0, 0x1234, 0, SM_ROCM_KERNEL, "vector_add"};
    CHECK_EQ_U(sm_rocm_deliver(api, &k, "HIP queue"), 0);
    sm_rocm_activity_t c = {start + 6000, start + 8000, 78, 4096, 0x1234, 0, SM_ROCM_COPY_HTOD,
                            NULL};
    CHECK_EQ_U(sm_rocm_deliver(api, &c, "HIP queue"), 0);
    sm_location_t *q = find("HIP queue 4660", SM_LOCATION_GPU_STREAM);
    CHECK(q != NULL);
    if (q) {
        memset(&s, 0, sizeof s);
        sm_buffer_for_each(q, collect, &s);
        CHECK_EQ_U(s.n, 2);
        CHECK_EQ_U(s.rec[0].kind, SM_REC_GPU_ACTIVITY);
        CHECK_EQ_U(s.rec[0].aux, SM_GPU_KERNEL);
        /* Core ticks of the host times (the layer's calibration may move
         * by a few ticks between two conversions). */
        uint64_t t_start = api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, start);
        uint64_t t_end = api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, start + 5000);
        CHECK_NEAR((double)s.rec[0].time, (double)t_start, 2000.0);
        CHECK_NEAR((double)(s.words[0][0] - s.rec[0].time), (double)(t_end - t_start),
                   0.05 * (double)(t_end - t_start));
        CHECK_EQ_U(s.words[0][1], 77); /* correlation */
        CHECK_STR(sm_region_name(s.rec[0].ref), "vector_add");
        CHECK_EQ_U(sm_region_get(s.rec[0].ref)->paradigm, SM_PARADIGM_HIP);
        CHECK_EQ_U(s.rec[1].aux, SM_GPU_COPY_HTOD);
        CHECK_EQ_U(s.words[1][2], 4096); /* bytes */
        CHECK_STR(sm_region_name(s.rec[1].ref), "copy HtoD");
        CHECK_EQ_U(sm_region_get(s.rec[1].ref)->role, SM_ROLE_DATA_TRANSFER);
    }
    if (!unit_failures)
        printf("test-rocm-layer: all passed\n");
    return unit_failures;
}
