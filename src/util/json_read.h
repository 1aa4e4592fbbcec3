/* A small JSON reader: a whole document into a tree of values, for tools
 * that read sysmeasure's own JSON files back (sysmeasure-report).  Strings
 * are kept as UTF-8 with the escapes resolved (\u0000 becomes U+FFFD, so a
 * string is always one C string); numbers as doubles. */
#ifndef SM_JSON_READ_H
#define SM_JSON_READ_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"

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
/* The whole file at path; NULL with err naming the problem (not the path). */
sm_jv_t *sm_jv_parse_file(const char *path, const char *const *skip, char *err,
                          size_t errlen) SM_HIDDEN;
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

#endif
