/* C entry points to CUPTI's profiler host API (cupti_profiler_host.h), whose
 * header compiles only as C++ (it includes <string>): metric catalogue,
 * config images, pass counts and the evaluation of decoded counter data.
 * Used by the range profiler (per-kernel counters) and PM sampling of
 * cupti_backend.c and by sysmeasure-avail --gpu (cupti_avail.c). */
#ifndef SM_CUPTI_HOST_H
#define SM_CUPTI_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_cuh sm_cuh_t;

/* A host object for chip (cuptiDeviceGetChipName) and the device's counter
 * availability image; pm: for PM sampling instead of the range profiler.
 * NULL with err set. */
sm_cuh_t *sm_cuh_open(const char *chip, const uint8_t *avail, int pm, char *err, size_t errlen)
    __attribute__((visibility("hidden")));
void sm_cuh_close(sm_cuh_t *h) __attribute__((visibility("hidden")));

/* A config image (malloc'd, *size bytes) for the metrics, and the number of
 * passes it needs.  0, or -1 with err naming the first metric refused. */
int sm_cuh_config(sm_cuh_t *h, const char *const *metrics, size_t n, uint8_t **image,
                  size_t *size, size_t *passes, char *err, size_t errlen)
    __attribute__((visibility("hidden")));

/* Whether the chip knows the metric (full name with rollup/submetric). */
int sm_cuh_known(sm_cuh_t *h, const char *metric) __attribute__((visibility("hidden")));

/* The metric's unit ("inst", "cycle", "byte", "nsecond", "%"), or "". */
const char *sm_cuh_unit(sm_cuh_t *h, const char *metric) __attribute__((visibility("hidden")));

/* Values of range `range` of a decoded counter data image. */
int sm_cuh_evaluate(sm_cuh_t *h, const uint8_t *data, size_t size, size_t range,
                    const char *const *metrics, size_t n, double *values)
    __attribute__((visibility("hidden")));

/* Every base metric (counters, ratios, throughputs), with its type
 * ("counter", "ratio", "throughput"); returns how many. */
size_t sm_cuh_list(sm_cuh_t *h, void (*fn)(const char *name, const char *type, void *arg),
                   void *arg) __attribute__((visibility("hidden")));

/* Up to max catalogue names nearest to metric (by edit distance of the part
 * before the first '.'), written "a, b, c" into out. */
void sm_cuh_nearest(sm_cuh_t *h, const char *metric, char *out, size_t len, int max)
    __attribute__((visibility("hidden")));

#ifdef __cplusplus
}
#endif

#endif
