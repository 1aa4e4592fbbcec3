/* Encoding during the run (buffer_feed.c, issue 13): a thread that waits for the
 * disk freezes its location's encoding, and its chunks go to the spill file
 * unencoded; once the writer thread is idle it takes them back from the
 * file, in order, and the encoder goes on from there.  Here the encoder is
 * slow on purpose while the thread writes (so the thread waits and the
 * location freezes), then the thread pauses (the writer takes the spilled
 * chunks back), then writes again.  Every record must reach the encoder or
 * the end-of-run rest exactly once, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "unit.h"

#define BUDGET (256u << 10)
#define CHUNK (16u << 10)
#define PAIRS_1 150000
#define PAIRS_2 50000

typedef struct {
    uint64_t enters, leaves, bad_order, n;
    uint64_t first_time, last_time;
    int next_is_enter;
} seen_t;

static seen_t encoded = {.next_is_enter = 1}, rest = {.next_is_enter = 1};
static int slow = 1; /* the encoder sleeps now and then */
static sm_region_id_t region;

static void see(seen_t *s, const sm_record_t *r)
{
    if (r->kind != SM_REC_ENTER && r->kind != SM_REC_LEAVE)
        return; /* BufferFlush records of the waits */
    if (!s->n++)
        s->first_time = r->time;
    s->bad_order += r->time < s->last_time || (r->kind == SM_REC_ENTER) != s->next_is_enter ||
                    r->ref != region;
    s->last_time = r->time;
    s->next_is_enter = r->kind != SM_REC_ENTER;
    s->enters += r->kind == SM_REC_ENTER;
    s->leaves += r->kind == SM_REC_LEAVE;
}

static void *enc_open(sm_location_t *loc)
{
    (void)loc;
    return &encoded;
}

static int enc_record(const sm_record_t *r, void *arg)
{
    see(arg, r);
    if (__atomic_load_n(&slow, __ATOMIC_RELAXED) && encoded.n % 4000 == 0)
        usleep(1000);
    return 0;
}

static int enc_close(sm_location_t *loc, void *state, int complete)
{
    (void)loc;
    (void)state;
    (void)complete;
    return 0;
}

static int rest_record(const sm_record_t *r, void *arg)
{
    see(arg, r);
    return 0;
}

static int encoding(sm_location_t *loc)
{
    return __atomic_load_n(&loc->buffer.enc_status, __ATOMIC_RELAXED) == SM_ENC_ON;
}

static void produce(sm_location_t *loc, int pairs)
{
    for (int i = 0; i < pairs; i++) {
        sm_event_enter(loc, region, sm_clock_now());
        sm_event_leave(loc, region, sm_clock_now());
    }
}

int main(void)
{
    static const sm_buffer_encoder_t enc = {enc_open, enc_record, enc_close, 1};
    char dir[] = "/tmp/sm-test-encode-back-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char spill[64];
    snprintf(spill, sizeof spill, "%s/spill", dir);
    sm_clock_init(SM_CLOCK_AUTO);
    sm_buffers_configure(BUDGET, CHUNK);
    sm_buffers_set_spill_dir(spill);
    sm_buffers_set_encoder(&enc);
    sm_locations_set_modes(1, 0, 1);
    region = sm_region_define("work", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_location_t *loc = sm_location_create(SM_LOCATION_CPU_THREAD, "main");

    /* Within the budget, with pauses: the writer starts encoding the full
     * chunks in memory (a location whose thread waits for the disk before
     * that is left to the end of the run). */
    uint64_t warm_pairs = 0;
    for (int i = 0; i < 200 && !encoding(loc); i++) {
        produce(loc, 600);
        warm_pairs += 600;
        usleep(10000);
    }
    CHECK(encoding(loc));
    /* Faster than the encoder: the thread waits, the location freezes, its
     * chunks are spilled unencoded. */
    produce(loc, PAIRS_1);
    CHECK(loc->buffer.spill_waits > 0);
    uint64_t back_before = sm_buffers_taken_back();
    /* A pause: the idle writer takes the spilled chunks back. */
    __atomic_store_n(&slow, 0, __ATOMIC_RELAXED);
    uint64_t pause_pairs = 0;
    for (int i = 0; i < 500 && __atomic_load_n(&loc->buffer.enc_frozen, __ATOMIC_RELAXED); i++) {
        produce(loc, 200); /* a chunk now and then: it wakes the writer */
        pause_pairs += 200;
        usleep(10000);
    }
    uint64_t back = sm_buffers_taken_back();
    printf("chunks taken back from the spill file: %llu (%llu before the pause)\n",
           (unsigned long long)back, (unsigned long long)back_before);
    CHECK(back > 0);
    CHECK(!__atomic_load_n(&loc->buffer.enc_frozen, __ATOMIC_RELAXED)); /* caught up */
    produce(loc, PAIRS_2);

    sm_location_close(loc, sm_clock_now());
    CHECK(sm_buffer_encoded(loc) == &encoded); /* the encoder still ran at the end */
    CHECK(sm_buffer_for_each_rest(loc, rest_record, &rest) == 0);
    uint64_t total = encoded.enters + rest.enters;
    printf("encoded during the run: %llu records, the rest: %llu\n",
           (unsigned long long)encoded.n, (unsigned long long)rest.n);
    CHECK_EQ_U(total, warm_pairs + PAIRS_1 + pause_pairs + PAIRS_2);
    CHECK_EQ_U(encoded.leaves + rest.leaves, total);
    CHECK_EQ_U(encoded.bad_order, 0);
    CHECK_EQ_U(rest.bad_order, 0);
    CHECK(!rest.n || !encoded.n || encoded.last_time <= rest.first_time);
    CHECK(encoded.n > 2ull * PAIRS_1); /* the frozen part went through the encoder */
    CHECK_EQ_U(loc->buffer.dropped_records, 0);
    sm_buffer_free(loc);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return UNIT_RESULT();
}
