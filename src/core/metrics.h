/* Named counter metrics of the process (for example the bytes a Kokkos memory
 * space holds): a name and a unit, defined once, and the value's last and
 * largest sample, for metadata.json.  The samples themselves go into the
 * trace of the thread that takes them (SM_REC_METRIC_NAMED). */
#ifndef SM_METRICS_H
#define SM_METRICS_H

#include <stdint.h>
#include "compiler.h"
#include "definitions.h"

typedef uint32_t sm_metric_id_t;

/* Sampled metrics take a value now and then from any thread; counters (PAPI
 * events) are read on every enter and leave of the thread that counts them,
 * and their values live in the profile, not here. */
typedef enum { SM_METRIC_SAMPLED = 0, SM_METRIC_COUNTER = 1 } sm_metric_kind_t;

typedef struct sm_metric_def {
    sm_string_id_t name;
    sm_string_id_t unit;
    uint32_t kind;    /* sm_metric_kind_t */
    uint64_t last;    /* the latest sample */
    uint64_t max;     /* the largest sample: a high-water mark */
    uint64_t samples;
    uint64_t min;     /* the smallest sample (UINT64_MAX before the first) */
    uint64_t sum;     /* of every sample, for the mean */
} sm_metric_def_t;

/* Same name gives the same id (the first unit stays).  SM_INVALID_ID when
 * the table is full or the core is not up. */
sm_metric_id_t sm_metric_define(const char *name, const char *unit) SM_HIDDEN;
sm_metric_id_t sm_metric_define_kind(const char *name, const char *unit,
                                     sm_metric_kind_t kind) SM_HIDDEN;
/* A sample, from any thread (lock-free). */
void sm_metric_sample(sm_metric_id_t id, uint64_t value) SM_HIDDEN;
uint32_t sm_metric_count(void) SM_HIDDEN;
/* The samples' statistics start again (the next window of a --dormant run,
 * window.h); definitions and last values stay. */
void sm_metrics_restart(void) SM_HIDDEN;
/* A snapshot of one metric; 0, or -1 for an unknown id. */
int sm_metric_get(sm_metric_id_t id, sm_metric_def_t *out) SM_HIDDEN;

/* This process's sampled metrics as bytes, for rank 0 to gather (malloc'd; NULL
 * when out of memory): per metric its name and unit (u32 length, bytes),
 * last, max, samples, min, sum (u64); then the GPU memory figures. */
void *sm_metrics_serialize(uint64_t *len) SM_HIDDEN;

/* One metric of such bytes, read back (names cut to fit, NUL-terminated). */
typedef struct sm_metric_entry {
    char name[128], unit[128];
    uint64_t last, max, samples, min, sum;
} sm_metric_entry_t;
/* Reads the blob of one process: calls fn for each metric in order, and
 * stops at the end or at malformed bytes. */
void sm_metrics_deserialize(const void *blob, uint64_t len,
                            void (*fn)(const sm_metric_entry_t *e, void *arg),
                            void *arg) SM_HIDDEN;
/* What follows the metrics in such bytes (other core modules' figures of
 * the process: GPU memory, gpu_memory.h): its start and length; NULL when
 * the metrics are damaged. */
const uint8_t *sm_metrics_tail(const void *blob, uint64_t len, uint64_t *tail_len) SM_HIDDEN;

#endif
