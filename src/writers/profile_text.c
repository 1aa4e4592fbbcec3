/* profile.txt: the call-path profile as box-drawn text tables, in the layout of
 * the ROCm Systems Profiler's wall_clock.txt (one row per thread and path, a
 * |N>>> prefix naming the thread), followed by the same paths across threads. */
#include "writers.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/definitions.h"
#include "../core/location.h"
#include "../util/json.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- output */

typedef struct sm_text_out {
    FILE *f;
    int err; /* errno of the first failed write */
} sm_text_out_t;

static void sm_text_failed(sm_text_out_t *o)
{
    if (!o->err)
        o->err = errno ? errno : EIO;
}

static void sm_text_printf(sm_text_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sm_text_printf(sm_text_out_t *o, const char *fmt, ...)
{
    if (o->err) /* the file is incomplete anyway: stop writing */
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(o->f, fmt, ap) < 0)
        sm_text_failed(o);
    va_end(ap);
}

static void sm_text_repeat(sm_text_out_t *o, char c, size_t n)
{
    for (size_t i = 0; i < n && !o->err; i++)
        if (putc(c, o->f) == EOF)
            sm_text_failed(o);
}

/* Columns line up by characters, not bytes: count UTF-8 lead bytes. */
static size_t sm_text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0) != 0x80)
            w++;
    return w;
}

/* Names come from the application: a newline, a tab or a stray byte would
 * break the table (or the count of characters that aligns it). */
static void sm_text_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = sm_utf8_sequence(p);
        if (n == 0 || *p < 0x20 || *p == 0x7f) {
            *p = '?';
            n = 1;
        }
        p += n;
    }
}

/* ---------------------------------------------------------------- tables */

/* Every row's cells are formatted twice, once to measure the columns and
 * once to print them, so that a table of many threads x many paths needs no
 * memory beyond one row. */
#define SM_TABLE_MAX_COLS 12
#define SM_CELL_SIZE 64      /* numbers and short words */
#define SM_LABEL_SIZE 1024   /* the label: prefix, indentation, name */
#define SM_LABEL_MAX_INDENT 32 /* levels; DEPTH tells deeper ones apart */
#define SM_LABEL_MAX_NAME 160  /* characters; profile.json has the full name */

typedef struct sm_row {
    char label[SM_LABEL_SIZE];
    char cell[SM_TABLE_MAX_COLS][SM_CELL_SIZE]; /* cell[0] unused: the label */
} sm_row_t;

typedef struct sm_table {
    const char *title;
    const char *const *heads;
    const char *align; /* per column: 'l' or 'r' */
    size_t ncols;
    size_t width[SM_TABLE_MAX_COLS];
    sm_text_out_t *out; /* NULL while measuring */
    size_t rows;
} sm_table_t;

static void sm_table_init(sm_table_t *t, const char *title, const char *const *heads,
                          const char *align, size_t ncols)
{
    memset(t, 0, sizeof *t);
    t->title = title;
    t->heads = heads;
    t->align = align;
    t->ncols = ncols < SM_TABLE_MAX_COLS ? ncols : SM_TABLE_MAX_COLS;
    for (size_t c = 0; c < t->ncols; c++)
        t->width[c] = sm_text_width(heads[c]);
}

static const char *sm_row_cell(const sm_row_t *row, size_t c)
{
    return c == 0 ? row->label : row->cell[c];
}

static void sm_table_cell(sm_text_out_t *o, const char *s, size_t width, char align)
{
    size_t w = sm_text_width(s);
    size_t pad = width > w ? width - w : 0;
    if (align == 'r')
        sm_text_repeat(o, ' ', pad);
    sm_text_printf(o, "%s", s);
    if (align != 'r')
        sm_text_repeat(o, ' ', pad);
}

