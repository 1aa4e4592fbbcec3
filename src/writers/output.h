/* An output: one file (or archive) of the output folder, written by the
 * end-of-run pipeline (src/finalize/pipeline.h) from what it has gathered.
 * Every output is listed once, in src/finalize/outputs.def, in the order
 * they are written; src/writers/null_output.c is the template for a new
 * one. */
#ifndef SM_OUTPUT_H
#define SM_OUTPUT_H

#include <stdbool.h>
#include "../core/compiler.h"

struct sm_finalize;

/* Who writes it. */
typedef enum {
    SM_OUTPUT_EVERY_RANK, /* collectively: each process its part (the OTF2 archive) */
    SM_OUTPUT_EVERY_RANK_AFTER_PROFILES, /* the same, once the profiles are reduced
                                          * (profile-ranks.csv: the job's counters
                                          * make its columns) */
    SM_OUTPUT_ROOT        /* rank 0 alone, after the profiles are reduced */
} sm_output_who_t;

typedef struct sm_output {
    const char *file; /* what it writes, for messages: "profile.json" */
    sm_output_who_t who;
    /* Whether this run asks for it (options, or data to show). */
    bool (*wanted)(const struct sm_finalize *f);
    /* The output it reads back, which must have been written first (by its
     * file name), or NULL. */
    const char *follows;
    /* Every rank's part must be written before it starts (it reads the
     * whole archive): the pipeline waits for all. */
    bool after_every_rank;
    /* 0, or -1 after one line naming the file and the problem. */
    int (*write)(struct sm_finalize *f);
} sm_output_t;

#endif
