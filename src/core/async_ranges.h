/* Async ranges: intervals that belong to no thread's region stack (a ROCTx or
 * NVTX range started on one thread and stopped on another).  A region on a
 * thread cannot cross threads in OTF2, so such a range is written whole, at
 * its stop, as an enter and a leave on a location of its own: an "async
 * ranges" lane of the process.  Ranges that overlap go to different lanes
 * (the first lane free at the range's start), so each lane stays properly
 * nested and in time order.  Lanes are CPU-thread locations named
 * "async ranges N": the profile counts their regions like a thread's. */
#ifndef SM_ASYNC_RANGES_H
#define SM_ASYNC_RANGES_H

#include <stdint.h>
#include "compiler.h"
#include "definitions.h"
#include "events.h"

/* Records region from start to end (ticks, start <= end) with attributes on
 * its enter.  Takes a lock (not a hot-path call).  0, or -1 when no lane
 * could be made (counted in sm_async_ranges_lost). */
int sm_async_range(sm_region_id_t region, uint64_t start, uint64_t end,
                   const sm_attr_value_t *attrs, uint32_t n) SM_HIDDEN;
uint64_t sm_async_ranges_lost(void) SM_HIDDEN;

#endif
