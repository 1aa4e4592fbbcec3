/* The run's region filter (--filter) and MPI groups note: read once at
 * start, before any region is defined. */
#ifndef SM_REGION_FILTER_H
#define SM_REGION_FILTER_H

#include "compiler.h"
#include "config.h"

/* Reads the filter file and hands it to the definitions; adds the run's
 * notes (filter, MPI groups left out).  A filter file that cannot be read
 * is an error message and an unfiltered run (the launcher has checked it
 * before the program started). */
void sm_region_filter_init(const sm_config_t *cfg) SM_HIDDEN;

#endif
