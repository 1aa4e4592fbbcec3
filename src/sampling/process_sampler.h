/* Process and system sampling (--process-sampling): a sampler (core
 * sampler.h) that reads Linux's /proc and getrusage each interval. */
#ifndef SM_PROCESS_SAMPLER_H
#define SM_PROCESS_SAMPLER_H

#include "../core/compiler.h"
#include "../core/config.h"
#include "../core/subsystem.h"

/* Its lifecycle (src/plugins.def): init only. */
extern const sm_subsystem_t sm_process_sampler_subsystem SM_HIDDEN;

/* Registers the sampler when cfg->process_sampling is set.  0 or -1. */
int sm_process_sampler_init(const sm_config_t *cfg) SM_HIDDEN;

#endif
