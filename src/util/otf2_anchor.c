/* The OTF2 anchor file, checked: see otf2_anchor.h. */
#include "otf2_anchor.h"

#include <stdio.h>
#include <string.h>

/* OTF2's values (OTF2_Buffer.h, OTF2_GeneralDefinitions.h), written here
 * so that this check needs no libotf2. */
#define SM_A_CHUNK_HEADER 3   /* OTF2_BUFFER_CHUNK_HEADER */
#define SM_A_END_OF_FILE 2    /* OTF2_BUFFER_END_OF_FILE */
#define SM_A_LITTLE 0x42      /* OTF2_LITTLE_ENDIAN */
#define SM_A_BIG 0x23         /* OTF2_BIG_ENDIAN */
#define SM_A_CHUNK_MIN (256u * 1024u)       /* OTF2_CHUNK_SIZE_MIN */
#define SM_A_CHUNK_MAX (16u * 1024u * 1024u) /* OTF2_CHUNK_SIZE_MAX */
#define SM_A_SUBSTRATE_POSIX 1
#define SM_A_SUBSTRATE_NONE 3 /* (POSIX, SION, NONE: 1 to 3) */
#define SM_A_COMPRESSION_NONE 1
#define SM_A_COMPRESSION_ZLIB 2
/* The anchor format libotf2 3 writes; later formats append fields only. */
#define SM_A_FORMAT_KNOWN 3

/* Beyond these a count is damage: no trace has that many locations (OTF2
 * references them by uint32 in its definitions), snapshots or thumbnails. */
#define SM_A_MAX_LOCATIONS ((uint64_t)1 << 32)
#define SM_A_MAX_GLOBAL_DEFS ((uint64_t)1 << 48)
#define SM_A_MAX_SNAPSHOTS (1u << 20)

typedef struct sm_a {
    const uint8_t *p, *end;
    int big;
    char *why;
    size_t whylen;
} sm_a_t;

static int sm_a_fail(sm_a_t *a, const char *what)
{
    snprintf(a->why, a->whylen, "%s", what);
    return -1;
}

static int sm_a_u8(sm_a_t *a, uint8_t *v, const char *what)
{
    if (a->p >= a->end) {
        snprintf(a->why, a->whylen, "it ends before %s", what);
        return -1;
    }
    *v = *a->p++;
    return 0;
}

/* n bytes (4 or 8) in the buffer's endianness (OTF2's "Full" reads). */
static int sm_a_uint(sm_a_t *a, unsigned n, uint64_t *v, const char *what)
{
    if ((size_t)(a->end - a->p) < n) {
        snprintf(a->why, a->whylen, "it ends before %s", what);
        return -1;
    }
    uint64_t x = 0;
    for (unsigned i = 0; i < n; i++)
        x |= (uint64_t)a->p[a->big ? n - 1 - i : i] << (8 * i);
    a->p += n;
    *v = x;
    return 0;
}

/* A NUL-terminated string inside the file; *s points at it. */
static int sm_a_string(sm_a_t *a, const char **s, const char *what)
{
    const uint8_t *nul = a->p < a->end ? memchr(a->p, 0, (size_t)(a->end - a->p)) : NULL;
    if (!nul) {
        snprintf(a->why, a->whylen, "%s is not a string ended inside the file", what);
        return -1;
    }
    *s = (const char *)a->p;
    a->p = nul + 1;
    return 0;
}

