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
    /* Messages and collectives (ref: communicator; see sm_msg_payload_t). */
    SM_REC_MSG_SEND,          /* payload: peer/tag, bytes */
    SM_REC_MSG_RECV,          /* payload: peer/tag, bytes */
    SM_REC_MSG_ISEND,         /* payload: peer/tag, bytes, request */
    SM_REC_MSG_ISEND_COMPLETE,/* payload: request */
    SM_REC_MSG_IRECV_REQUEST, /* payload: request */
    SM_REC_MSG_IRECV,         /* payload: peer/tag, bytes, request */
    SM_REC_REQUEST_CANCELLED, /* payload: request */
    SM_REC_COLL_BEGIN,
    SM_REC_COLL_END,          /* aux: sm_coll_op_t; payload: root, sent, received */
    SM_REC_ICOLL_REQUEST,     /* payload: request */
    SM_REC_ICOLL_COMPLETE,    /* aux: op; payload: root, sent, received, request */
    SM_REC_METRIC,            /* ref: metric (sm_transfer_kind_t); payload: value */
    /* A named counter metric (metrics.h), named by strings that unify
     * across processes; the definition sets carry the metrics too, so the
     * writer numbers them alike everywhere.  ref: the name's string id;
     * payload: value, the unit's string id. */
    SM_REC_METRIC_NAMED,
    /* Fork/join threading (OTF2's Thread* events).  aux: the threading model
     * (sm_paradigm_t); a team is a communicator (definitions.h). */
    SM_REC_THREAD_FORK,          /* ref: requested team size; on the encountering thread */
    SM_REC_THREAD_JOIN,
    SM_REC_THREAD_TEAM_BEGIN,    /* ref: team; on every thread of the team */
    SM_REC_THREAD_TEAM_END,      /* ref: team */
    SM_REC_THREAD_ACQUIRE_LOCK,  /* ref: lock id; payload: acquisition order */
    SM_REC_THREAD_RELEASE_LOCK,  /* ref: lock id; payload: acquisition order */
    /* Tasks, named by their team, the creating thread's number in it and
     * that thread's generation count.  ref: team; payload: thread << 32 |
     * generation. */
    SM_REC_THREAD_TASK_CREATE,
    SM_REC_THREAD_TASK_SWITCH,
    SM_REC_THREAD_TASK_COMPLETE,
    /* PAPI counters (papi_counters.h), right before an enter or a leave at
     * the same time.  ref: the metric id of the first event (the others
     * follow); payload: one value per event. */
    SM_REC_COUNTERS,
    /* Finished device work on a GPU stream location (gpu.h), one record per
     * activity.  time: start; ref: region; aux: sm_gpu_kind_t; payload:
     * end, correlation id, bytes, and for kernels 5 more words: grid x|y,
     * grid z|block x, block y|z (32-bit halves, low first), registers,
     * static|dynamic shared memory. */
    SM_REC_GPU_ACTIVITY,
    /* A call-stack sample (src/sampling/callstack.c), appended to the
     * thread's records at the end of the run, out of time order: readers
     * place it by its time.  ref: calling context (contexts.h); aux: its
     * depth (frames unwound). */
    SM_REC_CALLING_CONTEXT_SAMPLE,
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
