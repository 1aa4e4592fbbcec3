/* Per-kernel GPU counter statistics in the profile, on planted per-launch
 * values (no GPU needed):
 *   - sm_fstat_t: equal large values have a standard deviation of exactly
 *     0, merging two halves gives what adding all gives, covered launches;
 *   - two ranks, each with a CPU thread and a GPU stream whose kernel paths
 *     carry statistics (rank 1 with one more metric and a second launching
 *     path), serialized and rebuilt into the job summary: metrics united by
 *     name, values on the right member and path; truncated blobs rejected,
 *     remap and a version-2 blob (older process files) still read;
 *   - the writers: profile.txt, profile.json and profile_gpu_counters.csv
 *     with the exact statistics per kernel, per (call path, kernel) and
 *     across ranks. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "merge/profile_summary.h"
#include "writers/summary_common.h"
#include "writers/writers.h"
#include "unit.h"

enum { MAIN, LAUNCH, FMA, SOLVE };

#define INST "smsp__inst_executed.sum"
#define TIME "gpu__time_duration.sum"
#define CYCLES "sm__cycles_elapsed.avg"

static size_t append_record(uint8_t *seq, size_t at, uint32_t rank, const void *blob,
                            uint64_t len)
{
    for (int i = 0; i < 4; i++)
        seq[at++] = (uint8_t)(rank >> (8 * i));
    for (int i = 0; i < 8; i++)
        seq[at++] = (uint8_t)(len >> (8 * i));
    memcpy(seq + at, blob, len);
    return at + len;
}

static sm_profile_node_t *visit(sm_profile_t *p, sm_profile_node_t *parent, sm_region_id_t r,
                                int n)
{
    sm_profile_node_t *c = sm_profile_child(p, parent, r);
    for (int i = 0; i < n; i++) {
        c->visits++;
        sm_stat_add(&c->incl, 1000);
        sm_stat_add(&c->excl, 1000);
    }
    return c;
}

static sm_fstat_t values(const double *v, int n, uint64_t covered)
{
    sm_fstat_t s;
    sm_fstat_clear(&s);
    for (int i = 0; i < n; i++)
        sm_fstat_add(&s, v[i], covered);
    return s;
}

static char *slurp(const char *dir, const char *name)
{
    static char buf[1 << 16];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* The numbers after the CSV line that starts with prefix. */
static int csv_numbers(const char *text, const char *prefix, double *out, int max)
{
    const char *p = text ? strstr(text, prefix) : NULL;
    if (!p || (p != text && p[-1] != '\n'))
        return 0;
    p += strlen(prefix);
    int n = 0;
    while (n < max && *p && *p != '\n') {
        char *end;
        out[n++] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',')
            break;
    }
    return n;
}

static void test_fstat(void)
{
    sm_fstat_t s;
    sm_fstat_clear(&s);
    for (int i = 0; i < 70; i++)
        sm_fstat_add(&s, 8912896.0, 1);
    CHECK_EQ_U(s.n, 70);
    CHECK(sm_fstat_stddev(&s) == 0.0);
    CHECK(sm_fstat_mean(&s) == 8912896.0);
    CHECK(s.sum == 70 * 8912896.0);
    sm_fstat_t a = values((double[]){1, 2}, 2, 2), b = values((double[]){3, 4}, 2, 2);
    sm_fstat_t all = values((double[]){1, 2, 3, 4}, 4, 2);
    sm_fstat_merge(&a, &b);
    CHECK_EQ_U(a.n, 4);
    CHECK_EQ_U(a.covered, 8);
    CHECK_NEAR(sm_fstat_mean(&a), 2.5, 0);
    CHECK_NEAR(sm_fstat_stddev(&a), sqrt(1.25), 1e-12);
    CHECK_NEAR(sm_fstat_stddev(&a), sm_fstat_stddev(&all), 1e-12);
    CHECK(a.min == 1 && a.max == 4);
    sm_fstat_t empty;
    sm_fstat_clear(&empty);
    sm_fstat_merge(&empty, &b);
    CHECK(empty.n == 2 && empty.min == 3 && empty.max == 4);
}

