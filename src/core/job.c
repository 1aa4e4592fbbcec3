/* Job identity: see job.h.  The first variable found wins, in this order:
 * an explicit SYSMEASURE_JOB_ID; Open MPI's per-job random transport key
 * (the same 128 bits in every rank of one mpirun); the PMIx namespace with
 * its server's pid (Open MPI 5, PRRTE); Slurm's job and step; else this
 * process alone (host, pid and start time). */
#include "job.h"
#include "../util/hash.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char sm_job_buf[SM_JOB_ID_MAX];
static const char *sm_job_src;
static pthread_once_t sm_job_once = PTHREAD_ONCE_INIT;

/* Keep printable ASCII other than spaces and quotes: the id goes into file
 * headers, JSON and messages. */
static void sm_job_clean(char *s)
{
    for (; *s; s++)
        if (*s <= ' ' || *s > '~' || *s == '"' || *s == '\\')
            *s = '_';
}

const char *sm_job_id_compute(const char *(*lookup)(const char *name), char *out, size_t size)
{
    const char *v, *w;
    const char *src;
    if ((v = lookup("SYSMEASURE_JOB_ID")) && *v) {
        snprintf(out, size, "%s", v);
        src = "SYSMEASURE_JOB_ID";
    } else if ((v = lookup("OMPI_MCA_orte_precondition_transports")) && *v) {
        snprintf(out, size, "ompi-%s", v);
        src = "Open MPI";
    } else if ((v = lookup("PMIX_NAMESPACE")) && *v) {
        w = lookup("PMIX_SERVER_URI41");
        if (!w || !*w) w = lookup("PMIX_SERVER_URI4");
        if (!w || !*w) w = lookup("PMIX_SERVER_URI3");
        if (!w || !*w) w = lookup("PMIX_SERVER_URI2");
        /* The namespace repeats across runs; the server URI holds the
         * launcher's pid and port. */
        snprintf(out, size, "pmix-%s-%s", v, w ? w : "");
        src = "PMIx";
    } else if ((v = lookup("SLURM_JOB_ID")) && *v) {
        w = lookup("SLURM_STEP_ID");
        const char *c = lookup("SLURM_CLUSTER_NAME");
        snprintf(out, size, "slurm-%s-%s.%s", c ? c : "", v, w ? w : "");
        src = "Slurm";
    } else {
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(out, size, "proc-%s-%ld-%lld%09ld", host, (long)getpid(), (long long)ts.tv_sec,
                 ts.tv_nsec);
        src = "process";
    }
    sm_job_clean(out);
    return src;
}

static const char *sm_job_getenv(const char *name)
{
    return getenv(name);
}

static void sm_job_init(void)
{
    sm_job_src = sm_job_id_compute(sm_job_getenv, sm_job_buf, sizeof sm_job_buf);
}

const char *sm_job_id(void)
{
    pthread_once(&sm_job_once, sm_job_init);
    return sm_job_buf;
}

const char *sm_job_id_source(void)
{
    pthread_once(&sm_job_once, sm_job_init);
    return sm_job_src;
}

uint64_t sm_job_hash(void)
{
    const char *id = sm_job_id();
    return sm_fnv(id, strlen(id), SM_FNV_START);
}

long sm_job_launcher_rank(void)
{
    static const char *const vars[] = {SM_JOB_RANK_VARS};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0)
            return r;
    }
    return -1;
}
