/* GPU counter specs (src/util/gpu_metrics.c): the --gpu-metrics list, the
 * three file forms of rocprofv3 (pmc lines, JSON, YAML), kernel filters
 * and the configuration's one-line errors. */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "util/gpu_metrics.h"
#include "unit.h"

static sm_gpu_spec_t spec; /* large: not on the stack */

static int parse(const char *text, char *err, size_t len)
{
    sm_gpu_spec_free(&spec);
    sm_gpu_spec_init(&spec);
    err[0] = '\0';
    int rc = sm_gpu_spec_parse_text(text, strlen(text), &spec, err, len);
    CHECK(strchr(err, '\n') == NULL);
    return rc;
}

static void test_list(void)
{
    char err[512];
    sm_gpu_spec_init(&spec);
    CHECK(sm_gpu_spec_parse_list("smsp__inst_executed.sum, sm__cycles_elapsed.avg", &spec, err,
                                 sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 1);
    CHECK_EQ_U(spec.groups[0].n, 2);
    CHECK_STR(spec.groups[0].metrics[1], "sm__cycles_elapsed.avg");
    sm_gpu_spec_free(&spec);
    /* ';' separates groups; a name twice in a group counts once. */
    CHECK(sm_gpu_spec_parse_list("a__x.sum,b__y.sum;c__z.max,c__z.max;;", &spec, err, sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 2);
    CHECK_EQ_U(spec.groups[1].n, 1);
    const char *all[8];
    CHECK_EQ_U(sm_gpu_spec_all(&spec, all, 8), 3);
    CHECK_STR(all[2], "c__z.max");
    sm_gpu_spec_free(&spec);
    CHECK(sm_gpu_spec_parse_list("good__one.sum,bad name!", &spec, err, sizeof err) == -1);
    CHECK(strstr(err, "'bad' is not") == NULL); /* split on commas: "bad name!" is one word pair */
    CHECK(strstr(err, "name!") != NULL);
    sm_gpu_spec_free(&spec);
}

static void test_pmc_lines(void)
{
    char err[512];
    CHECK(parse("# rocprofv3 input\n"
                "pmc: smsp__inst_executed.sum sm__cycles_elapsed.avg\n"
                "\n"
                "pmc: dram__bytes_read.sum # second pass\n",
                err, sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 2);
    CHECK_EQ_U(spec.groups[0].n, 2);
    CHECK_STR(spec.groups[1].metrics[0], "dram__bytes_read.sum");
    CHECK(parse("pmc: a__b.sum\nbogus: x\n", err, sizeof err) == -1);
    CHECK_STR(err, "line 2: expected 'pmc: METRIC METRIC ...'");
    CHECK(parse("pmc:\n", err, sizeof err) == -1);
    CHECK(strstr(err, "names no metrics") != NULL);
}

static void test_json(void)
{
    char err[512];
    CHECK(parse("{\"jobs\": [\n"
                "  {\"pmc\": [\"smsp__inst_executed.sum\", \"gpu__time_duration.sum\"],\n"
                "   \"kernel_include_regex\": \"^saxpy\",\n"
                "   \"kernel_exclude_regex\": \"warmup\",\n"
                "   \"kernel_iteration_range\": \"[2-3],[7]\"},\n"
                "  {\"pmc_groups\": [[\"a__b.sum\"], [\"c__d.sum\", \"e__f.max\"]],\n"
                "   \"pmc_group_interval\": 4}\n"
                "]}\n",
                err, sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 3);
    CHECK_EQ_U(spec.groups[2].n, 2);
    CHECK_EQ_U(spec.interval, 4);
    CHECK_STR(spec.include_regex, "^saxpy");
    CHECK_EQ_U(spec.n_ranges, 2);
    CHECK_EQ_U(spec.ranges[0][0], 2);
    CHECK_EQ_U(spec.ranges[0][1], 3);
    CHECK_EQ_U(spec.ranges[1][0], 7);
    /* Filters: name regexes and the n-th launches. */
    CHECK(sm_gpu_spec_selects(&spec, "saxpy_kernel", 2) == 1);
    CHECK(sm_gpu_spec_selects(&spec, "saxpy_kernel", 3) == 1);
    CHECK(sm_gpu_spec_selects(&spec, "saxpy_kernel", 4) == 0);
    CHECK(sm_gpu_spec_selects(&spec, "saxpy_kernel", 7) == 1);
    CHECK(sm_gpu_spec_selects(&spec, "saxpy_warmup", 2) == 0);
    CHECK(sm_gpu_spec_selects(&spec, "daxpy", 2) == 0);
    /* pmc as one string; an array of iteration ranges. */
    CHECK(parse("{\"jobs\": [{\"pmc\": \"a__b.sum,c__d.sum\", \"kernel_iteration_range\": "
                "[\"[1-2]\", 5]}]}",
                err, sizeof err) == 0);
    CHECK_EQ_U(spec.groups[0].n, 2);
    CHECK_EQ_U(spec.n_ranges, 2);
    CHECK(sm_gpu_spec_selects(&spec, "k", 5) == 1);
    CHECK(sm_gpu_spec_selects(&spec, "k", 3) == 0);
    /* Errors: one line naming the job and the key. */
    CHECK(parse("{\"jobs\": [{\"pmc\": [\"a__b.sum\"], \"pmc_group_interval\": 0}]}", err,
                sizeof err) == -1);
    CHECK_STR(err, "job 1: pmc_group_interval: expected a whole number >= 1");
    CHECK(parse("{\"jobs\": [{\"pmc\": [\"a__b.sum\"]}, {\"pmc\": [\"x\"], "
                "\"kernel_include_regex\": \"(\"}]}",
                err, sizeof err) == -1);
    CHECK(strncmp(err, "job 2: kernel_include_regex '(' is not a regular expression", 59) == 0);
    CHECK(parse("{\"jobs\": [{\"pmc\": [\"a\"], \"kernel_include_regex\": \"x\"}, "
                "{\"pmc\": [\"b\"], \"kernel_include_regex\": \"y\"}]}",
                err, sizeof err) == -1);
    CHECK(strstr(err, "one set of kernel filters per run") != NULL);
    CHECK(parse("{\"jobs\": [{\"pmc\": [\"a\"], \"kernel_iteration_range\": \"[4-2]\"}]}", err,
                sizeof err) == -1);
    CHECK(strstr(err, "low <= high") != NULL);
    /* Kernel filters whose repetitions, expanded by regcomp, would take
     * gigabytes (found by fuzzing) are refused before regcomp; real ones
     * pass. */
    static const char *const heavy[] = {
        "^saxp++++++++++++++++++++++++++++++++++++++++++++++++++y",
        "((((((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+b", "(((a{1,100}){1,100}){1,100})",
        "x{32767}", "[a-z]{1,200}{1,200}", "^saxp++++++#+++++++++++c*++++++++++uy", "a*?"};
    static const char *const light[] = {"^(gemm|conv|reduce)_[a-z0-9]+$", "a{1,1000}",
                                        "[]{}()+*]+x", "^void foo<.*>[(]int[*][)]", "(a|b)+c?"};
    char doc[512];
    for (size_t i = 0; i < sizeof heavy / sizeof heavy[0]; i++) {
        snprintf(doc, sizeof doc,
                 "{\"jobs\": [{\"pmc\": [\"a\"], \"kernel_include_regex\": \"%s\"}]}", heavy[i]);
        CHECK(parse(doc, err, sizeof err) == -1);
        if (!strstr(err, "repeats too much"))
            fprintf(stderr, "%s: %s\n", heavy[i], err[0] ? err : "(taken)");
        CHECK(strstr(err, "repeats too much") != NULL);
    }
    for (size_t i = 0; i < sizeof light / sizeof light[0]; i++) {
        snprintf(doc, sizeof doc,
                 "{\"jobs\": [{\"pmc\": [\"a\"], \"kernel_exclude_regex\": \"%s\"}]}", light[i]);
        CHECK(parse(doc, err, sizeof err) == 0);
        if (strcmp(err, ""))
            fprintf(stderr, "%s: %s\n", light[i], err);
    }
    CHECK(parse("{\"jobs\": [{\"pmc\": [\"a\"]}", err, sizeof err) == -1);
    CHECK(strncmp(err, "JSON: ", 6) == 0);
    CHECK(parse("{\"tracing\": true}", err, sizeof err) == -1);
}

static void test_yaml(void)
{
    char err[512];
    CHECK(parse("# rocprofv3 YAML input\n"
                "jobs:\n"
                "  - pmc: [smsp__inst_executed.sum, 'sm__cycles_elapsed.avg']\n"
                "    kernel_include_regex: \"^gpu_\"\n"
                "    kernel_iteration_range: \"[1-4]\"\n"
                "  - pmc_groups:\n"
                "      - [a__b.sum, c__d.sum]\n"
                "      - [e__f.max]\n"
                "    pmc_group_interval: 2\n"
                "  - pmc:\n"
                "      - g__h.sum\n"
                "      - i__j.avg # a comment\n",
                err, sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 4);
    CHECK_STR(spec.groups[0].metrics[1], "sm__cycles_elapsed.avg");
    CHECK_EQ_U(spec.groups[1].n, 2);
    CHECK_STR(spec.groups[2].metrics[0], "e__f.max");
    CHECK_EQ_U(spec.groups[3].n, 2);
    CHECK_STR(spec.groups[3].metrics[1], "i__j.avg");
    CHECK_EQ_U(spec.interval, 2);
    CHECK_STR(spec.include_regex, "^gpu_");
    CHECK_EQ_U(spec.n_ranges, 1);
    CHECK_EQ_U(spec.ranges[0][1], 4);
    /* pmc_groups as a flow list of lists. */
    CHECK(parse("jobs:\n- pmc_groups: [[a__b.sum], [c__d.sum, e__f.sum]]\n", err, sizeof err) == 0);
    CHECK_EQ_U(spec.n_groups, 2);
    CHECK_EQ_U(spec.groups[1].n, 2);
    CHECK(parse("jobs:\n  - pmc: [a__b.sum]\n      bad: 1\n", err, sizeof err) == -1);
    CHECK_STR(err, "YAML: line 3: unexpected indentation");
}

static void test_config(void)
{
    sm_config_t cfg;
    char err[1024];
    char *good[] = {"SYSMEASURE_GPU_METRICS=smsp__inst_executed.sum;dram__bytes_read.sum",
                    "SYSMEASURE_GPU_COUNTER_MODE=rotate",
                    NULL};
    CHECK(sm_config_load(&cfg, good, err, sizeof err) == 0);
    sm_config_free(&cfg);
    char *mode[] = {"SYSMEASURE_GPU_COUNTER_MODE=passes", NULL};
    CHECK(sm_config_load(&cfg, mode, err, sizeof err) == -1);
    CHECK_STR(err, "bad value 'passes' for SYSMEASURE_GPU_COUNTER_MODE: expected one of "
                   "kernel|application|rotate");
    sm_config_free(&cfg);
    char *name[] = {"SYSMEASURE_GPU_METRICS=sm__x.sum,bad/name", NULL};
    CHECK(sm_config_load(&cfg, name, err, sizeof err) == -1);
    CHECK(strstr(err, "'bad/name' is not a metric name") != NULL);
    CHECK(strchr(err, '\n') == NULL);
    sm_config_free(&cfg);
}

int main(void)
{
    test_list();
    test_pmc_lines();
    test_json();
    test_yaml();
    test_config();
    sm_gpu_spec_free(&spec);
    return UNIT_RESULT();
}
