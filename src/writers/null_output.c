/* The null output, a template: copy this file to src/writers/NAME.c,
 * rename sm_null_* and sm_output_null, write your format in write(), and
 * add its row to src/finalize/outputs.def where it belongs in the order
 * (after any output it reads back).  An option that switches it on is a
 * row of src/core/config_vars.def; wanted() reads it from f->run->config.
 *
 * It writes null.txt at rank 0: the job's ranks and the number of call
 * paths of the job's profile, one per line ("ranks 4", "call_paths 17"). */
#include "null_output.h"

#include "summary_common.h"
#include "../finalize/pipeline.h"

/* Whether this run asks for it.  Rank 0's outputs run after the profiles
 * were reduced: f->summary is the job's profile (NULL when the run has no
 * profile or it could not be built, said already). */
static bool sm_null_wanted(const sm_finalize_t *f)
{
    return f->profile && f->summary;
}

static void sm_null_count(const sm_cpath_t *p, void *arg)
{
    if (p->region != SM_INVALID_ID) /* not the root */
        ++*(uint32_t *)arg;
}

/* Rank 0 writes it (SM_OUTPUT_ROOT).  sm_out_* open the file in the output
 * folder safely, count a short write, and at close say in one line what
 * failed (a full disk): 0, or -1 after that line. */
static int sm_null_write(sm_finalize_t *f)
{
    uint32_t paths = 0;
    sm_cpath_walk(&f->summary->root, sm_null_count, &paths);
    sm_out_t o;
    if (sm_out_open(&o, f->run->output_dir, "null.txt") != 0)
        return -1;
    sm_out_printf(&o, "ranks %u\ncall_paths %u\n",
                  (unsigned)(f->job.n_ranks ? f->job.n_ranks : f->procs->size), (unsigned)paths);
    return sm_out_close(&o);
}

const sm_output_t sm_output_null = {
    .file = "null.txt",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_null_wanted,
    .follows = NULL, /* it reads back no other output */
    .write = sm_null_write,
};
