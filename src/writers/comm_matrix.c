/* comm_matrix.csv and comm_matrix.json: the point-to-point communication
 * matrix of the job (row = sender, column = receiver, world ranks), as the
 * non-zero pairs, so that the files grow with the pairs that talk, not with
 * the square of the ranks. */
#include "summary_common.h"

#include <errno.h>
#include <stdlib.h>
#include "../finalize/pipeline.h"

#include <string.h>
#include "../util/json.h"

bool sm_comm_matrix_any(const sm_job_t *job)
{
    return job && job->matrix_pairs && job->matrix_pairs_n > 0;
}

/* Whether a ranks before b in the top list. */
static bool sm_comm_pair_before(const sm_comm_pair_t *a, const sm_comm_pair_t *b)
{
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    if (a->messages != b->messages)
        return a->messages > b->messages;
    if (a->sender != b->sender)
        return a->sender < b->sender;
    return a->receiver < b->receiver;
}

uint32_t sm_comm_matrix_top(const sm_job_t *job, sm_comm_pair_t *top, uint32_t max)
{
    if (!sm_comm_matrix_any(job) || max == 0)
        return 0;
    uint32_t used = 0;
    /* One pass keeping the best max in order: max is small. */
    for (uint64_t p = 0; p < job->matrix_pairs_n; p++) {
        const sm_comm_pair_t *c = &job->matrix_pairs[p];
        if (used == max && !sm_comm_pair_before(c, &top[max - 1]))
            continue;
        uint32_t i = used < max ? used++ : max - 1;
        while (i > 0 && sm_comm_pair_before(c, &top[i - 1])) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = *c;
    }
    return used;
}

/* The job's totals over every pair. */
static void sm_comm_matrix_totals(const sm_job_t *job, uint64_t *messages, uint64_t *bytes)
{
    *messages = *bytes = 0;
    for (uint64_t p = 0; p < job->matrix_pairs_n; p++) {
        *messages += job->matrix_pairs[p].messages;
        *bytes += job->matrix_pairs[p].bytes;
    }
}

static void sm_comm_pair_json(sm_json_t *j, uint64_t sender, uint64_t receiver,
                              uint64_t messages, uint64_t bytes)
{
    sm_json_object_begin_inline(j);
    sm_json_field_uint(j, "sender", sender);
    sm_json_field_uint(j, "receiver", receiver);
    sm_json_field_uint(j, "messages", messages);
    sm_json_field_uint(j, "bytes", bytes);
    sm_json_object_end(j);
}

void sm_comm_matrix_json(sm_json_t *j, const sm_job_t *job)
{
    if (!sm_comm_matrix_any(job)) {
        sm_json_null(j);
        return;
    }
    uint64_t messages, bytes;
    sm_comm_matrix_totals(job, &messages, &bytes);
    sm_json_object_begin(j);
    sm_json_field_uint(j, "ranks", sm_job_ranks(job));
    sm_json_field_uint(j, "messages", messages);
    sm_json_field_uint(j, "bytes", bytes);
    sm_json_key(j, "pairs");
    sm_json_array_begin(j);
    for (uint64_t p = 0; p < job->matrix_pairs_n && !j->err; p++) {
        const sm_comm_pair_t *c = &job->matrix_pairs[p];
        sm_comm_pair_json(j, c->sender, c->receiver, c->messages, c->bytes);
    }
    sm_json_array_end(j);
    sm_json_object_end(j);
}

void sm_comm_matrix_json_binned(sm_json_t *j, const sm_job_t *job, uint32_t cells)
{
    if (!sm_comm_matrix_any(job) || !cells) {
        sm_json_null(j);
        return;
    }
    uint32_t n = sm_job_ranks(job);
    uint32_t per = (n + cells - 1) / cells, side = (n + per - 1) / per;
    uint64_t *m = calloc(2 * (size_t)side * side, sizeof *m);
    if (!m) {
        j->err = ENOMEM;
        return;
    }
    uint64_t messages, bytes;
    sm_comm_matrix_totals(job, &messages, &bytes);
    for (uint64_t p = 0; p < job->matrix_pairs_n; p++) {
        const sm_comm_pair_t *c = &job->matrix_pairs[p];
        if (c->sender >= n || c->receiver >= n)
            continue; /* (a merge of files that disagree on the size) */
        size_t k = 2 * ((size_t)(c->sender / per) * side + c->receiver / per);
        m[k] += c->messages;
        m[k + 1] += c->bytes;
    }
    sm_json_object_begin(j);
    sm_json_field_uint(j, "ranks", n);
    sm_json_field_uint(j, "messages", messages);
    sm_json_field_uint(j, "bytes", bytes);
    sm_json_field_uint(j, "ranks_per_cell", per);
    sm_json_key(j, "cells");
    sm_json_array_begin(j);
    for (uint32_t a = 0; a < side && !j->err; a++)
        for (uint32_t b = 0; b < side; b++) {
            size_t c = 2 * ((size_t)a * side + b);
            if (m[c] || m[c + 1])
                sm_comm_pair_json(j, (uint64_t)a * per, (uint64_t)b * per, m[c], m[c + 1]);
        }
    sm_json_array_end(j);
    free(m);
    sm_comm_pair_t top[SM_COMM_TOP_PAIRS];
    uint32_t k = sm_comm_matrix_top(job, top, SM_COMM_TOP_PAIRS);
    sm_json_key(j, "top_pairs");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < k; i++)
        sm_comm_pair_json(j, top[i].sender, top[i].receiver, top[i].messages, top[i].bytes);
    sm_json_array_end(j);
    sm_json_object_end(j);
}

int sm_comm_matrix_write(const sm_run_info_t *run, const sm_job_t *job)
{
    if (!sm_comm_matrix_any(job))
        return 0;
    sm_out_t o;
    /* One file that cannot be written does not cost the other. */
    int rc = sm_out_open(&o, run->output_dir, "comm_matrix.csv");
    if (rc == 0)
        sm_out_printf(&o, "sender,receiver,messages,bytes\n");
    for (uint64_t p = 0; rc == 0 && p < job->matrix_pairs_n && !o.err; p++) {
        const sm_comm_pair_t *c = &job->matrix_pairs[p];
        sm_out_printf(&o, "%u,%u,%llu,%llu\n", (unsigned)c->sender, (unsigned)c->receiver,
                      (unsigned long long)c->messages, (unsigned long long)c->bytes);
    }
    if (rc == 0)
        rc = sm_out_close(&o);

    sm_json_t j;
    if (sm_json_open(&j, run->output_dir, "comm_matrix.json") != 0)
        return -1;
    sm_comm_matrix_json(&j, job);
    return sm_json_close(&j) != 0 || rc != 0 ? -1 : 0;
}

static bool sm_comm_matrix_wanted(const sm_finalize_t *f)
{
    return f->job.matrix_pairs != NULL;
}

static int sm_comm_matrix_output(sm_finalize_t *f)
{
    return sm_comm_matrix_write(f->run, &f->job);
}

const sm_output_t sm_output_comm_matrix = {
    .file = "comm_matrix.csv",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_comm_matrix_wanted,
    .write = sm_comm_matrix_output,
};
