/* OpenMP adapter: an OMPT tool built into libsysmeasure.so.  The OpenMP
 * runtime finds it through the exported ompt_start_tool (the library is
 * preloaded) or through OMP_TOOL_LIBRARIES; it makes itself known only in a
 * process that sysmeasure measures.
 *
 * What it records, per thread (every thread of a team is a location):
 *   omp parallel @ F+0xN          implicit task of each team member (role PARALLEL);
 *                                 the team sizes are attributes of thread 0's enter
 *   omp for|sections|single|distribute|taskloop|workshare|scope @ F+0xN   worksharing
 *   omp barrier [(implicit)] @ F+0xN, omp taskwait @, omp taskgroup @    (role BARRIER)
 *   omp masked @ F+0xN
 *   omp task @ F+0xN              an explicit task, on the thread that runs it
 *   omp <lock kind> (wait) @ F+0xN  acquire .. acquired, every mutex kind
 *   omp critical|ordered|atomic @ F+0xN  acquired .. released (held)
 * F+0xN is the function holding the runtime's code pointer for the
 * construct; the bodies that clang outlines (".omp_outlined.") are named
 * after the region they belong to ("main.omp_outlined").  Names are made
 * once per code pointer; afterwards a lock-free table maps it to regions. */
#ifndef SM_OMPT_TOOL_H
#define SM_OMPT_TOOL_H

#include <stdbool.h>
#include "core/subsystem.h"
#include "core/compiler.h"

/* The OpenMP runtime took the tool (OMPT initialised in this process). */
bool sm_ompt_in_use(void) SM_HIDDEN;

/* Its part of the end (src/plugins.def): idle workers and teams closed. */
extern const sm_subsystem_t sm_ompt_subsystem SM_HIDDEN;

#endif
