/* sysmeasure-convert --perfetto FOLDER: FOLDER/trace.pftrace (Perfetto's
 * trace format, for ui.perfetto.dev) from the OTF2 archive in FOLDER; the
 * same file --perfetto writes at the end of a run. */
#include "sm_build.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/runtime.h"
#include "../util/log.h"
#include "../writers/perfetto.h"

static void sm_convert_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure-convert --perfetto FOLDER\n"
               "\n"
               "Converts the trace of a sysmeasure run to Perfetto's format.\n"
               "Writes FOLDER/trace.pftrace, the OTF2 archive of FOLDER (traces.otf2) in\n"
               "Perfetto's trace format: open it at https://ui.perfetto.dev (Open trace file).\n"
               "A process track per rank, a thread track per thread, a track per GPU stream,\n"
               "slices for regions with their attributes, counter tracks for metrics, flows\n"
               "for MPI messages and GPU launches.\n");
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-convert");
    sm_runtime_discard_output(); /* never measure ourselves */
    const char *folder = NULL;
    int perfetto = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            sm_convert_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("sysmeasure-convert %s\n", PACKAGE_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--perfetto")) {
            perfetto = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            sm_error("unknown option '%s' (usage: sysmeasure-convert --perfetto FOLDER)", argv[i]);
            return 2;
        } else if (folder) {
            sm_error("one folder expected (usage: sysmeasure-convert --perfetto FOLDER)");
            return 2;
        } else {
            folder = argv[i];
        }
    }
    if (!perfetto || !folder) {
        sm_error(!perfetto ? "name the format to write: --perfetto (usage: sysmeasure-convert "
                             "--perfetto FOLDER)"
                           : "one folder expected (usage: sysmeasure-convert --perfetto FOLDER)");
        return 2;
    }
    struct stat st;
    if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode)) {
        sm_error("%s is not a folder", folder);
        return 2;
    }
    char err[8600];
    sm_perfetto_stats_t s;
    int rc = sm_perfetto_write(folder, &s, err, sizeof err);
    if (rc == SM_PERFETTO_NOT_OUTPUT || rc == SM_PERFETTO_UNAVAILABLE) {
        sm_error("%s", err);
        return 2;
    }
    if (rc != 0)
        return 1;
    fprintf(stderr,
            "sysmeasure-convert: %s/trace.pftrace written (%.1f MB: %llu tracks, %llu slices, "
            "%llu flows, %llu counter values); open it at https://ui.perfetto.dev\n",
            folder, (double)s.bytes / 1e6, (unsigned long long)s.tracks,
            (unsigned long long)s.slices, (unsigned long long)s.flows_begun,
            (unsigned long long)s.counter_values);
    return 0;
}
