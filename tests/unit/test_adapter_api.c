/* The adapter API's additions for the Kokkos library: forced init, named
 * counter metrics (events and high-water mark), bytes in a region's profile,
 * declared metadata. */
#include <stdlib.h>
#include <string.h>

#include "core/adapter_api.h"
#include "core/events.h"
#include "core/location.h"
#include "core/metrics.h"
#include "core/runtime.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

typedef struct {
    uint32_t metric_events;
    uint64_t values[8];
    uint32_t name, unit;
} seen_t;

static int collect(const sm_record_t *r, void *arg)
{
    seen_t *s = arg;
    if (r->kind == SM_REC_METRIC_NAMED) {
        const uint64_t *w = sm_record_payload(r);
        CHECK_EQ_U(r->words, 2);
        if (s->metric_events < 8)
            s->values[s->metric_events] = w[0];
        s->metric_events++;
        s->name = r->ref;
        s->unit = (uint32_t)w[1];
    }
    return 0;
}

int main(void)
{
    unsetenv("SYSMEASURE_ENABLE");
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    CHECK(api != NULL);
    if (!api)
        return 1;
    CHECK(SM_ADAPTER_API_HAS(api, transfer));
    CHECK(SM_ADAPTER_API_HAS(api, metadata));
    CHECK(SM_ADAPTER_API_HAS(api, sampler_finish_now));
    CHECK(api->metric_define("early", "bytes") == SM_INVALID_ID); /* core not up */

    CHECK_EQ_U(api->runtime_init_forced(), 0);
    sm_runtime_discard_output();
    CHECK(api->runtime_active());

    /* metrics: same name, same id; last and max; one event per sample */
    uint32_t m = api->metric_define("Kokkos Host bytes in use", "bytes");
    CHECK(m != SM_INVALID_ID);
    CHECK_EQ_U(api->metric_define("Kokkos Host bytes in use", "other"), m);
    CHECK(api->metric_define("Kokkos Cuda bytes in use", "bytes") != m);
    api->metric(m, 100);
    api->metric(m, 300);
    api->metric(m, 200);
    api->metric(12345, 1); /* unknown: ignored */
    sm_metric_def_t def;
    CHECK_EQ_U(sm_metric_get(m, &def), 0);
    CHECK_EQ_U(def.last, 200);
    CHECK_EQ_U(def.max, 300);
    CHECK_EQ_U(def.samples, 3);
    CHECK_STR(sm_string_get(def.name), "Kokkos Host bytes in use");
    CHECK_STR(sm_string_get(def.unit), "bytes");
    seen_t seen;
    memset(&seen, 0, sizeof seen);
    sm_buffer_for_each(sm_location_current(), collect, &seen);
    CHECK_EQ_U(seen.metric_events, 3);
    CHECK_EQ_U(seen.values[0], 100);
    CHECK_EQ_U(seen.values[1], 300);
    CHECK_EQ_U(seen.values[2], 200);
    CHECK_STR(sm_string_get(seen.name), "Kokkos Host bytes in use");
    CHECK_STR(sm_string_get(seen.unit), "bytes");

    /* bytes go to the innermost open region's profile */
    sm_region_id_t r = api->region_define("deep_copy", NULL, 0, SM_PARADIGM_KOKKOS, SM_ROLE_FUNCTION);
    api->enter(r);
    api->bytes(8000, 8000);
    api->bytes(16, 0);
    api->leave(r);
    const sm_profile_node_t *n = sm_location_current()->profile.root.first_child;
    CHECK(n != NULL);
    if (n) {
        CHECK_EQ_U(n->region, r);
        CHECK_EQ_U(n->bytes_sent, 8016);
        CHECK_EQ_U(n->bytes_received, 8000);
    }

    /* declared metadata: a key set again keeps its place */
    api->metadata("Kokkos Version", "3.4.1");
    api->metadata("answer", "41");
    api->metadata("answer", "42");
    api->metadata("", "ignored");
    CHECK_EQ_U(sm_runtime_metadata_count(), 2);
    const char *k = NULL, *v = NULL;
    CHECK_EQ_U(sm_runtime_metadata_get(1, &k, &v), 0);
    CHECK_STR(k, "answer");
    CHECK_STR(v, "42");
    CHECK(sm_runtime_metadata_get(2, &k, &v) != 0);
    return unit_failures;
}
