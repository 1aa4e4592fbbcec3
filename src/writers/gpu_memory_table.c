/* GPU memory in the summaries: see gpu_memory_table.h. */
#include "gpu_memory_table.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../core/metrics.h"
#include "../merge/unify.h"

typedef struct sm_gmt_build {
    sm_gmt_t *t;
    uint32_t cap;
    double *peak_sum;
    int oom;
} sm_gmt_build_t;

static sm_gmt_row_t *sm_gmt_row(sm_gmt_build_t *b, const sm_gmem_row_t *in)
{
    sm_gmt_t *t = b->t;
    for (uint32_t i = 0; i < t->n_rows; i++)
        if (t->rows[i].kind == in->kind && !strcmp(t->rows[i].device, in->device))
            return &t->rows[i];
    if (t->n_rows == b->cap) {
        uint32_t cap = b->cap ? 2 * b->cap : 8;
        sm_gmt_row_t *r = realloc(t->rows, cap * sizeof *r);
        double *s = realloc(b->peak_sum, cap * sizeof *s);
        if (r)
            t->rows = r;
        if (s)
            b->peak_sum = s;
        if (!r || !s) {
            b->oom = 1;
            return NULL;
        }
        b->cap = cap;
    }
    sm_gmt_row_t *r = &t->rows[t->n_rows];
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "%s", in->device);
    snprintf(r->device_name, sizeof r->device_name, "%s", in->device_name);
    r->kind = in->kind;
    b->peak_sum[t->n_rows] = 0;
    t->n_rows++;
    return r;
}

/* Larger first, then the lower rank, then the lower address. */
static int sm_gmt_top_before(const sm_gmt_top_t *a, const sm_gmt_top_t *b)
{
    if (a->block.bytes != b->block.bytes)
        return a->block.bytes > b->block.bytes;
    if (a->rank != b->rank)
        return a->rank < b->rank;
    return a->block.address < b->block.address;
}

static void sm_gmt_add_top(sm_gmt_t *t, uint32_t rank, const sm_gmem_top_t *block)
{
    sm_gmt_top_t x = {rank, *block};
    uint32_t i = t->n_top < SM_GMT_TOP ? t->n_top : SM_GMT_TOP;
    while (i > 0 && sm_gmt_top_before(&x, &t->top[i - 1]))
        i--;
    if (i >= SM_GMT_TOP)
        return;
    uint32_t keep = t->n_top < SM_GMT_TOP ? t->n_top : SM_GMT_TOP - 1;
    memmove(&t->top[i + 1], &t->top[i], (keep - i) * sizeof t->top[0]);
    t->top[i] = x;
    if (t->n_top < SM_GMT_TOP)
        t->n_top++;
}

static void sm_gmt_add_process(sm_gmt_build_t *b, uint32_t rank, const sm_gmem_process_t *p)
{
    sm_gmt_t *t = b->t;
    for (uint32_t i = 0; i < p->n_rows && !b->oom; i++) {
        const sm_gmem_row_t *in = &p->rows[i];
        sm_gmt_row_t *r = sm_gmt_row(b, in);
        if (!r)
            return;
        if (!r->ranks || in->f.peak > r->peak) {
            r->peak = in->f.peak;
            r->peak_rank = rank;
        }
        r->ranks++;
        b->peak_sum[r - t->rows] += (double)in->f.peak;
        r->allocs += in->f.allocs;
        r->frees += in->f.frees;
        r->bytes_allocated += in->f.bytes_allocated;
        r->left_blocks += in->f.blocks;
        r->left_bytes += in->f.in_use;
        if (in->kind != SM_GPU_MEM_STATIC) {
            t->unfreed_blocks += in->f.blocks;
            t->unfreed_bytes += in->f.in_use;
        }
    }
    for (uint32_t i = 0; i < p->n_top; i++)
        sm_gmt_add_top(t, rank, &p->top[i]);
    t->counts.unknown_frees += p->counts.unknown_frees;
    t->counts.unknown_free_bytes += p->counts.unknown_free_bytes;
    t->counts.ignored += p->counts.ignored;
    t->counts.invalid += p->counts.invalid;
    t->counts.replaced += p->counts.replaced;
    t->counts.released_with_context += p->counts.released_with_context;
}

