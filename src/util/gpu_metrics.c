/* GPU counter specs: --gpu-metrics and --gpu-metrics-file (gpu_metrics.h). */
#include "gpu_metrics.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "json_read.h"
#include "log.h"
#include "grow.h"

/* Compiled filters, kept apart from the spec (which is copied around). */
typedef struct sm_gpu_spec_re {
    regex_t include, exclude;
    int has_include, has_exclude;
} sm_gpu_spec_re_t;
static struct {
    const sm_gpu_spec_t *spec;
    sm_gpu_spec_re_t re;
    int bad;
} sm_gpu_spec_compiled;

static void sm_gpu_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sm_gpu_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) {
        vsnprintf(err, errlen, fmt, ap);
        sm_log_one_line(err); /* (names and regular expressions of the file) */
    }
    va_end(ap);
}

void sm_gpu_spec_init(sm_gpu_spec_t *s)
{
    memset(s, 0, sizeof *s);
    s->interval = 1;
}

void sm_gpu_spec_free(sm_gpu_spec_t *s)
{
    for (uint32_t g = 0; g < s->n_groups; g++)
        for (uint32_t i = 0; i < s->groups[g].n; i++)
            free(s->groups[g].metrics[i]);
    free(s->include_regex);
    free(s->exclude_regex);
    if (sm_gpu_spec_compiled.spec == s) {
        if (sm_gpu_spec_compiled.re.has_include)
            regfree(&sm_gpu_spec_compiled.re.include);
        if (sm_gpu_spec_compiled.re.has_exclude)
            regfree(&sm_gpu_spec_compiled.re.exclude);
        memset(&sm_gpu_spec_compiled, 0, sizeof sm_gpu_spec_compiled);
    }
    sm_gpu_spec_init(s);
}

int sm_gpu_metric_name_ok(const char *name)
{
    if (!name || !*name || strlen(name) > 200)
        return 0;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != ':')
            return 0;
    return 1;
}

static int sm_gpu_group_add(sm_gpu_group_t *g, const char *name, size_t len, char *err,
                            size_t errlen)
{
    char buf[256];
    if (len >= sizeof buf) {
        sm_gpu_fail(err, errlen, "metric name too long: '%.40s...'", name);
        return -1;
    }
    memcpy(buf, name, len);
    buf[len] = '\0';
    if (!sm_gpu_metric_name_ok(buf)) {
        sm_gpu_fail(err, errlen,
                    "'%s' is not a metric name (letters, digits, '_' and '.', e.g. "
                    "smsp__inst_executed.sum)",
                    buf);
        return -1;
    }
    for (uint32_t i = 0; i < g->n; i++)
        if (!strcmp(g->metrics[i], buf))
            return 0; /* named twice: once is enough */
    if (g->n == SM_GPU_SPEC_MAX_METRICS) {
        sm_gpu_fail(err, errlen, "more than %d metrics in one group", SM_GPU_SPEC_MAX_METRICS);
        return -1;
    }
    if (!(g->metrics[g->n] = strdup(buf))) {
        sm_gpu_fail(err, errlen, "out of memory");
        return -1;
    }
    g->n++;
    return 0;
}

static sm_gpu_group_t *sm_gpu_new_group(sm_gpu_spec_t *s, char *err, size_t errlen)
{
    if (s->n_groups == SM_GPU_SPEC_MAX_GROUPS) {
        sm_gpu_fail(err, errlen, "more than %d metric groups", SM_GPU_SPEC_MAX_GROUPS);
        return NULL;
    }
    sm_gpu_group_t *g = &s->groups[s->n_groups++];
    memset(g, 0, sizeof *g);
    return g;
}

/* Names separated by any of seps (and blanks) into g. */
static int sm_gpu_words(const char *text, const char *seps, sm_gpu_group_t *g, char *err,
                        size_t errlen)
{
    const char *p = text;
    while (*p) {
        while (*p && (isspace((unsigned char)*p) || strchr(seps, *p)))
            p++;
        const char *w = p;
        while (*p && !isspace((unsigned char)*p) && !strchr(seps, *p))
            p++;
        if (p > w && sm_gpu_group_add(g, w, (size_t)(p - w), err, errlen) != 0)
            return -1;
    }
    return 0;
}

