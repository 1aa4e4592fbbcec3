/* The disk space of a process's trace (see trace_space.h). */
#include "trace_space.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "buffer.h"
#include "clock.h"
#include "../util/log.h"

/* statvfs at most this often while the room left is large. */
#define SM_SPACE_STATFS_NS (100ull * 1000 * 1000)

int sm_space_stopped_flag;

static pthread_mutex_t sm_space_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sm_space_max;        /* bytes; 0: no limit */
static uint64_t sm_space_floor;      /* bytes; 0: see the fraction */
static double sm_space_floor_frac;   /* of the file system; 0: none */
static uint64_t sm_space_staged;     /* atomic */
static int sm_space_staging_off;     /* the staging was stopped (lock) */
static sm_space_reason_t sm_space_why = SM_SPACE_RUNNING;
static uint64_t sm_space_at_ns;
static uint32_t sm_space_rank;
/* The last statvfs (lock): when, what it said, the trace's bytes then and
 * the room it left above the floor. */
static int sm_space_fs_known;
static uint64_t sm_space_fs_ns, sm_space_fs_bytes, sm_space_fs_room;

void sm_space_configure(uint64_t max_bytes, uint64_t min_free_bytes, double min_free_fraction)
{
    pthread_mutex_lock(&sm_space_lock);
    sm_space_max = max_bytes;
    sm_space_floor = min_free_bytes;
    sm_space_floor_frac = min_free_bytes ? 0.0 : min_free_fraction;
    pthread_mutex_unlock(&sm_space_lock);
}

void sm_space_set_rank(uint32_t rank)
{
    pthread_mutex_lock(&sm_space_lock);
    sm_space_rank = rank;
    pthread_mutex_unlock(&sm_space_lock);
}

void sm_space_staged_add(int64_t bytes)
{
    __atomic_add_fetch(&sm_space_staged, (uint64_t)bytes, __ATOMIC_RELAXED);
}

/* "8.0 MiB". */
static void sm_space_size(uint64_t v, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024.0 && u < 4) {
        x /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)v);
    else
        snprintf(buf, len, "%.1f %s", x, unit[u]);
}

/* The floor as text: "5%" or "1.0 GiB". */
static void sm_space_floor_text(char *buf, size_t len)
{
    if (sm_space_floor)
        sm_space_size(sm_space_floor, buf, len);
    else
        snprintf(buf, len, "%g%% of the file system", sm_space_floor_frac * 100.0);
}

/* The trace stops (lock held): said once, in one line. */
static void sm_space_stop(sm_space_reason_t why, const char *where, uint64_t avail,
                          uint64_t bytes)
{
    uint64_t ns = sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns();
    char a[64], b[96], text[640];
    if (why == SM_SPACE_MAX_SIZE) {
        sm_space_size(bytes, a, sizeof a);
        sm_space_size(sm_space_max, b, sizeof b);
        snprintf(text, sizeof text, "this process's trace files take %s, and with what the end "
                 "of the run writes they would pass SYSMEASURE_MAX_TRACE_SIZE (%s)", a, b);
    } else {
        sm_space_size(avail, a, sizeof a);
        sm_space_floor_text(b, sizeof b);
        snprintf(text, sizeof text, "the file system of %s has %s free, and with what the end "
                 "of the run writes it would fall below SYSMEASURE_MIN_FREE_SPACE (%s)", where, a,
                 b);
    }
    sm_space_why = why;
    sm_space_at_ns = ns;
    __atomic_store_n(&sm_space_stopped_flag, 1, __ATOMIC_RELEASE);
    if (sm_space_rank == 0)
        sm_warning("trace stopped after %.3f s: %s; from here on events are counted, not "
                   "recorded (the profile is complete; the summary says how many)",
                   (double)ns / 1e9, text);
    else
        sm_info(1, "rank %u: trace stopped after %.3f s: %s", (unsigned)sm_space_rank,
                (double)ns / 1e9, text);
}

