/* Device-level GPU counter sampling, vendor-neutral parts (gpu_sampling.h). */
#include "gpu_sampling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sm_gpu_sampling_interval(const char *text, uint64_t *ns, char *err, size_t errlen)
{
    const char *want = "expected a time with a unit, 50us to 1s (e.g. 100us, 1ms)";
    if (!text || !*text) {
        snprintf(err, errlen, "%s", want);
        return -1;
    }
    char *end = NULL;
    double v = strtod(text, &end);
    double scale = 0;
    if (end == text || !(v > 0))
        scale = 0;
    else if (!strcmp(end, "ns"))
        scale = 1;
    else if (!strcmp(end, "us"))
        scale = 1e3;
    else if (!strcmp(end, "ms"))
        scale = 1e6;
    else if (!strcmp(end, "s"))
        scale = 1e9;
    double x = v * scale;
    if (scale == 0 || x < SM_GPU_SAMPLING_MIN_NS - 0.5 || x > SM_GPU_SAMPLING_MAX_NS + 0.5) {
        snprintf(err, errlen, "%s", want);
        return -1;
    }
    *ns = (uint64_t)(x + 0.5);
    return 0;
}

int sm_gpu_sampling_list(const char *text, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    if (text && strchr(text, ';')) {
        snprintf(err, errlen, "sampled metrics are one list (comma-separated), not groups: "
                              "they are all sampled together");
        return -1;
    }
    return sm_gpu_spec_parse_list(text, s, err, errlen);
}

uint64_t sm_gpu_sampling_decode_period(uint64_t interval_ns)
{
    uint64_t p = interval_ns * 1000u;
    if (p < 10000000u)
        p = 10000000u;
    if (p > 100000000u)
        p = 100000000u;
    return p;
}

uint32_t sm_gpu_sampling_image_samples(uint64_t interval_ns)
{
    /* Twice a period's worth, so that a late decode still fits: CUPTI loses
     * the samples beyond a full image. */
    uint64_t n = 2u * sm_gpu_sampling_decode_period(interval_ns) / (interval_ns ? interval_ns : 1);
    return (uint32_t)(n + 16u);
}

void sm_gpu_sample_tracker_init(sm_gpu_sample_tracker_t *t, uint64_t interval_ns)
{
    memset(t, 0, sizeof *t);
    t->interval_ns = interval_ns;
}

void sm_gpu_sample_tracker_restart(sm_gpu_sample_tracker_t *t)
{
    t->last_end = 0;
}

int sm_gpu_sample_tracker_take(sm_gpu_sample_tracker_t *t, uint64_t start, uint64_t end)
{
    if (end <= start) {
        t->empty++;
        return 0;
    }
    if (!t->last_end) {
        t->first++;
        t->last_end = end;
        return 0;
    }
    if (start < t->last_end) { /* overlaps the last one: out of order */
        t->lost++;
        return 0;
    }
    uint64_t gap = start - t->last_end;
    if (t->interval_ns && gap > t->interval_ns / 2) {
        t->gaps++;
        t->lost += (gap + t->interval_ns / 2) / t->interval_ns;
    }
    t->last_end = end;
    t->kept++;
    return 1;
}

uint64_t sm_gpu_sample_value(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= 1.8e19)
        return UINT64_MAX;
    return (uint64_t)(v + 0.5);
}
