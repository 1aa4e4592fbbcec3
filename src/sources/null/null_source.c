/* The null counter source, a template: copy this file to
 * src/sources/NAME/NAME_source.c, rename sm_null_* to sm_NAME_*, count
 * something real in read(), add the source's row to src/plugins.def and
 * its files to Makefile.am.  What the core does with the values (the
 * metrics' definitions, per-frame differences, inclusive and exclusive
 * statistics per call path, SM_REC_COUNTERS records in the trace) is not
 * the source's business: see core/counters.h.
 *
 * Its one event, "null_reads", counts the reads of the calling thread: a
 * region with no children shows 1 (its enter read and its leave read), a
 * region around one such child 3, of which 2 its own. */
#include "null_source.h"

#include <stdlib.h>

#include "../../util/log.h"

typedef struct sm_null_thread {
    uint64_t reads;
} sm_null_thread_t;

/* Once, at start-up, before the first thread is bound.  A real source
 * reads its own rows of cfg here (config_vars.def: SYSMEASURE_NAME_...),
 * returns 0 when nothing is asked for, and says in one line (sm_error or
 * sm_warning) why it counts nothing when something was asked for and
 * cannot be counted.  It names its events in names[0..max). */
static uint32_t sm_null_init(const sm_config_t *cfg, const char **names, uint32_t max)
{
    (void)cfg;
    if (max < 1) {
        sm_warning("null counter source: no room for its event");
        return 0;
    }
    names[0] = "null_reads";
    return 1;
}

/* On the application's thread that starts counting: per-thread state (an
 * event set, a file descriptor of perf_event_open, ...).  Never called on
 * the hot path; may allocate.  NULL: not counted on this thread (say why,
 * naming the thread, in one line). */
static void *sm_null_thread_start(const char *thread)
{
    (void)thread;
    return calloc(1, sizeof(sm_null_thread_t));
}

/* On the hot path (every enter and leave of the thread, when counting):
 * no locks, no allocation, no system call beyond the counter read itself.
 * Values only grow; false when the read failed (the core counts no change
 * and reports the failed reads at the thread's end). */
static bool sm_null_read(void *state, uint64_t *values)
{
    sm_null_thread_t *t = state;
    values[0] = t->reads++;
    return true;
}

/* On the thread that started counting, at its end. */
static void sm_null_thread_stop(void *state, const char *thread)
{
    (void)thread;
    free(state);
}

/* Lines for the summary (estimates, events left out); this one has none. */
static void sm_null_notes(void (*add)(const char *line))
{
    (void)add;
}

const sm_counter_source_t sm_null_source = {
    .name = "null",
    .init = sm_null_init,
    .unit = "reads",
    .thread_start = sm_null_thread_start,
    .read = sm_null_read,
    .thread_stop = sm_null_thread_stop,
    .notes = sm_null_notes,
};