/* One rank: thread (location 0) main > cudaLaunchKernel, stream (location
 * 1) main > cudaLaunchKernel > fma_kernel; rank 1 also main > solve > ... */
typedef struct rank_tree {
    sm_profile_t cpu, gpu;
    sm_profile_summary_t *s;
} rank_tree_t;

static void build_rank(rank_tree_t *t, int rank)
{
    sm_profile_init(&t->cpu);
    sm_profile_init(&t->gpu);
    int direct = rank == 0 ? 8 : 4;
    sm_profile_node_t *m = visit(&t->cpu, &t->cpu.root, MAIN, 1);
    visit(&t->cpu, m, LAUNCH, direct);
    sm_profile_node_t *gm = sm_profile_child(&t->gpu, &t->gpu.root, MAIN);
    visit(&t->gpu, sm_profile_child(&t->gpu, gm, LAUNCH), FMA, direct);
    if (rank == 1) {
        sm_profile_node_t *solve = visit(&t->cpu, m, SOLVE, 1);
        visit(&t->cpu, solve, LAUNCH, 2);
        sm_profile_node_t *gs = sm_profile_child(&t->gpu, gm, SOLVE);
        visit(&t->gpu, sm_profile_child(&t->gpu, gs, LAUNCH), FMA, 2);
    }
    sm_summary_thread_t th[2] = {
        {.location = 0, .name = "Thread 0 (main)", .creator = SM_INVALID_ID, .root = &t->cpu.root},
        {.location = 1, .name = "CUDA 0 stream 7", .creator = SM_INVALID_ID, .root = &t->gpu.root}};
    t->s = sm_profile_summary_from_threads(th, 2, 1.0);
    CHECK(t->s != NULL);
    if (!t->s)
        return;
    sm_region_id_t direct_path[] = {MAIN, LAUNCH, FMA}, solve_path[] = {MAIN, SOLVE, LAUNCH, FMA};
    double inst[8] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    double time[8] = {10, 20, 30, 40, 50, 60, 70, 80};
    sm_fstat_t st = values(inst, direct, 1);
    CHECK(sm_profile_summary_add_gpu(t->s, 1, direct_path, 3, INST, &st) == 0);
    if (rank == 0) {
        st = values(time, 8, 1);
        CHECK(sm_profile_summary_add_gpu(t->s, 1, direct_path, 3, TIME, &st) == 0);
        /* Not a path of the stream: refused. */
        CHECK(sm_profile_summary_add_gpu(t->s, 1, solve_path, 4, TIME, &st) != 0);
    } else {
        st = values(inst, 2, 1);
        CHECK(sm_profile_summary_add_gpu(t->s, 1, solve_path, 4, INST, &st) == 0);
        /* rotate mode: each value covers 2 launches */
        st = values((double[]){500, 700}, 2, 2);
        CHECK(sm_profile_summary_add_gpu(t->s, 1, direct_path, 3, CYCLES, &st) == 0);
    }
}

