/* Simulated ranks as coroutines behind sm_procs_t (sim_procs.h). */
#define _GNU_SOURCE
#include "sim_procs.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* Virtual size of a rank's stack; only the pages it touches are memory. */
#define SIM_STACK_BYTES (256u * 1024u)

/* Point-to-point messages and the collectives' own never match each other
 * (MPI keeps them apart by communicator and tag). */
enum { SIM_TAG_P2P, SIM_TAG_COLL };

typedef struct sim_msg {
    struct sim_msg *next;
    uint32_t src;
    uint32_t tag;
    void *data;
    uint64_t len;
    double at_cpu; /* the sender's cpu clock at the send */
    double at_net; /* its arrival under the network model */
} sim_msg_t;

typedef enum { SIM_NEW, SIM_RUNNABLE, SIM_BLOCKED, SIM_DONE } sim_state_t;

typedef struct sim_rank {
    ucontext_t uc;
    sm_procs_t procs;
    uint32_t rank;
    sim_state_t state;
    uint32_t wait_src, wait_tag;
    sim_msg_t *head, *tail; /* mailbox, in arrival order */
    double vc, vn;          /* virtual clocks, s */
    double cpu, phase_cpu;  /* own timed CPU time, s */
    uint32_t phase;
    int untimed;
    int64_t live; /* bytes held (sim_mem_note) */
} sim_rank_t;

int64_t sim_current = -1;

static struct {
    sim_rank_t *ranks;
    uint32_t n;
    ucontext_t sched;
    char *stacks;
    sim_rank_fn fn;
    void *arg;
    sim_stats_t *st;
    uint64_t seg_start; /* ns of CPU time when the running segment began */
    int mem_paused;     /* the transport's own allocations: nobody's */
} sim;

static uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static sim_rank_t *sim_me(void)
{
    return sim_current >= 0 ? &sim.ranks[sim_current] : NULL;
}

/* The running rank's CPU time since the last call goes to its clocks. */
static void sim_account(sim_rank_t *me)
{
    uint64_t t = sim_now_ns();
    double dt = (double)(t - sim.seg_start) * 1e-9;
    sim.seg_start = t;
    if (me->untimed) {
        sim.st->untimed_s += dt;
        return;
    }
    me->cpu += dt;
    me->phase_cpu += dt;
    me->vc += dt;
    me->vn += dt;
}

/* ---------------------------------------------------------------- memory */

static void sim_mem_add(sim_rank_t *r, int64_t delta)
{
    r->live += delta;
    if (r->rank != 0)
        return;
    sim_phase_stats_t *ph = &sim.st->phase[r->phase];
    if (r->live > ph->root_peak_bytes)
        ph->root_peak_bytes = r->live;
    if (r->live > sim.st->root_peak_bytes)
        sim.st->root_peak_bytes = r->live;
}

void sim_mem_note(int64_t delta)
{
    if (sim_current < 0 || sim.mem_paused || !sim.ranks)
        return;
    sim_mem_add(&sim.ranks[sim_current], delta);
}

/* ---------------------------------------------------------------- phases */

static void sim_phase_close(sim_rank_t *me)
{
    sim_phase_stats_t *ph = &sim.st->phase[me->phase];
    if (me->vc > ph->crit_cpu_s)
        ph->crit_cpu_s = me->vc;
    if (me->vn > ph->crit_net_s)
        ph->crit_net_s = me->vn;
    ph->all_cpu_s += me->phase_cpu;
    if (me->rank == 0)
        ph->root_cpu_s = me->phase_cpu;
    if (me->rank == sim.n - 1)
        ph->last_cpu_s = me->phase_cpu;
    if (me->phase_cpu > ph->max_cpu_s) {
        ph->max_cpu_s = me->phase_cpu;
        ph->max_cpu_rank = me->rank;
    }
    me->phase_cpu = 0;
}

void sim_phase(uint32_t k, const char *name)
{
    sim_rank_t *me = sim_me();
    if (!me || k >= SIM_MAX_PHASES)
        return;
    sim_account(me);
    sim_phase_close(me);
    me->phase = k;
    if (!sim.st->phase[k].name)
        sim.st->phase[k].name = name;
    if (me->rank == 0 && me->live > sim.st->phase[k].root_peak_bytes)
        sim.st->phase[k].root_peak_bytes = me->live;
    sim.seg_start = sim_now_ns();
}

