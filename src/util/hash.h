/* FNV-1a over bytes: the hash of the definition tables (core and unified).
 * Small keys, computed off the hot path. */
#ifndef SM_HASH_H
#define SM_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SM_FNV_START 14695981039346656037ull

static inline uint64_t sm_fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

#endif