int main(void)
{
    test_fstat();
    rank_tree_t r0, r1;
    build_rank(&r0, 0);
    build_rank(&r1, 1);
    if (!r0.s || !r1.s)
        return UNIT_RESULT();
    CHECK_EQ_U(r0.s->n_gpu_metrics, 2);
    CHECK_EQ_U(r1.s->n_gpu_values, 3);
    uint64_t len0, len1;
    uint8_t *b0 = sm_profile_summary_serialize(r0.s, NULL, 0, &len0);
    uint8_t *b1 = sm_profile_summary_serialize(r1.s, NULL, 1, &len1);
    CHECK(b0 && b1);
    uint8_t *seq = malloc(24 + len0 + len1);
    size_t n = append_record(seq, 0, 1, b1, len1);
    n = append_record(seq, n, 0, b0, len0);
    sm_profile_summary_t *s = sm_profile_summary_from_blobs(seq, n, 2);
    CHECK(s != NULL);
    if (!s)
        return UNIT_RESULT();
    /* Metrics united by name in rank order: rank 0's two, then rank 1's
     * cycles; members: rank 0's thread and stream, then rank 1's. */
    CHECK_EQ_U(s->n_gpu_metrics, 3);
    CHECK_EQ_U(s->n_gpu_values, 5);
    if (s->n_gpu_metrics == 3) {
        CHECK_STR(s->gpu_metric_names[0], INST);
        CHECK_STR(s->gpu_metric_names[1], TIME);
        CHECK_STR(s->gpu_metric_names[2], CYCLES);
    }
    int seen_cycles = 0;
    for (uint64_t i = 0; i < s->n_gpu_values; i++) {
        const sm_summary_gpu_value_t *v = &s->gpu_values[i];
        CHECK(v->path->region == FMA);
        CHECK(v->member == 1 || v->member == 3);
        if (v->metric == 2) {
            seen_cycles++;
            CHECK_EQ_U(v->member, 3);
            CHECK_EQ_U(v->st.covered, 4);
            CHECK_NEAR(v->st.sum, 1200, 0);
            CHECK_NEAR(sm_fstat_stddev(&v->st), 100, 1e-12);
        }
    }
    CHECK_EQ_U(seen_cycles, 1);

    /* Every truncation of a blob with GPU values is rejected; remap leaves
     * the GPU section alone. */
    int accepted = 0;
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY); /* the expected error lines */
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    for (uint64_t cut = 1; cut < len1; cut++) {
        size_t m = append_record(seq, 0, 1, b1, cut);
        sm_profile_summary_t *t = sm_profile_summary_from_blobs(seq, m, 2);
        accepted += t != NULL;
        sm_profile_summary_free(t);
    }
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    CHECK_EQ_U(accepted, 0);
    uint32_t map[] = {MAIN, LAUNCH, FMA, SOLVE};
    CHECK(sm_profile_summary_remap(b1, len1, map, 4) == 0);
    /* A version-2 blob (no GPU section) from an older process file. */
    sm_profile_summary_t *plain = sm_profile_summary_from_threads(
        &(sm_summary_thread_t){.location = 0, .name = "Thread 0", .creator = SM_INVALID_ID,
                               .root = &r0.cpu.root},
        1, 1.0);
    uint64_t lenp;
    uint8_t *bp = plain ? sm_profile_summary_serialize(plain, NULL, 0, &lenp) : NULL;
    CHECK(bp && lenp > 12);
    if (bp && lenp > 12) {
        bp[4] = 2; /* version, little-endian */
        size_t m = append_record(seq, 0, 0, bp, lenp - 12); /* without the empty GPU section */
        sm_profile_summary_t *old = sm_profile_summary_from_blobs(seq, m, 1);
        CHECK(old && old->n_gpu_values == 0 && old->root.first_child);
        sm_profile_summary_free(old);
    }
    free(bp);
    sm_profile_summary_free(plain);

    /* ---- the writers ---- */
    sm_defset_t *defs = sm_defset_new();
    CHECK(sm_defset_region(defs, "main", "app.c", 10, SM_PARADIGM_USER, SM_ROLE_FUNCTION) == MAIN);
    CHECK(sm_defset_region(defs, "cudaLaunchKernel", NULL, 0, SM_PARADIGM_CUDA,
                           SM_ROLE_WRAPPER) == LAUNCH);
    CHECK(sm_defset_region(defs, "fma_kernel(float*, int)", NULL, 0, SM_PARADIGM_CUDA,
                           SM_ROLE_FUNCTION) == FMA);
    CHECK(sm_defset_region(defs, "solve", "app.c", 20, SM_PARADIGM_USER, SM_ROLE_FUNCTION) == SOLVE);
    sm_procs_t procs = {.rank = 0, .size = 2};
    sm_job_process_t processes[2] = {{0, 100, "node1"}, {1, 101, "node1"}};
    sm_job_t job = {.procs = &procs, .defs = defs, .processes = processes};
    char dir[] = "/tmp/sm-test-gpu-profile-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *argv[] = {"./app"};
    sm_run_info_t run = {.output_dir = dir, .program = "app", .argc = 1, .argv = argv,
                         .pid = 100, .hostname = "node1", .clock_source = "tsc"};
    CHECK(sm_profile_write_text(&run, &job, s) == 0);
    CHECK(sm_profile_write_json(&run, &job, s) == 0);
    CHECK(sm_profile_write_csv(&run, &job, s) == 0);

    const char *csv = slurp(dir, "profile_gpu_counters.csv");
    CHECK(csv && !strncmp(csv, "section,kernel,path,metric,values,launches,sum,mean,min,max,"
                               "stddev,ranks,rank_mean,rank_min,rank_min_rank,rank_max,"
                               "rank_max_rank,rank_stddev\n", 120));
    double x[16];
    /* fma_kernel, all launches: rank 0 8 x 1000, rank 1 4 + 2 x 1000;
     * per-rank sums 8000 and 6000. */
    CHECK_EQ_U(csv_numbers(csv, "kernel,\"fma_kernel(float*, int)\",," INST ",", x, 14), 14);
    double want[] = {14, 14, 14000, 1000, 1000, 1000, 0, 2, 7000, 6000, 1, 8000, 0, 1000};
    for (int i = 0; i < 14; i++)
        CHECK_NEAR(x[i], want[i], 0);
    /* from main > cudaLaunchKernel: 8 + 4 launches, per-rank 8000 and 4000 */
    CHECK_EQ_U(csv_numbers(csv, "path,\"fma_kernel(float*, int)\",main > cudaLaunchKernel," INST ",",
                           x, 14), 14);
    double want_path[] = {12, 12, 12000, 1000, 1000, 1000, 0, 2, 6000, 4000, 1, 8000, 0, 2000};
    for (int i = 0; i < 14; i++)
        CHECK_NEAR(x[i], want_path[i], 0);
    CHECK_EQ_U(csv_numbers(csv, "path,\"fma_kernel(float*, int)\",main > solve > cudaLaunchKernel,"
                           INST ",", x, 14), 14);
    CHECK_NEAR(x[0], 2, 0);
    CHECK_NEAR(x[7], 1, 0);
    CHECK_NEAR(x[10], 1, 0); /* the one rank: rank 1 */
    /* rank 0's times 10..80: mean 45, population stddev sqrt(525) */
    CHECK_EQ_U(csv_numbers(csv, "kernel,\"fma_kernel(float*, int)\",," TIME ",", x, 14), 14);
    CHECK_NEAR(x[2], 360, 0);
    CHECK_NEAR(x[3], 45, 0);
    CHECK_NEAR(x[4], 10, 0);
    CHECK_NEAR(x[5], 80, 0);
    CHECK_NEAR(x[6], sqrt(525.0), 1e-9);
    /* rotate: 2 values covering 4 launches */
    CHECK_EQ_U(csv_numbers(csv, "kernel,\"fma_kernel(float*, int)\",," CYCLES ",", x, 14), 14);
    CHECK_NEAR(x[0], 2, 0);
    CHECK_NEAR(x[1], 4, 0);
    CHECK_NEAR(x[3], 600, 0);

    const char *text = slurp(dir, "profile.txt");
    CHECK(text && strstr(text, "GPU counters per kernel (all launches of the job;"));
    CHECK(text && strstr(text, "GPU counters per kernel and launching call path"));
    CHECK(text && strstr(text, "    from main > solve > cudaLaunchKernel\n"));
    CHECK(text && strstr(text, "GPU counters across ranks"));
    const char *line = text ? strstr(text, "    " INST " ") : NULL;
    CHECK(line && strstr(line, "      14        14              14000             1000"));
    const char *json = slurp(dir, "profile.json");
    CHECK(json && strstr(json, "\"counters\""));
    CHECK(json && strstr(json, "\"metrics\": [\"" INST "\", \"" TIME "\", \"" CYCLES "\"]"));
    CHECK(json && strstr(json, "\"path\": \"main > solve > cudaLaunchKernel\""));
    if (getenv("SM_TEST_KEEP")) {
        fprintf(stderr, "output kept in %s\n", dir);
    } else {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    sm_defset_free(defs);
    free(seq);
    free(b0);
    free(b1);
    sm_profile_summary_free(s);
    for (rank_tree_t *t = &r0; t; t = t == &r0 ? &r1 : NULL) {
        sm_profile_summary_free(t->s);
        sm_profile_free(&t->cpu);
        sm_profile_free(&t->gpu);
    }
    return UNIT_RESULT();
}
