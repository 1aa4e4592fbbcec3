/* Mergeable statistics of call paths (profile_stats.h). */
#include "profile_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t sm_ticks_ns(uint64_t ticks, double npt)
{
    double ns = (double)ticks * npt + 0.5;
    return ns >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)ns;
}

/* ---------------------------------------------------------------- integers */

void sm_mstat_clear(sm_mstat_t *m)
{
    memset(m, 0, sizeof *m);
    sm_stat_clear(&m->st);
    m->min_rank = m->min_loc = m->max_rank = m->max_loc = SM_INVALID_ID;
}

/* (rank, loc) before (rank2, loc2)? */
static bool sm_who_before(uint32_t rank, uint32_t loc, uint32_t rank2, uint32_t loc2)
{
    return rank != rank2 ? rank < rank2 : loc < loc2;
}

void sm_mstat_add(sm_mstat_t *m, uint64_t v, uint32_t rank, uint32_t loc)
{
    if (!m->n || v < m->st.min ||
        (v == m->st.min && sm_who_before(rank, loc, m->min_rank, m->min_loc))) {
        m->min_rank = rank;
        m->min_loc = loc;
    }
    if (!m->n || v > m->st.max ||
        (v == m->st.max && sm_who_before(rank, loc, m->max_rank, m->max_loc))) {
        m->max_rank = rank;
        m->max_loc = loc;
    }
    sm_stat_add(&m->st, v);
    m->n++;
}

void sm_mstat_merge(sm_mstat_t *into, const sm_mstat_t *from)
{
    if (!from->n)
        return;
    if (!into->n) {
        *into = *from;
        return;
    }
    if (from->st.min < into->st.min ||
        (from->st.min == into->st.min &&
         sm_who_before(from->min_rank, from->min_loc, into->min_rank, into->min_loc))) {
        into->min_rank = from->min_rank;
        into->min_loc = from->min_loc;
    }
    if (from->st.max > into->st.max ||
        (from->st.max == into->st.max &&
         sm_who_before(from->max_rank, from->max_loc, into->max_rank, into->max_loc))) {
        into->max_rank = from->max_rank;
        into->max_loc = from->max_loc;
    }
    sm_stat_merge(&into->st, &from->st);
    into->n += from->n;
}

double sm_mstat_mean(const sm_mstat_t *m)
{
    return m->n ? (double)m->st.sum / m->n : 0.0;
}

double sm_mstat_stddev(const sm_mstat_t *m)
{
    double var = sm_stat_variance(&m->st, m->n);
    return var > 0 ? sqrt(var) : 0.0;
}

/* ---------------------------------------------------------------- reals */

void sm_dstat_clear(sm_dstat_t *d)
{
    memset(d, 0, sizeof *d);
    d->min_rank = d->max_rank = SM_INVALID_ID;
}

void sm_dstat_add(sm_dstat_t *d, double v, uint32_t rank)
{
    sm_dstat_t one = {.n = 1, .min_rank = rank, .max_rank = rank, .mean = v, .min = v, .max = v};
    sm_dstat_merge(d, &one);
}

void sm_dstat_merge(sm_dstat_t *into, const sm_dstat_t *from)
{
    if (!from->n)
        return;
    if (!into->n) {
        *into = *from;
        return;
    }
    if (from->min < into->min || (from->min == into->min && from->min_rank < into->min_rank)) {
        into->min = from->min;
        into->min_rank = from->min_rank;
    }
    if (from->max > into->max || (from->max == into->max && from->max_rank < into->max_rank)) {
        into->max = from->max;
        into->max_rank = from->max_rank;
    }
    /* Chan et al.: the combined mean and M2 of two groups. */
    double na = into->n, nb = from->n, n = na + nb;
    double delta = from->mean - into->mean;
    into->mean += delta * nb / n;
    into->m2 += from->m2 + delta * delta * na * nb / n;
    into->n += from->n;
}

