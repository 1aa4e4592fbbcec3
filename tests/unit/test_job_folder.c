/* The last of a job's processes without MPI (job_folder.c), on real files:
 * ranks arriving one by one in any order (only the last is told so), at
 * the same moment from several processes (exactly one last), a rank gone
 * without its files (the last goes up for it and names it), a rank still
 * running (no last), the bookkeeping removed; and the folder record of a
 * job joined, not replaced (SM_CLAIM_JOIN). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/core/folder_claim.h"
#include "../../src/core/job.h"
#include "../../src/core/job_folder.h"
#include "unit.h"

static char base[256];

static void new_folder(char *dir, size_t len, const char *name)
{
    snprintf(dir, len, "%s/%s", base, name);
    CHECK(mkdir(dir, 0755) == 0);
}

/* start-<rank> naming pid (on this host, start time unknown). */
static void put_start(const char *dir, unsigned rank, long pid)
{
    char path[512], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/.ranks/%016llx.job/start-%u", dir,
             (unsigned long long)sm_job_hash(), rank);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "sysmeasure job process\nhost %s\npid %ld\nstart 0\n", host, pid);
        fclose(f);
    }
}

static long dead_pid(void)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return (long)child;
}

int main(void)
{
    char dir[300], path[600], missing[512];
    uint32_t n_missing;
    snprintf(base, sizeof base, "%s/jobfolder-XXXXXX",
             getenv("SM_TEST_WORK") ? getenv("SM_TEST_WORK") : "/tmp");
    CHECK(mkdtemp(base) != NULL);
    (void)sm_job_id(); /* fixed before any fork: the children share it */

    /* One by one, in any order: only the fifth of five is the last. */
    new_folder(dir, sizeof dir, "order");
    static const unsigned order[5] = {3, 0, 4, 1, 2};
    for (int i = 0; i < 5; i++) {
        CHECK(sm_job_folder_register(dir, order[i]) == 0);
        sm_job_folder_end_t end = sm_job_folder_arrive(dir, order[i], 5, &n_missing, missing,
                                                       sizeof missing);
        CHECK(end == (i == 4 ? SM_JOB_FOLDER_LAST : SM_JOB_FOLDER_NOT_LAST));
    }
    CHECK(n_missing == 0 && missing[0] == '\0');
    sm_job_folder_remove(dir, sm_job_hash());
    snprintf(path, sizeof path, "%s/.ranks/%016llx.job", dir, (unsigned long long)sm_job_hash());
    CHECK(access(path, F_OK) != 0);

    /* Seven processes at the same moment: exactly one is the last. */
    new_folder(dir, sizeof dir, "at-once");
    for (unsigned r = 0; r < 7; r++)
        CHECK(sm_job_folder_register(dir, r) == 0);
    pid_t kids[7];
    for (unsigned r = 0; r < 7; r++)
        if ((kids[r] = fork()) == 0) {
            uint32_t m;
            char text[64];
            _exit(sm_job_folder_arrive(dir, r, 7, &m, text, sizeof text) == SM_JOB_FOLDER_LAST
                      ? 10 + (int)m : 0);
        }
    int lasts = 0;
    for (unsigned r = 0; r < 7; r++) {
        int status = 0;
        waitpid(kids[r], &status, 0);
        lasts += WIFEXITED(status) && WEXITSTATUS(status) == 10;
        CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 10));
    }
    CHECK(lasts == 1);

    /* Rank 3 of 4 gone without its files: the last of the others goes up
     * for it and names it. */
    new_folder(dir, sizeof dir, "gone");
    for (unsigned r = 0; r < 4; r++)
        CHECK(sm_job_folder_register(dir, r) == 0);
    long gone = dead_pid();
    put_start(dir, 3, gone);
    CHECK(sm_job_folder_arrive(dir, 0, 4, &n_missing, missing, sizeof missing) ==
          SM_JOB_FOLDER_NOT_LAST);
    CHECK(sm_job_folder_arrive(dir, 1, 4, &n_missing, missing, sizeof missing) ==
          SM_JOB_FOLDER_NOT_LAST); /* rank 2 runs (this very process) */
    CHECK(sm_job_folder_arrive(dir, 2, 4, &n_missing, missing, sizeof missing) ==
          SM_JOB_FOLDER_LAST);
    char want[64];
    snprintf(want, sizeof want, "rank 3 (pid %ld on ", gone);
    CHECK(n_missing == 1 && strstr(missing, want) == missing);
    /* ... and should it arrive after all, it is not a second last. */
    CHECK(sm_job_folder_arrive(dir, 3, 4, &n_missing, missing, sizeof missing) ==
          SM_JOB_FOLDER_NOT_LAST);

    /* Rank 1 of 2 still running (this process): rank 0 is not the last. */
    new_folder(dir, sizeof dir, "running");
    CHECK(sm_job_folder_register(dir, 1) == 0);
    CHECK(sm_job_folder_arrive(dir, 0, 2, &n_missing, missing, sizeof missing) ==
          SM_JOB_FOLDER_NOT_LAST);
    /* A rank that joined an MPI job after all takes its record back. */
    sm_job_folder_unregister(dir, 1);
    snprintf(path, sizeof path, "%s/.ranks/%016llx.job/start-1", dir,
             (unsigned long long)sm_job_hash());
    CHECK(access(path, F_OK) != 0);

    /* The folder's record: joined by the job's processes, not replaced;
     * another job's live writer keeps it; released for the whole job. */
    new_folder(dir, sizeof dir, "claim");
    char holder[512], lock[400], text[1024] = "";
    snprintf(lock, sizeof lock, "%s/%s", dir, SM_CLAIM_FILE);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    FILE *f = fopen(lock, "w");
    if (f) {
        fprintf(f, "sysmeasure output folder writer\njob %s\nhost %s\npid %ld\nstart 0\n",
                sm_job_id(), host, (long)getppid());
        fclose(f);
    }
    CHECK(sm_folder_claim(dir, SM_CLAIM_JOIN, holder, sizeof holder) == SM_CLAIM_OURS);
    f = fopen(lock, "r");
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    char parent[32];
    snprintf(parent, sizeof parent, "pid %ld\n", (long)getppid());
    CHECK(strstr(text, parent) != NULL); /* the first process's record stays */
    sm_folder_release(dir); /* not this process's: stays */
    CHECK(access(lock, F_OK) == 0);
    sm_folder_release_job(dir); /* the job's: goes */
    CHECK(access(lock, F_OK) != 0);
    f = fopen(lock, "w");
    if (f) {
        fprintf(f, "sysmeasure output folder writer\njob other-job\nhost %s\npid %ld\nstart 0\n",
                host, (long)getppid());
        fclose(f);
    }
    CHECK(sm_folder_claim(dir, SM_CLAIM_JOIN, holder, sizeof holder) == SM_CLAIM_TAKEN);
    sm_folder_release_job(dir);
    CHECK(access(lock, F_OK) == 0);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    CHECK(system(cmd) == 0);
    return unit_failures;
}
