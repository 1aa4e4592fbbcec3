/* Region filters: parsing the filter file, matching a region once. */
#include "filter.h"
#include "fs.h"
#include "log.h"
#include "grow.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { SM_FB_NONE, SM_FB_NAMES, SM_FB_FILES, SM_FB_PARADIGMS } sm_fblock_t;

typedef struct sm_frule {
    uint8_t block;   /* sm_fblock_t */
    uint8_t exclude;
    uint8_t mangled;
    char *pattern;
} sm_frule_t;

struct sm_filter {
    sm_frule_t *rules;
    size_t n, cap;
};

/* The paradigm names a rule may use: the core's (paradigms.def), except
 * sysmeasure's own, which is never filtered. */
static const char *const sm_filter_paradigm_names[] = {
#define SM_PARADIGM(e, name, why) name,
#include "../core/paradigms.def"
#undef SM_PARADIGM
    NULL,
};

static const struct {
    const char *begin, *end;
    sm_fblock_t block;
} sm_filter_blocks[] = {
    {"SCOREP_REGION_NAMES_BEGIN", "SCOREP_REGION_NAMES_END", SM_FB_NAMES},
    {"SCOREP_FILE_NAMES_BEGIN", "SCOREP_FILE_NAMES_END", SM_FB_FILES},
    {"SYSMEASURE_PARADIGMS_BEGIN", "SYSMEASURE_PARADIGMS_END", SM_FB_PARADIGMS},
};
#define SM_N_BLOCKS (sizeof sm_filter_blocks / sizeof sm_filter_blocks[0])

void sm_filter_free(sm_filter_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->rules[i].pattern);
    free(f->rules);
    free(f);
}

size_t sm_filter_rule_count(const sm_filter_t *f)
{
    return f ? f->n : 0;
}

static int sm_filter_add(sm_filter_t *f, sm_fblock_t block, int exclude, int mangled,
                         const char *pattern)
{
    if (f->n == f->cap && SM_GROW(f->rules, f->cap, 16) != 0)
        return -1;
    char *p = strdup(pattern);
    if (!p)
        return -1;
    f->rules[f->n++] = (sm_frule_t){(uint8_t)block, (uint8_t)exclude, (uint8_t)mangled, p};
    return 0;
}

static void sm_filter_error(char *err, size_t errlen, const char *origin, unsigned line,
                            const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s:%u: %s", origin, line, msg);
    sm_log_one_line(err); /* (the file's words: control characters in them) */
}

/* Next whitespace-separated token of *s (a backslash keeps the next
 * character, '#' not escaped ends the line); NULL at the end of the line.
 * The token is written to tok with the backslashes of "\#" and "\ " removed,
 * other escapes kept for fnmatch. */
static const char *sm_filter_token(const char **s, char *tok, size_t len)
{
    const char *p = *s;
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    if (!*p || *p == '\n' || *p == '#')
        return NULL;
    size_t n = 0;
    while (*p && *p != '\n' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#') {
        if (*p == '\\' && p[1] && p[1] != '\n') {
            if (p[1] == '#' || p[1] == ' ' || p[1] == '\t') {
                p++;
            } else if (n + 1 < len) {
                tok[n++] = *p++;
            } else {
                p++;
            }
        }
        if (n + 1 < len)
            tok[n++] = *p;
        p++;
    }
    tok[n] = '\0';
    *s = p;
    return tok;
}

/* "user, pthread, ..." for the message about an unknown one. */
static void sm_filter_paradigm_list(char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; sm_filter_paradigm_names[i] && n < len; i++)
        if (strcmp(sm_filter_paradigm_names[i], "measurement") != 0)
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "",
                                  sm_filter_paradigm_names[i]);
}

static int sm_filter_known_paradigm(const char *name)
{
    for (int i = 0; sm_filter_paradigm_names[i]; i++)
        if (strcmp(name, sm_filter_paradigm_names[i]) == 0)
            return 1;
    return 0;
}