void sim_untimed_begin(void)
{
    sim_rank_t *me = sim_me();
    if (!me)
        return;
    sim_account(me);
    me->untimed++;
}

void sim_untimed_end(void)
{
    sim_rank_t *me = sim_me();
    if (!me)
        return;
    sim_account(me);
    if (me->untimed > 0)
        me->untimed--;
}

/* ---------------------------------------------------------------- messages */

/* To the scheduler until someone makes this rank runnable again. */
static void sim_block(sim_rank_t *me)
{
    sim_account(me);
    me->state = SIM_BLOCKED;
    swapcontext(&me->uc, &sim.sched);
}

static int sim_send_tag(sim_rank_t *me, uint32_t dest, uint32_t tag, const void *buf,
                        uint64_t len)
{
    if (dest >= sim.n || len > SIZE_MAX - 1)
        return -1;
    sim.mem_paused++;
    sim_msg_t *m = malloc(sizeof *m);
    void *copy = malloc(len ? (size_t)len : 1);
    sim.mem_paused--;
    if (!m || !copy) {
        sim.mem_paused++;
        free(m);
        free(copy);
        sim.mem_paused--;
        return -1;
    }
    if (len)
        memcpy(copy, buf, (size_t)len);
    sim_rank_t *to = &sim.ranks[dest];
    /* The copy waits in the destination's memory (MPI's eager buffer). */
    sim_mem_add(to, (int64_t)malloc_usable_size(copy));
    sim_account(me); /* (the copy is the sender's work) */
    me->vn += (double)len / SIM_NET_BYTES_PER_S;
    *m = (sim_msg_t){.src = me->rank, .tag = tag, .data = copy, .len = len, .at_cpu = me->vc,
                     .at_net = me->vn + SIM_NET_LATENCY_S};
    if (to->tail)
        to->tail->next = m;
    else
        to->head = m;
    to->tail = m;
    if (to->state == SIM_BLOCKED && to->wait_src == me->rank && to->wait_tag == tag)
        to->state = SIM_RUNNABLE;
    sim_phase_stats_t *ph = &sim.st->phase[me->phase];
    ph->all_msgs++;
    ph->all_bytes += len;
    return 0;
}

static int sim_recv_tag(sim_rank_t *me, uint32_t src, uint32_t tag, void **buf, uint64_t *len)
{
    *buf = NULL;
    *len = 0;
    if (src >= sim.n)
        return -1;
    for (;;) {
        sim_msg_t *prev = NULL;
        for (sim_msg_t *m = me->head; m; prev = m, m = m->next) {
            if (m->src != src || m->tag != tag)
                continue;
            if (prev)
                prev->next = m->next;
            else
                me->head = m->next;
            if (me->tail == m)
                me->tail = prev;
            sim_account(me);
            if (m->at_cpu > me->vc)
                me->vc = m->at_cpu;
            if (m->at_net > me->vn)
                me->vn = m->at_net;
            *buf = m->data;
            *len = m->len;
            if (me->rank == 0) {
                sim_phase_stats_t *ph = &sim.st->phase[me->phase];
                ph->root_msgs++;
                ph->root_bytes += m->len;
                if (m->len > ph->root_max_msg)
                    ph->root_max_msg = m->len;
            }
            sim.mem_paused++;
            free(m);
            sim.mem_paused--;
            return 0;
        }
        me->wait_src = src;
        me->wait_tag = tag;
        sim_block(me);
    }
}

/* ---------------------------------------------------------------- sm_procs_t */

static int sim_send(void *ctx, uint32_t dest, const void *buf, uint64_t len)
{
    return sim_send_tag(ctx, dest, SIM_TAG_P2P, buf, len);
}

static int sim_recv(void *ctx, uint32_t src, void **buf, uint64_t *len)
{
    return sim_recv_tag(ctx, src, SIM_TAG_P2P, buf, len);
}

/* Binomial tree over the ranks relative to root, as MPI libraries do for
 * short and medium messages. */
