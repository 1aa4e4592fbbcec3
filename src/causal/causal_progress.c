/* Progress points (causal.h): named counters that experiments read at
 * their start and end.  A point is defined at its name's first use (under
 * a lock, once); later passes find it by the name's address in a small
 * per-call-site cache or by comparing names, and add one with an atomic
 * increment.  --causal-progress names regions whose every end is a pass. */
#define _GNU_SOURCE
#include "causal.h"
#include "causal_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/definitions.h"
#include "../util/log.h"

typedef struct sm_cp_point {
    char name[96];
    int latency;        /* a begin/end pair, else a throughput point */
    uint64_t visits;    /* passes; a latency point's ends */
    uint64_t arrivals;  /* a latency point's begins */
} sm_cp_point_t;

static sm_cp_point_t sm_cp_points[SM_CAUSAL_MAX_POINTS];
static uint32_t sm_cp_n; /* published with release after the point is filled */
static pthread_mutex_t sm_cp_lock = PTHREAD_MUTEX_INITIALIZER;
static int sm_cp_full_said;

/* --causal-progress: region names, and per region id what it is. */
#define SM_CP_REGIONS 65536 /* region ids cached; beyond, the name is compared */
static char *sm_cp_region_names[SM_CAUSAL_MAX_POINTS];
static uint32_t sm_cp_n_region_names;
static int8_t sm_cp_region_point[SM_CP_REGIONS]; /* 0 not known, -1 none, k+1 point k */
static int sm_cp_openmp; /* --causal-progress openmp: every parallel region's end */

/* The point named name, made if new; -1 when the table is full. */
static int sm_cp_find(const char *name, int latency)
{
    uint32_t n = __atomic_load_n(&sm_cp_n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(sm_cp_points[i].name, name))
            return (int)i;
    pthread_mutex_lock(&sm_cp_lock);
    int found = -1;
    n = sm_cp_n;
    for (uint32_t i = 0; i < n && found < 0; i++)
        if (!strcmp(sm_cp_points[i].name, name))
            found = (int)i;
    if (found < 0 && n < SM_CAUSAL_MAX_POINTS) {
        snprintf(sm_cp_points[n].name, sizeof sm_cp_points[n].name, "%s", name);
        sm_cp_points[n].latency = latency;
        __atomic_store_n(&sm_cp_n, n + 1, __ATOMIC_RELEASE);
        found = (int)n;
    } else if (found < 0 && !sm_cp_full_said) {
        sm_cp_full_said = 1;
        sm_warning("causal profiling: more than %d progress points; '%s' and later new ones "
                   "are not counted", SM_CAUSAL_MAX_POINTS, name);
    }
    pthread_mutex_unlock(&sm_cp_lock);
    return found;
}

int sm_causal_progress(const char *name, sm_progress_kind_t kind)
{
    if (!sm_causal_running)
        return 0;
    if (!name || !name[0])
        return -1;
    int i = sm_cp_find(name, kind != SM_PROGRESS_THROUGHPUT);
    if (i < 0)
        return -1;
    if (kind == SM_PROGRESS_BEGIN)
        __atomic_add_fetch(&sm_cp_points[i].arrivals, 1, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&sm_cp_points[i].visits, 1, __ATOMIC_RELAXED);
    return 0;
}

void sm_causal_openmp_end(void)
{
    static int point = -1;
    if (!sm_cp_openmp || !sm_causal_running)
        return;
    if (point < 0)
        point = sm_cp_find("openmp", 0);
    if (point >= 0)
        __atomic_add_fetch(&sm_cp_points[point].visits, 1, __ATOMIC_RELAXED);
}

void sm_causal_region_end(sm_region_id_t region)
{
    if (!sm_cp_n_region_names || region == SM_INVALID_ID)
        return;
    int8_t k = region < SM_CP_REGIONS
                   ? __atomic_load_n(&sm_cp_region_point[region], __ATOMIC_RELAXED)
                   : 0;
    if (k == 0) {
        /* First end of this region: is it one of the named ones? */
        const char *name = sm_region_name(region);
        k = -1;
        for (uint32_t i = 0; name && i < sm_cp_n_region_names; i++)
            if (!strcmp(name, sm_cp_region_names[i])) {
                int p = sm_cp_find(name, 0);
                k = p < 0 ? -1 : (int8_t)(p + 1);
                break;
            }
        if (region < SM_CP_REGIONS)
            __atomic_store_n(&sm_cp_region_point[region], k, __ATOMIC_RELAXED);
    }
    if (k > 0)
        __atomic_add_fetch(&sm_cp_points[k - 1].visits, 1, __ATOMIC_RELAXED);
}

int sm_causal_progress_init(const sm_config_t *cfg)
{
    const char *list = cfg->causal_progress;
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k) {
            if (sm_cp_n_region_names == SM_CAUSAL_MAX_POINTS) {
                sm_error("--causal-progress: more than %d regions", SM_CAUSAL_MAX_POINTS);
                return -1;
            }
            if (k == 6 && !strncmp(p, "openmp", 6))
                sm_cp_openmp = 1;
            sm_cp_region_names[sm_cp_n_region_names++] = strndup(p, k);
        }
        p += k + (p[k] == ',');
    }
    return 0;
}

uint32_t sm_causal_points(void)
{
    return __atomic_load_n(&sm_cp_n, __ATOMIC_ACQUIRE);
}

const char *sm_causal_point_name(uint32_t i)
{
    return i < sm_causal_points() ? sm_cp_points[i].name : "";
}

int sm_causal_point_is_latency(uint32_t i)
{
    return i < sm_causal_points() && sm_cp_points[i].latency;
}

void sm_causal_counts_now(sm_causal_counts_t *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = sm_causal_points();
    for (uint32_t i = 0; i < n; i++) {
        out->visits[i] = __atomic_load_n(&sm_cp_points[i].visits, __ATOMIC_RELAXED);
        out->arrivals[i] = __atomic_load_n(&sm_cp_points[i].arrivals, __ATOMIC_RELAXED);
    }
}
