/* Streaming JSON emitter: see json.h. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fs.h"
#include "log.h"

/* Bits of sm_json_t.level[]. */
enum {
    SM_JSON_L_OBJECT = 1, /* an object (else an array) */
    SM_JSON_L_EMPTY = 2,  /* nothing written in it yet */
    SM_JSON_L_INLINE = 4  /* written on one line */
};

/* ---------------------------------------------------------------- raw output */

/* Keep the first error: later writes on a failed stream tell nothing new. */
static void sm_json_failed(sm_json_t *j)
{
    if (!j->err)
        j->err = errno ? errno : EIO;
}

/* After a failed write the document is incomplete anyway: write no more. */
static void sm_json_putc(sm_json_t *j, char c)
{
    if (!j->err && putc(c, j->f) == EOF)
        sm_json_failed(j);
}

static void sm_json_write(sm_json_t *j, const char *s, size_t n)
{
    if (n && !j->err && fwrite(s, 1, n, j->f) != n)
        sm_json_failed(j);
}

static void sm_json_puts(sm_json_t *j, const char *s)
{
    sm_json_write(j, s, strlen(s));
}

static void sm_json_newline(sm_json_t *j, uint32_t depth)
{
    if (j->indent <= 0)
        return;
    sm_json_putc(j, '\n');
    for (uint32_t i = 0; i < depth * (uint32_t)j->indent; i++)
        sm_json_putc(j, ' ');
}

/* ---------------------------------------------------------------- structure */

/* Separator and indentation before a key (in an object) or a value (in an
 * array or at the top); nothing before the value that follows a key.  Returns
 * false on a call out of order. */
static bool sm_json_prefix(sm_json_t *j, bool is_key)
{
    if (j->misuse)
        return false;
    if (j->depth == 0) {
        if (is_key || j->want_value) {
            j->misuse = true;
            return false;
        }
        if (j->top_written) /* several documents: one per line */
            sm_json_putc(j, '\n');
        j->top_written = true;
        return true;
    }
    uint8_t *l = &j->level[j->depth - 1];
    if (*l & SM_JSON_L_OBJECT) {
        if (!is_key) {
            if (!j->want_value) {
                j->misuse = true;
                return false;
            }
            j->want_value = false;
            return true;
        }
        if (j->want_value) {
            j->misuse = true;
            return false;
        }
    } else if (is_key) {
        j->misuse = true;
        return false;
    }
    bool empty = *l & SM_JSON_L_EMPTY;
    *l &= (uint8_t)~SM_JSON_L_EMPTY;
    if (!empty)
        sm_json_putc(j, ',');
    if (*l & SM_JSON_L_INLINE) {
        if (!empty)
            sm_json_putc(j, ' ');
    } else {
        sm_json_newline(j, j->depth);
    }
    return true;
}

static void sm_json_begin(sm_json_t *j, bool object, bool inline_)
{
    if (!sm_json_prefix(j, false))
        return;
    if (j->depth == SM_JSON_MAX_DEPTH) {
        j->misuse = true;
        return;
    }
    /* Inside a one-line container everything stays on that line. */
    if (j->depth > 0 && (j->level[j->depth - 1] & SM_JSON_L_INLINE))
        inline_ = true;
    j->level[j->depth++] = (uint8_t)((object ? SM_JSON_L_OBJECT : 0) | SM_JSON_L_EMPTY |
                                     (inline_ ? SM_JSON_L_INLINE : 0));
    sm_json_putc(j, object ? '{' : '[');
}

static void sm_json_end(sm_json_t *j, bool object)
{
    if (j->misuse)
        return;
    if (j->depth == 0 || j->want_value ||
        !(j->level[j->depth - 1] & SM_JSON_L_OBJECT) != !object) {
        j->misuse = true;
        return;
    }
    uint8_t l = j->level[--j->depth];
    if (!(l & SM_JSON_L_EMPTY) && !(l & SM_JSON_L_INLINE))
        sm_json_newline(j, j->depth);
    sm_json_putc(j, object ? '}' : ']');
}

