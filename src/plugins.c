/* The tables of src/plugins.def. */
#include "sm_build.h"

#include "core/counters.h"
#ifdef SM_HAVE_PAPI
#include "sources/papi/papi_source.h"
#endif

const sm_counter_source_t *const sm_counter_sources[] = {
#define SM_COUNTER_SOURCE(symbol) &symbol,
#include "plugins.def"
#undef SM_COUNTER_SOURCE
    NULL,
};
