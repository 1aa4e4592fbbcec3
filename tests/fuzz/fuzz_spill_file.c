/* Fuzz harness: a spill file (.spill/JOB.HOST.PID.events) as
 * sysmeasure-merge reads it: its header's identity, the check of the whole
 * file, and every location's records replayed in order.  The crash-safe
 * form of the file has its own harness (fuzz_crash_events.c); this one
 * keeps the version the input has.  See fuzz_common.h for the mode byte. */
#include "fuzz_merge_common.h"

#include "fuzz_spill.h"

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
    return fuzz_spill_one(data, size, 0);
}