void sm_json_object_begin(sm_json_t *j)
{
    sm_json_begin(j, true, false);
}

void sm_json_object_begin_inline(sm_json_t *j)
{
    sm_json_begin(j, true, true);
}

void sm_json_object_end(sm_json_t *j)
{
    sm_json_end(j, true);
}

void sm_json_array_begin(sm_json_t *j)
{
    sm_json_begin(j, false, false);
}

void sm_json_array_begin_inline(sm_json_t *j)
{
    sm_json_begin(j, false, true);
}

void sm_json_array_end(sm_json_t *j)
{
    sm_json_end(j, false);
}

/* ---------------------------------------------------------------- strings */

size_t sm_utf8_sequence(const unsigned char *s)
{
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* beyond U+10FFFF */
    } else {
        return c && c < 0x80 ? 1 : 0;
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Names come from the application (regions, files, argv) and may hold any
 * bytes; strict parsers reject raw control characters and invalid UTF-8. */
static void sm_json_quoted(sm_json_t *j, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    const unsigned char *run = s; /* bytes that go out as they are */
    sm_json_putc(j, '"');
    while (*s) {
        unsigned char c = *s;
        size_t n = 1;
        const char *esc = NULL;
        char ubuf[7];
        if (c == '"') {
            esc = "\\\"";
        } else if (c == '\\') {
            esc = "\\\\";
        } else if (c < 0x20) {
            switch (c) {
            case '\b': esc = "\\b"; break;
            case '\f': esc = "\\f"; break;
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            default:
                memcpy(ubuf, "\\u00", 4);
                ubuf[4] = hex[c >> 4];
                ubuf[5] = hex[c & 15];
                ubuf[6] = '\0';
                esc = ubuf;
            }
        } else if (c >= 0x80) {
            n = sm_utf8_sequence(s);
            if (!n) {
                esc = "\\ufffd"; /* the replacement character */
                n = 1;
            }
        }
        if (esc) {
            sm_json_write(j, (const char *)run, (size_t)(s - run));
            sm_json_puts(j, esc);
            s += n;
            run = s;
        } else {
            s += n;
        }
    }
    sm_json_write(j, (const char *)run, (size_t)(s - run));
    sm_json_putc(j, '"');
}

void sm_json_key(sm_json_t *j, const char *key)
{
    if (!sm_json_prefix(j, true))
        return;
    sm_json_quoted(j, key ? key : "");
    bool spaced = j->indent > 0 || (j->level[j->depth - 1] & SM_JSON_L_INLINE);
    sm_json_write(j, ": ", spaced ? 2 : 1);
    j->want_value = true;
}

void sm_json_string(sm_json_t *j, const char *s)
{
    if (!s) {
        sm_json_null(j);
        return;
    }
    if (sm_json_prefix(j, false))
        sm_json_quoted(j, s);
}

/* ---------------------------------------------------------------- numbers */

void sm_json_int(sm_json_t *j, int64_t v)
{
    char buf[24];
    if (!sm_json_prefix(j, false))
        return;
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    sm_json_puts(j, buf);
}

void sm_json_uint(sm_json_t *j, uint64_t v)
{
    char buf[24];
    if (!sm_json_prefix(j, false))
        return;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    sm_json_puts(j, buf);
}

static void sm_json_format_double(const sm_json_t *j, char *buf, size_t len, double v)
{
    if (isnan(v) || isinf(v)) {
        snprintf(buf, len, "null");
        return;
    }
    if (v == 0) { /* also -0, which JSON readers need not keep */
        snprintf(buf, len, "0");
        return;
    }
    /* printf and strtod follow LC_NUMERIC, which the application may have set
     * to a decimal comma: format in the C locale on this thread. */
    locale_t old = j->c_locale ? uselocale(j->c_locale) : (locale_t)0;
    if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v) {
        /* Exactly integral (counts, ns): no exponent or fraction. */
        snprintf(buf, len, "%lld", (long long)(int64_t)v);
    } else {
        /* The shortest of 15, 16, 17 digits that reads back to v. */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
    if (old)
        uselocale(old);
}

void sm_json_double(sm_json_t *j, double v)
{
    char buf[40];
    if (!sm_json_prefix(j, false))
        return;
    sm_json_format_double(j, buf, sizeof buf, v);
    sm_json_puts(j, buf);
}

void sm_json_bool(sm_json_t *j, bool v)
{
    if (sm_json_prefix(j, false))
        sm_json_puts(j, v ? "true" : "false");
}

void sm_json_null(sm_json_t *j)
{
    if (sm_json_prefix(j, false))
        sm_json_puts(j, "null");
}

/* ---------------------------------------------------------------- fields */

void sm_json_field_string(sm_json_t *j, const char *key, const char *s)
{
    sm_json_key(j, key);
    sm_json_string(j, s);
}

void sm_json_field_int(sm_json_t *j, const char *key, int64_t v)
{
    sm_json_key(j, key);
    sm_json_int(j, v);
}

void sm_json_field_uint(sm_json_t *j, const char *key, uint64_t v)
{
    sm_json_key(j, key);
    sm_json_uint(j, v);
}

void sm_json_field_double(sm_json_t *j, const char *key, double v)
{
    sm_json_key(j, key);
    sm_json_double(j, v);
}

void sm_json_field_bool(sm_json_t *j, const char *key, bool v)
{
    sm_json_key(j, key);
    sm_json_bool(j, v);
}

void sm_json_field_null(sm_json_t *j, const char *key)
{
    sm_json_key(j, key);
    sm_json_null(j);
}

/* ---------------------------------------------------------------- streams */

void sm_json_init(sm_json_t *j, FILE *f, int indent)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->indent = indent;
    /* Without it (out of memory) numbers use the current locale. */
    j->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static void sm_json_release(sm_json_t *j)
{
    if (j->c_locale)
        freelocale(j->c_locale);
    j->c_locale = (locale_t)0;
    free(j->path);
    j->path = NULL;
}

/* The document's end: final newline and flush; misuse reads as EINVAL. */
static int sm_json_complete(sm_json_t *j)
{
    if (!j->misuse && (j->depth != 0 || j->want_value || !j->top_written))
        j->misuse = true;
    if (j->top_written)
        sm_json_putc(j, '\n');
    if (fflush(j->f) == EOF || ferror(j->f))
        sm_json_failed(j);
    if (!j->err && j->misuse)
        j->err = EINVAL;
    return j->err ? -1 : 0;
}

int sm_json_finish(sm_json_t *j)
{
    int rc = sm_json_complete(j);
    int err = j->err;
    sm_json_release(j);
    errno = err;
    return rc;
}

int sm_json_open(sm_json_t *j, const char *dir, const char *name)
{
    size_t len = strlen(dir) + 1 + strlen(name) + 1;
    char *path = malloc(len);
    if (!path) {
        sm_error("writing %s/%s failed: %s", dir, name, strerror(ENOMEM));
        return -1;
    }
    snprintf(path, len, "%s/%s", dir, name);
    /* Never through a link or over someone else's file (fs.h). */
    int fd = sm_fs_open_output(dir, name);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        sm_error("%s not written: %s", path, sm_fs_why(e));
        free(path);
        return -1;
    }
    sm_json_init(j, f, 2);
    j->path = path;
    return 0;
}

int sm_json_close(sm_json_t *j)
{
    int rc = sm_json_complete(j);
    errno = 0;
    if (fclose(j->f) == EOF) {
        rc = -1;
        sm_json_failed(j);
    }
    j->f = NULL;
    if (rc)
        sm_error("writing %s failed: %s", j->path, strerror(j->err));
    sm_json_release(j);
    return rc;
}
