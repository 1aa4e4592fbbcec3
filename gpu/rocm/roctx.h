/* The ROCTx API as ROCm's roctx.h declares it (Debian ships no roctx.h):
 * the calls that gpu/rocm/roctx.c answers.  Names and types are ROCm's. */
#ifndef SM_ROCTX_H
#define SM_ROCTX_H

#include <stdint.h>
#include "core/compiler.h"

typedef uint64_t roctx_range_id_t;

SM_EXPORT int roctxRangePushA(const char *message);
SM_EXPORT int roctxRangePop(void);
SM_EXPORT void roctxMarkA(const char *message);
SM_EXPORT roctx_range_id_t roctxRangeStartA(const char *message);
SM_EXPORT void roctxRangeStop(roctx_range_id_t id);
/* ROCm 6.2+ (rocprofiler-sdk's roctx): names the calling OS thread. */
SM_EXPORT int roctxNameOsThread(const char *name);
/* Present in every copy of this library: how one copy recognises another
 * (libsysmeasure-roctx.so preloaded, libroctx64.so.4 linked). */
SM_EXPORT extern const char sysmeasure_roctx_library[];

#endif
