/* Job identity: see job.h.  The first variable found wins, in this order:
 * an explicit SYSMEASURE_JOB_ID; torchrun's run (its run id, rendezvous
 * address, size and restart); Open MPI's per-job random transport key
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

/* A whole non-negative number, or -1. */
static long sm_job_number(const char *v)
{
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && n >= 0 ? n : -1;
}

static const char *sm_job_or(const char *v, const char *fallback)
{
    return v && *v ? v : fallback;
}

/* torchrun's workers, or processes of torch.distributed's env:// start:
 * RANK and WORLD_SIZE, with torchrun's run id or the rendezvous address
 * (RANK alone is too common a name to mean a job). */
static int sm_job_is_torch(const char *(*lookup)(const char *name))
{
    const char *id = lookup("TORCHELASTIC_RUN_ID"), *addr = lookup("MASTER_ADDR"),
               *port = lookup("MASTER_PORT");
    return sm_job_number(lookup("RANK")) >= 0 && sm_job_number(lookup("WORLD_SIZE")) > 0 &&
           ((id && *id) || (addr && *addr && port && *port));
}

/* torchrun's run: the run id (a uuid with --standalone, the user's
 * --rdzv-id, else "none"), the address and port the workers meet at (a
 * free port chosen per run by the c10d rendezvous), the size and the
 * restart (a restarted group is another job: its ranks start over).  On one
 * node the agent's log folder, new for every run, tells two runs of the
 * same command apart even with the fixed default port. */
static void sm_job_torch_id(const char *(*lookup)(const char *name), char *out, size_t size)
{
    const char *world = lookup("WORLD_SIZE"), *local = lookup("LOCAL_WORLD_SIZE");
    char run[24] = "";
    const char *err = lookup("TORCHELASTIC_ERROR_FILE");
    if (err && *err && local && !strcmp(local, world)) {
        /* <log dir>/attempt_<n>/<local rank>/error.json: the part before the
         * local rank is the same in every worker of the run. */
        const char *cut = strrchr(err, '/');
        while (cut && cut > err && cut[-1] != '/')
            cut--;
        size_t n = cut && cut > err ? (size_t)(cut - err) : strlen(err);
        snprintf(run, sizeof run, "-%016llx", (unsigned long long)sm_fnv(err, n, SM_FNV_START));
    }
    snprintf(out, size, "torch-%s-%s_%s-w%s-a%s%s", sm_job_or(lookup("TORCHELASTIC_RUN_ID"), "none"),
             sm_job_or(lookup("MASTER_ADDR"), ""), sm_job_or(lookup("MASTER_PORT"), ""), world,
             sm_job_or(lookup("TORCHELASTIC_RESTART_COUNT"), "0"), run);
}

const char *sm_job_id_compute(const char *(*lookup)(const char *name), char *out, size_t size)
{
    const char *v, *w;
    const char *src;
    if ((v = lookup("SYSMEASURE_JOB_ID")) && *v) {
        snprintf(out, size, "%s", v);
        src = "SYSMEASURE_JOB_ID";
    } else if (sm_job_is_torch(lookup)) {
        sm_job_torch_id(lookup, out, size);
        src = "torchrun";
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
        sm_job_process_id(out, size);
        src = "process";
    }
    sm_job_clean(out);
    return src;
}

void sm_job_process_id(char *out, size_t size)
{
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, size, "proc-%s-%ld-%lld%09ld", host, (long)getpid(), (long long)ts.tv_sec,
             ts.tv_nsec);
    sm_job_clean(out);
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

uint64_t sm_job_hash_of(const char *id)
{
    return sm_fnv(id, strlen(id), SM_FNV_START);
}

uint64_t sm_job_hash(void)
{
    return sm_job_hash_of(sm_job_id());
}

/* ---------------------------------------------------------------- the launcher */

void sm_job_launch_compute(const char *(*lookup)(const char *name), sm_job_launch_t *out)
{
    /* Rank and size variables of each launcher, in the order they are
     * believed (job.h); size NULL: taken from Slurm, else not known. */
    static const struct {
        sm_launcher_t launcher;
        const char *name, *rank, *size;
    } launchers[] = {
        {SM_LAUNCHER_TORCH, "torchrun", "RANK", "WORLD_SIZE"},
        {SM_LAUNCHER_OPEN_MPI, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {SM_LAUNCHER_PMI, "PMI", "PMI_RANK", "PMI_SIZE"},
        {SM_LAUNCHER_PMIX, "PMIx", "PMIX_RANK", NULL},
        {SM_LAUNCHER_SLURM, "Slurm", "SLURM_PROCID", NULL},
        {SM_LAUNCHER_MVAPICH, "MVAPICH", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
    };
    *out = (sm_job_launch_t){SM_LAUNCHER_NONE, "", -1, 0};
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        if (launchers[i].launcher == SM_LAUNCHER_TORCH && !sm_job_is_torch(lookup))
            continue;
        long rank = sm_job_number(lookup(launchers[i].rank));
        if (rank < 0)
            continue;
        long size = launchers[i].size ? sm_job_number(lookup(launchers[i].size)) : -1;
        /* Slurm's count of a step's tasks; SLURM_NTASKS only inside a step
         * (a batch script has it too, for the tasks its steps may start). */
        if (size < 0)
            size = sm_job_number(lookup("SLURM_STEP_NUM_TASKS"));
        if (size < 0 && lookup("SLURM_STEP_ID"))
            size = sm_job_number(lookup("SLURM_NTASKS"));
        *out = (sm_job_launch_t){launchers[i].launcher, launchers[i].name, rank,
                                 size > rank ? size : 0};
        if (launchers[i].launcher == SM_LAUNCHER_TORCH && !lookup("TORCHELASTIC_RUN_ID"))
            out->name = "torch.distributed";
        return;
    }
}

static sm_job_launch_t sm_job_launch_buf;
static pthread_once_t sm_job_launch_once = PTHREAD_ONCE_INIT;

static void sm_job_launch_init(void)
{
    sm_job_launch_compute(sm_job_getenv, &sm_job_launch_buf);
}

const sm_job_launch_t *sm_job_launch(void)
{
    pthread_once(&sm_job_launch_once, sm_job_launch_init);
    return &sm_job_launch_buf;
}

long sm_job_launcher_rank(void)
{
    return sm_job_launch()->rank;
}