int sm_gpu_spec_parse_list(const char *text, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    if (!text)
        return 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char part[4096];
        if (len >= sizeof part) {
            sm_gpu_fail(err, errlen, "metric group too long");
            return -1;
        }
        memcpy(part, p, len);
        part[len] = '\0';
        sm_gpu_group_t probe;
        memset(&probe, 0, sizeof probe);
        if (sm_gpu_words(part, ",", &probe, err, errlen) != 0) {
            for (uint32_t i = 0; i < probe.n; i++)
                free(probe.metrics[i]);
            return -1;
        }
        if (probe.n) {
            sm_gpu_group_t *g = sm_gpu_new_group(s, err, errlen);
            if (!g) {
                for (uint32_t i = 0; i < probe.n; i++)
                    free(probe.metrics[i]);
                return -1;
            }
            *g = probe;
        }
        p += len;
        if (*p == ';')
            p++;
    }
    return 0;
}

/* "[1-2],[5]", "[1, 3-4]", "7": the n-th launches counted. */
static int sm_gpu_ranges(const char *text, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    const char *p = text;
    while (*p) {
        if (isspace((unsigned char)*p) || *p == '[' || *p == ']' || *p == ',') {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        unsigned long long a = strtoull(p, &end, 10), b;
        if (end == p || errno || *p == '-') {
            sm_gpu_fail(err, errlen,
                        "kernel_iteration_range: expected numbers and ranges such as "
                        "[1-4],[8] near '%.20s'",
                        p);
            return -1;
        }
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        b = a;
        if (*p == '-') {
            p++;
            b = strtoull(p, &end, 10);
            if (end == p || b < a) {
                sm_gpu_fail(err, errlen,
                            "kernel_iteration_range: a range must be low-high with low <= high "
                            "(near '%.20s')",
                            p);
                return -1;
            }
            p = end;
        }
        if (s->n_ranges == SM_GPU_SPEC_MAX_RANGES) {
            sm_gpu_fail(err, errlen, "kernel_iteration_range: more than %d ranges",
                        SM_GPU_SPEC_MAX_RANGES);
            return -1;
        }
        s->ranges[s->n_ranges][0] = a;
        s->ranges[s->n_ranges][1] = b;
        s->n_ranges++;
    }
    return 0;
}

/* ---- the size of a regular expression before it is compiled ----
 * glibc's regcomp copies a repeated subexpression once per repetition
 * ('+' as two copies, {m,n} as n), so nested repetitions multiply: the
 * 60 characters "^a+++...+" took gigabytes.  A kernel filter is a few
 * names; one whose expanded size (an upper estimate of regcomp's nodes)
 * passes SM_GPU_RE_MAX_PARTS, or that repeats a repetition, is refused
 * before regcomp sees it. */
#define SM_GPU_RE_MAX_PARTS 10000u
#define SM_GPU_RE_MAX_DEPTH 32

typedef struct sm_gpu_re_walk {
    const char *p;
} sm_gpu_re_walk_t;

static uint64_t sm_gpu_re_cap(uint64_t x)
{
    return x > SM_GPU_RE_MAX_PARTS ? SM_GPU_RE_MAX_PARTS + 1 : x;
}

static uint64_t sm_gpu_re_alt(sm_gpu_re_walk_t *w, int depth);

/* {m}, {m,} or {m,n} at w->p: the copies it makes (0: not an interval). */
static uint64_t sm_gpu_re_interval(sm_gpu_re_walk_t *w)
{
    const char *q = w->p + 1;
    uint64_t m = 0, n = 0;
    int digits = 0, comma = 0, ndigits = 0;
    for (; *q >= '0' && *q <= '9'; q++, digits++)
        m = sm_gpu_re_cap(m * 10 + (uint64_t)(*q - '0'));
    if (*q == ',') {
        comma = 1;
        for (q++; *q >= '0' && *q <= '9'; q++, ndigits++)
            n = sm_gpu_re_cap(n * 10 + (uint64_t)(*q - '0'));
    }
    if (*q != '}' || (!digits && !ndigits))
        return 0;
    w->p = q + 1;
    /* {m}: m copies; {m,}: m and a starred one; {m,n}: n */
    uint64_t copies = !comma ? m : !ndigits ? m + 1 : (n > m ? n : m);
    return copies ? copies : 1;
}

/* One atom and the repetitions after it. */
static uint64_t sm_gpu_re_piece(sm_gpu_re_walk_t *w, int depth)
{
    uint64_t size = 1;
    char c = *w->p++;
    if (c == '(') {
        size = sm_gpu_re_cap(sm_gpu_re_alt(w, depth + 1) + 1);
        if (*w->p == ')')
            w->p++;
    } else if (c == '[') {
        /* A bracket expression: ']' first is a member; [:x:], [.x.], [=x=]. */
        if (*w->p == '^')
            w->p++;
        if (*w->p == ']')
            w->p++;
        while (*w->p && *w->p != ']') {
            if (w->p[0] == '[' && (w->p[1] == ':' || w->p[1] == '.' || w->p[1] == '=')) {
                char end = w->p[1];
                const char *close = w->p + 2;
                while (*close && !(close[0] == end && close[1] == ']'))
                    close++;
                w->p = *close ? close + 2 : close;
            } else {
                w->p++;
            }
        }
        if (*w->p == ']')
            w->p++;
    } else if (c == '\\' && *w->p) {
        w->p++;
    }
    for (int repeats = 0;; repeats++) {
        uint64_t copies;
        /* A repetition of a repetition (a++, a*{2}: undefined in POSIX,
         * glibc repeats the repetition) is no filter: its closures took
         * glibc seconds for ten of them. */
        if (repeats == 1 && (*w->p == '*' || *w->p == '?' || *w->p == '+' || *w->p == '{'))
            return SM_GPU_RE_MAX_PARTS + 1;
        if (*w->p == '*' || *w->p == '?') {
            w->p++;
            size = sm_gpu_re_cap(size + 1);
        } else if (*w->p == '+') {
            w->p++;
            size = sm_gpu_re_cap(2 * size + 1);
        } else if (*w->p == '{' && (copies = sm_gpu_re_interval(w)) != 0) {
            size = sm_gpu_re_cap(size * copies + 1);
        } else {
            return size;
        }
    }
}

/* Alternatives of concatenations, up to ')' or the end. */
static uint64_t sm_gpu_re_alt(sm_gpu_re_walk_t *w, int depth)
{
    if (depth > SM_GPU_RE_MAX_DEPTH)
        return SM_GPU_RE_MAX_PARTS + 1;
    uint64_t size = 0;
    while (*w->p && *w->p != ')' && size <= SM_GPU_RE_MAX_PARTS) {
        if (*w->p == '|') {
            w->p++;
            size = sm_gpu_re_cap(size + 1);
            continue;
        }
        size = sm_gpu_re_cap(size + sm_gpu_re_piece(w, depth));
    }
    return size;
}

/* Whether re, once expanded, stays within SM_GPU_RE_MAX_PARTS. */
static int sm_gpu_re_small(const char *re)
{
    sm_gpu_re_walk_t w = {re};
    uint64_t size = 0;
    /* (a ')' without its '(' is an ordinary character in ERE) */
    while (*w.p && size <= SM_GPU_RE_MAX_PARTS) {
        size = sm_gpu_re_cap(size + sm_gpu_re_alt(&w, 0));
        if (*w.p == ')') {
            w.p++;
            size = sm_gpu_re_cap(size + 1);
        }
    }
    return size <= SM_GPU_RE_MAX_PARTS;
}

static int sm_gpu_set_text(char **field, const char *value, const char *key, char *err,
                           size_t errlen)
{
    if (*field && strcmp(*field, value) != 0) {
        sm_gpu_fail(err, errlen,
                    "jobs name different %s values ('%s' and '%s'): one set of kernel filters "
                    "per run",
                    key, *field, value);
        return -1;
    }
    if (!*field && !(*field = strdup(value))) {
        sm_gpu_fail(err, errlen, "out of memory");
        return -1;
    }
    if (!sm_gpu_re_small(value)) {
        sm_gpu_fail(err, errlen, "%s '%.80s%s' repeats too much (a repetition of a repetition, "
                    "or more than %u parts once its repetitions are expanded): a kernel filter "
                    "is a few names", key, value, strlen(value) > 80 ? "..." : "",
                    SM_GPU_RE_MAX_PARTS);
        return -1;
    }
    regex_t re;
    int rc = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[128];
        regerror(rc, &re, why, sizeof why);
        sm_gpu_fail(err, errlen, "%s '%s' is not a regular expression: %s", key, value, why);
        return -1;
    }
    regfree(&re);
    return 0;
}

