/* The report's readers (sysmeasure-report, src/writers/report/):
 * one of the folder's files is the fuzzed input, the other two the seeds
 * "mpi2" of their harnesses (a 2-rank MPI run with messages), so that the
 * input meets real companions.  What must hold: report.html is written
 * whole (rc 0), or the folder is refused with one line (rc
 * SM_REPORT_NOT_OUTPUT), never anything else, never a crash or a hang. */
#ifndef SM_FUZZ_REPORT_H
#define SM_FUZZ_REPORT_H

#include "fuzz_common.h"

#include <sys/stat.h>

#include "writers/writers.h"

static void sm_fuzz_report(const char *which, const uint8_t *data, size_t size)
{
    static const char *const files[][2] = {{"metadata.json", "metadata_json"},
                                           {"profile.json", "profile_json"},
                                           {"timeline.json", "timeline_json"}};
    static char *seed[3];
    static size_t seed_len[3];
    char path[512];
    for (int i = 0; i < 3; i++) {
        if (!strcmp(files[i][0], which)) {
            sm_fuzz_put(files[i][0], data, size, path, sizeof path);
            continue;
        }
        if (!seed[i])
            seed[i] = sm_fuzz_seed(files[i][1], "mpi2", &seed_len[i]);
        sm_fuzz_put(files[i][0], seed[i], seed_len[i], path, sizeof path);
    }
    snprintf(path, sizeof path, "%s/report.html", sm_fuzz_dir());
    unlink(path);
    char err[8192] = "";
    int rc = sm_report_write_html(sm_fuzz_dir(), SM_FS_INPUT_FOUND, err, sizeof err);
    struct stat st;
    if (rc == SM_REPORT_NOT_OUTPUT) {
        sm_fuzz_one_line(err);
        SM_FUZZ_ASSERT(stat(path, &st) != 0, "report.html written for a refused folder");
        return;
    }
    SM_FUZZ_ASSERT(rc == 0, "sm_report_write_html returned %d", rc);
    SM_FUZZ_ASSERT(stat(path, &st) == 0 && st.st_size > 0, "no report.html after rc 0");
    /* Whole: the page ends as sm_report_page ends it. */
    FILE *f = fopen(path, "rb");
    char tail[16] = "";
    SM_FUZZ_ASSERT(f && fseek(f, -15, SEEK_END) == 0 && fread(tail, 1, 15, f) == 15,
                   "report.html cannot be read back");
    fclose(f);
    SM_FUZZ_ASSERT(strstr(tail, "</html>\n") != NULL, "report.html is cut: ...%s", tail);
}

#endif
