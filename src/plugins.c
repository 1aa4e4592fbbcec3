/* The tables of src/plugins.def. */
#include "sm_build.h"

#include "core/counters.h"
#include "core/subsystem.h"
#include "compiler/compiler_hooks.h"
#include "compiler/throttle.h"
#include "python/python_adapter.h"
#include "core/gpu.h"
#include "core/gpu_counters.h"
#include "../ompt/ompt_tool.h"
#include "sampling/callstack.h"
#include "sampling/process_sampler.h"
#include "causal/causal.h"
#ifdef SM_HAVE_PAPI
#include "sources/papi/papi_source.h"
#endif

const sm_counter_source_t *const sm_counter_sources[] = {
#define SM_COUNTER_SOURCE(symbol) &symbol,
#define SM_SUBSYSTEM(symbol)
#include "plugins.def"
#undef SM_COUNTER_SOURCE
#undef SM_SUBSYSTEM
    NULL,
};

const sm_subsystem_t *const sm_subsystems[] = {
#define SM_COUNTER_SOURCE(symbol)
#define SM_SUBSYSTEM(symbol) &symbol,
#include "plugins.def"
#undef SM_COUNTER_SOURCE
#undef SM_SUBSYSTEM
    NULL,
};