static int sim_bcast(void *ctx, uint32_t root, void **buf, uint64_t *len)
{
    sim_rank_t *me = ctx;
    uint32_t n = sim.n, vr = (me->rank + n - root) % n, mask = 1;
    int rc = 0;
    while (mask < n) {
        if (vr & mask) {
            if (sim_recv_tag(me, (me->rank + n - mask) % n, SIM_TAG_COLL, buf, len) != 0)
                return -1;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n &&
            sim_send_tag(me, (me->rank + mask) % n, SIM_TAG_COLL, *buf ? *buf : "", *len) != 0)
            rc = -1;
    return rc;
}

/* Dissemination: log2(P) rounds of one empty message each way. */
static int sim_barrier(void *ctx)
{
    sim_rank_t *me = ctx;
    uint32_t n = sim.n;
    for (uint32_t k = 1; k < n; k <<= 1) {
        void *b = NULL;
        uint64_t l = 0;
        if (sim_send_tag(me, (me->rank + k) % n, SIM_TAG_COLL, "", 0) != 0 ||
            sim_recv_tag(me, (me->rank + n - k) % n, SIM_TAG_COLL, &b, &l) != 0)
            return -1;
        free(b);
    }
    return 0;
}

/* Binomial gather: each rank sends its subtree's contributions, contiguous
 * in relative rank order, to its parent. */
static int sim_gather(void *ctx, uint32_t root, const void *sendbuf, uint64_t len,
                      void *recvbuf)
{
    sim_rank_t *me = ctx;
    uint32_t n = sim.n, vr = (me->rank + n - root) % n;
    uint32_t span = vr ? (vr & -vr) : n; /* the subtree's size, at most */
    if (span > n - vr)
        span = n - vr;
    uint64_t room = len * span;
    uint8_t *tmp = (vr == 0 && root == 0) ? recvbuf : malloc(room ? (size_t)room : 1);
    if (!tmp)
        return -1;
    memmove(tmp, sendbuf, len);
    uint64_t have = 1;
    int rc = 0;
    for (uint32_t mask = 1; mask < n; mask <<= 1) {
        if (vr & mask) {
            rc = sim_send_tag(me, (me->rank + n - mask) % n, SIM_TAG_COLL, tmp, have * len);
            break;
        }
        if (vr + mask < n) {
            void *b = NULL;
            uint64_t l = 0;
            if (sim_recv_tag(me, (me->rank + mask) % n, SIM_TAG_COLL, &b, &l) != 0 ||
                l > (span - mask) * len) {
                free(b);
                rc = -1;
                continue;
            }
            memcpy(tmp + mask * len, b, l);
            have += len ? l / len : 0;
            free(b);
        }
    }
    if (vr == 0 && root != 0)
        for (uint32_t i = 0; i < n; i++)
            memcpy((uint8_t *)recvbuf + (size_t)((i + root) % n) * len, tmp + (size_t)i * len,
                   len);
    if (tmp != recvbuf)
        free(tmp);
    return rc;
}

/* Reduce to rank 0 along the binomial tree, then broadcast the result. */
static int sim_allreduce(sim_rank_t *me, uint64_t *values, uint32_t count, int max)
{
    uint32_t n = sim.n;
    uint64_t bytes = sizeof *values * count;
    int rc = 0;
    for (uint32_t mask = 1; mask < n; mask <<= 1) {
        if (me->rank & mask) {
            rc |= sim_send_tag(me, me->rank - mask, SIM_TAG_COLL, values, bytes);
            break;
        }
        if (me->rank + mask < n) {
            void *b = NULL;
            uint64_t l = 0;
            if (sim_recv_tag(me, me->rank + mask, SIM_TAG_COLL, &b, &l) != 0 || l != bytes) {
                free(b);
                rc = -1;
                continue;
            }
            const uint64_t *v = b;
            for (uint32_t i = 0; i < count; i++)
                values[i] = max ? (v[i] > values[i] ? v[i] : values[i]) : values[i] + v[i];
            free(b);
        }
    }
    void *res = me->rank == 0 ? values : NULL;
    uint64_t rlen = bytes;
    if (sim_bcast(me, 0, &res, &rlen) != 0 || rlen != bytes)
        return -1;
    if (me->rank != 0) {
        memcpy(values, res, bytes);
        free(res);
    }
    return rc;
}

static int sim_allreduce_max(void *ctx, uint64_t *values, uint32_t n)
{
    return sim_allreduce(ctx, values, n, 1);
}

static int sim_allreduce_sum(void *ctx, uint64_t *values, uint32_t n)
{
    return sim_allreduce(ctx, values, n, 0);
}

static int sim_otf2_collectives(void *ctx, void *archive)
{
    (void)ctx, (void)archive;
    return -1; /* no archive is written by simulated ranks */
}

/* ---------------------------------------------------------------- the scheduler */

static void sim_entry(void)
{
    sim_rank_t *me = &sim.ranks[sim_current];
    sim.fn(&me->procs, sim.arg);
    sim_account(me);
    sim_phase_close(me);
    me->state = SIM_DONE;
    /* returns to sim.sched through uc_link */
}

/* Its stack's touched pages, then given back. */
static size_t sim_stack_release(uint32_t r)
{
    char *base = sim.stacks + (size_t)r * SIM_STACK_BYTES;
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = SIM_STACK_BYTES / (size_t)page, touched = 0;
    unsigned char vec[SIM_STACK_BYTES / 4096];
    if (pages <= sizeof vec && mincore(base, SIM_STACK_BYTES, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            touched += vec[i] & 1;
    madvise(base, SIM_STACK_BYTES, MADV_DONTNEED);
    return touched * (size_t)page;
}

int sim_run(uint32_t n_ranks, sim_rank_fn fn, void *arg, sim_stats_t *stats)
{
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    memset(stats, 0, sizeof *stats);
    stats->n_ranks = n_ranks;
    memset(&sim, 0, sizeof sim);
    sim.n = n_ranks;
    sim.fn = fn;
    sim.arg = arg;
    sim.st = stats;
    sim.ranks = calloc(n_ranks, sizeof *sim.ranks);
    size_t stack_all = (size_t)n_ranks * SIM_STACK_BYTES;
    void *stacks = mmap(NULL, stack_all, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!sim.ranks || stacks == MAP_FAILED) {
        fprintf(stderr, "sim: out of memory for %u ranks\n", n_ranks);
        free(sim.ranks);
        sim.ranks = NULL;
        return -1;
    }
    sim.stacks = stacks;
    for (uint32_t r = 0; r < n_ranks; r++) {
        sim_rank_t *R = &sim.ranks[r];
        R->rank = r;
        R->procs = (sm_procs_t){
            .rank = r,
            .size = n_ranks,
            .ctx = R,
            .send = sim_send,
            .recv = sim_recv,
            .bcast = sim_bcast,
            .barrier = sim_barrier,
            .gather = sim_gather,
            .allreduce_max_u64 = sim_allreduce_max,
            .allreduce_sum_u64 = sim_allreduce_sum,
            .otf2_collectives = sim_otf2_collectives,
        };
    }

    uint32_t done = 0;
    int rc = 0;
    while (done < n_ranks) {
        int progress = 0;
        stats->sweeps++;
        for (uint32_t r = 0; r < n_ranks; r++) {
            sim_rank_t *R = &sim.ranks[r];
            if (R->state == SIM_NEW) {
                getcontext(&R->uc);
                R->uc.uc_stack.ss_sp = sim.stacks + (size_t)r * SIM_STACK_BYTES;
                R->uc.uc_stack.ss_size = SIM_STACK_BYTES;
                R->uc.uc_link = &sim.sched;
                makecontext(&R->uc, sim_entry, 0);
                R->state = SIM_RUNNABLE;
            }
            if (R->state != SIM_RUNNABLE)
                continue;
            sim_current = r;
            sim.seg_start = sim_now_ns();
            swapcontext(&sim.sched, &R->uc);
            sim_current = -1;
            stats->switches++;
            progress = 1;
            if (R->state == SIM_DONE) {
                done++;
                size_t used = sim_stack_release(r);
                if (used > stats->max_stack_bytes)
                    stats->max_stack_bytes = used;
                if (used >= SIM_STACK_BYTES) {
                    fprintf(stderr, "sim: rank %u used its whole stack\n", r);
                    rc = -1;
                }
                stats->ranks_cpu_s += R->cpu;
                if (R->vc > stats->crit_cpu_s)
                    stats->crit_cpu_s = R->vc;
                if (R->vn > stats->crit_net_s)
                    stats->crit_net_s = R->vn;
            }
        }
        if (!progress) {
            fprintf(stderr, "sim: %u of %u ranks wait for messages that never come\n",
                    n_ranks - done, n_ranks);
            rc = -1;
            break;
        }
    }
    /* Messages nobody received (a bug in the exchange being measured). */
    uint64_t left = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        for (sim_msg_t *m = sim.ranks[r].head, *next; m; m = next) {
            next = m->next;
            free(m->data);
            free(m);
            left++;
        }
    if (left && rc == 0) {
        fprintf(stderr, "sim: %llu messages were never received\n", (unsigned long long)left);
        rc = -1;
    }
    munmap(sim.stacks, stack_all);
    free(sim.ranks);
    sim.ranks = NULL;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    stats->wall_s = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9;
    return rc;
}
