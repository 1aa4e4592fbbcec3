/* One writer per folder (folder_claim.c), on real files: a claim of a new
 * folder, of a folder held by a live process here or on another host, of a
 * stale record (dead pid, reused pid, damaged), in job mode, with a link in
 * the record's place, and the release. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/core/folder_claim.h"
#include "../../src/core/job.h"
#include "unit.h"

static char dir[256], lock[300];

static void put(const char *text)
{
    unlink(lock);
    FILE *f = fopen(lock, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void put_record(const char *job, const char *host, long pid, unsigned long long start)
{
    char text[512];
    snprintf(text, sizeof text, "sysmeasure output folder writer\njob %s\nhost %s\npid %ld\n"
             "start %llu\n", job, host, pid, start);
    put(text);
}

static char *get(void)
{
    static char text[1024];
    text[0] = '\0';
    FILE *f = fopen(lock, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    return text;
}

int main(void)
{
    char host[256] = "", holder[512], mine[64];
    gethostname(host, sizeof host - 1);
    snprintf(dir, sizeof dir, "%s/claim-XXXXXX", getenv("SM_TEST_WORK") ? getenv("SM_TEST_WORK") : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(lock, sizeof lock, "%s/%s", dir, SM_CLAIM_FILE);
    snprintf(mine, sizeof mine, "pid %ld\n", (long)getpid());

    /* A new folder: ours, once and again; released, the record goes. */
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_OURS);
    CHECK(strstr(get(), mine) != NULL);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_OURS);
    sm_folder_release(dir);
    CHECK(access(lock, F_OK) != 0);

    /* A live process here (our parent, start time unknown): taken, named,
     * left as it is; our release does not touch it. */
    put_record("job-a", host, (long)getppid(), 0);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_TAKEN);
    char want[64];
    snprintf(want, sizeof want, "pid %ld on %s", (long)getppid(), host);
    CHECK(strstr(holder, want) != NULL && strstr(holder, "job job-a") != NULL);
    sm_folder_release(dir);
    CHECK(strstr(get(), "job job-a") != NULL);

    /* ... but in job mode a record of our own job is the job's. */
    put_record(sm_job_id(), host, (long)getppid(), 0);
    CHECK(sm_folder_claim(dir, SM_CLAIM_JOB, holder, sizeof holder) == SM_CLAIM_OURS);
    CHECK(strstr(get(), mine) != NULL);

    /* Another host: its pid cannot be checked, so it is alive. */
    put_record("job-b", "elsewhere.example", 1, 0);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_TAKEN);
    CHECK(strstr(holder, "another host") != NULL);

    /* Stale: a pid that is gone; a pid given to another process since (the
     * start time differs); a damaged record.  Taken over. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    put_record("job-c", host, (long)child, 0);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_OURS);
    CHECK(strstr(get(), mine) != NULL);
    put_record("job-d", host, (long)getppid(), 1);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_OURS);
    CHECK(strstr(get(), mine) != NULL);
    put("sysmeasure output folder writer\njob cut");
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_OURS);
    CHECK(strstr(get(), mine) != NULL);
    sm_folder_release(dir);

    /* A link in the record's place: not ours, not followed, not removed. */
    CHECK(symlink("/dev/null", lock) == 0);
    CHECK(sm_folder_claim(dir, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_TAKEN);
    struct stat st;
    CHECK(lstat(lock, &st) == 0 && S_ISLNK(st.st_mode));
    unlink(lock);

    /* No private names left behind by any of it. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", dir);
    CHECK(system(cmd) == 0);

    /* A folder that is not there: unchecked (the writes will say why). */
    char gone[300];
    snprintf(gone, sizeof gone, "%s/missing", dir);
    CHECK(sm_folder_claim(gone, SM_CLAIM_PROCESS, holder, sizeof holder) == SM_CLAIM_UNCHECKED);
    rmdir(dir);
    return unit_failures;
}
