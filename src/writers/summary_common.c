/* Helpers shared by the summary writers: see summary_common.h. */
#include "summary_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../util/fs.h"
#include "../util/log.h"

void sm_csv_field(sm_out_t *o, const char *s)
{
    if (!s)
        return; /* an empty field */
    if (!strpbrk(s, ",\"\r\n")) {
        bool plain = true;
        for (const unsigned char *p = (const unsigned char *)s; *p && plain; p++)
            plain = *p >= 0x20 && *p != 0x7f;
        if (plain) {
            sm_out_printf(o, "%s", s);
            return;
        }
    }
    sm_out_repeat(o, '"', 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !o->err; p++) {
        if (*p == '"')
            sm_out_repeat(o, '"', 2);
        else
            sm_out_repeat(o, *p < 0x20 || *p == 0x7f ? '?' : (char)*p, 1);
    }
    sm_out_repeat(o, '"', 1);
}

const char *sm_job_region_name(const sm_job_t *job, sm_region_id_t id)
{
    return job && job->defs ? sm_defset_region_name(job->defs, id) : "?";
}

const char *sm_job_region_kind(const sm_job_t *job, sm_region_id_t id)
{
    const sm_region_def_t *def = job && job->defs ? sm_defset_region_get(job->defs, id) : NULL;
    return def ? sm_region_kind_name((sm_paradigm_t)def->paradigm, (sm_region_role_t)def->role)
               : "?";
}

bool sm_cpath_joined(const sm_job_t *job, const sm_cpath_t *p, char **buf, size_t *cap)
{
    uint32_t from = sm_cpath_names_from(p);
    static const char cut[] = "... > ", sep[] = " > ";
    size_t len = 1 + (from ? sizeof cut - 1 : 0);
    for (const sm_cpath_t *q = p; q->depth > from; q = q->parent)
        len += strlen(sm_job_region_name(job, q->region)) + (q->depth > from + 1 ? 3 : 0);
    if (len > *cap) {
        char *b = realloc(*buf, len);
        if (!b)
            return false;
        *buf = b;
        *cap = len;
    }
    /* Filled from the end: the walk up meets the innermost name first. */
    size_t at = len - 1;
    (*buf)[at] = '\0';
    for (const sm_cpath_t *q = p; q->depth > from; q = q->parent) {
        const char *name = sm_job_region_name(job, q->region);
        size_t n = strlen(name);
        at -= n;
        memcpy(*buf + at, name, n);
        if (q->depth > from + 1) {
            at -= 3;
            memcpy(*buf + at, sep, 3);
        }
    }
    if (from)
        memcpy(*buf, cut, sizeof cut - 1);
    return true;
}

bool sm_job_region_is_mpi(sm_region_id_t id, void *arg)
{
    const sm_job_t *job = arg;
    const sm_region_def_t *def = job && job->defs ? sm_defset_region_get(job->defs, id) : NULL;
    return def && def->paradigm == SM_PARADIGM_MPI;
}

uint32_t sm_job_ranks(const sm_job_t *job)
{
    if (job && job->n_ranks)
        return job->n_ranks;
    return job && job->procs && job->procs->size ? job->procs->size : 1;
}

uint32_t sm_job_ranks_present(const sm_job_t *job)
{
    uint32_t n = sm_job_ranks(job), m = n;
    for (uint32_t r = 0; job && job->missing && r < n; r++)
        m -= sm_job_missing(job, r) != NULL;
    return m;
}

