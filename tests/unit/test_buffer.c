/* Buffers: a tiny budget forces spills on several threads at once and no
 * event is lost; a spill that cannot be written drops events with an exact
 * count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/job.h"
#include "core/location.h"
#include "unit.h"

#define THREADS 3
#define PAIRS 100000
#define BUDGET (64u << 10)
#define CHUNK (4u << 10)

static sm_region_id_t regions[2];
static sm_location_t *locs[THREADS];
static uint64_t max_in_use;

static void *produce(void *arg)
{
    sm_location_t *loc = arg;
    for (int i = 0; i < PAIRS; i++) {
        sm_event_enter(loc, regions[i & 1], sm_clock_now());
        sm_event_leave(loc, regions[i & 1], sm_clock_now());
        uint64_t used = sm_buffers_in_use();
        if (used > __atomic_load_n(&max_in_use, __ATOMIC_RELAXED))
            __atomic_store_n(&max_in_use, used, __ATOMIC_RELAXED);
    }
    return NULL;
}

typedef struct {
    uint64_t enters, leaves, flushes, out_of_order, wrong_region;
    uint64_t last_time;
    int next_is_enter;
    uint64_t pairs_seen;
} tally_t;

static int tally(const sm_record_t *r, void *arg)
{
    tally_t *t = arg;
    if (r->time < t->last_time)
        t->out_of_order++;
    t->last_time = r->time;
    switch (r->kind) {
    case SM_REC_ENTER:
        t->enters++;
        t->wrong_region += r->ref != regions[t->pairs_seen & 1] || !t->next_is_enter;
        t->next_is_enter = 0;
        break;
    case SM_REC_LEAVE:
        t->leaves++;
        t->wrong_region += r->ref != regions[t->pairs_seen & 1] || t->next_is_enter;
        t->next_is_enter = 1;
        t->pairs_seen++;
        break;
    case SM_REC_BUFFER_FLUSH:
        t->flushes++;
        CHECK(r->words == 1);
        break;
    }
    return 0;
}

static int count_any(const sm_record_t *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

/* Copies of the spill file, one with a byte of a chunk changed, one cut
 * short: each is reported with the records it lost, and every other record
 * is still delivered. */
static void check_damage(const char *dir, const char *path)
{
    sm_spill_report_t good, bad;
    CHECK(sm_spill_file_check(path, &good) == 0);
    CHECK(good.header_ok);
    CHECK(good.frames > 0 && good.damaged_frames == 0 && good.unreadable_bytes == 0);
    CHECK(strcmp(good.job, sm_job_id()) == 0);
    CHECK(good.pid == getpid());
    uint64_t all = 0;
    for (int i = 0; i < THREADS; i++)
        CHECK(sm_spill_file_for_each(path, locs[i]->id, count_any, &all) == 0);
    CHECK_EQ_U(all, good.records);

    FILE *in = fopen(path, "rb");
    CHECK(in != NULL);
    if (!in)
        return;
    static uint8_t bytes[64u << 20];
    size_t n = fread(bytes, 1, sizeof bytes, in);
    fclose(in);
    char flipped[128], cut[128];
    snprintf(flipped, sizeof flipped, "%s/flipped.events", dir);
    snprintf(cut, sizeof cut, "%s/cut.events", dir);
    FILE *out = fopen(flipped, "wb");
    uint32_t head = 0; /* the file header's size, in its own field */
    memcpy(&head, bytes + 12, sizeof head);
    CHECK(head >= 160 && head < 4096);
    bytes[head + 32 + 100] ^= 0x40; /* file header, frame header, into the first chunk */
    fwrite(bytes, 1, n, out);
    fclose(out);
    bytes[head + 32 + 100] ^= 0x40;
    out = fopen(cut, "wb");
    fwrite(bytes, 1, n - 1000, out);
    fclose(out);

    CHECK(sm_spill_file_check(flipped, &bad) == 1);
    CHECK_EQ_U(bad.damaged_frames, 1);
    CHECK(bad.lost_records > 0);
    CHECK_EQ_U(bad.records + bad.lost_records, good.records);
    uint64_t got = 0;
    int failed = 0;
    for (int i = 0; i < THREADS; i++)
        failed += sm_spill_file_for_each(flipped, locs[i]->id, count_any, &got) == -1;
    CHECK_EQ_U(failed, 1); /* the location of the damaged chunk, and only it */
    CHECK_EQ_U(got + bad.lost_records, good.records);

    CHECK(sm_spill_file_check(cut, &bad) == 1);
    CHECK(bad.unreadable_bytes > 0);
    CHECK(bad.lost_records > 0);
    CHECK_EQ_U(bad.records + bad.lost_records, good.records);
    got = 0;
    failed = 0;
    for (int i = 0; i < THREADS; i++)
        failed += sm_spill_file_for_each(cut, locs[i]->id, count_any, &got) == -1;
    CHECK(failed >= 1);
    CHECK_EQ_U(got + bad.lost_records, good.records);
    unlink(flipped);
    unlink(cut);
}

