/* The output interface, through the null output (the template): the
 * pipeline, run for one process with the null output alone, unifies
 * nothing more, reduces this process's profile (main > A > B, main > B)
 * and has rank 0 write null.txt with the job's ranks and call paths. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "finalize/pipeline.h"
#include "merge/profile_summary.h"
#include "merge/unify.h"
#include "writers/null_output.h"
#include "unit.h"

static void test_pipeline_with_null_output(void)
{
    sm_clock_init(SM_CLOCK_AUTO);
    sm_definitions_init();
    sm_locations_init();
    sm_buffers_configure(1u << 20, 64u << 10);
    sm_locations_set_modes(0, 1, 1);
    sm_location_t *loc = sm_location_create(SM_LOCATION_CPU_THREAD, "main thread");
    sm_region_id_t M = sm_region_define("main", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t A = sm_region_define("A", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t B = sm_region_define("B", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_event_enter(loc, M, 0);
    sm_event_enter(loc, A, 10);
    sm_event_enter(loc, B, 20);
    sm_event_leave(loc, B, 30);
    sm_event_leave(loc, A, 40);
    sm_event_enter(loc, B, 50);
    sm_event_leave(loc, B, 60);
    sm_event_leave(loc, M, 70);

    const sm_procs_t *one = sm_procs_single();
    sm_id_maps_t maps = {0};
    sm_defset_t *defs = sm_unify(one, &maps);
    CHECK(defs != NULL);
    sm_profile_summary_t *local = sm_profile_summarize();
    uint64_t len = 0;
    void *blob = local ? sm_profile_summary_serialize(local, &maps, 0, &len) : NULL;
    sm_profile_summary_free(local);
    CHECK(blob != NULL);

    char dir[] = "/tmp/sm-null-output-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    sm_run_info_t run;
    memset(&run, 0, sizeof run);
    run.output_dir = dir;
    run.n_ranks = 1;
    static const sm_output_t *const only_null[] = {&sm_output_null, NULL};
    sm_finalize_t f = {
        .procs = one,
        .run = &run,
        .job = {.procs = one, .defs = defs, .maps = &maps},
        .profiles = blob,
        .profiles_len = len,
        .profile = true,
        .outputs = only_null,
    };
    CHECK_EQ_U(sm_finalize_run(&f), 0);

    char path[128], text[128] = "";
    snprintf(path, sizeof path, "%s/null.txt", dir);
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL);
    if (fp) {
        size_t n = fread(text, 1, sizeof text - 1, fp);
        text[n] = '\0';
        fclose(fp);
    }
    /* main, main > A, main > A > B, main > B */
    CHECK_STR(text, "ranks 1\ncall_paths 4\n");
    /* Without a profile it is not wanted: nothing written, no failure. */
    unlink(path);
    f.profile = false;
    CHECK_EQ_U(sm_finalize_run(&f), 0);
    CHECK(access(path, F_OK) != 0);
    rmdir(dir);
    free(blob);
    sm_defset_free(defs);
    sm_id_maps_free(&maps);
}

int main(void)
{
    test_pipeline_with_null_output();
    return unit_failures;
}