/* One row: widens the columns while measuring, else prints it. */
static void sm_table_row(sm_table_t *t, const sm_row_t *row)
{
    t->rows++;
    if (!t->out) {
        for (size_t c = 0; c < t->ncols; c++) {
            size_t w = sm_text_width(sm_row_cell(row, c));
            if (w > t->width[c])
                t->width[c] = w;
        }
        return;
    }
    sm_text_printf(t->out, "|");
    for (size_t c = 0; c < t->ncols; c++) {
        sm_text_printf(t->out, " ");
        sm_table_cell(t->out, sm_row_cell(row, c), t->width[c], t->align[c]);
        sm_text_printf(t->out, " |");
    }
    sm_text_printf(t->out, "\n");
}

/* Characters between the outer bars. */
static size_t sm_table_inner(const sm_table_t *t)
{
    size_t inner = t->ncols ? t->ncols - 1 : 0; /* the inner bars */
    for (size_t c = 0; c < t->ncols; c++)
        inner += t->width[c] + 2;
    return inner;
}

/* After measuring: |---| |title| |---| | HEAD | ... | |----|---|, then
 * switch to printing. */
static void sm_table_begin(sm_table_t *t, sm_text_out_t *o)
{
    size_t title = strlen(t->title);
    size_t inner = sm_table_inner(t);
    if (title + 4 > inner) { /* widen the label column to fit the title */
        t->width[0] += title + 4 - inner;
        inner = title + 4;
    }
    t->out = o;
    t->rows = 0;
    sm_text_printf(o, "|");
    sm_text_repeat(o, '-', inner);
    sm_text_printf(o, "|\n|");
    sm_text_repeat(o, ' ', (inner - title) / 2);
    sm_text_printf(o, "%s", t->title);
    sm_text_repeat(o, ' ', inner - title - (inner - title) / 2);
    sm_text_printf(o, "|\n|");
    sm_text_repeat(o, '-', inner);
    sm_text_printf(o, "|\n|");
    for (size_t c = 0; c < t->ncols; c++) { /* headings centred */
        size_t w = sm_text_width(t->heads[c]);
        size_t left = (t->width[c] - w) / 2;
        sm_text_repeat(o, ' ', 1 + left);
        sm_text_printf(o, "%s", t->heads[c]);
        sm_text_repeat(o, ' ', t->width[c] - w - left + 1);
        sm_text_printf(o, "|");
    }
    sm_text_printf(o, "\n|");
    for (size_t c = 0; c < t->ncols; c++) {
        sm_text_repeat(o, '-', t->width[c] + 2);
        sm_text_printf(o, "|");
    }
    sm_text_printf(o, "\n");
}

static void sm_table_end(sm_table_t *t)
{
    sm_text_printf(t->out, "|");
    sm_text_repeat(t->out, '-', sm_table_inner(t));
    sm_text_printf(t->out, "|\n");
}

/* ---------------------------------------------------------------- values */

typedef struct sm_time_unit {
    const char *name;
    double ns;
} sm_time_unit_t;

static const sm_time_unit_t sm_time_units[] = {
    {"sec", 1e9}, {"msec", 1e6}, {"usec", 1e3}, {"nsec", 1}};

/* The largest unit in which v (ns) is at least 1; nsec for smaller values. */
static const sm_time_unit_t *sm_time_unit_for(double ns)
{
    size_t n = sizeof sm_time_units / sizeof sm_time_units[0];
    for (size_t i = 0; i + 1 < n; i++)
        if (ns >= sm_time_units[i].ns)
            return &sm_time_units[i];
    return &sm_time_units[n - 1];
}

/* prefix, then "main", "|_run", "  |_step": the indentation of the
 * wall_clock tables, bounded so that deep recursion keeps rows short. */
static void sm_text_label(char *buf, size_t len, const char *prefix, const sm_cpath_t *p)
{
    uint32_t level = p->depth > 1 ? p->depth - 2 : 0;
    if (level > SM_LABEL_MAX_INDENT)
        level = SM_LABEL_MAX_INDENT;
    int n = snprintf(buf, len, "%s%*s%s", prefix, (int)(2 * level), "", p->depth > 1 ? "|_" : "");
    if (n < 0 || (size_t)n >= len)
        return;
    char *name = buf + n;
    size_t room = len - (size_t)n;
    snprintf(name, room, "%s", sm_region_name(p->region));
    sm_text_sanitize(name);
    /* Cut long names (C++ templates) at a character boundary. */
    size_t chars = 0;
    for (char *q = name; *q; q++) {
        if ((*q & 0xC0) == 0x80 || ++chars <= SM_LABEL_MAX_NAME)
            continue;
        if ((size_t)(q - name) + 4 <= room)
            memcpy(q, "...", 4);
        break;
    }
}

