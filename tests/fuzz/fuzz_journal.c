/* Fuzz harness: a crash-safe definitions journal (.spill/JOB.HOST.PID.defs)
 * as sysmeasure-merge reads it for a killed process: its header, then the
 * process file rebuilt from its entries (definitions, locations, rank,
 * clock; no events file), then its definitions merged into the job's, as
 * the merge does.  See fuzz_common.h for the mode byte. */
#include "fuzz_merge_common.h"

#include "../../src/core/journal.h"
#include "../../src/merge/image.h"
#include "../../src/merge/process_file.h"
#include "../../src/merge/recover.h"
#include "../../src/merge/unify.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup();
    return 0;
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
        sm_journal_image_fix_checks(buf, size - 1);
    char dir[PATH_MAX], path[PATH_MAX + 64], err[PATH_MAX + 600];
    snprintf(dir, sizeof dir, "%s/.spill", fuzz_dir);
    int written = fuzz_write(dir, fuzz_fresh_name("0.host.", ".defs"), buf, size - 1, path,
                             sizeof path);
    free(buf);
    if (written != 0)
        return 0;
    sm_journal_head_t head;
    char job[SM_JOB_ID_MAX], host[64];
    int64_t pid;
    if (sm_journal_peek(path, &head, err, sizeof err) == 0)
        sm_recover_peek(path, job, sizeof job, &pid, host, sizeof host, err, sizeof err);
    uint64_t events = 0;
    sm_process_file_t *f = sm_recover_process(path, NULL, &events, err, sizeof err);
    unlink(path);
    if (!f)
        return 0;
    sm_defset_t *defs = sm_defset_new();
    if (defs && sm_defset_merge_blob(defs, f->defs, f->defs_len, &f->maps) == 0) {
        sm_image_t img;
        sm_recover_image(f, &img);
        for (uint32_t i = 0; i < img.n_locations; i++) {
            sm_image_location_t l;
            if (img.location(img.ctx, i, &l) == 0)
                free(l.creation_path);
        }
    }
    sm_defset_free(defs);
    sm_process_file_free(f);
    return 0;
}
