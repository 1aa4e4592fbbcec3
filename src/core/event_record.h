/* The in-memory (and spill-file) form of an event: a 16-byte header, followed
 * by `words` 8-byte payload words for the few kinds that carry more.  Enter and
 * leave, the bulk of every trace, are exactly 16 bytes. */
#ifndef SM_EVENT_RECORD_H
#define SM_EVENT_RECORD_H

#include <stdint.h>

typedef enum {
    SM_REC_ENTER = 1,      /* ref: region; payload: aux attribute pairs */
    SM_REC_LEAVE,          /* ref: region; payload: aux attribute pairs */
    SM_REC_BUFFER_FLUSH,   /* spill to disk; payload[0]: stop time */
    SM_REC_MEASUREMENT,    /* aux: 1 on, 0 off */
    SM_REC_THREAD_CREATE,  /* ref: id of the created location */
    SM_REC_THREAD_BEGIN,   /* ref: id of the creating location */
    SM_REC_THREAD_END,
    SM_REC_KIND_COUNT
} sm_record_kind_t;

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
