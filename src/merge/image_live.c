/* The live image: this process's event layer, read at finalize. */
#include "image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/location.h"

/* The names of the regions open in the creator, outermost first: "a > b". */
static char *sm_live_creation_path(const sm_location_t *loc)
{
    static const char sep[] = " > ";
    size_t len = 1;
    for (uint32_t i = 0; i < loc->creator_depth; i++)
        len += strlen(sm_region_name(loc->creator_path[i])) + sizeof sep - 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < loc->creator_depth; i++) {
        const char *n = sm_region_name(loc->creator_path[i]);
        size_t l = strlen(n);
        if (i) {
            memcpy(p, sep, sizeof sep - 1);
            p += sizeof sep - 1;
        }
        memcpy(p, n, l);
        p += l;
    }
    *p = '\0';
    return s;
}

static int sm_live_location(void *ctx, uint32_t i, sm_image_location_t *out)
{
    (void)ctx;
    const sm_location_t *loc = sm_location_get(i);
    if (!loc)
        return -1;
    memset(out, 0, sizeof *out);
    out->id = loc->id;
    out->type = loc->type;
    out->creator = loc->creator;
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof loc->name, loc->name);
    out->creation_path = loc->creator != SM_INVALID_ID ? sm_live_creation_path(loc) : NULL;
    const sm_gpu_device_def_t *d = loc->type == SM_LOCATION_GPU_STREAM
                                       ? sm_gpu_device_get(sm_gpu_location_device(loc->id))
                                       : NULL;
    if (d) {
        out->has_device = 1;
        out->device = *d;
    }
    return 0;
}

static int sm_live_records(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    (void)ctx;
    return sm_buffer_for_each(sm_location_get(i), fn, arg);
}

/* A GPU stream's batches arrive in any order: its records are sorted. */
static int sm_live_for_each(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    const sm_location_t *loc = sm_location_get(i);
    if (loc && loc->type == SM_LOCATION_GPU_STREAM)
        return sm_gpu_for_each_in_order(sm_live_records, ctx, i, fn, arg);
    return sm_live_records(ctx, i, fn, arg);
}

void sm_image_live(sm_image_t *img, uint32_t rank, const sm_id_maps_t *maps,
                   uint64_t start_ticks, uint64_t end_ticks)
{
    memset(img, 0, sizeof *img);
    img->rank = rank;
    img->maps = maps;
    img->n_locations = sm_location_count();
    img->start_ticks = start_ticks;
    img->end_ticks = end_ticks;
    img->location = sm_live_location;
    img->for_each = sm_live_for_each;
    img->parallel = 1;
    sm_clock_job_get(&img->clock);
}
