/* The run's region filter: see region_filter.h. */
#include "region_filter.h"

#include <stdio.h>

#include "definitions.h"
#include "runtime.h"
#include "../util/filter.h"
#include "../util/log.h"
#include "../util/mpi_groups.h"

/* Kept for the life of the process: the definitions consult it. */
static sm_filter_t *sm_run_filter;

void sm_region_filter_init(const sm_config_t *cfg)
{
    char err[1024], note[1200];
    if (cfg->filter && cfg->filter[0] && !sm_run_filter) {
        sm_run_filter = sm_filter_read(cfg->filter, err, sizeof err);
        if (!sm_run_filter) {
            sm_error("%s; regions are not filtered", err);
            snprintf(note, sizeof note, "filter not applied: %s", err);
        } else {
            sm_definitions_set_filter(sm_run_filter);
            snprintf(note, sizeof note, "filter %s (%zu patterns) applied: filtered regions are "
                     "left out of trace and profile", cfg->filter,
                     sm_filter_rule_count(sm_run_filter));
        }
        sm_runtime_add_note(note);
    }
    uint32_t mask;
    if (sm_mpi_groups_parse(cfg->mpi_groups, &mask, err, sizeof err) == 0 &&
        mask != SM_MPI_GROUPS_ALL) {
        char off[256];
        sm_mpi_groups_format_off(mask, off, sizeof off);
        snprintf(note, sizeof note, "MPI groups not measured (--mpi-groups=%s): %s",
                 cfg->mpi_groups, off);
        sm_runtime_add_note(note);
    }
}
