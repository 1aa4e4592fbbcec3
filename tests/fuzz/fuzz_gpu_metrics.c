/* Fuzz harness: a GPU metrics file (--gpu-metrics-file: text, JSON or YAML
 * forms, src/util/gpu_metrics.c) read from a file as the launcher reads
 * it, and the same bytes as a --gpu-metrics list.  What must hold: a spec
 * whose metrics and kernel selection then work, or one line saying why
 * not. */
#include "fuzz_common.h"

#include "util/gpu_metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sm_fuzz_use(sm_gpu_spec_t *s)
{
    const char *names[SM_GPU_SPEC_MAX_METRICS * SM_GPU_SPEC_MAX_GROUPS];
    uint32_t n = sm_gpu_spec_all(s, names, sizeof names / sizeof names[0]);
    for (uint32_t i = 0; i < n; i++)
        SM_FUZZ_ASSERT(names[i] != NULL, "metric %u has no name", (unsigned)i);
    (void)sm_gpu_spec_selects(s, "kernel_a", 1);
    (void)sm_gpu_spec_selects(s, "void foo<int>(int*)", 1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512], err[2048] = "";
    sm_gpu_spec_t s;
    sm_fuzz_put("input", data, size, path, sizeof path);
    sm_gpu_spec_init(&s);
    if (sm_gpu_spec_read_file(path, &s, err, sizeof err) == 0)
        sm_fuzz_use(&s);
    else
        sm_fuzz_one_line(err);
    sm_gpu_spec_free(&s);
    /* The list form (a C string: up to the first NUL). */
    char *list = strndup((const char *)data, size);
    SM_FUZZ_ASSERT(list != NULL, "out of memory");
    err[0] = '\0';
    sm_gpu_spec_init(&s);
    if (sm_gpu_spec_parse_list(list, &s, err, sizeof err) == 0)
        sm_fuzz_use(&s);
    else
        sm_fuzz_one_line(err);
    sm_gpu_spec_free(&s);
    free(list);
    return 0;
}