/* ---------------------------------------------------------------- rank ranges */

uint32_t sm_rank_bins(uint32_t n_ranks)
{
    return n_ranks < SM_PROFILE_RANK_BINS ? n_ranks : SM_PROFILE_RANK_BINS;
}

uint32_t sm_rank_bin_of(uint32_t rank, uint32_t n_ranks)
{
    if (!n_ranks || rank >= n_ranks)
        return 0;
    return (uint32_t)((uint64_t)rank * sm_rank_bins(n_ranks) / n_ranks);
}

uint32_t sm_rank_bin_first(uint32_t bin, uint32_t n_ranks)
{
    uint64_t nb = sm_rank_bins(n_ranks);
    return nb ? (uint32_t)(((uint64_t)bin * n_ranks + nb - 1) / nb) : 0;
}

/* ---------------------------------------------------------------- paths */

sm_cpath_stats_t *sm_cpath_stats_new(uint32_t nc)
{
    uint32_t nv = SM_PV_COUNT(nc);
    sm_cpath_stats_t *st = malloc(sizeof *st + 2u * nv * sizeof(sm_mstat_t));
    if (!st)
        return NULL;
    memset(st, 0, sizeof *st);
    st->n_values = nv;
    st->threads = (sm_mstat_t *)(st + 1);
    st->ranks = st->threads + nv;
    for (uint32_t i = 0; i < 2u * nv; i++)
        sm_mstat_clear(&st->threads[i]);
    st->visit_incl_min = st->visit_excl_min = UINT64_MAX;
    return st;
}

void sm_cpath_stats_free(sm_cpath_stats_t *st)
{
    if (st)
        free(st->bins);
    free(st);
}

int sm_cpath_stats_grow(sm_cpath_stats_t **stp, uint32_t old_nc, uint32_t nc)
{
    sm_cpath_stats_t *old = *stp;
    if (!old || nc <= old_nc)
        return 0;
    sm_cpath_stats_t *st = sm_cpath_stats_new(nc);
    if (!st)
        return -1;
    sm_mstat_t *threads = st->threads, *ranks = st->ranks;
    uint32_t nv = st->n_values;
    *st = *old;
    st->n_values = nv;
    st->threads = threads;
    st->ranks = ranks;
    /* The fixed values, then the inclusive and the exclusive counters each
     * at their place in the longer list. */
    for (int side = 0; side < 2; side++) {
        const sm_mstat_t *from = side ? old->ranks : old->threads;
        sm_mstat_t *to = side ? ranks : threads;
        memcpy(to, from, SM_PV_COUNTERS * sizeof *to);
        memcpy(to + SM_PV_COUNTERS, from + SM_PV_COUNTERS, old_nc * sizeof *to);
        memcpy(to + SM_PV_COUNTERS + nc, from + SM_PV_COUNTERS + old_nc, old_nc * sizeof *to);
    }
    free(old); /* (its bins now belong to st) */
    *stp = st;
    return 0;
}

void sm_top_insert(sm_rank_value_t *list, uint32_t *n, uint64_t value, uint32_t rank,
                   bool descending)
{
    /* Position: after every entry that ranks before (value, rank). */
    uint32_t at = 0;
    while (at < *n) {
        const sm_rank_value_t *e = &list[at];
        bool before = descending ? e->value > value : e->value < value;
        if (!before && e->value == value)
            before = e->rank < rank;
        if (!before)
            break;
        at++;
    }
    if (at >= SM_PROFILE_TOP_RANKS)
        return;
    uint32_t keep = *n < SM_PROFILE_TOP_RANKS ? *n : SM_PROFILE_TOP_RANKS - 1;
    memmove(&list[at + 1], &list[at], (keep - at) * sizeof *list);
    list[at] = (sm_rank_value_t){value, rank};
    *n = keep + 1;
}

