/* The body of the two spill-file harnesses (fuzz_spill_file.c and
 * fuzz_crash_events.c): one input as a spill file, read as the merge reads
 * it. */
#ifndef SM_FUZZ_SPILL_H
#define SM_FUZZ_SPILL_H

#include "fuzz_merge_common.h"

#include "../../src/core/buffer.h"

/* Every byte of every record delivered is looked at (ASan checks that it
 * lies in what the reader handed over). */
static int fuzz_record(const sm_record_t *r, void *arg)
{
    uint64_t *sum = arg;
    const uint8_t *p = (const uint8_t *)r;
    for (uint32_t i = 0; i < sm_record_size(r); i++)
        *sum += p[i];
    return 0;
}

static int fuzz_spill_one(const uint8_t *data, size_t size, int slots)
{
    if (size < 1 || size > (16u << 20))
        return 0;
    int fix = data[0] & 1;
    uint8_t *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    if (fix)
        sm_spill_image_fix_checks(buf, size - 1, slots);
    char dir[PATH_MAX], path[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/.spill", fuzz_dir);
    int written = fuzz_write(dir, fuzz_fresh_name("0.host.", ".events"), buf, size - 1, path,
                             sizeof path);
    free(buf);
    if (written != 0)
        return 0;
    sm_spill_report_t id, report;
    sm_spill_file_identity(path, &id);
    if (sm_spill_file_check(path, &report) >= 0) {
        uint64_t sum = 0;
        /* The locations a process has (few), and one far beyond. */
        for (uint32_t loc = 0; loc < 4; loc++)
            sm_spill_file_for_each_of(path, loc, "rank 0", fuzz_record, &sum);
        sm_spill_file_for_each(path, 1000000, fuzz_record, &sum);
    }
    unlink(path);
    return 0;
}

#endif
