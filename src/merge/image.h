/* One process's measured data as the trace writer reads it: its locations,
 * their records, its id maps into the job's definitions and its clock.  The
 * live image is this process's event layer (at finalize); sysmeasure-merge
 * builds images from the files that processes left behind (process_file.h).
 * So the one OTF2 writer serves both. */
#ifndef SM_IMAGE_H
#define SM_IMAGE_H

#include <stdint.h>
#include "../core/buffer.h"
#include "../core/clock.h"
#include "../core/compiler.h"
#include "../core/gpu.h"
#include "unify.h"

typedef struct sm_image_location {
    uint32_t id;
    uint32_t type;    /* sm_location_type_t */
    uint32_t creator; /* location id in the same process, or SM_INVALID_ID */
    char name[64];
    char *creation_path; /* "a > b" (region names), malloc'd; NULL: none */
    uint32_t has_device; /* a GPU stream: the device it belongs to */
    sm_gpu_device_def_t device;
} sm_image_location_t;

typedef struct sm_image {
    uint32_t rank;
    const sm_id_maps_t *maps; /* this process's ids -> the job's */
    uint32_t n_locations;
    uint64_t start_ticks, end_ticks; /* the run in this process */
    void *ctx;
    /* Location i (0..n_locations-1): its description (free creation_path). */
    int (*location)(void *ctx, uint32_t i, sm_image_location_t *out);
    /* Location i's records in order; as sm_buffer_for_each. */
    int (*for_each)(void *ctx, uint32_t i, sm_record_fn fn, void *arg);
    /* for_each may run for different CPU threads' locations at once. */
    int parallel;
    /* Ticks of this process to ns on the job's timeline (rank 0's clock):
     * sm_clock_job_ns(&img->clock, ticks). */
    sm_clock_job_t clock;
} sm_image_t;

/* This process, as it is at finalize. */
void sm_image_live(sm_image_t *img, uint32_t rank, const sm_id_maps_t *maps,
                   uint64_t start_ticks, uint64_t end_ticks) SM_HIDDEN;

#endif