static void sm_gmt_add_blob(sm_gmt_build_t *b, uint32_t rank, const void *blob, uint64_t len)
{
    sm_gmem_process_t *p = malloc(sizeof *p);
    if (!p) {
        b->oom = 1;
        return;
    }
    int rc = sm_gpu_memory_read(blob, len, p);
    if (rc > 0)
        sm_gmt_add_process(b, rank, p);
    else if (rc < 0)
        b->t->damaged++;
    free(p);
}

static int sm_gmt_row_order(const void *x, const void *y)
{
    const sm_gmt_row_t *a = x, *b = y;
    int c = strcmp(a->device, b->device);
    if (c)
        return c;
    return a->kind < b->kind ? -1 : a->kind > b->kind;
}

sm_gmt_t *sm_gmt_build(const sm_job_t *job)
{
    sm_gmt_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    sm_gmt_build_t b = {.t = t};
    if (job && job->metrics) {
        const uint8_t *q = job->metrics, *end = q + job->metrics_len, *blob;
        uint32_t rank;
        uint64_t len;
        while (!b.oom && (q = sm_tree_next(q, end, &rank, &blob, &len)) != NULL)
            sm_gmt_add_blob(&b, rank, blob, len);
    } else {
        uint64_t len = 0;
        uint8_t *mine = sm_metrics_serialize(&len);
        if (mine)
            sm_gmt_add_blob(&b, 0, mine, len);
        free(mine);
    }
    if (b.oom || !t->n_rows) {
        free(b.peak_sum);
        sm_gmt_free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < t->n_rows; i++)
        t->rows[i].peak_mean = t->rows[i].ranks ? b.peak_sum[i] / t->rows[i].ranks : 0;
    free(b.peak_sum);
    qsort(t->rows, t->n_rows, sizeof *t->rows, sm_gmt_row_order);
    return t;
}

void sm_gmt_free(sm_gmt_t *t)
{
    if (!t)
        return;
    free(t->rows);
    free(t);
}

/* ---------------------------------------------------------------- profile.txt */

void sm_gmt_text(sm_out_t *o, const sm_gmt_t *t)
{
    if (!t)
        return;
    sm_out_printf(o, "\nGPU memory (bytes allocated through the GPU runtime, per device and kind; "
                     "high-water mark: the most in use at once)\n");
    sm_out_printf(o, "  %-10s %-12s %6s %16s %6s %16s %10s %10s %12s %16s\n", "DEVICE", "KIND",
                  "RANKS", "HIGH-WATER", "@RANK", "MEAN HIGH-WATER", "ALLOCS", "FREES",
                  "LEFT BLOCKS", "LEFT BYTES");
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gmt_row_t *r = &t->rows[i];
        sm_out_printf(o, "  %-10s %-12s %6u %16" PRIu64 " %6u %16.0f %10" PRIu64 " %10" PRIu64
                         " %12" PRIu64 " %16" PRIu64 "\n",
                      r->device, sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)r->kind), r->ranks,
                      r->peak, r->peak_rank, r->peak_mean, r->allocs, r->frees, r->left_blocks,
                      r->left_bytes);
    }
    if (t->unfreed_blocks) {
        sm_out_printf(o, "\nGPU memory never freed: %" PRIu64 " blocks, %" PRIu64
                         " bytes (module globals left out); the largest %u\n",
                      t->unfreed_blocks, t->unfreed_bytes, t->n_top);
        sm_out_printf(o, "  %16s %-10s %-12s %6s %-18s %s\n", "BYTES", "DEVICE", "KIND", "RANK",
                      "ADDRESS", "ALLOCATED AT");
        for (uint32_t i = 0; i < t->n_top; i++) {
            const sm_gmt_top_t *x = &t->top[i];
            sm_out_printf(o, "  %16" PRIu64 " %-10s %-12s %6u 0x%-16" PRIx64 " %s\n",
                          x->block.bytes, x->block.device,
                          sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)x->block.kind), x->rank,
                          x->block.address, x->block.path[0] ? x->block.path : "(unknown)");
        }
    }
    if (t->counts.unknown_frees)
        sm_out_printf(o, "  %" PRIu64 " frees of blocks allocated before measurement began (or "
                         "unseen) were not subtracted\n",
                      t->counts.unknown_frees);
    if (t->damaged)
        sm_out_printf(o, "  the GPU memory figures of %u ranks could not be read\n", t->damaged);
}

