/* Fuzz harness: a crash-safe spill file (--crash-safe: fixed-size slots,
 * sealed ones checksummed, the chunks being written at a kill taken up to
 * their fill words) as sysmeasure-merge reads it for a killed process.
 * In the mode that recomputes the checks the header is kept in the
 * crash-safe format, so that the fuzzer's changes reach the slots.  See
 * fuzz_common.h for the mode byte. */
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
    return fuzz_spill_one(data, size, 1);
}
