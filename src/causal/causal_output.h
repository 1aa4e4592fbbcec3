/* The causal profile's outputs (causal/experiments.coz, .json) and the
 * estimates that profile.txt and report.html show too. */
#ifndef SM_CAUSAL_OUTPUT_H
#define SM_CAUSAL_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../writers/output.h"

extern const sm_output_t sm_output_causal_coz SM_HIDDEN;
extern const sm_output_t sm_output_causal_json SM_HIDDEN;

typedef struct sm_causal_estimate {
    double program_speedup; /* 0.25: the program 25 % faster */
    double error;           /* standard error of that */
    uint32_t experiments;   /* behind it */
    uint32_t baseline_experiments;
} sm_causal_estimate_t;

/* The progress point estimates are made for, or -1. */
int sm_causal_main_point(void) SM_HIDDEN;
/* The estimate for function fn (scope index; line: one of its lines in
 * line mode, else 0) at speedup percent, from the
 * experiments of this process: 0, or -1 when none ran there or there is no
 * baseline. */
int sm_causal_estimate(int32_t fn, uint32_t line, uint32_t speedup, int point,
                       sm_causal_estimate_t *out) SM_HIDDEN;
/* The same from the experiments of speedups within center +- half, each
 * estimated alone (their mean and its standard error). */
int sm_causal_estimate_window(int32_t fn, uint32_t line, uint32_t center, uint32_t half,
                              int point, sm_causal_estimate_t *out) SM_HIDDEN;
/* profile.txt's section (nothing when no experiment ran here). */
struct sm_out;
void sm_causal_text(struct sm_out *o) SM_HIDDEN;
/* The function's name (demangled) and "file:line" of its start ("" when
 * unknown; where may be NULL). */
void sm_causal_function_label(int32_t fn, char *name, size_t nlen, char *where, size_t wlen)
    SM_HIDDEN;

#endif