/* ---------------------------------------------------------------- the tables */

static const char *const sm_thread_heads[] = {"LABEL", "COUNT", "DEPTH", "METRIC",
                                              "UNITS", "SUM",   "MEAN",  "MIN",
                                              "MAX",   "VAR",   "STDDEV", "% SELF"};

static const char *const sm_across_heads[] = {"LABEL",  "THREADS",    "COUNT", "METRIC",
                                              "UNITS",  "MEAN",       "MIN",   "MIN THREAD",
                                              "MAX",    "MAX THREAD", "STDDEV"};

typedef struct sm_text_walk {
    const sm_profile_summary_t *summary;
    sm_table_t *table;
    sm_row_t *row;
    uint32_t member;
} sm_text_walk_t;

#define SM_CELL(row, c, ...) snprintf((row)->cell[c], SM_CELL_SIZE, __VA_ARGS__)

static void sm_thread_row(const sm_cpath_t *p, void *arg)
{
    sm_text_walk_t *w = arg;
    const sm_cpath_member_t *m = &p->members[w->member];
    if (p->depth == 0 || m->visits == 0)
        return;
    double npt = w->summary->ns_per_tick;
    double sum = (double)m->incl.sum * npt;
    double mean = sm_stat_mean(&m->incl, m->visits) * npt;
    double min = (double)m->incl.min * npt;
    double max = (double)m->incl.max * npt;
    double var = sm_stat_variance(&m->incl, m->visits) * npt * npt;
    double self = m->incl.sum ? 100.0 * (double)m->excl.sum / (double)m->incl.sum : 100.0;
    const sm_time_unit_t *u = sm_time_unit_for(sum);
    sm_row_t *row = w->row;
    char prefix[24];
    snprintf(prefix, sizeof prefix, "|%u>>> ", (unsigned)w->member);
    sm_text_label(row->label, sizeof row->label, prefix, p);
    SM_CELL(row, 1, "%llu", (unsigned long long)m->visits);
    SM_CELL(row, 2, "%u", (unsigned)(p->depth - 1));
    SM_CELL(row, 3, "wall_clock");
    SM_CELL(row, 4, "%s", u->name);
    SM_CELL(row, 5, "%.6f", sum / u->ns);
    SM_CELL(row, 6, "%.6f", mean / u->ns);
    SM_CELL(row, 7, "%.6f", min / u->ns);
    SM_CELL(row, 8, "%.6f", max / u->ns);
    SM_CELL(row, 9, "%.6f", var / (u->ns * u->ns));
    SM_CELL(row, 10, "%.6f", sqrt(var) / u->ns);
    SM_CELL(row, 11, "%.1f", self);
    sm_table_row(w->table, row);
}

static void sm_across_row(const sm_cpath_t *p, void *arg)
{
    sm_text_walk_t *w = arg;
    if (p->depth == 0)
        return;
    const sm_profile_summary_t *s = w->summary;
    uint64_t visits = 0;
    for (uint32_t i = 0; i < s->n_members; i++)
        visits += p->members[i].visits;
    sm_spread_t sp = sm_cpath_spread_time(s, p, 0);
    sm_row_t *row = w->row;
    sm_text_label(row->label, sizeof row->label, "", p);
    SM_CELL(row, 1, "%u", (unsigned)sp.n);
    SM_CELL(row, 2, "%llu", (unsigned long long)visits);
    SM_CELL(row, 3, "wall_clock");
    if (sp.n) {
        const sm_time_unit_t *u = sm_time_unit_for(sp.max);
        SM_CELL(row, 4, "%s", u->name);
        SM_CELL(row, 5, "%.6f", sp.mean / u->ns);
        SM_CELL(row, 6, "%.6f", sp.min / u->ns);
        SM_CELL(row, 7, "%u", (unsigned)sp.min_member);
        SM_CELL(row, 8, "%.6f", sp.max / u->ns);
        SM_CELL(row, 9, "%u", (unsigned)sp.max_member);
        SM_CELL(row, 10, "%.6f", sp.stddev / u->ns);
    } else { /* on the tree, but no thread completed a visit */
        for (int c = 4; c < 11; c++)
            SM_CELL(row, c, "-");
    }
    sm_table_row(w->table, row);
}

