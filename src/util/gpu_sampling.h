/* Device-level GPU counter sampling (--gpu-sampling), the vendor-neutral
 * parts: the metric list and the interval as the configuration gives them,
 * and the bookkeeping of decoded samples that every backend needs (NVIDIA:
 * CUPTI's PM sampling; AMD: a ROCm device profiling session would feed the
 * same tracker).
 *
 * A decoded sample covers [start, end] on the GPU's clock (ns).  The
 * tracker keeps a sample or says why not:
 *   - the first sample after a start of sampling covers the time before it
 *     (on the H100 it began 0.4-0.7 s before the start): dropped;
 *   - a sample of zero length (CUPTI returns such after a stop): dropped;
 *   - a sample that does not begin where the previous one ended means the
 *     samples between were lost (a full decode image, an overflow): their
 *     number is counted, never hidden.
 * Shared by the launcher's checks, the configuration and the backends
 * (linked in as hidden copies). */
#ifndef SM_GPU_SAMPLING_H
#define SM_GPU_SAMPLING_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "gpu_metrics.h"

#define SM_GPU_SAMPLING_MIN_NS 50000u        /* 50 us: faster, decoding fell behind */
#define SM_GPU_SAMPLING_MAX_NS 1000000000u   /* 1 s */

/* "100us", "1ms", "250000ns", "0.5ms", "1s" into ns, within the limits
 * above.  0, or -1 with one phrase in err. */
int sm_gpu_sampling_interval(const char *text, uint64_t *ns, char *err, size_t errlen) SM_HIDDEN;

/* The --gpu-sampling list (one group: ';' is refused) into s.  0, or -1
 * with one phrase in err. */
int sm_gpu_sampling_list(const char *text, sm_gpu_spec_t *s, char *err, size_t errlen) SM_HIDDEN;

/* How often the samples are decoded for an interval (10 to 100 ms, about
 * 1000 samples a time), and how many samples a decode image must hold. */
uint64_t sm_gpu_sampling_decode_period(uint64_t interval_ns) SM_HIDDEN;
uint32_t sm_gpu_sampling_image_samples(uint64_t interval_ns) SM_HIDDEN;

typedef struct sm_gpu_sample_tracker {
    uint64_t interval_ns;
    uint64_t last_end;   /* of the last sample seen (0: none since the start) */
    uint64_t kept;       /* samples handed on */
    uint64_t first;      /* first samples after a start, dropped */
    uint64_t empty;      /* zero-length samples, dropped */
    uint64_t lost;       /* samples missing between two kept ones */
    uint64_t gaps;       /* places where samples were missing */
} sm_gpu_sample_tracker_t;

void sm_gpu_sample_tracker_init(sm_gpu_sample_tracker_t *t, uint64_t interval_ns) SM_HIDDEN;
/* Sampling (re)started: the next sample is a first one. */
void sm_gpu_sample_tracker_restart(sm_gpu_sample_tracker_t *t) SM_HIDDEN;
/* 1: keep the sample; 0: drop it (counted). */
int sm_gpu_sample_tracker_take(sm_gpu_sample_tracker_t *t, uint64_t start, uint64_t end) SM_HIDDEN;

/* A decoded value as the trace and the summary take it: rounded to the
 * nearest integer, negatives and NaN as 0. */
uint64_t sm_gpu_sample_value(double v) SM_HIDDEN;

#endif
