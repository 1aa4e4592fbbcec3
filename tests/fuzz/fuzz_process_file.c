/* Fuzz harness: a process file (.ranks/rank-N.JOB.smp) as sysmeasure-merge
 * reads it: the file, then what the merge does with its contents before
 * writing (definitions merged, locations as an image, profile remapped and
 * summarised, sampled metrics).  Its events are in spill files: see
 * fuzz_spill_file.c.  See fuzz_common.h for the mode byte. */
#include "fuzz_merge_common.h"

#include "../../src/core/gpu_memory.h"
#include "../../src/core/metrics.h"
#include "../../src/merge/image.h"
#include "../../src/merge/process_file.h"
#include "../../src/merge/profile_summary.h"
#include "../../src/merge/unify.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup();
    return 0;
}

static void fuzz_metric(const sm_metric_entry_t *e, void *arg)
{
    *(uint64_t *)arg += e->samples + strnlen(e->name, sizeof e->name) +
                        strnlen(e->unit, sizeof e->unit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    if (size < 1 || size > (8u << 20))
        return 0;
    int fix = data[0] & 1;
    uint8_t *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    if (fix)
        sm_process_file_fix_checks(buf, size - 1);
    char dir[PATH_MAX], path[PATH_MAX + 64], err[PATH_MAX + 600];
    snprintf(dir, sizeof dir, "%s/.ranks", fuzz_dir);
    if (fuzz_write(dir, fuzz_fresh_name("rank-0.", ".smp"), buf, size - 1, path,
                   sizeof path) != 0) {
        free(buf);
        return 0;
    }
    free(buf);
    sm_process_file_head_t head;
    sm_process_file_t *f = sm_process_file_read(path, &head, err, sizeof err);
    unlink(path);
    if (!f)
        return 0;
    /* Definitions into the job's, as the merge unifies them. */
    sm_defset_t *defs = sm_defset_new();
    if (defs && sm_defset_merge_blob(defs, f->defs, f->defs_len, &f->maps) == 0) {
        /* Its locations, as the OTF2 writer takes them (events left out:
         * their files are not here). */
        sm_image_t img;
        sm_process_file_image(f, &img);
        for (uint32_t i = 0; i < img.n_locations; i++) {
            sm_image_location_t l;
            if (img.location(img.ctx, i, &l) == 0)
                free(l.creation_path);
        }
        /* The profile in the job's region ids, summarised as for rank f->rank. */
        if (f->profile_len &&
            sm_profile_summary_remap(f->profile, f->profile_len, f->maps.regions,
                                     f->maps.n_regions) == 0) {
            uint64_t len = sizeof(uint32_t) + sizeof(uint64_t) + f->profile_len;
            uint8_t *seq = malloc(len);
            if (seq) {
                memcpy(seq, &f->rank, sizeof f->rank);
                memcpy(seq + sizeof f->rank, &f->profile_len, sizeof f->profile_len);
                memcpy(seq + sizeof f->rank + sizeof f->profile_len, f->profile, f->profile_len);
                sm_profile_summary_t *s =
                    sm_profile_summary_from_blobs(seq, len, f->rank < 64 ? f->rank + 1 : 64);
                sm_profile_summary_free(s);
                free(seq);
            }
        }
    }
    uint64_t sum = 0;
    if (f->metrics) {
        sm_metrics_deserialize(f->metrics, f->metrics_len, fuzz_metric, &sum);
        /* the GPU memory figures that follow the metrics */
        sm_gmem_process_t *gm = malloc(sizeof *gm);
        if (gm && sm_gpu_memory_read(f->metrics, f->metrics_len, gm) > 0)
            sum += gm->n_rows + gm->n_top;
        free(gm);
    }
    sm_defset_free(defs);
    sm_process_file_free(f);
    return 0;
}
