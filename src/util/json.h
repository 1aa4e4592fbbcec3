/* A small streaming JSON emitter over a stdio stream.  The emitter places the
 * commas, newlines and indentation itself, so writers only say what comes next
 * (begin/end, key, value).  Output is always valid JSON: strings are escaped
 * (control characters, invalid UTF-8 replaced by U+FFFD), NaN and infinities
 * become null, and numbers do not depend on the application's locale.
 *
 * Write errors are not checked call by call: the first failing write's errno is
 * kept, and sm_json_close / sm_json_finish report it once. */
#ifndef SM_JSON_H
#define SM_JSON_H

#include <locale.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "../core/compiler.h"

/* Far deeper than any document sysmeasure writes; beyond it is a misuse. */
#define SM_JSON_MAX_DEPTH 64

typedef struct sm_json {
    FILE *f;
    char *path;        /* file opened by sm_json_open, else NULL */
    int err;           /* errno of the first failed write, 0 when none */
    bool misuse;       /* calls out of order (a bug in the writer) */
    bool want_value;   /* a key was written, its value comes next */
    bool top_written;  /* a top-level value has begun */
    int indent;        /* spaces per level; 0 writes everything on one line */
    uint32_t depth;    /* open containers */
    uint8_t level[SM_JSON_MAX_DEPTH]; /* per open container: kind and state bits */
    locale_t c_locale; /* for printing/parsing numbers, (locale_t)0 if none */
} sm_json_t;

/* Emit into an already open stream (not closed by the emitter). */
void sm_json_init(sm_json_t *j, FILE *f, int indent) SM_HIDDEN;
/* 0 when the document is complete and every write succeeded (the stream is
 * flushed); else -1 with errno set.  Releases the emitter, not the stream. */
int sm_json_finish(sm_json_t *j) SM_HIDDEN;

/* Create dir/name and emit into it with 2-space indentation.  On failure prints
 * one line ("writing PATH failed: ...") and returns -1. */
int sm_json_open(sm_json_t *j, const char *dir, const char *name) SM_HIDDEN;
/* Finish, flush and close the file of sm_json_open: 0, or -1 after one line
 * naming the file and the error (a full disk, for example). */
int sm_json_close(sm_json_t *j) SM_HIDDEN;

void sm_json_object_begin(sm_json_t *j) SM_HIDDEN;
void sm_json_object_end(sm_json_t *j) SM_HIDDEN;
void sm_json_array_begin(sm_json_t *j) SM_HIDDEN;
void sm_json_array_end(sm_json_t *j) SM_HIDDEN;
/* Containers written on one line, with everything inside them (short lists
 * such as call paths, small records). */
void sm_json_object_begin_inline(sm_json_t *j) SM_HIDDEN;
void sm_json_array_begin_inline(sm_json_t *j) SM_HIDDEN;

/* In an object: the key of the next value. */
void sm_json_key(sm_json_t *j, const char *key) SM_HIDDEN;

void sm_json_string(sm_json_t *j, const char *s) SM_HIDDEN; /* NULL: null */
void sm_json_int(sm_json_t *j, int64_t v) SM_HIDDEN;
void sm_json_uint(sm_json_t *j, uint64_t v) SM_HIDDEN;
/* Integral values print as integers, others with the fewest digits that read
 * back to the same double; NaN and infinities print as null. */
void sm_json_double(sm_json_t *j, double v) SM_HIDDEN;
void sm_json_bool(sm_json_t *j, bool v) SM_HIDDEN;
void sm_json_null(sm_json_t *j) SM_HIDDEN;

/* Key and value in one call. */
void sm_json_field_string(sm_json_t *j, const char *key, const char *s) SM_HIDDEN;
void sm_json_field_int(sm_json_t *j, const char *key, int64_t v) SM_HIDDEN;
void sm_json_field_uint(sm_json_t *j, const char *key, uint64_t v) SM_HIDDEN;
void sm_json_field_double(sm_json_t *j, const char *key, double v) SM_HIDDEN;
void sm_json_field_bool(sm_json_t *j, const char *key, bool v) SM_HIDDEN;
void sm_json_field_null(sm_json_t *j, const char *key) SM_HIDDEN;

/* Length of the well-formed UTF-8 character at s (1 for ASCII), 0 at a byte
 * that starts none or at the terminating NUL.  Never reads past the NUL. */
size_t sm_utf8_sequence(const unsigned char *s) SM_HIDDEN;

#endif
