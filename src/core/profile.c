/* Call-path tree storage and statistics. */
#include "profile.h"
#include "sig_hold.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SM_PROFILE_BLOCK_NODES 256

uint32_t sm_profile_max_depth = 256;

struct sm_profile_block {
    sm_profile_block_t *next;
    sm_stat_t *counters; /* 2 x n_counters per node, or NULL */
    sm_profile_node_t nodes[SM_PROFILE_BLOCK_NODES];
};

static void sm_profile_node_init(sm_profile_node_t *n, sm_profile_node_t *parent,
                                 sm_region_id_t region)
{
    memset(n, 0, sizeof *n);
    n->parent = parent;
    n->region = region;
    n->depth = parent ? parent->depth + 1 : 0;
    sm_stat_clear(&n->incl);
    sm_stat_clear(&n->excl);
}

void sm_profile_init(sm_profile_t *p)
{
    memset(p, 0, sizeof *p);
    sm_profile_node_init(&p->root, NULL, SM_INVALID_ID);
    sm_profile_node_init(&p->fold, NULL, SM_INVALID_ID);
    p->fold.depth = SM_PROFILE_FOLD_DEPTH;
}

void sm_profile_free(sm_profile_t *p)
{
    for (sm_profile_block_t *b = p->blocks, *next; b; b = next) {
        next = b->next;
        free(b->counters);
        free(b);
    }
    p->blocks = NULL;
    p->free_in_block = 0;
}

sm_profile_node_t *sm_profile_child(sm_profile_t *p, sm_profile_node_t *parent,
                                    sm_region_id_t region)
{
    /* Below the depth limit: no node (the tree and the output stay
     * proportional to the distinct paths above it).  The fold node never
     * becomes anyone's last_hit, so every such enter comes here. */
    if (parent->depth >= sm_profile_max_depth) {
        p->folded_enters++;
        return &p->fold;
    }
    sm_profile_node_t **link = &parent->first_child;
    for (sm_profile_node_t *c = parent->first_child; c; c = c->next_sibling) {
        if (c->region == region) {
            parent->last_hit = c;
            return c;
        }
        link = &c->next_sibling;
    }
    if (p->free_in_block == 0) {
        /* A node is needed for correctness: without memory we cannot go on
         * counting this path, so abort loudly rather than corrupt the tree. */
        sm_profile_block_t *b = NULL; /* cache-line aligned, as the nodes */
        /* (No signal handler may jump out of malloc's lock: sig_hold.h.) */
        sm_sig_hold(SM_SIG_LOCKS);
        if (posix_memalign((void **)&b, 64, sizeof *b) != 0)
            abort();
        b->counters = NULL;
        if (p->n_counters &&
            !(b->counters = malloc(sizeof *b->counters * 2u * p->n_counters *
                                   SM_PROFILE_BLOCK_NODES)))
            abort();
        sm_sig_release();
        b->next = p->blocks;
        p->blocks = b;
        p->free_in_block = SM_PROFILE_BLOCK_NODES;
    }
    uint32_t slot = SM_PROFILE_BLOCK_NODES - p->free_in_block--;
    sm_profile_node_t *n = &p->blocks->nodes[slot];
    sm_profile_node_init(n, parent, region);
    /* A block made before counting began has no room: its nodes go without. */
    if (p->n_counters && p->blocks->counters) {
        n->counters = p->blocks->counters + (size_t)slot * 2u * p->n_counters;
        for (uint32_t i = 0; i < 2u * p->n_counters; i++)
            sm_stat_clear(&n->counters[i]);
    }
    *link = n; /* appended: children stay in first-visit order */
    parent->last_hit = n;
    p->node_count++;
    return n;
}

