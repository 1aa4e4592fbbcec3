/* Job identity: every rank of one job computes the same string from its
 * launcher's variables, and another job a different one. */
#include <stdlib.h>
#include "../../src/core/job.h"
#include "unit.h"

static const char *const *unit_env;
static const char *lookup(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = unit_env; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

int main(void)
{
    char a[SM_JOB_ID_MAX], b[SM_JOB_ID_MAX];
    const char *ompi0[] = {"OMPI_MCA_orte_precondition_transports=672e18eebb5cd978-37eea94e81cca892",
                           "PMIX_NAMESPACE=1481113601", "PMIX_RANK=0", NULL};
    const char *ompi1[] = {"OMPI_MCA_orte_precondition_transports=672e18eebb5cd978-37eea94e81cca892",
                           "PMIX_NAMESPACE=1481113601", "PMIX_RANK=1", NULL};
    const char *ompi_other[] = {"OMPI_MCA_orte_precondition_transports=1111111111111111-2222222222222222",
                                "PMIX_NAMESPACE=1481113601", NULL};
    unit_env = ompi0;
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "Open MPI");
    unit_env = ompi1;
    sm_job_id_compute(lookup, b, sizeof b);
    CHECK_STR(a, b); /* two ranks of one job */
    unit_env = ompi_other;
    sm_job_id_compute(lookup, b, sizeof b);
    CHECK(strcmp(a, b) != 0); /* another job */

    const char *slurm[] = {"SLURM_JOB_ID=4711", "SLURM_STEP_ID=3", "SLURM_CLUSTER_NAME=big iron", NULL};
    unit_env = slurm;
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "Slurm");
    CHECK_STR(a, "slurm-big_iron-4711.3"); /* the space is not kept */

    const char *expl[] = {"SYSMEASURE_JOB_ID=run\"7\"", "SLURM_JOB_ID=1", NULL};
    unit_env = expl;
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "SYSMEASURE_JOB_ID");
    CHECK_STR(a, "run_7_");

    const char *none[] = {NULL};
    unit_env = none;
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "process");
    CHECK(strncmp(a, "proc-", 5) == 0);

    /* torchrun: two workers of one run agree; another run (port, restart)
     * differs; its variables win over Slurm's, which torchrun inherits. */
    const char *torch0[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2",
                            "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
                            "TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_RESTART_COUNT=0",
                            "TORCHELASTIC_ERROR_FILE=/tmp/torchelastic_ab/none_cd/attempt_0/0/error.json",
                            "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=0", NULL};
    const char *torch1[] = {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
                            "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
                            "TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_RESTART_COUNT=0",
                            "TORCHELASTIC_ERROR_FILE=/tmp/torchelastic_ab/none_cd/attempt_0/1/error.json",
                            "SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_PROCID=0", NULL};
    const char *torch_again[] = {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
                                 "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
                                 "TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_RESTART_COUNT=0",
                                 "TORCHELASTIC_ERROR_FILE=/tmp/torchelastic_xy/none_zw/attempt_0/1/error.json",
                                 NULL};
    unit_env = torch0;
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "torchrun");
    unit_env = torch1;
    sm_job_id_compute(lookup, b, sizeof b);
    CHECK_STR(a, b);
    CHECK(strncmp(a, "torch-none-127.0.0.1_29500-w2-a0-", 33) == 0);
    unit_env = torch_again; /* the same command run again on one node */
    sm_job_id_compute(lookup, b, sizeof b);
    CHECK(strcmp(a, b) != 0);

    sm_job_launch_t l;
    unit_env = torch1;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_TORCH && l.rank == 1 && l.size == 2);
    CHECK_STR(l.name, "torchrun");
    /* torch.distributed's env:// start without torchrun. */
    const char *env_start[] = {"RANK=3", "WORLD_SIZE=4", "MASTER_ADDR=node1", "MASTER_PORT=1234", NULL};
    unit_env = env_start;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_TORCH && l.rank == 3 && l.size == 4);
    CHECK_STR(l.name, "torch.distributed");
    /* RANK alone is not a job. */
    const char *rank_only[] = {"RANK=1", "WORLD_SIZE=2", NULL};
    unit_env = rank_only;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_NONE && l.rank == -1 && l.size == 0);
    CHECK_STR(sm_job_id_compute(lookup, a, sizeof a), "process");

    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3", "PMIX_RANK=2", NULL};
    unit_env = ompi;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_OPEN_MPI && l.rank == 2 && l.size == 3);
    const char *hydra[] = {"PMI_RANK=1", "PMI_SIZE=2", NULL};
    unit_env = hydra;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_PMI && l.rank == 1 && l.size == 2);
    /* PMIx under Slurm: the step's task count; alone: not known. */
    const char *pmix_slurm[] = {"PMIX_RANK=1", "PMIX_NAMESPACE=slurm.pmix.7.0", "SLURM_PROCID=1",
                                "SLURM_STEP_NUM_TASKS=4", "SLURM_NTASKS=8", NULL};
    unit_env = pmix_slurm;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_PMIX && l.rank == 1 && l.size == 4);
    const char *pmix[] = {"PMIX_RANK=1", "PMIX_NAMESPACE=prterun-x-1@1", NULL};
    unit_env = pmix;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_PMIX && l.rank == 1 && l.size == 0);
    /* Slurm: a step; a batch script (no step: one process) has no size. */
    const char *step[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=5", "SLURM_STEP_ID=0", NULL};
    unit_env = step;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_SLURM && l.rank == 1 && l.size == 2);
    const char *batch[] = {"SLURM_PROCID=0", "SLURM_NTASKS=16", "SLURM_JOB_ID=5", NULL};
    unit_env = batch;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_SLURM && l.rank == 0 && l.size == 0);
    /* A rank beyond the size is no job's. */
    const char *bad[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=2", NULL};
    unit_env = bad;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.rank == 5 && l.size == 0);
    const char *mv2[] = {"MV2_COMM_WORLD_RANK=0", "MV2_COMM_WORLD_SIZE=2", NULL};
    unit_env = mv2;
    sm_job_launch_compute(lookup, &l);
    CHECK(l.launcher == SM_LAUNCHER_MVAPICH && l.rank == 0 && l.size == 2);

    CHECK(sm_job_hash_of(sm_job_id()) == sm_job_hash());
    CHECK(strlen(sm_job_id()) > 0);
    CHECK(sm_job_id() == sm_job_id());
    return unit_failures;
}
