/* Fuzz harness: the OTF2 anchor file (traces.otf2) as sysmeasure-convert
 * checks it before libotf2 reads it (src/util/otf2_anchor.c).  What must
 * hold: a refused anchor says why in one line; an anchor the check lets
 * through is one libotf2 opens (or refuses) in bounded time and memory --
 * it is handed to libotf2 here, so that libFuzzer's -timeout and
 * -rss_limit_mb catch an anchor that would make it loop or grow, the
 * defect the check is there for. */
#include "fuzz_common.h"

#include <stdarg.h>

#include <otf2/otf2.h>

#include "util/otf2_anchor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libotf2's own messages about a damaged archive: not wanted here. */
static OTF2_ErrorCode sm_fuzz_otf2_quiet(void *data, const char *file, uint64_t line,
                                         const char *function, OTF2_ErrorCode code,
                                         const char *fmt, va_list va)
{
    (void)data, (void)file, (void)line, (void)function, (void)fmt, (void)va;
    return code;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[300] = "", path[512];
    sm_otf2_anchor_t a;
    if (sm_otf2_anchor_check(data, size, &a, why, sizeof why) != 0) {
        sm_fuzz_one_line(why);
        return 0;
    }
    SM_FUZZ_ASSERT(a.anchor_format != 0, "an anchor of format 0 let through");
    sm_fuzz_put("traces.otf2", data, size, path, sizeof path);
    OTF2_Error_RegisterCallback(sm_fuzz_otf2_quiet, NULL);
    OTF2_Reader *r = OTF2_Reader_Open(path);
    if (r) {
        uint64_t n = 0;
        OTF2_Reader_GetNumberOfLocations(r, &n);
        OTF2_Reader_Close(r);
    }
    return 0;
}