void sm_space_check(void)
{
    if (sm_space_stopped() || pthread_mutex_trylock(&sm_space_lock) != 0)
        return; /* another thread is checking: once is enough */
    uint64_t raw = sm_buffers_disk_bytes();
    uint64_t staged = __atomic_load_n(&sm_space_staged, __ATOMIC_RELAXED);
    uint64_t bytes = raw + staged;
    /* What may still be written: the archive of the spilled events not
     * staged yet (encoded at the end, no larger than their raw records)
     * and of the chunks in memory and in flight; and, until the next look,
     * a batch of the writer and the headroom below the budget (a quarter
     * of it) that the threads fill meanwhile. */
    uint64_t to_come = (raw > staged ? raw - staged : 0) + sm_buffers_in_use() +
                       sm_buffers_budget() / 4 + (2u << 20);

    /* The copy on disk: staged events whose raw records are on disk too. */
    uint64_t copy = raw < staged ? raw : staged;
    if (!sm_space_staging_off && sm_space_max && copy >= sm_space_max / 8) {
        sm_space_staging_off = 1;
        sm_buffers_staging_stop();
        char a[64];
        sm_space_size(copy, a, sizeof a);
        sm_info(1, "OTF2 encoding during the run stops: the staged archive and the spill file "
                "both hold %s (an eighth of SYSMEASURE_MAX_TRACE_SIZE); the rest is encoded at "
                "the end", a);
    }

    if (sm_space_max && bytes + to_come >= sm_space_max) {
        sm_space_stop(SM_SPACE_MAX_SIZE, NULL, 0, bytes);
    } else if (sm_space_floor || sm_space_floor_frac > 0.0) {
        uint64_t now = sm_clock_monotonic_ns();
        uint64_t grown = bytes > sm_space_fs_bytes ? bytes - sm_space_fs_bytes : 0;
        /* Again after a while, or once the trace took half the room left
         * at the last look: a bounded rate, and never past the floor. */
        if (!sm_space_fs_known || now - sm_space_fs_ns >= SM_SPACE_STATFS_NS ||
            2 * grown >= sm_space_fs_room) {
            char where[4096];
            uint64_t avail, total;
            if (sm_buffers_fs_space(&avail, &total, where, sizeof where) == 0) {
                uint64_t floor = sm_space_floor ? sm_space_floor
                                                : (uint64_t)(sm_space_floor_frac * (double)total);
                sm_space_fs_known = 1;
                sm_space_fs_ns = now;
                sm_space_fs_bytes = bytes;
                sm_space_fs_room = avail > floor + to_come ? avail - floor - to_come : 0;
                if (!sm_space_fs_room)
                    sm_space_stop(SM_SPACE_FREE_SPACE, where, avail, bytes);
            }
        }
    }
    pthread_mutex_unlock(&sm_space_lock);
}

sm_space_reason_t sm_space_reason(void)
{
    return sm_space_stopped() ? sm_space_why : SM_SPACE_RUNNING;
}

uint64_t sm_space_stop_ns(void)
{
    return sm_space_stopped() ? sm_space_at_ns : 0;
}

void sm_space_reason_words(sm_space_reason_t why, char *buf, size_t len)
{
    char a[96];
    pthread_mutex_lock(&sm_space_lock);
    if (why == SM_SPACE_MAX_SIZE) {
        sm_space_size(sm_space_max, a, sizeof a);
        snprintf(buf, len, "the trace files reached SYSMEASURE_MAX_TRACE_SIZE (%s per process, "
                 "counting what the end of the run writes)", a);
    } else if (why == SM_SPACE_FREE_SPACE) {
        sm_space_floor_text(a, sizeof a);
        snprintf(buf, len, "the free space on the output's file system fell to "
                 "SYSMEASURE_MIN_FREE_SPACE (%s, counting what the end of the run writes)", a);
    } else {
        snprintf(buf, len, "the trace records");
    }
    pthread_mutex_unlock(&sm_space_lock);
}

void sm_space_note(char *buf, size_t len, double at_s, const char *reason, uint64_t not_recorded,
                   uint32_t ranks, uint32_t n_ranks)
{
    char who[96] = "";
    if (n_ranks > 1)
        snprintf(who, sizeof who, " (in %u of %u ranks; the time is the first one's)",
                 (unsigned)ranks, (unsigned)n_ranks);
    snprintf(buf, len, "trace stopped at %.3f s: %s%s, %llu events not recorded (the profile is "
             "complete)", at_s, reason, who, (unsigned long long)not_recorded);
}
