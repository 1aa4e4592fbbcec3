/* The counter-source interface, through the null source (the template):
 * the core defines its event as a counter metric, reads it at every enter
 * and leave of a bound thread, and turns the values into inclusive and
 * exclusive statistics per call path:
 *   A { B {} B {} }: reads 0 (A) 1 2 (B) 3 4 (B) 5 (A)
 *   B: 2 visits of 1, exclusive 1 each; A: inclusive 5, exclusive 3. */
#include <stdint.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/metrics.h"
#include "core/profile.h"
#include "core/subsystem.h"
#include "sources/null/null_source.h"
#include "unit.h"

/* This test's lists, in place of src/plugins.c's: the null source, no
 * subsystem. */
const sm_counter_source_t *const sm_counter_sources[] = {&sm_null_source, NULL};
const sm_subsystem_t *const sm_subsystems[] = {NULL};

static sm_profile_node_t *child(sm_profile_node_t *parent, sm_region_id_t r)
{
    for (sm_profile_node_t *c = parent->first_child; c; c = c->next_sibling)
        if (c->region == r)
            return c;
    return NULL;
}

static void test_definitions(void)
{
    CHECK_EQ_U(sm_counters_count(), 1);
    CHECK_STR(sm_counters_name(0), "null_reads");
    CHECK(sm_counters_name(1) == NULL);
    sm_metric_def_t m;
    CHECK(sm_metric_get(sm_counters_first_metric(), &m) == 0);
    CHECK_STR(sm_string_get(m.name), "null_reads");
}

static void test_nested_regions(void)
{
    sm_buffers_configure(1u << 20, 64u << 10);
    sm_locations_set_modes(0, 1, 1);
    sm_location_t *loc = sm_location_create(SM_LOCATION_CPU_THREAD, "counted");
    sm_tls_location = loc; /* only the thread itself reads its counters */
    sm_counters_thread_start(loc);
    CHECK(loc->counters != NULL);
    sm_region_id_t A = sm_region_define("A", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t B = sm_region_define("B", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_event_enter(loc, A, 0);
    sm_event_enter(loc, B, 10);
    sm_event_leave(loc, B, 20);
    sm_event_enter(loc, B, 30);
    sm_event_leave(loc, B, 40);
    sm_event_leave(loc, A, 50);
    sm_profile_node_t *na = child(&loc->profile.root, A), *nb = na ? child(na, B) : NULL;
    CHECK(na && nb && na->counters && nb->counters);
    if (na && nb && na->counters && nb->counters) {
        /* counters[0]: inclusive, counters[n]: exclusive */
        CHECK_EQ_U(nb->counters[0].sum, 2);
        CHECK_EQ_U(nb->counters[0].max, 1);
        CHECK_EQ_U(nb->counters[1].sum, 2);
        CHECK_EQ_U(na->counters[0].sum, 5);
        CHECK_EQ_U(na->counters[1].sum, 3);
    }
    sm_counters_thread_stop(loc);
    CHECK(loc->counters == NULL);
}

int main(void)
{
    sm_clock_init(SM_CLOCK_AUTO);
    sm_definitions_init();
    sm_locations_init();
    sm_config_t cfg;
    sm_config_init_defaults(&cfg);
    CHECK(sm_counters_init(&cfg) == 0);
    test_definitions();
    test_nested_regions();
    return unit_failures;
}