/* A list of names: an array of strings, or a string of names. */
static int sm_gpu_jv_names(const sm_jv_t *v, sm_gpu_group_t *g, const char *key, char *err,
                           size_t errlen)
{
    if (v->type == SM_JV_STRING)
        return sm_gpu_words(v->str, ",", g, err, errlen);
    if (v->type != SM_JV_ARRAY) {
        sm_gpu_fail(err, errlen, "%s: expected a list of metric names", key);
        return -1;
    }
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->items[i]->type != SM_JV_STRING) {
            sm_gpu_fail(err, errlen, "%s: expected metric names (strings)", key);
            return -1;
        }
        if (sm_gpu_words(v->items[i]->str, ",", g, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int sm_gpu_jv_job(const sm_jv_t *job, uint32_t index, sm_gpu_spec_t *s, char *err,
                         size_t errlen)
{
    char why[512] = "";
    if (job->type != SM_JV_OBJECT) {
        sm_gpu_fail(err, errlen, "job %u: expected an object", index + 1);
        return -1;
    }
    for (uint32_t k = 0; k < job->n; k++) {
        const char *key = job->keys[k];
        const sm_jv_t *v = job->items[k];
        int rc = 0;
        if (!strcmp(key, "pmc")) {
            sm_gpu_group_t *g = sm_gpu_new_group(s, why, sizeof why);
            rc = g ? sm_gpu_jv_names(v, g, key, why, sizeof why) : -1;
            if (rc == 0 && g->n == 0)
                s->n_groups--;
        } else if (!strcmp(key, "pmc_groups")) {
            if (v->type != SM_JV_ARRAY) {
                snprintf(why, sizeof why, "pmc_groups: expected a list of lists of metric names");
                rc = -1;
            }
            for (uint32_t i = 0; rc == 0 && i < v->n; i++) {
                sm_gpu_group_t *g = sm_gpu_new_group(s, why, sizeof why);
                rc = g ? sm_gpu_jv_names(v->items[i], g, key, why, sizeof why) : -1;
                if (rc == 0 && g->n == 0)
                    s->n_groups--;
            }
        } else if (!strcmp(key, "pmc_group_interval")) {
            double d = v->type == SM_JV_NUMBER ? v->num
                       : v->type == SM_JV_STRING ? strtod(v->str, NULL)
                                                 : -1;
            if (d < 1 || d > 1e9 || d != (double)(uint32_t)d) {
                snprintf(why, sizeof why, "pmc_group_interval: expected a whole number >= 1");
                rc = -1;
            } else {
                s->interval = (uint32_t)d;
            }
        } else if (!strcmp(key, "kernel_include_regex") || !strcmp(key, "kernel_exclude_regex")) {
            if (v->type != SM_JV_STRING) {
                snprintf(why, sizeof why, "%s: expected a string", key);
                rc = -1;
            } else {
                rc = sm_gpu_set_text(key[7] == 'i' ? &s->include_regex : &s->exclude_regex,
                                     v->str, key, why, sizeof why);
            }
        } else if (!strcmp(key, "kernel_iteration_range")) {
            if (v->type == SM_JV_STRING) {
                rc = sm_gpu_ranges(v->str, s, why, sizeof why);
            } else if (v->type == SM_JV_NUMBER) {
                char t[32];
                snprintf(t, sizeof t, "%.0f", v->num);
                rc = sm_gpu_ranges(t, s, why, sizeof why);
            } else if (v->type == SM_JV_ARRAY) {
                for (uint32_t i = 0; rc == 0 && i < v->n; i++) {
                    char t[64];
                    if (v->items[i]->type == SM_JV_NUMBER)
                        snprintf(t, sizeof t, "%.0f", v->items[i]->num);
                    else if (v->items[i]->type == SM_JV_STRING)
                        snprintf(t, sizeof t, "%.60s", v->items[i]->str);
                    else
                        t[0] = 'x', t[1] = '\0';
                    rc = sm_gpu_ranges(t, s, why, sizeof why);
                }
            } else {
                snprintf(why, sizeof why, "kernel_iteration_range: expected \"[1-4],[8]\"");
                rc = -1;
            }
        }
        /* Other rocprofv3 keys (output formats, tracing switches) are not
         * ours: left to rocprofv3. */
        if (rc != 0) {
            sm_gpu_fail(err, errlen, "job %u: %s", index + 1, why);
            return -1;
        }
    }
    return 0;
}

static int sm_gpu_jv_spec(const sm_jv_t *root, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    const sm_jv_t *jobs = sm_jv_get(root, "jobs");
    if (!jobs || jobs->type != SM_JV_ARRAY) {
        /* One job on its own is accepted too. */
        if (root->type == SM_JV_OBJECT && (sm_jv_get(root, "pmc") || sm_jv_get(root, "pmc_groups")))
            return sm_gpu_jv_job(root, 0, s, err, errlen);
        sm_gpu_fail(err, errlen, "expected {\"jobs\": [{\"pmc\": [...]}, ...]}");
        return -1;
    }
    for (uint32_t i = 0; i < jobs->n; i++)
        if (sm_gpu_jv_job(jobs->items[i], i, s, err, errlen) != 0)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- YAML (the subset of rocprofv3's files) */

/* Block mappings and sequences by indentation, "- " items, "key: value",
 * flow lists ("[A, B]", "[[A, B], [C]]"), quoted or plain scalars and '#'
 * comments: enough for rocprofv3's input files, turned into the JSON tree. */
typedef struct sm_yl {
    char *text; /* the line's content after its indentation, comment cut */
    int indent;
    uint32_t number;
} sm_yl_t;

typedef struct sm_yp {
    sm_yl_t *lines;
    uint32_t n, at;
    char *err;
    size_t errlen;
    int failed;
} sm_yp_t;

static sm_jv_t *sm_jv_new(sm_jv_type_t t)
{
    sm_jv_t *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

static int sm_jv_append(sm_jv_t *c, sm_jv_t *v, const char *key)
{
    sm_jv_t **items = realloc(c->items, (c->n + 1) * sizeof *items);
    if (!items)
        return -1;
    c->items = items;
    if (c->type == SM_JV_OBJECT) {
        char **keys = realloc(c->keys, (c->n + 1) * sizeof *keys);
        if (!keys)
            return -1;
        c->keys = keys;
        if (!(keys[c->n] = strdup(key)))
            return -1;
    }
    items[c->n++] = v;
    return 0;
}

static void sm_yp_fail(sm_yp_t *yp, uint32_t line, const char *what)
{
    if (!yp->failed)
        snprintf(yp->err, yp->errlen, "line %u: %s", line, what);
    yp->failed = 1;
}

/* A scalar or flow list: plain words are quoted and the result is JSON. */
static sm_jv_t *sm_yp_inline(sm_yp_t *yp, const char *text, uint32_t line)
{
    size_t n = strlen(text);
    char *json = malloc(3 * n + 3);
    if (!json) {
        sm_yp_fail(yp, line, "out of memory");
        return NULL;
    }
    char *o = json;
    const char *p = text;
    int flow = *p == '[' || *p == '{';
    if (!flow) {
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if ((*p == '"' || *p == '\'') && n >= 2 && p[n - 1] == *p) {
            p++, n -= 2;
        } else {
            char *end;
            strtod(p, &end);
            if (end == p + n && n) { /* a number */
                memcpy(o, p, n);
                o += n;
                goto parse;
            }
        }
        *o++ = '"';
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '"' || p[i] == '\\')
                *o++ = '\\';
            *o++ = p[i];
        }
        *o++ = '"';
        goto parse;
    }
    while (*p) {
        if (strchr("[]{},: \t", *p)) {
            *o++ = *p++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            *o++ = '"';
            while (*p && *p != q) {
                if (*p == '"' || *p == '\\')
                    *o++ = '\\';
                *o++ = *p++;
            }
            if (*p)
                p++;
            *o++ = '"';
        } else {
            const char *w = p;
            while (*p && !strchr("[]{},", *p) && !(*p == ':' && (p[1] == ' ' || !p[1])))
                p++;
            const char *e = p;
            while (e > w && isspace((unsigned char)e[-1]))
                e--;
            char *end;
            strtod(w, &end);
            int number = end == e;
            if (!number)
                *o++ = '"';
            memcpy(o, w, (size_t)(e - w));
            o += e - w;
            if (!number)
                *o++ = '"';
        }
    }
parse:
    *o = '\0';
    char why[200];
    sm_jv_t *v = sm_jv_parse(json, (size_t)(o - json), NULL, why, sizeof why);
    free(json);
    if (!v)
        sm_yp_fail(yp, line, "cannot read this value");
    return v;
}

static sm_jv_t *sm_yp_block(sm_yp_t *yp, int indent);

/* "key: value" or "key:" followed by a deeper block, into map. */
static int sm_yp_pair(sm_yp_t *yp, sm_jv_t *map, char *text, int indent, uint32_t line)
{
    char *colon = text;
    while ((colon = strchr(colon, ':')) && colon[1] && colon[1] != ' ' && colon[1] != '\t')
        colon++;
    if (!colon) {
        sm_yp_fail(yp, line, "expected 'key: value'");
        return -1;
    }
    *colon = '\0';
    char *key = text, *value = colon + 1;
    size_t kl = strlen(key);
    while (kl && isspace((unsigned char)key[kl - 1]))
        key[--kl] = '\0';
    if (kl >= 2 && (key[0] == '"' || key[0] == '\'') && key[kl - 1] == key[0])
        key[kl - 1] = '\0', key++;
    while (isspace((unsigned char)*value))
        value++;
    sm_jv_t *v;
    if (*value) {
        v = sm_yp_inline(yp, value, line);
    } else if (yp->at < yp->n && yp->lines[yp->at].indent > indent) {
        v = sm_yp_block(yp, yp->lines[yp->at].indent);
    } else if (yp->at < yp->n && yp->lines[yp->at].indent == indent &&
               yp->lines[yp->at].text[0] == '-') {
        v = sm_yp_block(yp, indent); /* "key:\n- a" at the same indentation */
    } else {
        v = sm_jv_new(SM_JV_NULL);
    }
    if (!v || sm_jv_append(map, v, key) != 0) {
        sm_jv_free(v);
        sm_yp_fail(yp, line, "out of memory");
        return -1;
    }
    return 0;
}

static sm_jv_t *sm_yp_block(sm_yp_t *yp, int indent)
{
    if (yp->at >= yp->n)
        return sm_jv_new(SM_JV_NULL);
    int seq = yp->lines[yp->at].text[0] == '-' &&
              (yp->lines[yp->at].text[1] == ' ' || !yp->lines[yp->at].text[1]);
    sm_jv_t *c = sm_jv_new(seq ? SM_JV_ARRAY : SM_JV_OBJECT);
    if (!c)
        return NULL;
    while (yp->at < yp->n && !yp->failed) {
        sm_yl_t *l = &yp->lines[yp->at];
        if (l->indent < indent)
            break;
        if (l->indent > indent) {
            sm_yp_fail(yp, l->number, "unexpected indentation");
            break;
        }
        int dash = l->text[0] == '-' && (l->text[1] == ' ' || !l->text[1]);
        if (dash != seq) {
            sm_yp_fail(yp, l->number, seq ? "expected '- item'" : "expected 'key: value'");
            break;
        }
        yp->at++;
        if (!seq) {
            sm_yp_pair(yp, c, l->text, indent, l->number);
            continue;
        }
        char *rest = l->text + 1;
        while (*rest == ' ')
            rest++;
        int inner = indent + (int)(rest - l->text);
        sm_jv_t *item;
        int is_map = 0;
        if (*rest != '[' && *rest != '"' && *rest != '\'') {
            char *colon = strchr(rest, ':');
            is_map = colon && (colon[1] == ' ' || !colon[1]);
        }
        if (!*rest) {
            item = yp->at < yp->n && yp->lines[yp->at].indent > indent
                       ? sm_yp_block(yp, yp->lines[yp->at].indent)
                       : sm_jv_new(SM_JV_NULL);
        } else if (is_map) {
            /* "- key: value" then more keys at the item's indentation. */
            item = sm_jv_new(SM_JV_OBJECT);
            if (item)
                sm_yp_pair(yp, item, rest, inner, l->number);
            while (item && !yp->failed && yp->at < yp->n && yp->lines[yp->at].indent == inner) {
                sm_yl_t *m = &yp->lines[yp->at++];
                sm_yp_pair(yp, item, m->text, inner, m->number);
            }
        } else {
            item = sm_yp_inline(yp, rest, l->number);
        }
        if (!item || sm_jv_append(c, item, NULL) != 0) {
            sm_jv_free(item);
            sm_yp_fail(yp, l->number, "out of memory");
        }
    }
    return c;
}

static sm_jv_t *sm_yaml_parse(char *text, char *err, size_t errlen)
{
    sm_yp_t yp = {NULL, 0, 0, err, errlen, 0};
    uint32_t cap = 0, number = 0;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        number++;
        int indent = 0;
        while (line[indent] == ' ')
            indent++;
        char *t = line + indent;
        /* A comment: '#' at the start or after a blank, outside quotes. */
        char q = 0;
        for (char *p = t; *p; p++) {
            if (q) {
                if (*p == q)
                    q = 0;
            } else if (*p == '"' || *p == '\'') {
                q = *p;
            } else if (*p == '#' && (p == t || isspace((unsigned char)p[-1]))) {
                *p = '\0';
                break;
            }
        }
        size_t n = strlen(t);
        while (n && isspace((unsigned char)t[n - 1]))
            t[--n] = '\0';
        if (n && strcmp(t, "---") != 0) {
            if (yp.n == cap && SM_GROW(yp.lines, cap, 32) != 0) {
                free(yp.lines);
                sm_gpu_fail(err, errlen, "out of memory");
                return NULL;
            }
            yp.lines[yp.n++] = (sm_yl_t){t, indent, number};
        }
        line = next;
    }
    sm_jv_t *root = yp.n ? sm_yp_block(&yp, yp.lines[0].indent) : sm_jv_new(SM_JV_OBJECT);
    if (!yp.failed && yp.at < yp.n)
        sm_yp_fail(&yp, yp.lines[yp.at].number, "unexpected indentation");
    free(yp.lines);
    if (yp.failed || !root) {
        sm_jv_free(root);
        if (!yp.failed)
            sm_gpu_fail(err, errlen, "out of memory");
        return NULL;
    }
    return root;
}

/* ---------------------------------------------------------------- files */

/* rocprofv3's text form: "pmc: A B" lines. */
static int sm_gpu_parse_pmc_lines(char *text, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    uint32_t number = 0;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        number++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        while (isspace((unsigned char)*line))
            line++;
        if (*line) {
            if (strncmp(line, "pmc:", 4) != 0) {
                sm_gpu_fail(err, errlen, "line %u: expected 'pmc: METRIC METRIC ...'", number);
                return -1;
            }
            char why[400];
            sm_gpu_group_t *g = sm_gpu_new_group(s, why, sizeof why);
            if (!g || sm_gpu_words(line + 4, ",", g, why, sizeof why) != 0) {
                sm_gpu_fail(err, errlen, "line %u: %s", number, why);
                return -1;
            }
            if (!g->n)
                s->n_groups--;
        }
        line = next;
    }
    return 0;
}

int sm_gpu_spec_parse_text(const char *text, size_t len, sm_gpu_spec_t *s, char *err,
                           size_t errlen)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        sm_gpu_fail(err, errlen, "out of memory");
        return -1;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (strlen(copy) != len) {
        free(copy);
        sm_gpu_fail(err, errlen, "a NUL byte in the file: not a text file");
        return -1;
    }
    const char *p = copy;
    /* Which form: the first meaningful line decides. */
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (*p != '#')
            break;
        p = strchr(p, '\n');
        if (!p)
            p = "";
    }
    int rc;
    if (*p == '{' || *p == '[') {
        char why[400];
        sm_jv_t *root = sm_jv_parse(copy, len, NULL, why, sizeof why);
        if (!root) {
            sm_gpu_fail(err, errlen, "JSON: %s", why);
            rc = -1;
        } else {
            rc = sm_gpu_jv_spec(root, s, err, errlen);
            sm_jv_free(root);
        }
    } else if (!strncmp(p, "pmc:", 4) || !*p) {
        rc = sm_gpu_parse_pmc_lines(copy, s, err, errlen);
    } else {
        char why[400];
        sm_jv_t *root = sm_yaml_parse(copy, why, sizeof why);
        if (!root) {
            sm_gpu_fail(err, errlen, "YAML: %s", why);
            rc = -1;
        } else {
            rc = sm_gpu_jv_spec(root, s, err, errlen);
            sm_jv_free(root);
        }
    }
    free(copy);
    if (rc == 0 && s->n_groups == 0) {
        sm_gpu_fail(err, errlen, "names no metrics (expected 'pmc: A B' lines or jobs with pmc)");
        rc = -1;
    }
    return rc;
}