/* Walk (measure or print) the rows of one table. */
static void sm_text_rows(sm_table_t *t, const sm_profile_summary_t *s, sm_row_t *row,
                         bool per_thread)
{
    sm_text_walk_t w = {.summary = s, .table = t, .row = row};
    if (!per_thread) {
        sm_cpath_walk(&s->root, sm_across_row, &w);
        return;
    }
    for (w.member = 0; w.member < s->n_members; w.member++)
        sm_cpath_walk(&s->root, sm_thread_row, &w);
}

/* One table: measure, then print. */
static void sm_text_table(sm_text_out_t *o, const sm_profile_summary_t *s, sm_row_t *row,
                          bool per_thread)
{
    sm_table_t t;
    if (per_thread)
        sm_table_init(&t, "CALL-PATH PROFILE PER THREAD", sm_thread_heads, "lrrllrrrrrrr", 12);
    else
        sm_table_init(&t, "CALL-PATH PROFILE ACROSS THREADS", sm_across_heads, "lrrllrrrrrr", 11);
    sm_text_rows(&t, s, row, per_thread);
    sm_table_begin(&t, o);
    sm_text_rows(&t, s, row, per_thread);
    sm_table_end(&t);
}

/* ---------------------------------------------------------------- header */

/* Shell-like quoting, so that the command can be read back unambiguously. */
static void sm_text_command(sm_text_out_t *o, int argc, char **argv)
{
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        const char *a = argv[i];
        bool plain = *a != '\0';
        for (const char *p = a; *p && plain; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "_-+=./,:@%^", *p))
                plain = false;
        sm_text_printf(o, "%s", i ? " " : "");
        if (plain) {
            sm_text_printf(o, "%s", a);
            continue;
        }
        sm_text_printf(o, "'");
        for (const char *p = a; *p; p++) {
            if (*p == '\'')
                sm_text_printf(o, "'\\''");
            else
                sm_text_printf(o, "%c", (unsigned char)*p < 0x20 ? '?' : *p);
        }
        sm_text_printf(o, "'");
    }
    sm_text_printf(o, "\n");
}

/* Location id -> member index, SM_INVALID_ID when not a member. */
static uint32_t sm_text_member_of(const sm_profile_summary_t *s, uint32_t location)
{
    for (uint32_t i = 0; i < s->n_members; i++)
        if (s->member_location[i] == location)
            return i;
    return SM_INVALID_ID;
}

static void sm_text_name(sm_text_out_t *o, const char *name, const char *missing)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name && *name ? name : missing);
    sm_text_sanitize(buf);
    sm_text_printf(o, "%s", buf);
}

static void sm_text_legend(sm_text_out_t *o, const sm_profile_summary_t *s)
{
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_location_t *loc = sm_location_get(s->member_location[i]);
        sm_text_printf(o, "  thread %u: ", (unsigned)i);
        if (!loc) {
            sm_text_printf(o, "location %u\n", (unsigned)s->member_location[i]);
            continue;
        }
        sm_text_name(o, loc->name, "(unnamed)");
        if (loc->creator != SM_INVALID_ID) {
            uint32_t cm = sm_text_member_of(s, loc->creator);
            if (cm != SM_INVALID_ID)
                sm_text_printf(o, ", created by thread %u", (unsigned)cm);
            else
                sm_text_printf(o, ", created by location %u", (unsigned)loc->creator);
            for (uint32_t d = 0; d < loc->creator_depth && loc->creator_path; d++) {
                sm_text_printf(o, "%s", d ? " > " : " in ");
                sm_text_name(o, sm_region_name(loc->creator_path[d]), "?");
            }
        }
        sm_text_printf(o, "\n");
    }
}