sm_filter_t *sm_filter_parse(const char *text, const char *origin, char *err, size_t errlen)
{
    sm_filter_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "%s: out of memory", origin);
        return NULL;
    }
    sm_fblock_t block = SM_FB_NONE;
    unsigned block_line = 0;
    int have_rule = 0, exclude = 0, mangled = 0;
    unsigned rule_line = 0;
    size_t rule_patterns = 0;
    unsigned line = 1;
    char tok[4096];
    const char *p = text;
    while (*p) {
        const char *t = sm_filter_token(&p, tok, sizeof tok);
        if (!t) {
            /* end of line (or comment) */
            while (*p && *p != '\n')
                p++;
            if (*p == '\n') {
                p++;
                line++;
            }
            continue;
        }
        int is_begin = -1, is_end = -1;
        for (size_t b = 0; b < SM_N_BLOCKS; b++) {
            if (strcmp(t, sm_filter_blocks[b].begin) == 0)
                is_begin = (int)b;
            if (strcmp(t, sm_filter_blocks[b].end) == 0)
                is_end = (int)b;
        }
        int is_rule = strcmp(t, "INCLUDE") == 0 || strcmp(t, "EXCLUDE") == 0;
        if ((is_begin >= 0 || is_end >= 0 || is_rule) && have_rule && rule_patterns == 0) {
            sm_filter_error(err, errlen, origin, rule_line, "%s without a pattern",
                            exclude ? "EXCLUDE" : "INCLUDE");
            goto fail;
        }
        if (is_begin >= 0) {
            if (block != SM_FB_NONE) {
                sm_filter_error(err, errlen, origin, line, "%s inside a block begun on line %u "
                                "(missing its _END?)", t, block_line);
                goto fail;
            }
            block = sm_filter_blocks[is_begin].block;
            block_line = line;
            have_rule = 0;
        } else if (is_end >= 0) {
            if (block != sm_filter_blocks[is_end].block) {
                sm_filter_error(err, errlen, origin, line, "%s without its %s", t,
                                sm_filter_blocks[is_end].begin);
                goto fail;
            }
            block = SM_FB_NONE;
            have_rule = 0;
        } else if (is_rule) {
            if (block == SM_FB_NONE) {
                sm_filter_error(err, errlen, origin, line, "%s outside a block (begin one with "
                                "SCOREP_REGION_NAMES_BEGIN or SCOREP_FILE_NAMES_BEGIN)", t);
                goto fail;
            }
            have_rule = 1;
            exclude = t[0] == 'E';
            mangled = 0;
            rule_line = line;
            rule_patterns = 0;
        } else if (strcmp(t, "MANGLED") == 0 && have_rule && rule_patterns == 0 &&
                   !mangled) {
            if (block != SM_FB_NAMES) {
                sm_filter_error(err, errlen, origin, line,
                                "MANGLED is for region names, not in this block");
                goto fail;
            }
            mangled = 1;
        } else if (block == SM_FB_NONE) {
            sm_filter_error(err, errlen, origin, line, "'%s' outside a block (begin one with "
                            "SCOREP_REGION_NAMES_BEGIN or SCOREP_FILE_NAMES_BEGIN)", t);
            goto fail;
        } else if (!have_rule) {
            sm_filter_error(err, errlen, origin, line,
                            "'%s': a pattern must follow INCLUDE or EXCLUDE", t);
            goto fail;
        } else if (strncmp(t, "SCOREP_", 7) == 0 || strncmp(t, "SYSMEASURE_", 11) == 0) {
            sm_filter_error(err, errlen, origin, line, "unknown keyword '%s'", t);
            goto fail;
        } else {
            if (block == SM_FB_PARADIGMS && !sm_filter_known_paradigm(t)) {
                char known[256];
                sm_filter_paradigm_list(known, sizeof known);
                sm_filter_error(err, errlen, origin, line, "unknown paradigm '%s' (%s)", t, known);
                goto fail;
            }
            if (sm_filter_add(f, block, exclude, mangled, t) != 0) {
                sm_filter_error(err, errlen, origin, line, "out of memory");
                goto fail;
            }
            rule_patterns++;
        }
    }
    if (have_rule && rule_patterns == 0) {
        sm_filter_error(err, errlen, origin, rule_line, "%s without a pattern",
                        exclude ? "EXCLUDE" : "INCLUDE");
        goto fail;
    }
    if (block != SM_FB_NONE) {
        for (size_t b = 0; b < SM_N_BLOCKS; b++)
            if (sm_filter_blocks[b].block == block)
                sm_filter_error(err, errlen, origin, block_line, "%s without its %s",
                                sm_filter_blocks[b].begin, sm_filter_blocks[b].end);
        goto fail;
    }
    return f;
fail:
    sm_filter_free(f);
    return NULL;
}

sm_filter_t *sm_filter_read(const char *path, char *err, size_t errlen)
{
    size_t n = 0;
    char *text = sm_fs_read_input(path, SM_FS_INPUT_NAMED, SM_FILTER_FILE_MAX, &n);
    if (!text) {
        int e = errno;
        char why[200];
        if (sm_fs_input_refused(e))
            snprintf(err, errlen, "filter file %s %s", path,
                     sm_fs_input_why(path, SM_FS_INPUT_NAMED, e, SM_FILTER_FILE_MAX, why,
                                     sizeof why));
        else
            snprintf(err, errlen, "filter file %s: %s", path, strerror(e));
        return NULL;
    }
    if (memchr(text, '\0', n)) {
        snprintf(err, errlen, "filter file %s: not a text file", path);
        free(text);
        return NULL;
    }
    sm_filter_t *f = sm_filter_parse(text, path, err, errlen);
    free(text);
    return f;
}

/* The last matching rule of the block decides: 1 excluded, 0 included,
 * -1 no rule matched. */
static int sm_filter_block(const sm_filter_t *f, sm_fblock_t block, const char *s,
                           const char *mangled)
{
    int verdict = -1;
    for (size_t i = 0; i < f->n; i++) {
        const sm_frule_t *r = &f->rules[i];
        if (r->block != block)
            continue;
        const char *subject = r->mangled ? (mangled ? mangled : s) : s;
        if (subject && fnmatch(r->pattern, subject, 0) == 0)
            verdict = r->exclude;
    }
    return verdict;
}

bool sm_filter_excludes(const sm_filter_t *f, const char *name, const char *mangled,
                        const char *file, const char *paradigm)
{
    if (!f)
        return false;
    if (name && sm_filter_block(f, SM_FB_NAMES, name, mangled) == 1)
        return true;
    if (file && sm_filter_block(f, SM_FB_FILES, file, NULL) == 1)
        return true;
    if (paradigm && sm_filter_block(f, SM_FB_PARADIGMS, paradigm, NULL) == 1)
        return true;
    return false;
}

void sm_filter_escape(const char *name, char *out, size_t len)
{
    size_t n = 0;
    if (!len)
        return;
    for (const char *p = name; *p && n + 2 < len; p++) {
        if (strchr("*?[]\\# \t", *p))
            out[n++] = '\\';
        out[n++] = *p;
    }
    out[n] = '\0';
}