int sm_gpu_spec_read_file(const char *path, sm_gpu_spec_t *s, char *err, size_t errlen)
{
    size_t len = 0;
    char *buf = sm_fs_read_input(path, SM_FS_INPUT_NAMED, SM_GPU_SPEC_FILE_MAX, &len);
    if (!buf) {
        int e = errno;
        char why[200];
        if (sm_fs_input_refused(e))
            sm_gpu_fail(err, errlen, "%s %s", path,
                        sm_fs_input_why(path, SM_FS_INPUT_NAMED, e, SM_GPU_SPEC_FILE_MAX, why,
                                        sizeof why));
        else
            sm_gpu_fail(err, errlen, "cannot read %s: %s", path, strerror(e));
        return -1;
    }
    char why[700];
    int rc = sm_gpu_spec_parse_text(buf, len, s, why, sizeof why);
    free(buf);
    if (rc != 0)
        sm_gpu_fail(err, errlen, "%s: %s", path, why);
    return rc;
}

int sm_gpu_spec_load(const char *list, const char *file, sm_gpu_spec_t *s, char *err,
                     size_t errlen)
{
    char why[800];
    if (list && *list && sm_gpu_spec_parse_list(list, s, why, sizeof why) != 0) {
        sm_gpu_fail(err, errlen, "--gpu-metrics: %s", why);
        return -1;
    }
    if (file && *file && sm_gpu_spec_read_file(file, s, why, sizeof why) != 0) {
        sm_gpu_fail(err, errlen, "--gpu-metrics-file %s", why);
        return -1;
    }
    return 0;
}

