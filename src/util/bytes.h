/* Byte strings that sysmeasure builds and reads back: serialized definition
 * sets, profiles, process files, the parts of the archive rank 0 gathers.
 * Integers are little-endian; a writer that runs out of memory and a reader
 * that runs past the end both remember it, so a whole record can be written
 * or read and checked once. */
#ifndef SM_BYTES_H
#define SM_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"

typedef struct sm_wbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom; /* an append failed: the content is incomplete */
} sm_wbuf_t;

/* n more bytes at the end (their address), or NULL once out of memory. */
uint8_t *sm_wbuf_room(sm_wbuf_t *w, size_t n) SM_HIDDEN;
void sm_put_bytes(sm_wbuf_t *w, const void *src, size_t n) SM_HIDDEN;
void sm_put_u32(sm_wbuf_t *w, uint32_t v) SM_HIDDEN;
void sm_put_u64(sm_wbuf_t *w, uint64_t v) SM_HIDDEN;
/* The bytes (malloc'd, *len set), or NULL after a failed append (freed). */
void *sm_wbuf_finish(sm_wbuf_t *w, uint64_t *len) SM_HIDDEN;

typedef struct sm_rbuf {
    const uint8_t *p, *end;
    bool bad; /* read past the end: every later read gives 0 */
} sm_rbuf_t;

const uint8_t *sm_get_bytes(sm_rbuf_t *r, uint64_t n) SM_HIDDEN;
/* n bytes into dst (zeros when they are not there). */
void sm_get_copy(sm_rbuf_t *r, void *dst, uint64_t n) SM_HIDDEN;
uint32_t sm_get_u32(sm_rbuf_t *r) SM_HIDDEN;
uint64_t sm_get_u64(sm_rbuf_t *r) SM_HIDDEN;

/* A little-endian 64-bit integer in place (the encoding of sm_put_u64 and
 * sm_get_u64), for a record rewritten where it lies. */
static inline uint64_t sm_le64_load(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline void sm_le64_store(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t sm_remaining(const sm_rbuf_t *r)
{
    return r->bad ? 0 : (uint64_t)(r->end - r->p);
}

#endif