/* A node's statistics as a new node's. */
static void sm_profile_node_clear(sm_profile_t *p, sm_profile_node_t *n)
{
    n->visits = 0;
    sm_stat_clear(&n->incl);
    sm_stat_clear(&n->excl);
    n->bytes_sent = n->bytes_received = 0;
    n->first_child = n->next_sibling = n->last_hit = NULL;
    for (uint32_t i = 0; n->counters && i < 2u * p->n_counters; i++)
        sm_stat_clear(&n->counters[i]);
}

void sm_profile_restart(sm_profile_t *p, sm_profile_node_t *const *open, uint32_t n_open)
{
    /* The nodes stay where they are (open frames point at them); the tree
     * is cut down to the root and the open path, each node new. */
    sm_profile_node_clear(p, &p->root);
    sm_profile_node_clear(p, &p->fold);
    p->folded_enters = 0;
    p->node_count = 0;
    sm_profile_node_t *parent = &p->root;
    for (uint32_t i = 0; i < n_open; i++) {
        sm_profile_node_t *n = open[i];
        if (!n || n == &p->fold || n->parent != parent)
            break; /* folded, or not a path of this tree: the rest is not kept */
        sm_profile_node_clear(p, n);
        parent->first_child = parent->last_hit = n;
        p->node_count++;
        parent = n;
    }
}

void sm_stat_merge(sm_stat_t *into, const sm_stat_t *from)
{
    into->sum += from->sum;
    into->sumsq += from->sumsq;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

double sm_stat_mean(const sm_stat_t *s, uint64_t n)
{
    return n ? (double)s->sum / (double)n : 0.0;
}

/* n * var = sumsq - sum^2 / n, evaluated in exact integers: sum^2 fits in 128
 * bits because sum fits in 64.  The remainder of the division is the only
 * rounding, so there is no cancellation however large the mean. */
double sm_stat_variance(const sm_stat_t *s, uint64_t n)
{
    if (n < 2)
        return 0.0;
    unsigned __int128 sq = (unsigned __int128)s->sum * s->sum;
    unsigned __int128 q = sq / n;
    unsigned __int128 r = sq % n;
    if (s->sumsq < q)
        return 0.0; /* impossible for consistent data */
    unsigned __int128 m2 = s->sumsq - q;
    double m2d = (double)m2 - (double)r / (double)n;
    return m2d > 0 ? m2d / (double)n : 0.0;
}

void sm_fstat_clear(sm_fstat_t *s)
{
    memset(s, 0, sizeof *s);
}

void sm_fstat_add(sm_fstat_t *s, double v, uint64_t covered)
{
    if (!s->n || v < s->min)
        s->min = v;
    if (!s->n || v > s->max)
        s->max = v;
    s->n++;
    s->covered += covered ? covered : 1;
    s->sum += v;
    double delta = v - s->mean;
    s->mean += delta / (double)s->n;
    s->m2 += delta * (v - s->mean);
}

void sm_fstat_merge(sm_fstat_t *into, const sm_fstat_t *from)
{
    if (!from->n)
        return;
    if (!into->n) {
        *into = *from;
        return;
    }
    double n = (double)(into->n + from->n);
    double delta = from->mean - into->mean;
    into->m2 += from->m2 + delta * delta * (double)into->n * (double)from->n / n;
    into->mean += delta * (double)from->n / n;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    into->n += from->n;
    into->covered += from->covered;
}

double sm_fstat_mean(const sm_fstat_t *s)
{
    return s->n ? s->sum / (double)s->n : 0.0;
}

double sm_fstat_stddev(const sm_fstat_t *s)
{
    return s->n && s->m2 > 0 ? sqrt(s->m2 / (double)s->n) : 0.0;
}

static void sm_profile_walk_node(const sm_profile_node_t *n, sm_profile_visit_fn fn, void *arg)
{
    fn(n, arg);
    for (const sm_profile_node_t *c = n->first_child; c; c = c->next_sibling)
        sm_profile_walk_node(c, fn, arg);
}

void sm_profile_walk(const sm_profile_t *p, sm_profile_visit_fn fn, void *arg)
{
    sm_profile_walk_node(&p->root, fn, arg);
}