uint32_t sm_gpu_spec_all(const sm_gpu_spec_t *s, const char **out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t g = 0; g < s->n_groups; g++)
        for (uint32_t i = 0; i < s->groups[g].n; i++) {
            uint32_t k = 0;
            while (k < n && strcmp(out[k], s->groups[g].metrics[i]) != 0)
                k++;
            if (k == n && n < max)
                out[n++] = s->groups[g].metrics[i];
        }
    return n;
}

int sm_gpu_spec_selects(sm_gpu_spec_t *s, const char *name, uint64_t nth)
{
    if (s->n_ranges) {
        int in = 0;
        for (uint32_t i = 0; i < s->n_ranges && !in; i++)
            in = nth >= s->ranges[i][0] && nth <= s->ranges[i][1];
        if (!in)
            return 0;
    }
    if (!s->include_regex && !s->exclude_regex)
        return 1;
    if (sm_gpu_spec_compiled.spec != s) {
        memset(&sm_gpu_spec_compiled, 0, sizeof sm_gpu_spec_compiled);
        sm_gpu_spec_compiled.spec = s;
        sm_gpu_spec_re_t *re = &sm_gpu_spec_compiled.re;
        if (s->include_regex)
            re->has_include = regcomp(&re->include, s->include_regex, REG_EXTENDED | REG_NOSUB) == 0;
        if (s->exclude_regex)
            re->has_exclude = regcomp(&re->exclude, s->exclude_regex, REG_EXTENDED | REG_NOSUB) == 0;
    }
    const sm_gpu_spec_re_t *re = &sm_gpu_spec_compiled.re;
    if (re->has_include && regexec(&re->include, name ? name : "", 0, NULL, 0) != 0)
        return 0;
    if (re->has_exclude && regexec(&re->exclude, name ? name : "", 0, NULL, 0) == 0)
        return 0;
    return 1;
}
