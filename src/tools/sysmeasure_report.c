/* sysmeasure-report FOLDER: (re)writes FOLDER/report.html from the folder's
 * metadata.json and profile.json; the same page finalize and
 * sysmeasure-merge write. */
#include "sm_build.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/runtime.h"
#include "../util/log.h"
#include "../writers/writers.h"

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-report");
    sm_runtime_discard_output(); /* never measure ourselves */
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("Usage: sysmeasure-report FOLDER\n"
               "\n"
               "Writes FOLDER/report.html, a self-contained page with plots of the run, from\n"
               "the metadata.json and profile.json that sysmeasure wrote there.\n");
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("sysmeasure-report %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        sm_error(argc == 2 ? "unknown option '%s' (usage: sysmeasure-report FOLDER)"
                           : "one folder expected (usage: sysmeasure-report FOLDER)",
                 argc == 2 ? argv[1] : "");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0 || !S_ISDIR(st.st_mode)) {
        sm_error("%s is not a folder", argv[1]);
        return 2;
    }
    char err[4400];
    int rc = sm_report_write_html(argv[1], SM_FS_INPUT_FOUND, err, sizeof err);
    if (rc == SM_REPORT_NOT_OUTPUT) {
        sm_error("%s", err);
        return 2;
    }
    if (rc != 0)
        return 1;
    fprintf(stderr, "sysmeasure-report: %s/report.html written\n", argv[1]);
    return 0;
}
