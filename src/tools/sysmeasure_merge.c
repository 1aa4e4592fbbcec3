/* sysmeasure-merge FOLDER: the archive and summaries of a job that could not
 * finish them itself (a rank called MPI_Abort, was killed, or the program
 * never called MPI_Finalize).  Each rank left a process file in
 * FOLDER/.ranks and its events in FOLDER/.spill; the merge (merge/merge.h)
 * reads them all and runs the same unification and writers as MPI_Finalize
 * would have, in one process.  This is its command line. */
#include "sm_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/runtime.h"
#include "../merge/gpu_passes.h"
#include "../merge/merge.h"
#include "../util/log.h"

static void sm_merge_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure-merge [-v] [--job ID] [--perfetto] [--keep] FOLDER\n"
               "       sysmeasure-merge --gpu-passes FOLDER\n"
               "\n"
               "Completes the output of a job that could not write it itself.\n"
               "Writes FOLDER/traces.otf2, profile.txt, profile.json, profile.csv,\n"
               "profile-ranks.csv, metadata.json and report.html from the process files\n"
               "that the ranks of a job left in FOLDER/.ranks when they could not write\n"
               "them together (MPI_Abort, a signal, no MPI_Finalize), and, for processes\n"
               "run with --crash-safe and killed without a word (kill -9), from their\n"
               "crash-safe files in FOLDER/.spill.  Each file is placed by the identity in\n"
               "its header (job, host, pid, rank), whatever its name.  Ranks that left\n"
               "nothing are named with the reason (stderr, metadata.json missing_ranks,\n"
               "profile.txt).\n"
               "\n"
               "Options:\n"
               "  --job ID       When the folder holds the files of several jobs, the one to\n"
               "                 merge (the error that lists the jobs names them).\n"
               "  --keep         Leave the files merged in FOLDER/.ranks and FOLDER/.spill\n"
               "                 (after a merge that lost nothing they are removed).\n"
               "  --perfetto     Also write trace.pftrace (Perfetto's format, for\n"
               "                 ui.perfetto.dev), as the job's own --perfetto would have.\n"
               "  --gpu-passes   Merge the application-mode passes FOLDER/pass0, pass1, ...\n"
               "                 (sysmeasure-passes runs them) by rank, call path, kernel and\n"
               "                 n-th launch: FOLDER/counter_collection.csv,\n"
               "                 profile_gpu_counters.txt/.json/.csv and gpu_passes.json,\n"
               "                 which lists the launches not in every pass.\n"
               "  -v, --verbose  More messages on stderr (each -v adds one).\n"
               "  -h, --help     Show this help and exit.\n"
               "  --version      Show the version and exit.\n"
               "\n"
               "Examples:\n"
               "  mpirun -np 4 sysmeasure -o run1 ./app; sysmeasure-merge run1\n"
               "      A job that ended without MPI_Finalize on every rank: its archive and\n"
               "      summaries from what the ranks left.\n");
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-merge");
    int verbose = 0, argi = 1;
    const char *want = NULL;
    int perfetto = 0; /* --perfetto, or the job's own configuration */
    int gpu_passes = 0, keep = 0;
    sm_runtime_discard_output(); /* never measure ourselves */
    for (; argi < argc && argv[argi][0] == '-'; argi++) {
        if (!strcmp(argv[argi], "--job") || !strncmp(argv[argi], "--job=", 6)) {
            want = argv[argi][5] == '=' ? argv[argi] + 6 : argi + 1 < argc ? argv[++argi] : NULL;
            if (!want || !*want) {
                sm_error("--job needs the identity of a job (the error that lists the jobs "
                         "names them)");
                return SM_MERGE_USAGE;
            }
        } else if (!strcmp(argv[argi], "--perfetto")) {
            perfetto = 1;
        } else if (!strcmp(argv[argi], "--keep")) {
            keep = 1;
        } else if (!strcmp(argv[argi], "--gpu-passes")) {
            gpu_passes = 1;
        } else if (!strcmp(argv[argi], "-h") || !strcmp(argv[argi], "--help")) {
            sm_merge_usage(stdout);
            return SM_MERGE_OK;
        } else if (!strcmp(argv[argi], "-v") || !strcmp(argv[argi], "--verbose")) {
            verbose++;
        } else if (!strcmp(argv[argi], "--version")) {
            printf("sysmeasure-merge %s\n", PACKAGE_VERSION);
            return SM_MERGE_OK;
        } else {
            sm_error("unknown option '%s' (sysmeasure-merge --help)", argv[argi]);
            return SM_MERGE_USAGE;
        }
    }
    if (argi + 1 != argc) {
        sm_error(argi >= argc ? "no folder given (usage: sysmeasure-merge FOLDER)"
                              : "one folder only (usage: sysmeasure-merge FOLDER)");
        return SM_MERGE_USAGE;
    }
    sm_log_set_verbosity(verbose);
    char folder[PATH_MAX];
    struct stat st;
    if (stat(argv[argi], &st) != 0 || !S_ISDIR(st.st_mode)) {
        sm_error("%s is not a folder%s%s", argv[argi], errno ? ": " : "",
                 errno ? strerror(errno) : "");
        return SM_MERGE_USAGE;
    }
    if (!realpath(argv[argi], folder))
        snprintf(folder, sizeof folder, "%s", argv[argi]);
    if (gpu_passes)
        return sm_gpu_passes_merge(folder);

    sm_merge_options_t opt = {.job = want, .perfetto = perfetto, .keep = keep};
    return (int)sm_merge_folder(folder, &opt);
}
