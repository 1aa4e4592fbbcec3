/* report.html and the JSON reader under it.  A job of 64 ranks x 1000 call
 * paths (a full communication matrix) goes through the real writers
 * (profile.json, metadata.json) and then report.html: the page stays under
 * 5 MB, says what it left out, escapes region names and names the planted
 * slowest and fastest ranks; with timeline.json (through the real binning)
 * it draws a lane per rank and the metric.  A folder without sysmeasure's files and a
 * damaged profile.json are refused; the reader rejects malformed JSON. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/location.h"
#include "core/metrics.h"
#include "merge/profile_summary.h"
#include "merge/unify.h"
#include "util/json_read.h"
#include "writers/summary_common.h"
#include "writers/timeline.h"
#include "writers/writers.h"
#include "unit.h"

#define RANKS 64
#define TOP 40
#define CHILDREN 24 /* TOP x (1 + CHILDREN) = 1000 paths */

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    if (len)
        *len = (size_t)n;
    fclose(f);
    return s;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_reader(void)
{
    char err[128];
    const char *skip[] = {"big", NULL};
    sm_jv_t *v = sm_jv_parse("", 0, NULL, err, sizeof err);
    CHECK(v == NULL); /* an empty text is no document */
    const char *doc = "{\"a\": [1, -2.5e3, true, null], \"s\": \"x\\u00e9\\n\\ud83d\\ude00\","
                      " \"big\": {\"k\": [1,2,3]}, \"z\": {}}";
    v = sm_jv_parse(doc, strlen(doc), skip, err, sizeof err);
    CHECK(v != NULL);
    if (v) {
        CHECK_EQ_U(sm_jv_len(sm_jv_get(v, "a")), 4);
        CHECK_NEAR(sm_jv_at(sm_jv_get(v, "a"), 1)->num, -2500, 0);
        CHECK(sm_jv_at(sm_jv_get(v, "a"), 2)->type == SM_JV_TRUE);
        CHECK_STR(sm_jv_str(v, "s"), "x\xc3\xa9\n\xf0\x9f\x98\x80");
        CHECK(sm_jv_get(v, "big") == NULL); /* skipped */
        CHECK(sm_jv_get(v, "z") && sm_jv_get(v, "z")->type == SM_JV_OBJECT);
        sm_jv_free(v);
    }
    const char *bad[] = {"{\"a\": 1,}", "[1 2]", "{\"a\" 1}", "\"open", "[1] x", "{\"a\": tru}",
                         "[\"\\q\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        v = sm_jv_parse(bad[i], strlen(bad[i]), NULL, err, sizeof err);
        CHECK(v == NULL && !strncmp(err, "line 1: ", 8));
        sm_jv_free(v);
    }
}

/* timeline.json of the 64 ranks through the real binning (as the OTF2
 * writer feeds it): over 1 s, each rank's main thread alternates between a
 * user region and MPI in every lane bin (the most rectangles a lane can
 * need; MPI 5/8 of the time), except rank 7, in its user region
 * throughout; then a metric. */
static void write_timeline(const char *dir, sm_defset_t *defs)
{
    uint32_t mem = sm_defset_metric(defs, "memory resident", "B", SM_METRIC_SAMPLED);
    const uint8_t *blobs[RANKS];
    uint64_t lens[RANKS];
    sm_timeline_t *parts[RANKS];
    const uint64_t T0 = 5000000000ull, SPAN = 1000000000ull, BIN = SPAN / SM_TL_BINS;
    for (uint32_t r = 0; r < RANKS; r++) {
        sm_timeline_t *t = parts[r] = sm_timeline_new();
        CHECK(t != NULL);
        sm_timeline_begin(t, 0, SM_LOCATION_CPU_THREAD, "Thread 0 (main)");
        sm_timeline_enter(t, T0, SM_TL_USER);
        for (uint32_t b = 1; r != 7 && b + 1 < SM_TL_BINS; b += 2) {
            sm_timeline_enter(t, T0 + b * BIN - BIN / 4, SM_TL_MPI);
            sm_timeline_leave(t, T0 + (b + 1) * BIN);
        }
        sm_timeline_leave(t, T0 + SPAN);
        sm_timeline_end(t);
        for (uint64_t k = 0; k <= 100; k++)
            sm_timeline_metric(t, T0 + k * SPAN / 100, mem, 1000 * k + r);
        sm_timeline_end_process(t);
        blobs[r] = t ? t->out.p : NULL;
        lens[r] = t ? t->out.len : 0;
    }
    CHECK(sm_timeline_write_json(dir, defs, RANKS, blobs, lens, T0, T0 + SPAN) == 0);
    for (uint32_t r = 0; r < RANKS; r++)
        sm_timeline_free(parts[r]);
}

