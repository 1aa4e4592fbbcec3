/* GPU counters in application mode: the merge of the passes (one run of the
 * whole job per metric group, in DIR/pass0, DIR/pass1, ...) into DIR, for
 * `sysmeasure-merge --gpu-passes DIR` (sysmeasure-passes runs the passes and
 * calls it).
 *
 * Every kernel launch of a pass's counter_collection*.csv (all ranks) is
 * keyed by (rank, launching call path, kernel name, n-th launch of that
 * kernel from that path).  A launch found in every pass gets the values of
 * all of them in DIR/counter_collection.csv (Group = the pass); its values
 * go into the per-kernel statistics (gpu_counter_table.h, the profile's own
 * computation) written as DIR/profile_gpu_counters.txt, .json and .csv.
 * Launches missing from some pass are listed in DIR/gpu_passes.json and
 * counted in one line on stderr: never merged silently. */
#ifndef SM_GPU_PASSES_H
#define SM_GPU_PASSES_H

#include "../core/compiler.h"

/* 0 merged; 1 a file could not be written; 2 nothing to merge (no pass
 * folder, or a pass without counter rows: one line says which). */
int sm_gpu_passes_merge(const char *dir) SM_HIDDEN;

#endif
