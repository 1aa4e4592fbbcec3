/* Fuzz harness: the whole of sysmeasure-merge (sm_merge_folder) on a folder
 * of process files, spill files and crash-safe journals: placing files by
 * their headers, recovering killed processes, unifying, and every writer
 * the merge runs (OTF2 archive, profiles, metadata, report).  This is where
 * a use after free between the readers and the writers shows (the metrics
 * of issue 27), under ASan.
 *
 * Input: the mode byte (fuzz_common.h), then files, each
 *     u8 kind (0: .ranks, 1: .spill events, 2: .spill journal)
 *     u8 name length, name, u32 size, bytes
 * tests/fuzz/pack_folder.py packs a folder a job left into one. */
#include "fuzz_merge_common.h"

#include "../../src/core/buffer.h"
#include "../../src/core/journal.h"
#include "../../src/merge/merge.h"
#include "../../src/merge/process_file.h"
#include "../../src/util/log.h"

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
    if (size < 1 || size > (16u << 20))
        return 0;
    int fix = data[0] & 1;
    char folder[PATH_MAX], ranks[PATH_MAX + 16], spill[PATH_MAX + 16], path[PATH_MAX + 300];
    snprintf(folder, sizeof folder, "%s/%s", fuzz_dir, fuzz_fresh_name("job", ""));
    if (mkdir(folder, 0755) != 0)
        return 0;
    snprintf(ranks, sizeof ranks, "%s/.ranks", folder);
    snprintf(spill, sizeof spill, "%s/.spill", folder);
    size_t at = 1;
    for (int files = 0; files < 64 && at + 2 <= size; files++) {
        uint8_t kind = data[at], name_len = data[at + 1];
        at += 2;
        if (at + name_len + 4 > size)
            break;
        char name[256];
        memcpy(name, data + at, name_len);
        name[name_len] = '\0';
        at += name_len;
        uint32_t len;
        memcpy(&len, data + at, 4);
        at += 4;
        if (len > size - at)
            len = (uint32_t)(size - at);
        /* A plain name in its folder (the merge finds files by listing). */
        for (char *c = name; *c; c++)
            if (*c == '/')
                *c = '_';
        if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..")) {
            at += len;
            continue;
        }
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf)
            break;
        memcpy(buf, data + at, len);
        at += len;
        if (fix && kind == 0)
            sm_process_file_fix_checks(buf, len);
        else if (fix && kind == 1)
            sm_spill_image_fix_checks(buf, len, 0);
        else if (fix && kind == 2)
            sm_journal_image_fix_checks(buf, len);
        fuzz_write(kind == 0 ? ranks : spill, name, buf, len, path, sizeof path);
        free(buf);
    }
    sm_merge_options_t opt = {.job = NULL, .perfetto = 0, .keep = 0};
    sm_merge_folder(folder, &opt);
    fuzz_rm_rf(folder);
    return 0;
}