int sm_otf2_anchor_check(const uint8_t *data, size_t len, sm_otf2_anchor_t *out, char *why,
                         size_t whylen)
{
    sm_a_t a = {.p = data, .end = data + len, .why = why, .whylen = whylen};
    sm_otf2_anchor_t r;
    memset(&r, 0, sizeof r);
    uint8_t b, endian, substrate, compression;
    uint64_t ev_chunk, def_chunk, x;
    const char *s;
    if (len > SM_OTF2_ANCHOR_MAX)
        return sm_a_fail(&a, "it is larger than an anchor file can be");
    /* The buffer's chunk header: its mark and the endianness. */
    if (sm_a_u8(&a, &b, "its chunk header") || sm_a_u8(&a, &endian, "its chunk header"))
        return -1;
    if (b != SM_A_CHUNK_HEADER || (endian != SM_A_LITTLE && endian != SM_A_BIG))
        return sm_a_fail(&a, "it does not start with an OTF2 chunk header");
    a.big = endian == SM_A_BIG;
    if (sm_a_string(&a, &s, "the magic") || strcmp(s, "OTF2") != 0)
        return sm_a_fail(&a, "it does not start with the magic \"OTF2\"");
    if (sm_a_u8(&a, &r.anchor_format, "the anchor format"))
        return -1;
    if (!r.anchor_format)
        return sm_a_fail(&a, "its anchor format is 0");
    if (sm_a_u8(&a, &r.trace_format, "the trace format") ||
        sm_a_u8(&a, &r.version[0], "the OTF2 version") ||
        sm_a_u8(&a, &r.version[1], "the OTF2 version") ||
        sm_a_u8(&a, &r.version[2], "the OTF2 version") ||
        sm_a_uint(&a, 8, &ev_chunk, "the event chunk size") ||
        sm_a_uint(&a, 8, &def_chunk, "the definition chunk size") ||
        sm_a_u8(&a, &substrate, "the file substrate") ||
        sm_a_u8(&a, &compression, "the compression") ||
        sm_a_uint(&a, 8, &r.locations, "the number of locations") ||
        sm_a_uint(&a, 8, &r.global_defs, "the number of global definitions"))
        return -1;
    if (ev_chunk < SM_A_CHUNK_MIN || ev_chunk > SM_A_CHUNK_MAX || def_chunk < SM_A_CHUNK_MIN ||
        def_chunk > SM_A_CHUNK_MAX)
        return sm_a_fail(&a, "its chunk sizes are not those of OTF2 (256 KiB to 16 MiB)");
    if (substrate < SM_A_SUBSTRATE_POSIX || substrate > SM_A_SUBSTRATE_NONE)
        return sm_a_fail(&a, "its file substrate is unknown");
    if (compression != SM_A_COMPRESSION_NONE && compression != SM_A_COMPRESSION_ZLIB)
        return sm_a_fail(&a, "its compression is unknown");
    if (r.locations > SM_A_MAX_LOCATIONS) {
        snprintf(why, whylen, "its number of locations (%llu) is not that of a trace",
                 (unsigned long long)r.locations);
        return -1;
    }
    if (r.global_defs > SM_A_MAX_GLOBAL_DEFS) {
        snprintf(why, whylen, "its number of global definitions (%llu) is not that of a trace",
                 (unsigned long long)r.global_defs);
        return -1;
    }
    if (sm_a_string(&a, &s, "the machine name") || sm_a_string(&a, &s, "the creator") ||
        sm_a_string(&a, &s, "the description"))
        return -1;
    if (r.anchor_format > 1) {
        if (sm_a_uint(&a, 4, &x, "the number of properties"))
            return -1;
        /* Each property is two strings of one byte at least. */
        if (x > (uint64_t)(a.end - a.p) / 2) {
            snprintf(why, whylen, "its number of properties (%llu) is more than its remaining %zu "
                     "bytes hold", (unsigned long long)x, (size_t)(a.end - a.p));
            return -1;
        }
        r.properties = (uint32_t)x;
        for (uint32_t i = 0; i < r.properties; i++)
            if (sm_a_string(&a, &s, "a property's name") ||
                sm_a_string(&a, &s, "a property's value"))
                return -1;
        if (sm_a_uint(&a, 8, &x, "the trace id"))
            return -1;
    }
    if (r.anchor_format > 2) {
        uint64_t snapshots, thumbnails;
        if (sm_a_uint(&a, 4, &snapshots, "the number of snapshots") ||
            sm_a_uint(&a, 4, &thumbnails, "the number of thumbnails"))
            return -1;
        if (snapshots > SM_A_MAX_SNAPSHOTS || thumbnails > SM_A_MAX_SNAPSHOTS)
            return sm_a_fail(&a, "its numbers of snapshots and thumbnails are not those of a "
                                 "trace");
    }
    if (r.anchor_format == SM_A_FORMAT_KNOWN) {
        if (sm_a_u8(&a, &b, "its end-of-file mark"))
            return -1;
        if (b != SM_A_END_OF_FILE)
            return sm_a_fail(&a, "its end-of-file mark is missing");
    }
    if (out)
        *out = r;
    return 0;
}