static void sm_text_header(sm_text_out_t *o, const sm_run_info_t *run,
                           const sm_profile_summary_t *s)
{
    sm_text_printf(o, "sysmeasure call-path profile (wall-clock time)\n\n");
    sm_text_printf(o, "program     : ");
    sm_text_name(o, run->program, "(unknown)");
    sm_text_printf(o, "\ncommand     : ");
    sm_text_command(o, run->argc, run->argv);
    sm_text_printf(o, "pid         : %ld\n", (long)run->pid);
    sm_text_printf(o, "host        : ");
    sm_text_name(o, run->hostname, "(unknown)");
    sm_text_printf(o, "\nthreads     : %u\n", (unsigned)s->n_members);
    sm_text_printf(o, "time source : %s (1 tick = %.6g ns)\n",
                   run->clock_source ? run->clock_source : "unknown", s->ns_per_tick);
    sm_text_printf(o, "\n");
    if (s->n_members) {
        sm_text_printf(o, "threads (|N>>> in the labels):\n");
        sm_text_legend(o, s);
        sm_text_printf(o, "\n");
    }
}

static void sm_text_footer(sm_text_out_t *o, const sm_run_info_t *run)
{
    bool any = run->spills || run->dropped_records || run->unmatched_leaves;
    if (any)
        sm_text_printf(o, "\n");
    if (run->spills)
        sm_text_printf(o, "buffer spills    : %llu (%llu bytes written to disk)\n",
                       (unsigned long long)run->spills, (unsigned long long)run->spilled_bytes);
    if (run->dropped_records)
        sm_text_printf(o, "dropped events   : %llu (lost, a spill could not be written)\n",
                       (unsigned long long)run->dropped_records);
    if (run->unmatched_leaves)
        sm_text_printf(o, "unmatched leaves : %llu (region exits that matched no open region)\n",
                       (unsigned long long)run->unmatched_leaves);
}

/* ---------------------------------------------------------------- writer */

static int sm_text_body(sm_text_out_t *o, const sm_run_info_t *run,
                        const sm_profile_summary_t *s)
{
    sm_text_header(o, run, s);
    if (!s->root.first_child) {
        sm_text_printf(o, "no call paths were recorded\n");
    } else {
        sm_row_t *row = malloc(sizeof *row);
        if (!row)
            return ENOMEM;
        sm_text_table(o, s, row, true);
        sm_text_printf(o, "\n");
        sm_text_table(o, s, row, false);
        free(row);
    }
    sm_text_footer(o, run);
    return 0;
}

int sm_profile_write_text(const sm_run_info_t *run, const sm_profile_summary_t *summary)
{
    size_t len = strlen(run->output_dir) + sizeof "/profile.txt";
    char *path = malloc(len);
    if (!path) {
        sm_error("writing %s/profile.txt failed: %s", run->output_dir, strerror(ENOMEM));
        return -1;
    }
    snprintf(path, len, "%s/profile.txt", run->output_dir);
    if (!summary) { /* sm_profile_summarize ran out of memory */
        sm_error("writing %s failed: %s", path, strerror(ENOMEM));
        free(path);
        return -1;
    }
    sm_text_out_t o = {.f = fopen(path, "we"), .err = 0};
    if (!o.f) {
        sm_error("writing %s failed: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    /* The application may have set a locale with a decimal comma. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;

    int rc = sm_text_body(&o, run, summary);
    if (rc && !o.err)
        o.err = rc;
    if (fflush(o.f) == EOF || ferror(o.f))
        sm_text_failed(&o);
    errno = 0;
    if (fclose(o.f) == EOF)
        sm_text_failed(&o);

    if (old)
        uselocale(old);
    if (c_locale)
        freelocale(c_locale);
    if (o.err)
        sm_error("writing %s failed: %s", path, strerror(o.err));
    free(path);
    return o.err ? -1 : 0;
}
