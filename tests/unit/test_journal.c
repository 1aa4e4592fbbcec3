/* The crash-safe journal's clock points: appended in time order by many
 * threads at once, and read back by the recovery of a killed process, which
 * skips a point a little out of order (a journal of an earlier version) and
 * says a point far out of order is damage. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/journal.h"
#include "merge/process_file.h"
#include "merge/recover.h"
#include "unit.h"

static char dir[PATH_MAX];

/* The path of the journal open in dir. */
static void journal_path(char *path, size_t len)
{
    path[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".defs"))
            snprintf(path, len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
}

/* ---- 4 threads append 4000 points each: in the file, in time order. */
#define THREADS 4
#define POINTS 4000

static void *add_points(void *arg)
{
    (void)arg;
    for (int i = 0; i < POINTS; i++)
        sm_journal_add_clock_point();
    return NULL;
}

typedef struct {
    uint64_t n, backwards, ticks, ns;
} order_t;

static int read_point(uint32_t kind, const uint8_t *p, uint32_t len, void *arg)
{
    order_t *o = arg;
    if (kind != SM_J_CLOCK_POINT || len < 16)
        return 0;
    uint64_t ticks, ns;
    memcpy(&ticks, p, 8);
    memcpy(&ns, p + 8, 8);
    if (o->n && (ticks < o->ticks || ns < o->ns))
        o->backwards++;
    o->ticks = ticks;
    o->ns = ns;
    o->n++;
    return 0;
}

static void test_points_in_order(void)
{
    CHECK(sm_journal_open(dir, "test-journal", 0, sm_clock_now()) == 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, add_points, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    char path[PATH_MAX + 300], err[512];
    journal_path(path, sizeof path);
    order_t o = {0, 0, 0, 0};
    sm_journal_head_t head;
    CHECK(sm_journal_read(path, &head, read_point, &o, NULL, err, sizeof err) == 0);
    CHECK_EQ_U(o.n, THREADS * POINTS);
    CHECK_EQ_U(o.backwards, 0);
    sm_journal_done();
}

/* ---- a journal with the given points (ticks, ns), recovered. */
static sm_process_file_t *recovered(const uint64_t (*points)[2], int n)
{
    CHECK(sm_journal_open(dir, "test-journal", 0, points[0][0]) == 0);
    for (int i = 0; i < n; i++)
        sm_journal_add(SM_J_CLOCK_POINT, points[i], 16, NULL, 0);
    char path[PATH_MAX + 300], err[512] = "";
    journal_path(path, sizeof path);
    uint64_t events;
    sm_process_file_t *f = sm_recover_process(path, NULL, &events, err, sizeof err);
    CHECK(f != NULL);
    sm_journal_done();
    return f;
}

/* A point 50 ms behind the one before it (two threads that read the clocks
 * before appending): skipped, the journal is not damaged, and the clock is
 * the line through the first and the last point (0.5 ns per tick). */
static void test_recover_small_inversion(void)
{
    static const uint64_t points[][2] = {
        {1000000000ull, 1000000000ull},
        {3000000000ull, 2000000000ull},
        {2900000000ull, 1950000000ull},
        {5000000000ull, 3000000000ull},
    };
    sm_process_file_t *f = recovered(points, 4);
    if (!f)
        return;
    CHECK_EQ_U(f->damaged, 0);
    CHECK_EQ_U(f->clock.tick0, 1000000000ull);
    CHECK_EQ_U(f->clock.mono0, 1000000000ull);
    CHECK_NEAR(f->clock.ns_per_tick, 0.5, 1e-9);
    sm_process_file_free(f);
}

/* A point 2 s behind the one before it is not the process's: damage, said
 * (one line on stderr), and the clock still from the others. */
static void test_recover_large_inversion(void)
{
    static const uint64_t points[][2] = {
        {1000000000ull, 1000000000ull},
        {9000000000ull, 5000000000ull},
        {5000000000ull, 3000000000ull},
        {11000000000ull, 6000000000ull},
    };
    sm_process_file_t *f = recovered(points, 4);
    if (!f)
        return;
    CHECK_EQ_U(f->damaged, 1);
    CHECK_NEAR(f->clock.ns_per_tick, 0.5, 1e-9);
    sm_process_file_free(f);
}

int main(void)
{
    sm_clock_init(SM_CLOCK_AUTO);
    const char *work = getenv("SM_TEST_WORK");
    snprintf(dir, sizeof dir, "%s/test-journal-%d", work && *work ? work : "/tmp", (int)getpid());
    test_points_in_order();
    test_recover_small_inversion();
    test_recover_large_inversion();
    rmdir(dir);
    return UNIT_RESULT();
}