static void test_large_job(void)
{
    /* Regions: TOP user regions, CHILDREN children (every fifth an MPI
     * function); one a name with markup. */
    sm_defset_t *defs = sm_defset_new();
    sm_region_id_t top[TOP], kid[CHILDREN];
    char name[64];
    for (int i = 0; i < TOP; i++) {
        snprintf(name, sizeof name, i == 0 ? "<script>alert(1)</script>&" : "phase_%d", i);
        top[i] = sm_defset_region(defs, name, "app.c", 10 + i, SM_PARADIGM_USER, SM_ROLE_FUNCTION);
    }
    for (int i = 0; i < CHILDREN; i++) {
        snprintf(name, sizeof name, i % 5 ? "kernel_%d" : "MPI_Func_%d", i);
        kid[i] = sm_defset_region(defs, name, NULL, 0, i % 5 ? SM_PARADIGM_USER : SM_PARADIGM_MPI,
                                  SM_ROLE_CODE);
    }
    /* Each rank's tree: region phase_i takes (i + 1) ms x (rank 7: 3, rank 42:
     * 0.5, else 1); its children share half of it. */
    size_t cap = (size_t)RANKS * 256 * 1024, at = 0;
    uint8_t *seq = malloc(cap);
    CHECK(seq != NULL);
    for (uint32_t r = 0; seq && r < RANKS; r++) {
        sm_profile_t p;
        sm_profile_init(&p);
        double f = r == 7 ? 3 : r == 42 ? 0.5 : 1;
        for (int i = 0; i < TOP; i++) {
            sm_profile_node_t *t = sm_profile_child(&p, &p.root, top[i]);
            uint64_t ticks = (uint64_t)((i + 1) * 1e6 * f);
            t->visits = 10;
            sm_stat_add(&t->incl, ticks);
            sm_stat_add(&t->excl, ticks / 2);
            for (int k = 0; k < CHILDREN; k++) {
                sm_profile_node_t *c = sm_profile_child(&p, t, kid[k]);
                c->visits = 10;
                sm_stat_add(&c->incl, ticks / 2 / CHILDREN);
                sm_stat_add(&c->excl, ticks / 2 / CHILDREN);
            }
        }
        sm_summary_thread_t th = {.location = 0, .name = "Thread 0 (main)",
                                  .creator = SM_INVALID_ID, .root = &p.root};
        sm_profile_summary_t *l = sm_profile_summary_from_threads(&th, 1, 1.0);
        uint64_t len = 0;
        uint8_t *b = l ? sm_profile_summary_serialize(l, NULL, r, &len) : NULL;
        CHECK(b != NULL && at + 12 + len <= cap);
        if (b && at + 12 + len <= cap) {
            memcpy(seq + at, &r, 4);
            memcpy(seq + at + 4, &len, 8);
            memcpy(seq + at + 12, b, len);
            at += 12 + len;
        }
        free(b);
        sm_profile_summary_free(l);
        sm_profile_free(&p);
    }
    sm_profile_summary_t *s = seq ? sm_profile_summary_from_blobs(seq, at, RANKS) : NULL;
    CHECK(s != NULL);
    sm_procs_t procs = {.rank = 0, .size = RANKS};
    sm_job_process_t processes[RANKS];
    sm_comm_pair_t *pairs = malloc(sizeof *pairs * RANKS * RANKS);
    for (uint32_t r = 0; r < RANKS; r++) {
        processes[r] = (sm_job_process_t){.rank = r, .pid = 1000 + r};
        snprintf(processes[r].hostname, sizeof processes[r].hostname, "node%u", r / 16);
    }
    for (size_t k = 0; pairs && k < RANKS * RANKS; k++)
        pairs[k] = (sm_comm_pair_t){(uint32_t)(k / RANKS), (uint32_t)(k % RANKS), 1 + k % 7,
                                    1000 * (1 + k % 13)};
    sm_job_t job = {.procs = &procs, .defs = defs, .processes = processes,
                    .matrix_pairs = pairs, .matrix_pairs_n = pairs ? RANKS * RANKS : 0};
    char dir[] = "/tmp/sm-test-report-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *argv[] = {"./app"};
    sm_run_info_t run = {.output_dir = dir, .program = "app", .argc = 1, .argv = argv,
                         .pid = 1000, .hostname = "node0", .clock_source = "tsc",
                         .n_ranks = RANKS, .start_realtime_ns = 1700000000000000000ull,
                         .end_realtime_ns = 1700000000900000000ull};
    CHECK(s && sm_profile_write_json(&run, &job, s) == 0);
    CHECK(sm_metadata_write_json(&run, &job) == 0);
    write_timeline(dir, defs);
    char err[512] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(sm_report_write_html(dir, SM_FS_INPUT_FOUND, err, sizeof err) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    size_t len = 0, json_len = 0;
    char *html = slurp(dir, "report.html", &len);
    free(slurp(dir, "profile.json", &json_len));
    fprintf(stderr, "64 ranks x 1000 call paths: report.html %zu bytes (profile.json %zu), "
            "written in %.2f s\n", len, json_len,
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    CHECK(html != NULL && len > 0 && len < 5u * 1000 * 1000);
    if (html) {
        CHECK(strstr(html, "The 200 call paths with the most time of 1000 are shown"));
        CHECK(strstr(html, "64 ranks: min, mean and max with the ranks that hold them"));
        CHECK(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;&amp;"));
        CHECK(!strstr(html, "<script>alert"));
        CHECK(strstr(html, "slowest rank 7 ("));
        CHECK(strstr(html, "fastest rank 42 ("));
        CHECK(strstr(html, "ranks binned") == NULL); /* 64 cells fit */
        CHECK(!strstr(html, "http://") && !strstr(html, "https://"));
        /* the timeline: a lane per rank; rank 7's all user regions */
        size_t lanes = 0;
        for (const char *p = html; (p = strstr(p, "<g class=lane ")) != NULL; p++)
            lanes++;
        CHECK_EQ_U(lanes, RANKS);
        CHECK(strstr(html, "<g class=lane data-rank=\"7\" data-kind=\"cpu\" data-main=\"user "
                           "regions\">"));
        CHECK(strstr(html, "<g class=lane data-rank=\"8\" data-kind=\"cpu\" data-main=\"MPI\">"));
        CHECK(strstr(html, "id=metrics>Metric timelines"));
        CHECK(strstr(html, "memory resident (largest 97.7 KiB)"));
    }
    free(html);

    /* Refused: no metadata.json; metadata.json of something else; a
     * damaged profile.json. */
    char empty[] = "/tmp/sm-test-report-empty-XXXXXX";
    CHECK(mkdtemp(empty) != NULL);
    CHECK(sm_report_write_html(empty, SM_FS_INPUT_FOUND, err, sizeof err) == SM_REPORT_NOT_OUTPUT);
    CHECK(strstr(err, "is not a sysmeasure output folder") != NULL);
    put(empty, "metadata.json", "{\"name\": \"something else\"}\n");
    CHECK(sm_report_write_html(empty, SM_FS_INPUT_FOUND, err, sizeof err) == SM_REPORT_NOT_OUTPUT);
    char *meta = slurp(dir, "metadata.json", NULL);
    put(empty, "metadata.json", meta ? meta : "");
    free(meta);
    put(empty, "profile.json", "{\"callpaths\": [ {\"path\": [\"a\"]");
    CHECK(sm_report_write_html(empty, SM_FS_INPUT_FOUND, err, sizeof err) == SM_REPORT_NOT_OUTPUT);
    CHECK(strstr(err, "profile.json is damaged") != NULL);
    char path[512];
    CHECK(access(strcat(strcpy(path, empty), "/report.html"), F_OK) != 0);
    const char *left[] = {"metadata.json", "profile.json"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", empty, left[i]);
        unlink(path);
    }
    rmdir(empty);
    if (getenv("SM_TEST_KEEP")) {
        fprintf(stderr, "output kept in %s\n", dir);
    } else {
        const char *files[] = {"profile.json", "metadata.json", "report.html", "timeline.json"};
        for (size_t i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            unlink(path);
        }
        rmdir(dir);
    }
    sm_profile_summary_free(s);
    free(seq);
    free(pairs);
    sm_defset_free(defs);
}

int main(void)
{
    test_reader();
    test_large_job();
    return UNIT_RESULT();
}