/* ---------------------------------------------------------------- JSON */

void sm_gmt_json_members(sm_json_t *j, const sm_gmt_t *t)
{
    sm_json_key(j, "devices");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gmt_row_t *r = &t->rows[i];
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "device", r->device);
        sm_json_field_string(j, "device_name", r->device_name);
        sm_json_field_string(j, "kind", sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)r->kind));
        sm_json_field_uint(j, "ranks", r->ranks);
        sm_json_field_uint(j, "high_water_bytes", r->peak);
        sm_json_field_uint(j, "high_water_rank", r->peak_rank);
        sm_json_field_double(j, "high_water_mean_bytes", r->peak_mean);
        sm_json_field_uint(j, "allocations", r->allocs);
        sm_json_field_uint(j, "frees", r->frees);
        sm_json_field_uint(j, "bytes_allocated", r->bytes_allocated);
        sm_json_field_uint(j, "left_blocks", r->left_blocks);
        sm_json_field_uint(j, "left_bytes", r->left_bytes);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_json_key(j, "never_freed");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "blocks", t->unfreed_blocks);
    sm_json_field_uint(j, "bytes", t->unfreed_bytes);
    sm_json_key(j, "largest");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < t->n_top; i++) {
        const sm_gmt_top_t *x = &t->top[i];
        char address[32];
        snprintf(address, sizeof address, "0x%" PRIx64, x->block.address);
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "bytes", x->block.bytes);
        sm_json_field_string(j, "device", x->block.device);
        sm_json_field_string(j, "kind", sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)x->block.kind));
        sm_json_field_uint(j, "rank", x->rank);
        sm_json_field_string(j, "address", address);
        sm_json_field_string(j, "path", x->block.path);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_json_object_end(j);
    sm_json_field_uint(j, "unknown_frees", t->counts.unknown_frees);
    sm_json_field_uint(j, "unknown_free_bytes", t->counts.unknown_free_bytes);
    sm_json_field_uint(j, "replaced_blocks", t->counts.replaced);
    sm_json_field_uint(j, "released_with_context", t->counts.released_with_context);
    sm_json_field_uint(j, "ignored_lower_layer", t->counts.ignored);
    sm_json_field_uint(j, "damaged_ranks", t->damaged);
}

void sm_gmt_json_field(sm_json_t *j, const sm_job_t *job)
{
    sm_gmt_t *t = sm_gmt_build(job);
    sm_json_key(j, "gpu_memory");
    if (!t) {
        sm_json_null(j);
        return;
    }
    sm_json_object_begin(j);
    sm_gmt_json_members(j, t);
    sm_json_object_end(j);
    sm_gmt_free(t);
}

/* ---------------------------------------------------------------- CSV */

int sm_gmt_csv(const char *dir, const sm_gmt_t *t)
{
    if (!t)
        return 0;
    sm_out_t o;
    if (sm_out_open(&o, dir, "profile_gpu_memory.csv") != 0)
        return -1;
    sm_out_printf(&o, "device,device_name,kind,ranks,high_water_bytes,high_water_rank,"
                      "high_water_mean_bytes,allocations,frees,bytes_allocated,left_blocks,"
                      "left_bytes\n");
    for (uint32_t i = 0; i < t->n_rows; i++) {
        const sm_gmt_row_t *r = &t->rows[i];
        sm_csv_field(&o, r->device);
        sm_out_printf(&o, ",");
        sm_csv_field(&o, r->device_name);
        sm_out_printf(&o, ",%s,%u,%" PRIu64 ",%u,%.1f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                          ",%" PRIu64 "\n",
                      sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)r->kind), r->ranks, r->peak,
                      r->peak_rank, r->peak_mean, r->allocs, r->frees, r->bytes_allocated,
                      r->left_blocks, r->left_bytes);
    }
    return sm_out_close(&o);
}
