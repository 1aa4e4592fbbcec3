/* Profile: exact statistics for planted durations, exclusive time, call
 * paths, mismatched leaves and deep recursion. */
#include <stdint.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/profile.h"
#include "unit.h"

static sm_profile_node_t *child(sm_profile_node_t *parent, sm_region_id_t r)
{
    for (sm_profile_node_t *c = parent->first_child; c; c = c->next_sibling)
        if (c->region == r)
            return c;
    return NULL;
}

int main(void)
{
    /* Statistics: exact, and free of cancellation for large values. */
    sm_stat_t s;
    sm_stat_clear(&s);
    sm_stat_add(&s, 10);
    sm_stat_add(&s, 20);
    sm_stat_add(&s, 30);
    CHECK_EQ_U(s.sum, 60);
    CHECK_EQ_U(s.min, 10);
    CHECK_EQ_U(s.max, 30);
    CHECK_NEAR(sm_stat_mean(&s, 3), 20.0, 0);
    CHECK_NEAR(sm_stat_variance(&s, 3), 200.0 / 3.0, 1e-12);
    sm_stat_t big;
    sm_stat_clear(&big);
    for (uint64_t v = 1; v <= 3; v++)
        sm_stat_add(&big, 1000000000000000ull + v); /* 1e15 + {1,2,3} */
    CHECK_NEAR(sm_stat_variance(&big, 3), 2.0 / 3.0, 1e-9);
    /* Merging two halves equals adding all. */
    sm_stat_t a, b, all;
    sm_stat_clear(&a);
    sm_stat_clear(&b);
    sm_stat_clear(&all);
    for (uint64_t v = 1; v <= 100; v++) {
        sm_stat_add(v <= 40 ? &a : &b, v * v);
        sm_stat_add(&all, v * v);
    }
    sm_stat_merge(&a, &b);
    CHECK_EQ_U(a.sum, all.sum);
    CHECK_EQ_U(a.min, all.min);
    CHECK_EQ_U(a.max, all.max);
    CHECK(a.sumsq == all.sumsq);
    CHECK_NEAR(sm_stat_variance(&a, 100), sm_stat_variance(&all, 100), 0);
    CHECK_NEAR(sm_stat_variance(&s, 1), 0.0, 0);

    /* Planted timeline, timestamps in ticks:
     *   A [0, 100]  containing  B [10, 30]  and  B [40, 70]  and C [75, 80]
     *   then A [200, 260] containing B [210, 215] */
    sm_clock_init(SM_CLOCK_AUTO);
    sm_buffers_configure(1u << 20, 64u << 10);
    sm_locations_set_modes(0, 1, 1);
    sm_location_t *loc = sm_location_create(SM_LOCATION_CPU_THREAD, "planted");
    sm_region_id_t A = sm_region_define("A", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t B = sm_region_define("B", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t C = sm_region_define("C", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_event_enter(loc, A, 0);
    sm_event_enter(loc, B, 10);
    sm_event_leave(loc, B, 30);
    sm_event_enter(loc, B, 40);
    sm_event_leave(loc, B, 70);
    sm_event_enter(loc, C, 75);
    sm_event_leave(loc, C, 80);
    sm_event_leave(loc, A, 100);
    sm_event_enter(loc, A, 200);
    sm_event_enter(loc, B, 210);
    sm_event_leave(loc, B, 215);
    sm_event_leave(loc, A, 260);

    sm_profile_node_t *na = child(&loc->profile.root, A);
    CHECK(na != NULL);
    if (na) {
        CHECK_EQ_U(na->depth, 1);
        CHECK_EQ_U(na->visits, 2);
        CHECK_EQ_U(na->incl.sum, 160);
        CHECK_EQ_U(na->incl.min, 60);
        CHECK_EQ_U(na->incl.max, 100);
        CHECK_NEAR(sm_stat_variance(&na->incl, 2), 400.0, 1e-9);
        /* exclusive: 100 - 20 - 30 - 5 = 45 and 60 - 5 = 55 */
        CHECK_EQ_U(na->excl.sum, 100);
        CHECK_EQ_U(na->excl.min, 45);
        CHECK_EQ_U(na->excl.max, 55);
        sm_profile_node_t *nb = child(na, B), *nc = child(na, C);
        CHECK(nb && nc);
        if (nb && nc) {
            CHECK_EQ_U(nb->depth, 2);
            CHECK_EQ_U(nb->visits, 3);
            CHECK_EQ_U(nb->incl.sum, 55);
            CHECK_EQ_U(nb->incl.min, 5);
            CHECK_EQ_U(nb->incl.max, 30);
            CHECK_EQ_U(nb->excl.sum, 55);
            /* 20, 30, 5: mean 55/3, population variance */
            double m = 55.0 / 3;
            double var = ((20 - m) * (20 - m) + (30 - m) * (30 - m) + (5 - m) * (5 - m)) / 3;
            CHECK_NEAR(sm_stat_variance(&nb->incl, 3), var, 1e-9);
            CHECK_EQ_U(nc->visits, 1);
            CHECK_EQ_U(nc->incl.sum, 5);
            CHECK(na->first_child == nb); /* first-visit order */
        }
    }
    CHECK(child(&loc->profile.root, B) == NULL);

    /* A leave of an outer region closes the inner one at the same time. */
    sm_event_enter(loc, C, 300);
    sm_event_enter(loc, B, 310);
    sm_event_leave(loc, C, 330);
    CHECK(loc->sp == loc->stack);
    sm_profile_node_t *nc = child(&loc->profile.root, C);
    CHECK(nc && nc->visits == 1 && nc->incl.sum == 30);
    sm_profile_node_t *ncb = nc ? child(nc, B) : NULL;
    CHECK(ncb && ncb->visits == 1 && ncb->incl.sum == 20);
    /* A leave of a region that is not open is counted, changes nothing. */
    sm_event_leave(loc, A, 400);
    CHECK_EQ_U(loc->unmatched_leaves, 1);

    /* Deep recursion grows the frame stack; the tree up to the limit. */
    for (uint64_t i = 0; i < 1000; i++)
        sm_event_enter(loc, A, 1000 + i);
    CHECK_EQ_U(loc->sp - loc->stack, 1000);
    for (uint64_t i = 0; i < 1000; i++)
        sm_event_leave(loc, A, 3000 + i);
    CHECK(loc->sp == loc->stack);
    /* The tree stops at the depth limit (256): the 744 deeper enters fold
     * into the node at depth 256, whose time they become. */
    sm_profile_node_t *deep = &loc->profile.root;
    for (int i = 0; i < 256 && deep; i++)
        deep = child(deep, A);
    CHECK(deep && deep->depth == 256 && deep->visits == 1 && deep->first_child == NULL);
    CHECK_EQ_U(loc->profile.folded_enters, 744);
    if (deep) {
        CHECK_EQ_U(deep->incl.sum, 3744 - 1255); /* depth 256: [1255, 3744] */
        CHECK_EQ_U(deep->excl.sum, 3744 - 1255); /* the folded time is its own */
        CHECK_EQ_U(deep->parent->excl.sum, 2);   /* depth 255: [1254, 3745] */
    }
    CHECK(loc->profile.node_count < 300);
    return UNIT_RESULT();
}
