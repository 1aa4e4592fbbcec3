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

static int sm_report_folder(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        sm_error("%s is not a folder", dir);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-report");
    sm_runtime_discard_output(); /* never measure ourselves */
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("Usage: sysmeasure-report FOLDER\n"
               "       sysmeasure-report --compare A B\n"
               "\n"
               "Writes FOLDER/report.html, a self-contained page with plots of the run, from\n"
               "the metadata.json and profile.json that sysmeasure wrote there.\n"
               "\n"
               "Options:\n"
               "  --compare A B  Compare run B with run A (two output folders): print the\n"
               "                 call paths and MPI functions whose exclusive time (all ranks\n"
               "                 together) changed the most, largest change first, with B / A,\n"
               "                 and write B/report.html with a section of the same.\n");
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("sysmeasure-report %s\n", PACKAGE_VERSION);
        return 0;
    }
    char err[4400];
    if (argc >= 2 && !strcmp(argv[1], "--compare")) {
        if (argc != 4) {
            sm_error("--compare needs two folders (usage: sysmeasure-report --compare A B)");
            return 2;
        }
        if (sm_report_folder(argv[2]) != 0 || sm_report_folder(argv[3]) != 0)
            return 2;
        int rc = sm_report_write_compare(argv[3], argv[2], stdout, err, sizeof err);
        if (rc == SM_REPORT_NOT_OUTPUT) {
            sm_error("%s", err);
            return 2;
        }
        if (rc != 0)
            return 1;
        fprintf(stderr, "sysmeasure-report: %s/report.html written, compared with %s\n",
                argv[3], argv[2]);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        sm_error(argc == 2 ? "unknown option '%s' (usage: sysmeasure-report FOLDER)"
                           : "one folder expected (usage: sysmeasure-report FOLDER)",
                 argc == 2 ? argv[1] : "");
        return 2;
    }
    if (sm_report_folder(argv[1]) != 0)
        return 2;
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
