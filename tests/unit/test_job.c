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

    CHECK(strlen(sm_job_id()) > 0);
    CHECK(sm_job_id() == sm_job_id());
    return unit_failures;
}