/* Makes the bins cover [first, first + count). */
static int sm_bins_cover(sm_cpath_stats_t *st, uint32_t first, uint32_t count)
{
    if (!count)
        return 0;
    uint32_t lo = first, hi = first + count;
    if (st->n_bins) {
        if (st->bin_first < lo)
            lo = st->bin_first;
        if (st->bin_first + st->n_bins > hi)
            hi = st->bin_first + st->n_bins;
        if (lo == st->bin_first && hi - lo == st->n_bins)
            return 0;
    }
    sm_rank_bin_t *bins = calloc(hi - lo, sizeof *bins);
    if (!bins)
        return -1;
    for (uint32_t b = 0; b < hi - lo; b++)
        bins[b].incl_min = UINT64_MAX;
    if (st->n_bins)
        memcpy(&bins[st->bin_first - lo], st->bins, st->n_bins * sizeof *bins);
    free(st->bins);
    st->bins = bins;
    st->bin_first = lo;
    st->n_bins = hi - lo;
    return 0;
}

static void sm_bin_merge(sm_rank_bin_t *into, const sm_rank_bin_t *from)
{
    if (!from->ranks)
        return;
    into->ranks += from->ranks;
    into->incl_sum += from->incl_sum;
    into->excl_sum += from->excl_sum;
    if (from->incl_min < into->incl_min)
        into->incl_min = from->incl_min;
    if (from->incl_max > into->incl_max)
        into->incl_max = from->incl_max;
}

int sm_cpath_stats_add_rank(sm_cpath_stats_t *st, uint32_t rank, uint32_t n_ranks,
                            const uint64_t *values)
{
    for (uint32_t v = 0; v < st->n_values; v++)
        sm_mstat_add(&st->ranks[v], values[v], rank, SM_INVALID_ID);
    sm_top_insert(st->top, &st->n_top, values[SM_PV_INCL], rank, true);
    sm_top_insert(st->bottom, &st->n_bottom, values[SM_PV_INCL], rank, false);
    uint32_t b = sm_rank_bin_of(rank, n_ranks);
    if (sm_bins_cover(st, b, 1) != 0)
        return -1;
    sm_rank_bin_t one = {1, values[SM_PV_INCL], values[SM_PV_INCL], values[SM_PV_INCL],
                         values[SM_PV_EXCL]};
    sm_bin_merge(&st->bins[b - st->bin_first], &one);
    return 0;
}

int sm_cpath_stats_merge(sm_cpath_stats_t *into, const sm_cpath_stats_t *from,
                         const uint32_t *map)
{
    for (uint32_t v = 0; v < from->n_values; v++) {
        uint32_t to = map ? map[v] : v;
        if (to >= into->n_values)
            continue;
        sm_mstat_merge(&into->threads[to], &from->threads[v]);
        sm_mstat_merge(&into->ranks[to], &from->ranks[v]);
    }
    if (from->visit_incl_min < into->visit_incl_min)
        into->visit_incl_min = from->visit_incl_min;
    if (from->visit_excl_min < into->visit_excl_min)
        into->visit_excl_min = from->visit_excl_min;
    if (from->visit_incl_max > into->visit_incl_max)
        into->visit_incl_max = from->visit_incl_max;
    if (from->visit_excl_max > into->visit_excl_max)
        into->visit_excl_max = from->visit_excl_max;
    into->visit_incl_sumsq += from->visit_incl_sumsq;
    for (uint32_t i = 0; i < from->n_top; i++)
        sm_top_insert(into->top, &into->n_top, from->top[i].value, from->top[i].rank, true);
    for (uint32_t i = 0; i < from->n_bottom; i++)
        sm_top_insert(into->bottom, &into->n_bottom, from->bottom[i].value, from->bottom[i].rank,
                      false);
    if (sm_bins_cover(into, from->bin_first, from->n_bins) != 0)
        return -1;
    for (uint32_t b = 0; b < from->n_bins; b++)
        sm_bin_merge(&into->bins[from->bin_first + b - into->bin_first], &from->bins[b]);
    return 0;
}
