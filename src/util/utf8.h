/* UTF-8 checks for text that comes from outside (region names, config
 * files): what is valid, and a copy with every invalid byte replaced by
 * U+FFFD, so that what sysmeasure writes (OTF2, JSON, CSV) is valid UTF-8. */
#ifndef SM_UTF8_H
#define SM_UTF8_H

#include <stddef.h>
#include "../core/compiler.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when the
 * byte at s does not start one (overlong forms, surrogates and code points
 * past U+10FFFF are invalid). */
size_t sm_utf8_seq(const unsigned char *s, size_t n) SM_HIDDEN;

/* Offset of the first invalid byte of s[0..n), or n when all is valid. */
size_t sm_utf8_check(const char *s, size_t n) SM_HIDDEN;

/* NUL-terminated copy of s with each invalid byte as U+FFFD (malloc'd), or
 * NULL when out of memory. */
char *sm_utf8_sanitize(const char *s) SM_HIDDEN;

#endif
