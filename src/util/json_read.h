/* A small JSON reader: a whole document into a tree of values, for tools
 * that read sysmeasure's own JSON files back (sysmeasure-report).  Strings
 * are kept as UTF-8 with the escapes resolved (\u0000 becomes U+FFFD, so a
 * string is always one C string); numbers as doubles. */
#ifndef SM_JSON_READ_H
#define SM_JSON_READ_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "fs.h"

typedef enum {
    SM_JV_NULL, SM_JV_FALSE, SM_JV_TRUE, SM_JV_NUMBER, SM_JV_STRING, SM_JV_ARRAY, SM_JV_OBJECT
} sm_jv_type_t;

typedef struct sm_jv {
    sm_jv_type_t type;
    double num;
    char *str;              /* SM_JV_STRING */
    uint32_t n;             /* members of an array or object */
    struct sm_jv **items;   /* [n] */
    char **keys;            /* [n], objects only */
} sm_jv_t;

/* Parses text[len].  NULL on a syntax error or when out of memory, with one
 * phrase in err ("line 3: expected ':'").  Object members whose key is in
 * skip (NULL-terminated; NULL: none) are checked but not kept, so that a
 * reader of a large file holds only what it uses. */
sm_jv_t *sm_jv_parse(const char *text, size_t len, const char *const *skip, char *err,
                     size_t errlen) SM_HIDDEN;
/* Bytes of the largest file sm_jv_parse_file reads (a profile.json of a
 * very large job stays far below; a file beyond is not one of ours). */
#define SM_JV_FILE_MAX ((size_t)1 << 30)

/* The whole file at path, reached as how allows (fs.h: never blocks, only a
 * regular file, at most SM_JV_FILE_MAX bytes).  NULL with err naming the
 * problem (not the path); *unread (may be NULL) is then 1 when the file
 * itself was refused or could not be read, with err words to follow its
 * path ("is a FIFO, not a regular file", "cannot be read: No such file or
 * directory") and errno set, and 0 when it is not valid JSON ("line 3:
 * expected ':'"). */
sm_jv_t *sm_jv_parse_file(const char *path, sm_fs_input_t how, const char *const *skip, char *err,
                          size_t errlen, int *unread) SM_HIDDEN;
void sm_jv_free(sm_jv_t *v) SM_HIDDEN;

/* Member key of an object (NULL when v is no object or has none). */
const sm_jv_t *sm_jv_get(const sm_jv_t *v, const char *key) SM_HIDDEN;
/* The number at key, or dflt when absent or not a number. */
double sm_jv_num(const sm_jv_t *v, const char *key, double dflt) SM_HIDDEN;
/* The string at key, or NULL. */
const char *sm_jv_str(const sm_jv_t *v, const char *key) SM_HIDDEN;
/* Item i of an array (NULL beyond it or when v is no array). */
const sm_jv_t *sm_jv_at(const sm_jv_t *v, uint32_t i) SM_HIDDEN;
/* Members of an array (0 when v is no array). */
uint32_t sm_jv_len(const sm_jv_t *v) SM_HIDDEN;

/* Numbers that size or index something must be checked before they are
 * used (a file can say "ranks": -3).  The number at key of v, where is the
 * place of v for the message ("callpaths[3]", or ""): absent or null gives
 * dflt; else it must be a whole number from lo to hi.  0 with *out, or -1
 * with err saying what is wrong ('callpaths[3]: "depth" is -1 (expected a
 * whole number from 0 to 1048576)'). */
int sm_jv_whole(const sm_jv_t *v, const char *where, const char *key, uint64_t lo, uint64_t hi,
                uint64_t dflt, uint64_t *out, char *err, size_t errlen) SM_HIDDEN;
/* The same for a finite number (any value; absent or null: dflt). */
int sm_jv_finite(const sm_jv_t *v, const char *where, const char *key, double dflt, double *out,
                 char *err, size_t errlen) SM_HIDDEN;

#endif
