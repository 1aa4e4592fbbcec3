/* The in-memory (and spill-file) form of an event: a 16-byte header, followed
 * by `words` 8-byte payload words for the few kinds that carry more.  Enter and
 * leave, the bulk of every trace, are exactly 16 bytes. */
#ifndef SM_EVENT_RECORD_H
#define SM_EVENT_RECORD_H

#include <stdint.h>

/* Record kinds: one list, record_kinds.def (payloads described there). */
typedef enum {
    SM_REC_NONE = 0, /* never stored: a zero kind marks an unused or damaged record */
#define SM_RECORD_KIND(id, name, family, fixed, per_word, own_time) SM_REC_##id,
#include "record_kinds.def"
#undef SM_RECORD_KIND
    SM_REC_KIND_COUNT
} sm_record_kind_t;

/* Which encoder of a writer takes a kind (its row in record_kinds.def). */
typedef enum {
    SM_RECORD_FAMILY_NONE = 0,
    SM_RECORD_FAMILY_REGION,      /* enter, leave */
    SM_RECORD_FAMILY_CONTROL,     /* buffer flush, measurement on/off */
    SM_RECORD_FAMILY_THREAD_LIFE, /* thread create, begin, end */
    SM_RECORD_FAMILY_MESSAGE,     /* messages, requests, collectives */
    SM_RECORD_FAMILY_METRIC,      /* metric values, counters */
    SM_RECORD_FAMILY_FORK_JOIN,   /* fork/join threading, locks, tasks */
    SM_RECORD_FAMILY_GPU,         /* device work on a stream */
    SM_RECORD_FAMILY_SAMPLE       /* call-stack samples */
} sm_record_family_t;

static inline sm_record_family_t sm_record_family(unsigned kind)
{
    /* In the list's order, which is the enum's (no designated
     * initialisers: C++ files include this header). */
    static const unsigned char families[SM_REC_KIND_COUNT] = {
        SM_RECORD_FAMILY_NONE,
#define SM_RECORD_KIND(id, name, family, fixed, per_word, own_time) SM_RECORD_FAMILY_##family,
#include "record_kinds.def"
#undef SM_RECORD_KIND
    };
    return kind < SM_REC_KIND_COUNT ? (sm_record_family_t)families[kind] : SM_RECORD_FAMILY_NONE;
}

typedef struct sm_record {
    uint64_t time;  /* ticks */
    uint8_t kind;   /* sm_record_kind_t */
    uint8_t words;  /* payload words that follow */
    uint16_t aux;
    uint32_t ref;
} sm_record_t;

/* An attribute value in a payload: two words. */
typedef struct sm_record_attr {
    uint64_t attribute; /* sm_attribute_id_t */
    union {
        int64_t i;
        double d;
        uint64_t string; /* sm_string_id_t */
        uint64_t raw;
    } value;
} sm_record_attr_t;

/* Peer and tag of a message share the first payload word. */
static inline uint64_t sm_msg_peer_tag(uint32_t peer, uint32_t tag)
{
    return (uint64_t)peer | (uint64_t)tag << 32;
}

_Static_assert(sizeof(sm_record_t) == 16, "an event header is 16 bytes");
_Static_assert(sizeof(sm_record_attr_t) == 16, "an attribute is two words");

static inline const void *sm_record_payload(const sm_record_t *r)
{
    return r + 1;
}

static inline uint32_t sm_record_size(const sm_record_t *r)
{
    return (uint32_t)sizeof(sm_record_t) + 8u * r->words;
}

#endif
