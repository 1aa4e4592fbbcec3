/* PAPI as a counter source (core/counters.h): each application thread
 * counts the configured events (SYSMEASURE_PAPI_EVENTS) in an event set of
 * its own.  Built only where configure found PAPI; listed in
 * src/plugins.def. */
#ifndef SM_PAPI_SOURCE_H
#define SM_PAPI_SOURCE_H

#include "../../core/compiler.h"
#include "../../core/counters.h"

extern const sm_counter_source_t sm_papi_source SM_HIDDEN;

#endif
