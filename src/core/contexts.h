/* Calling contexts: a region and the context it was called from, as call-
 * stack sampling sees them (the instrumented call path, then the unwound
 * functions below it).  Defined once per distinct (region, parent) at the
 * end of the run, unified across processes like regions (unify.h), and
 * written as OTF2 CallingContext definitions.  A context also names the
 * module (shared object or executable) its region's code lies in. */
#ifndef SM_CONTEXTS_H
#define SM_CONTEXTS_H

#include <stdint.h>
#include "compiler.h"
#include "definitions.h"

typedef uint32_t sm_context_id_t;

typedef struct sm_context_def {
    sm_region_id_t region;
    sm_context_id_t parent; /* SM_INVALID_ID for an outermost context */
    sm_string_id_t module;  /* SM_INVALID_ID when none (instrumented regions) */
} sm_context_def_t;

/* Same (region, parent) gives the same id (the first module stays).
 * SM_INVALID_ID when out of memory.  Thread-safe. */
sm_context_id_t sm_context_define(sm_region_id_t region, sm_context_id_t parent,
                                  sm_string_id_t module) SM_HIDDEN;
uint32_t sm_context_count(void) SM_HIDDEN;
/* NULL for an unknown id.  The pointer stays valid until the next define. */
const sm_context_def_t *sm_context_get(sm_context_id_t id) SM_HIDDEN;

#endif
