/* Async ranges on lanes of their own (see async_ranges.h). */
#include "async_ranges.h"

#include <pthread.h>
#include <stdio.h>

#include "location.h"
#include "runtime.h"
#include "sig_hold.h"
#include "util/log.h"

/* Ranges overlapping more of their kind than this are not recorded: the
 * first such loss is said on stderr and the count goes to metadata.json. */
#define SM_ASYNC_LANES 64

static pthread_mutex_t sm_ar_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    sm_location_t *loc;
    uint64_t last_end; /* the leave time of the last range written on it */
} sm_ar_lanes[SM_ASYNC_LANES];
static uint32_t sm_ar_n;
static uint64_t sm_ar_lost;

/* Under sm_ar_lock. */
static void sm_async_range_lost(void)
{
    char count[24];
    if (!sm_ar_lost++)
        sm_warning("more than %d overlapping async ranges (ROCTx/NVTX start/stop): the others "
                   "are not recorded; their count is async_ranges_lost in metadata.json",
                   SM_ASYNC_LANES);
    snprintf(count, sizeof count, "%llu", (unsigned long long)sm_ar_lost);
    sm_runtime_metadata_set("async_ranges_lost", count);
}

static int sm_async_range_held(sm_region_id_t region, uint64_t start, uint64_t end,
                                const sm_attr_value_t *attrs, uint32_t n);

/* On the program's thread (its stop call), under two locks: no signal
 * handler may jump out meanwhile (sig_hold.h). */
int sm_async_range(sm_region_id_t region, uint64_t start, uint64_t end,
                   const sm_attr_value_t *attrs, uint32_t n)
{
    sm_sig_hold(SM_SIG_LOCKS);
    int rc = sm_async_range_held(region, start, end, attrs, n);
    sm_sig_release();
    return rc;
}

static int sm_async_range_held(sm_region_id_t region, uint64_t start, uint64_t end,
                                const sm_attr_value_t *attrs, uint32_t n)
{
    if (end < start)
        end = start;
    pthread_mutex_lock(&sm_ar_lock);
    /* Ranges arrive in the order of their stops, so a lane whose last range
     * ended by this one's start holds nothing it overlaps. */
    uint32_t k = 0;
    while (k < sm_ar_n && sm_ar_lanes[k].last_end > start)
        k++;
    if (k == sm_ar_n) {
        char name[32];
        snprintf(name, sizeof name, "async ranges %u", k);
        sm_location_t *loc = k < SM_ASYNC_LANES
                                 ? sm_location_create(SM_LOCATION_CPU_THREAD, name)
                                 : NULL;
        if (!loc) {
            sm_async_range_lost();
            pthread_mutex_unlock(&sm_ar_lock);
            return -1;
        }
        /* The lane exists from its first range's start on. */
        if (start < loc->begin_time) {
            loc->begin_time = start;
            loc->stack[0].start = start;
        }
        loc->thread_enabled = 1;
        sm_ar_lanes[k].loc = loc;
        sm_ar_lanes[k].last_end = 0;
        sm_ar_n++;
    }
    sm_location_t *loc = sm_ar_lanes[k].loc;
    if (loc->closed) { /* measurement is over */
        pthread_mutex_unlock(&sm_ar_lock);
        return -1;
    }
    pthread_mutex_lock(&loc->lock);
    sm_event_enter_attrs(loc, region, start, attrs, n);
    sm_event_leave(loc, region, end);
    pthread_mutex_unlock(&loc->lock);
    sm_ar_lanes[k].last_end = end;
    pthread_mutex_unlock(&sm_ar_lock);
    return 0;
}

uint64_t sm_async_ranges_lost(void)
{
    pthread_mutex_lock(&sm_ar_lock);
    uint64_t n = sm_ar_lost;
    pthread_mutex_unlock(&sm_ar_lock);
    return n;
}
