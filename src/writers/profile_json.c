/* profile.json: the numbers of profile.txt, machine-readable, times in ns. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */
#include "writers.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/definitions.h"
#include "../core/location.h"
#include "../util/json.h"
#include "../util/log.h"

typedef struct sm_pjson {
    sm_json_t *j;
    const sm_profile_summary_t *s;
    const char **names; /* path names, root first, reused between paths */
    uint32_t names_cap;
} sm_pjson_t;

/* Location id -> member index, SM_INVALID_ID when not a member. */
static uint32_t sm_pjson_member_of(const sm_profile_summary_t *s, uint32_t location)
{
    for (uint32_t i = 0; i < s->n_members; i++)
        if (s->member_location[i] == location)
            return i;
    return SM_INVALID_ID;
}

static void sm_pjson_member_or_null(sm_json_t *j, const char *key, uint32_t member)
{
    sm_json_key(j, key);
    if (member == SM_INVALID_ID)
        sm_json_null(j);
    else
        sm_json_uint(j, member);
}

static void sm_pjson_threads(sm_json_t *j, const sm_profile_summary_t *s)
{
    sm_json_key(j, "threads");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_location_t *loc = sm_location_get(s->member_location[i]);
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "member", i);
        sm_json_field_uint(j, "location", s->member_location[i]);
        sm_json_field_string(j, "name", loc ? loc->name : NULL);
        uint32_t creator = loc && loc->creator != SM_INVALID_ID
                               ? sm_pjson_member_of(s, loc->creator) : SM_INVALID_ID;
        sm_pjson_member_or_null(j, "created_by", creator);
        sm_json_key(j, "creation_path");
        sm_json_array_begin_inline(j);
        for (uint32_t d = 0; loc && loc->creator_path && d < loc->creator_depth; d++)
            sm_json_string(j, sm_region_name(loc->creator_path[d]));
        sm_json_array_end(j);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

/* Statistics per visit of one member, in ns. */
static void sm_pjson_stat(sm_json_t *j, const char *key, const sm_stat_t *st, uint64_t visits,
                          double npt)
{
    double var = sm_stat_variance(st, visits) * npt * npt;
    sm_json_key(j, key);
    sm_json_object_begin_inline(j);
    sm_json_field_double(j, "sum", (double)st->sum * npt);
    sm_json_field_double(j, "mean", sm_stat_mean(st, visits) * npt);
    sm_json_field_double(j, "min", visits ? (double)st->min * npt : 0.0);
    sm_json_field_double(j, "max", visits ? (double)st->max * npt : 0.0);
    sm_json_field_double(j, "variance", var);
    sm_json_field_double(j, "stddev", sqrt(var));
    sm_json_object_end(j);
}

static void sm_pjson_spread(sm_json_t *j, const char *key, sm_spread_t sp)
{
    sm_json_key(j, key);
    sm_json_object_begin_inline(j);
    sm_json_field_double(j, "mean", sp.mean);
    sm_json_field_double(j, "min", sp.min);
    sm_pjson_member_or_null(j, "min_thread", sp.min_member);
    sm_json_field_double(j, "max", sp.max);
    sm_pjson_member_or_null(j, "max_thread", sp.max_member);
    sm_json_field_double(j, "stddev", sp.stddev);
    sm_json_object_end(j);
}

static void sm_pjson_callpath(const sm_cpath_t *p, void *arg)
{
    sm_pjson_t *x = arg;
    sm_json_t *j = x->j;
    const sm_profile_summary_t *s = x->s;
    if (p->depth == 0 || j->err)
        return;
    if (p->depth > x->names_cap) {
        uint32_t cap = p->depth * 2;
        const char **names = realloc(x->names, cap * sizeof *names);
        if (!names) {
            j->err = ENOMEM;
            return;
        }
        x->names = names;
        x->names_cap = cap;
    }
    for (const sm_cpath_t *q = p; q && q->depth > 0; q = q->parent)
        x->names[q->depth - 1] = sm_region_name(q->region);

    sm_json_object_begin(j);
    sm_json_key(j, "path");
    sm_json_array_begin_inline(j);
    for (uint32_t d = 0; d < p->depth; d++)
        sm_json_string(j, x->names[d]);
    sm_json_array_end(j);
    sm_json_field_string(j, "region", sm_region_name(p->region));
    sm_json_field_uint(j, "depth", p->depth - 1);
    const sm_region_def_t *def = sm_region_get(p->region);
    sm_json_field_string(j, "paradigm",
                         sm_paradigm_name(def ? (sm_paradigm_t)def->paradigm : SM_PARADIGM_COUNT));
    if (def && def->file != SM_INVALID_ID)
        sm_json_field_string(j, "file", sm_string_get(def->file));
    if (def && def->line)
        sm_json_field_uint(j, "line", def->line);

    sm_json_key(j, "per_thread");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!m->visits)
            continue;
        sm_json_object_begin(j);
        sm_json_field_uint(j, "member", i);
        sm_json_field_uint(j, "visits", m->visits);
        sm_pjson_stat(j, "inclusive", &m->incl, m->visits, s->ns_per_tick);
        sm_pjson_stat(j, "exclusive", &m->excl, m->visits, s->ns_per_tick);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);

    sm_spread_t visits = sm_cpath_spread_visits(s, p);
    sm_json_key(j, "across_threads");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "threads", visits.n);
    sm_pjson_spread(j, "visits", visits);
    sm_pjson_spread(j, "inclusive", sm_cpath_spread_time(s, p, 0));
    sm_pjson_spread(j, "exclusive", sm_cpath_spread_time(s, p, 1));
    sm_json_object_end(j);
    sm_json_object_end(j);
}

int sm_profile_write_json(const sm_run_info_t *run, const sm_profile_summary_t *summary)
{
    if (!summary) { /* sm_profile_summarize ran out of memory */
        sm_error("writing %s/profile.json failed: %s", run->output_dir, strerror(ENOMEM));
        return -1;
    }
    sm_json_t j;
    if (sm_json_open(&j, run->output_dir, "profile.json") != 0)
        return -1;
    sm_json_object_begin(&j);
    sm_json_field_string(&j, "sysmeasure_version", PACKAGE_VERSION);
    sm_json_field_string(&j, "time_unit", "ns");
    sm_json_field_string(&j, "program", run->program);
    sm_json_field_int(&j, "pid", run->pid);
    sm_pjson_threads(&j, summary);

    sm_pjson_t x = {.j = &j, .s = summary};
    sm_json_key(&j, "callpaths");
    sm_json_array_begin(&j);
    sm_cpath_walk(&summary->root, sm_pjson_callpath, &x);
    sm_json_array_end(&j);
    free(x.names);

    sm_json_run_totals(&j, run);
    sm_json_object_end(&j);
    return sm_json_close(&j);
}