int main(void)
{
    char dir[] = "/tmp/sm-test-buffer-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char spill[64];
    snprintf(spill, sizeof spill, "%s/spill", dir);
    sm_clock_init(SM_CLOCK_AUTO);
    sm_buffers_configure(BUDGET, CHUNK);
    sm_buffers_set_spill_dir(spill);
    sm_locations_set_modes(1, 0, 1);
    regions[0] = sm_region_define("even", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    regions[1] = sm_region_define("odd", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);

    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        locs[i] = sm_location_create(SM_LOCATION_CPU_THREAD, "producer");
        pthread_create(&t[i], NULL, produce, locs[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    /* The budget held, give or take one chunk per thread. */
    CHECK(max_in_use <= BUDGET + THREADS * (CHUNK + 64));
    for (int i = 0; i < THREADS; i++) {
        sm_location_t *loc = locs[i];
        tally_t c = {.next_is_enter = 1};
        CHECK(sm_buffer_for_each(loc, tally, &c) == 0);
        CHECK(loc->buffer.spills > 0);
        CHECK_EQ_U(c.enters, PAIRS);
        CHECK_EQ_U(c.leaves, PAIRS);
        CHECK_EQ_U(c.flushes, loc->buffer.spill_waits); /* a BufferFlush marks each wait */
        CHECK_EQ_U(c.out_of_order, 0);
        CHECK_EQ_U(c.wrong_region, 0);
        CHECK_EQ_U(loc->buffer.dropped_records, 0);
        CHECK_EQ_U(sm_buffer_record_count(loc), 2 * PAIRS + loc->buffer.spill_waits);
    }
    /* One spill file for the process, removed with the last location's frames. */
    char path[256], host[64] = "";
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '_';
    snprintf(path, sizeof path, "%s/%016llx.%s.%d.events", spill,
             (unsigned long long)sm_job_hash(), host[0] ? host : "host", (int)getpid());
    CHECK(access(path, F_OK) == 0);
    check_damage(dir, path);
    for (int i = 0; i < THREADS; i++)
        sm_buffer_free(locs[i]);
    CHECK(access(path, F_OK) != 0); /* freed: spill file removed */

    /* A spill folder that cannot exist (below a regular file): the events of
     * each failed spill are dropped, and counted exactly. */
    char blocker[64], bad[96];
    snprintf(blocker, sizeof blocker, "%s/file", dir);
    FILE *f = fopen(blocker, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    snprintf(bad, sizeof bad, "%s/sub", blocker);
    sm_buffers_set_spill_dir(bad);
    sm_location_t *loc = sm_location_create(SM_LOCATION_CPU_THREAD, "lossy");
    for (int i = 0; i < PAIRS; i++) {
        sm_event_enter(loc, regions[i & 1], sm_clock_now());
        sm_event_leave(loc, regions[i & 1], sm_clock_now());
    }
    tally_t c = {.next_is_enter = 1};
    sm_buffer_for_each(loc, tally, &c);
    CHECK(loc->buffer.dropped_records > 0);
    CHECK_EQ_U(c.enters + c.leaves + loc->buffer.dropped_records, 2 * PAIRS);
    CHECK_EQ_U(c.flushes, 0); /* nothing reached the disk: no BufferFlush */
    CHECK_EQ_U(loc->buffer.spills, 0);
    sm_buffer_free(loc);
    unlink(blocker);
    rmdir(spill);
    rmdir(dir);
    return UNIT_RESULT();
}
