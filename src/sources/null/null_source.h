/* The null counter source: the template to copy for a new counter source
 * (see null_source.c).  Not listed in src/plugins.def: measured programs
 * never count it; tests/unit/test_counter_source.c lists it to check the
 * core's counter arithmetic through the interface. */
#ifndef SM_NULL_SOURCE_H
#define SM_NULL_SOURCE_H

#include "../../core/compiler.h"
#include "../../core/counters.h"

extern const sm_counter_source_t sm_null_source SM_HIDDEN;

#endif
