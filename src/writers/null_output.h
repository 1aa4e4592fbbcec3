/* The null output: the template to copy for a new output (null_output.c).
 * Not listed in src/finalize/outputs.def: no run writes it;
 * tests/unit/test_null_output.c runs the pipeline with it alone. */
#ifndef SM_NULL_OUTPUT_H
#define SM_NULL_OUTPUT_H

#include "../core/compiler.h"
#include "output.h"

extern const sm_output_t sm_output_null SM_HIDDEN;

#endif
