/* Byte strings: see bytes.h. */
#include "bytes.h"

#include <stdlib.h>
#include <string.h>

uint8_t *sm_wbuf_room(sm_wbuf_t *w, size_t n)
{
    if (w->oom)
        return NULL;
    if (w->cap - w->len < n) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap - w->len < n) {
            if (cap > SIZE_MAX / 2) {
                w->oom = true;
                return NULL;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->oom = true;
            return NULL;
        }
        w->p = p;
        w->cap = cap;
    }
    uint8_t *at = w->p + w->len;
    w->len += n;
    return at;
}

void sm_put_bytes(sm_wbuf_t *w, const void *src, size_t n)
{
    uint8_t *p = sm_wbuf_room(w, n);
    if (p && n)
        memcpy(p, src, n);
}

void sm_put_u32(sm_wbuf_t *w, uint32_t v)
{
    uint8_t *p = sm_wbuf_room(w, 4);
    if (p)
        for (int i = 0; i < 4; i++)
            p[i] = (uint8_t)(v >> (8 * i));
}

void sm_put_u64(sm_wbuf_t *w, uint64_t v)
{
    uint8_t *p = sm_wbuf_room(w, 8);
    if (p)
        sm_le64_store(p, v);
}

void *sm_wbuf_finish(sm_wbuf_t *w, uint64_t *len)
{
    if (w->oom) {
        free(w->p);
        w->p = NULL;
        return NULL;
    }
    *len = w->len;
    return w->p ? (void *)w->p : malloc(1);
}

const uint8_t *sm_get_bytes(sm_rbuf_t *r, uint64_t n)
{
    if (r->bad || (uint64_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

void sm_get_copy(sm_rbuf_t *r, void *dst, uint64_t n)
{
    const uint8_t *at = sm_get_bytes(r, n);
    if (at)
        memcpy(dst, at, n);
    else
        memset(dst, 0, n);
}

uint32_t sm_get_u32(sm_rbuf_t *r)
{
    const uint8_t *p = sm_get_bytes(r, 4);
    uint32_t v = 0;
    for (int i = 0; p && i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint64_t sm_get_u64(sm_rbuf_t *r)
{
    const uint8_t *p = sm_get_bytes(r, 8);
    return p ? sm_le64_load(p) : 0;
}
