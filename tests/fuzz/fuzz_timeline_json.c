/* Fuzz harness: timeline.json as sysmeasure-report reads it (fuzz_report.h). */
#include "fuzz_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sm_fuzz_report("timeline.json", data, size);
    return 0;
}
