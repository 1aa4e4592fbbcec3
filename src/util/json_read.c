/* A small recursive-descent JSON reader: see json_read.h. */
#include "json_read.h"
#include "grow.h"
#include "log.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than any file sysmeasure writes; guards the recursion. */
#define SM_JV_MAX_DEPTH 128

typedef struct sm_jp {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    int failed;
    locale_t c_locale;
    const char *const *skip;
} sm_jp_t;

static int sm_jp_skipped(const sm_jp_t *jp, const char *key)
{
    for (const char *const *k = jp->skip; k && *k; k++)
        if (!strcmp(*k, key))
            return 1;
    return 0;
}

static void sm_jp_fail(sm_jp_t *jp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sm_jp_fail(sm_jp_t *jp, const char *fmt, ...)
{
    if (jp->failed)
        return;
    jp->failed = 1;
    unsigned line = 1;
    for (const char *q = jp->start; q < jp->p && q < jp->end; q++)
        line += *q == '\n';
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (jp->err && jp->errlen) {
        snprintf(jp->err, jp->errlen, "line %u: %s", line, what);
        sm_log_one_line(jp->err); /* (what quotes the text: '\<line break>') */
    }
}

static void sm_jp_space(sm_jp_t *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

static int sm_jp_hex4(sm_jp_t *jp, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++, jp->p++) {
        if (jp->p >= jp->end)
            return -1;
        char c = *jp->p;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t sm_jp_utf8(unsigned cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* At the opening quote; a malloc'd string, or NULL. */
static char *sm_jp_string(sm_jp_t *jp)
{
    jp->p++;
    const char *q = jp->p;
    while (q < jp->end && *q != '"')
        q += *q == '\\' ? 2 : 1;
    if (q >= jp->end) {
        sm_jp_fail(jp, "unterminated string");
        return NULL;
    }
    /* Escapes never grow: \uXXXX (6 bytes) gives at most 4 (a pair, 12: 4). */
    char *s = malloc((size_t)(q - jp->p) + 1), *o = s;
    if (!s) {
        sm_jp_fail(jp, "%s", strerror(ENOMEM));
        return NULL;
    }
    while (jp->p < q) {
        char c = *jp->p++;
        if (c != '\\') {
            if ((unsigned char)c < 0x20) {
                sm_jp_fail(jp, "control character in a string");
                free(s);
                return NULL;
            }
            *o++ = c;
            continue;
        }
        c = *jp->p++;
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (sm_jp_hex4(jp, &cp) != 0) {
                sm_jp_fail(jp, "bad \\u escape");
                free(s);
                return NULL;
            }
            if (cp >= 0xd800 && cp < 0xdc00 && jp->p + 6 <= q && jp->p[0] == '\\' &&
                jp->p[1] == 'u') {
                const char *save = jp->p;
                unsigned lo;
                jp->p += 2;
                if (sm_jp_hex4(jp, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    jp->p = save;
            }
            if (cp == 0 || (cp >= 0xd800 && cp < 0xe000))
                cp = 0xfffd;
            o += sm_jp_utf8(cp, o);
            break;
        }
        default:
            sm_jp_fail(jp, "bad escape '\\%c'", c);
            free(s);
            return NULL;
        }
    }
    *o = '\0';
    jp->p = q + 1;
    return s;
}

static sm_jv_t *sm_jp_value(sm_jp_t *jp, int depth);

/* Appends v (and key) to a container; -1 when out of memory. */
static int sm_jp_push(sm_jv_t *c, uint32_t *cap, sm_jv_t *v, char *key)
{
    if (c->n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 4;
        sm_jv_t **items = realloc(c->items, ncap * sizeof *items);
        if (!items)
            return -1;
        c->items = items;
        if (c->type == SM_JV_OBJECT) {
            char **keys = realloc(c->keys, ncap * sizeof *keys);
            if (!keys)
                return -1;
            c->keys = keys;
        }
        *cap = ncap;
    }
    c->items[c->n] = v;
    if (c->type == SM_JV_OBJECT)
        c->keys[c->n] = key;
    c->n++;
    return 0;
}

static sm_jv_t *sm_jp_container(sm_jp_t *jp, sm_jv_t *c, int depth)
{
    char close = c->type == SM_JV_OBJECT ? '}' : ']';
    uint32_t cap = 0;
    jp->p++;
    sm_jp_space(jp);
    if (jp->p < jp->end && *jp->p == close) {
        jp->p++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        sm_jp_space(jp);
        if (c->type == SM_JV_OBJECT) {
            if (jp->p >= jp->end || *jp->p != '"') {
                sm_jp_fail(jp, "expected a key");
                break;
            }
            if (!(key = sm_jp_string(jp)))
                break;
            sm_jp_space(jp);
            if (jp->p >= jp->end || *jp->p != ':') {
                sm_jp_fail(jp, "expected ':'");
                free(key);
                break;
            }
            jp->p++;
        }
        sm_jv_t *v = sm_jp_value(jp, depth + 1);
        if (!v) {
            free(key);
            break;
        }
        if (key && sm_jp_skipped(jp, key)) {
            free(key);
            sm_jv_free(v);
        } else if (sm_jp_push(c, &cap, v, key) != 0) {
            sm_jp_fail(jp, "%s", strerror(ENOMEM));
            free(key);
            sm_jv_free(v);
            break;
        }
        sm_jp_space(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            continue;
        }
        if (jp->p < jp->end && *jp->p == close) {
            jp->p++;
            return c;
        }
        sm_jp_fail(jp, "expected ',' or '%c'", close);
        break;
    }
    sm_jv_free(c);
    return NULL;
}

static sm_jv_t *sm_jp_value(sm_jp_t *jp, int depth)
{
    sm_jp_space(jp);
    if (jp->p >= jp->end) {
        sm_jp_fail(jp, "unexpected end of file");
        return NULL;
    }
    if (depth > SM_JV_MAX_DEPTH) {
        sm_jp_fail(jp, "nested too deeply");
        return NULL;
    }
    sm_jv_t *v = calloc(1, sizeof *v);
    if (!v) {
        sm_jp_fail(jp, "%s", strerror(ENOMEM));
        return NULL;
    }
    char c = *jp->p;
    static const struct { const char *word; sm_jv_type_t type; } words[] = {
        {"null", SM_JV_NULL}, {"true", SM_JV_TRUE}, {"false", SM_JV_FALSE}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t l = strlen(words[i].word);
        if ((size_t)(jp->end - jp->p) >= l && !memcmp(jp->p, words[i].word, l)) {
            jp->p += l;
            v->type = words[i].type;
            return v;
        }
    }
    if (c == '{' || c == '[') {
        v->type = c == '{' ? SM_JV_OBJECT : SM_JV_ARRAY;
        return sm_jp_container(jp, v, depth);
    }
    if (c == '"') {
        v->type = SM_JV_STRING;
        if (!(v->str = sm_jp_string(jp))) {
            free(v);
            return NULL;
        }
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t l = 0;
        while (jp->p + l < jp->end && l < sizeof buf - 1 && strchr("+-.eE0123456789", jp->p[l]))
            l++;
        memcpy(buf, jp->p, l);
        buf[l] = '\0';
        char *endp;
        locale_t old = jp->c_locale ? uselocale(jp->c_locale) : (locale_t)0;
        v->num = strtod(buf, &endp);
        if (old)
            uselocale(old);
        if (endp == buf) {
            sm_jp_fail(jp, "bad number");
            free(v);
            return NULL;
        }
        jp->p += endp - buf;
        v->type = SM_JV_NUMBER;
        return v;
    }
    sm_jp_fail(jp, "unexpected '%c'", c);
    free(v);
    return NULL;
}

sm_jv_t *sm_jv_parse(const char *text, size_t len, const char *const *skip, char *err,
                     size_t errlen)
{
    sm_jp_t jp = {.p = text, .end = text + len, .start = text, .err = err, .errlen = errlen,
                  .skip = skip};
    jp.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    sm_jv_t *v = sm_jp_value(&jp, 0);
    if (v) {
        sm_jp_space(&jp);
        if (jp.p != jp.end) {
            sm_jp_fail(&jp, "text after the document");
            sm_jv_free(v);
            v = NULL;
        }
    }
    if (jp.c_locale)
        freelocale(jp.c_locale);
    return v;
}

sm_jv_t *sm_jv_parse_file(const char *path, sm_fs_input_t how, const char *const *skip, char *err,
                          size_t errlen, int *unread)
{
    size_t len = 0;
    char *buf = sm_fs_read_input(path, how, SM_JV_FILE_MAX, &len);
    if (unread)
        *unread = !buf;
    if (!buf) {
        int e = errno;
        char why[200];
        snprintf(err, errlen, "%s", sm_fs_input_why(path, how, e, SM_JV_FILE_MAX, why, sizeof why));
        errno = e;
        return NULL;
    }
    sm_jv_t *v = sm_jv_parse(buf, len, skip, err, errlen);
    free(buf);
    return v;
}

void sm_jv_free(sm_jv_t *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->n; i++) {
        sm_jv_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const sm_jv_t *sm_jv_get(const sm_jv_t *v, const char *key)
{
    if (!v || v->type != SM_JV_OBJECT)
        return NULL;
    for (uint32_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key))
            return v->items[i];
    return NULL;
}

double sm_jv_num(const sm_jv_t *v, const char *key, double dflt)
{
    const sm_jv_t *x = sm_jv_get(v, key);
    return x && x->type == SM_JV_NUMBER ? x->num : dflt;
}

const char *sm_jv_str(const sm_jv_t *v, const char *key)
{
    const sm_jv_t *x = sm_jv_get(v, key);
    return x && x->type == SM_JV_STRING ? x->str : NULL;
}

const sm_jv_t *sm_jv_at(const sm_jv_t *v, uint32_t i)
{
    return v && v->type == SM_JV_ARRAY && i < v->n ? v->items[i] : NULL;
}

uint32_t sm_jv_len(const sm_jv_t *v)
{
    return v && v->type == SM_JV_ARRAY ? v->n : 0;
}

/* 'where: "key"' or '"key"' for a message. */
static void sm_jv_place(char *buf, size_t len, const char *where, const char *key)
{
    snprintf(buf, len, "%s%s\"%s\"", where && *where ? where : "", where && *where ? ": " : "",
             key);
}

/* What x is, for a message: its value, or its kind. */
static void sm_jv_describe(const sm_jv_t *x, char *buf, size_t len)
{
    static const char *const kind[] = {"null", "false", "true", "a number", "a string",
                                       "an array", "an object"};
    if (x->type == SM_JV_NUMBER)
        snprintf(buf, len, "%.17g", x->num);
    else
        snprintf(buf, len, "%s", kind[x->type]);
}

int sm_jv_whole(const sm_jv_t *v, const char *where, const char *key, uint64_t lo, uint64_t hi,
                uint64_t dflt, uint64_t *out, char *err, size_t errlen)
{
    const sm_jv_t *x = sm_jv_get(v, key);
    if (!x || x->type == SM_JV_NULL) {
        *out = dflt;
        return 0;
    }
    /* (compared as doubles before any conversion: a conversion of a value
     * out of range is undefined) */
    if (x->type == SM_JV_NUMBER && x->num >= (double)lo && x->num <= (double)hi &&
        x->num == (double)(uint64_t)x->num) {
        *out = (uint64_t)x->num;
        return 0;
    }
    char place[160], is[64];
    sm_jv_place(place, sizeof place, where, key);
    sm_jv_describe(x, is, sizeof is);
    snprintf(err, errlen, "%s is %s (expected a whole number from %llu to %llu)", place, is,
             (unsigned long long)lo, (unsigned long long)hi);
    return -1;
}

int sm_jv_finite(const sm_jv_t *v, const char *where, const char *key, double dflt, double *out,
                 char *err, size_t errlen)
{
    const sm_jv_t *x = sm_jv_get(v, key);
    if (!x || x->type == SM_JV_NULL) {
        *out = dflt;
        return 0;
    }
    if (x->type == SM_JV_NUMBER && isfinite(x->num)) {
        *out = x->num;
        return 0;
    }
    char place[160], is[64];
    sm_jv_place(place, sizeof place, where, key);
    sm_jv_describe(x, is, sizeof is);
    snprintf(err, errlen, "%s is %s (expected a finite number)", place, is);
    return -1;
}