void sm_job_missing_text(const sm_job_t *job, char *buf, size_t len)
{
    size_t o = 0;
    uint32_t n = sm_job_ranks(job);
    if (!len)
        return;
    buf[0] = '\0';
    if (!job || !job->missing)
        return;
    /* Each reason once, in the order of its first rank, its ranks as ranges
     * (a job of 10^4 ranks keeps one short line): O(ranks x reasons). */
    uint8_t *done = calloc(n ? n : 1, 1);
    if (!done)
        return;
    for (uint32_t r = 0; r < n && o + 1 < len; r++) {
        const char *why = sm_job_missing(job, r);
        if (!why || done[r])
            continue;
        uint32_t count = 0;
        for (uint32_t k = r; k < n; k++)
            if (sm_job_missing(job, k) && !strcmp(sm_job_missing(job, k), why)) {
                done[k] = 2; /* this reason's */
                count++;
            }
        o += (size_t)snprintf(buf + o, len - o, "%s%s ", o ? "; " : "", count == 1 ? "rank" : "ranks");
        int any = 0;
        for (uint32_t k = r; k < n; k++) {
            if (done[k] != 2)
                continue;
            uint32_t e = k;
            while (e + 1 < n && done[e + 1] == 2)
                e++;
            if (o < len)
                o += (size_t)snprintf(buf + o, len - o, e > k ? "%s%u-%u" : "%s%u",
                                      any ? ", " : "", (unsigned)k, (unsigned)e);
            any = 1;
            for (uint32_t x = k; x <= e; x++)
                done[x] = 1;
            k = e;
        }
        if (o < len)
            o += (size_t)snprintf(buf + o, len - o, " (%s)", why);
    }
    free(done);
    if (o >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
}

/* ---------------------------------------------------------------- derived figures */

/* PAPI presets for misses: a miss count per 1000 instructions says how
 * memory-bound a region is, whatever its length. */
static bool sm_is_miss_event(const char *name)
{
    static const char *const kinds[] = {"_DCM", "_ICM", "_TCM", "_LDM", "_STM", "_TLB_DM",
                                        "_TLB_IM", "MISS"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strstr(name, kinds[i]))
            return true;
    return false;
}

uint32_t sm_summary_derived(const sm_profile_summary_t *s, sm_derived_t *out, uint32_t max)
{
    uint32_t n = 0;
    int ins = sm_summary_counter_index(s, "PAPI_TOT_INS");
    int cyc = sm_summary_counter_index(s, "PAPI_TOT_CYC");
    if (ins >= 0 && cyc >= 0 && n < max)
        out[n++] = (sm_derived_t){.name = "instructions per cycle (PAPI_TOT_INS / PAPI_TOT_CYC)",
                                  .num = (uint32_t)ins, .den = (uint32_t)cyc, .scale = 1.0};
    for (uint32_t k = 0; ins >= 0 && k < s->n_counters && n < max; k++) {
        if (!sm_is_miss_event(s->counter_names[k]))
            continue;
        snprintf(out[n].name, sizeof out[n].name, "%.100s per 1000 instructions",
                 s->counter_names[k]);
        out[n].num = k;
        out[n].den = (uint32_t)ins;
        out[n].scale = 1000.0;
        n++;
    }
    return n;
}

double sm_derived_value(const sm_derived_t *d, uint64_t num, uint64_t den)
{
    return den ? d->scale * (double)num / (double)den : NAN;
}

static void sm_json_member(sm_json_t *j, const char *key, uint32_t id)
{
    sm_json_key(j, key);
    if (id == SM_INVALID_ID)
        sm_json_null(j);
    else
        sm_json_uint(j, id);
}

void sm_json_spread(sm_json_t *j, const char *key, sm_spread_t sp, const char *who, bool with_n)
{
    char kmin[32], kmax[32];
    snprintf(kmin, sizeof kmin, "min_%s", who);
    snprintf(kmax, sizeof kmax, "max_%s", who);
    sm_json_key(j, key);
    sm_json_object_begin_inline(j);
    if (with_n)
        sm_json_field_uint(j, "n", sp.n);
    sm_json_field_double(j, "mean", sp.mean);
    sm_json_field_double(j, "min", sp.min);
    sm_json_member(j, kmin, sp.min_member);
    sm_json_field_double(j, "max", sp.max);
    sm_json_member(j, kmax, sp.max_member);
    sm_json_field_double(j, "stddev", sp.stddev);
    if (!strcmp(who, "thread") && sp.n) {
        /* The threads by rank and location id: a job without members in
         * its summary has no thread numbers. */
        sm_json_member(j, "min_rank", sp.min_rank);
        sm_json_member(j, "min_location", sp.min_loc);
        sm_json_member(j, "max_rank", sp.max_rank);
        sm_json_member(j, "max_location", sp.max_loc);
    }
    sm_json_object_end(j);
}
