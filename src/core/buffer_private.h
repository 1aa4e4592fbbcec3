/* What the files of the event buffers share (buffer.c and buffer_*.c; the
 * rest of the core includes buffer.h): the spill file's format, the chunk,
 * the small helpers of the path to a new chunk (inline: the split added no
 * call there), and each file's state and functions the others use.  Lock
 * order: sm_enc_lock, then sm_w_lock, then sm_file_lock. */
#ifndef SM_BUFFER_PRIVATE_H
#define SM_BUFFER_PRIVATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buffer.h"
#include "job.h"
#include "location.h"

/* ---------------------------------------------------------------- file format */

#define SM_SPILL_MAGIC "SMSPILL2"
#define SM_SPILL_VERSION 4u       /* 4: the header names host and rank */
#define SM_SPILL_VERSION_SLOTS 5u /* --crash-safe: fixed-size slots (below); 5: slot checks */
#define SM_FRAME_MAGIC 0x46434d53u /* "SMCF" */
#define SM_SLOT_MAGIC 0x544f4c53534d5343ull /* "CSMSSLOT" */
#define SM_SLOTS_START 4096u /* first slot of a crash-safe file */

/* The spill file starts with this header: whose file it is (job, host,
 * pid and, once the process knows it, rank), so that a file found under
 * another process's name is recognised (sysmeasure-merge). */
typedef struct sm_spill_fhdr {
    char magic[8];
    uint32_t version;
    uint32_t size; /* of this header */
    int64_t pid;
    char job[SM_JOB_ID_MAX];
    char host[64];    /* gethostname(), as in the process file and the journal */
    uint32_t rank;    /* SM_SPILL_NO_RANK until the process knows it */
    uint32_t n_ranks;
    uint64_t check; /* of the bytes above */
} sm_spill_fhdr_t;

/* Then frames: this header, then `bytes` of records of one location. */
typedef struct sm_spill_frame {
    uint32_t magic;
    uint32_t location;
    uint32_t bytes;
    uint32_t records;
    uint64_t data_check;
    uint64_t head_check; /* of the 24 bytes above */
} sm_spill_frame_t;

_Static_assert(sizeof(sm_spill_frame_t) == 32, "a frame header is 32 bytes");

/* A crash-safe spill file: the header above (version 3), this right after
 * it, then from SM_SLOTS_START slots of slot_bytes, each one chunk as it
 * is in memory (struct sm_chunk below: the slot fields, the frame header,
 * the records).  A sealed slot's frame is intact like any frame; a slot
 * whose frame is not sealed was being written when the process died: its
 * records up to its fill word (live_end - slot_base) are complete. */
/* A slot's own fields (its location, its place, where it was mapped) are
 * checked too: slot_pad holds sm_slot_check() over them and the frame's
 * head check (0 while the slot is being written), so that a slot whose
 * place or owner was damaged is refused, not put elsewhere. */
typedef struct sm_slots_hdr {
    uint64_t slot_bytes;
    uint64_t first_slot;
    uint64_t check;
} sm_slots_hdr_t;
_Static_assert(SM_JOB_ID_MAX == sizeof(((sm_spill_report_t *)0)->job), "job id size");

/* A 64-bit checksum, four words at a time (the writer thread checksums every
 * byte it writes: it must run at several GB/s). */
static inline uint64_t sm_sum64(const void *p, size_t n)
{
    const uint8_t *b = p;
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h[4] = {k ^ n, k, ~k, n};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, 32);
        for (int j = 0; j < 4; j++) {
            h[j] = (h[j] ^ w[j]) * 0xff51afd7ed558ccdull;
            h[j] ^= h[j] >> 31;
        }
    }
    for (; i < n; i++)
        h[0] = (h[0] ^ b[i]) * 0x100000001b3ull;
    uint64_t r = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7);
    r = (r ^ (r >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return r ^ (r >> 29);
}

/* ---------------------------------------------------------------- chunks */

struct sm_chunk {
    sm_chunk_t *next;          /* in its location's memory or in-flight list */
    sm_chunk_t *qnext;         /* in the writer's queue */
    struct sm_location *owner; /* while in flight */
    uint32_t capacity;
    uint32_t used;             /* valid for chunks before the current one */
    /* --crash-safe (the chunk is a slot of the spill file, these fields are
     * in the file): */
    uint64_t slot_magic;       /* SM_SLOT_MAGIC once the slot is a location's */
    uint64_t slot_base;        /* address of data in the process */
    uint8_t *live_end;         /* end of its complete records (SM_BUFFER_COMMIT) */
    uint64_t slot_offset;      /* in the spill file; 0: not mapped from it */
    uint32_t slot_location;
    uint32_t slot_seq;         /* its place among the location's chunks */
    uint64_t slot_pad;
    sm_spill_frame_t frame;    /* written right before data: one iovec per chunk */
    uint8_t data[];
};

_Static_assert(sizeof(sm_chunk_t) % 16 == 0, "chunk data aligned");

/* The check of a crash-safe slot's own fields (see sm_slots_hdr_t). */
static inline uint64_t sm_slot_check(const sm_chunk_t *c, uint64_t head_check)
{
    uint64_t w[4] = {c->slot_location, c->slot_seq, c->slot_base, head_check};
    return sm_sum64(w, sizeof w) | 1; /* never 0: a slot never checked is not one */
}

#define SM_CHUNK_TOTAL(cap) (sizeof(sm_chunk_t) + (uint64_t)(cap))

/* loc's write position, published (and in the chunk's fill word when the
 * chunk is a mapped slot). */
static inline void sm_set_pos(sm_location_t *loc, uint8_t *pos)
{
    __atomic_store_n(&loc->pos, pos, __ATOMIC_RELEASE);
    if (loc->live_end)
        __atomic_store_n(loc->live_end, pos, __ATOMIC_RELEASE);
}

/* c becomes loc's current chunk. */
static inline void sm_chunk_bind(sm_location_t *loc, sm_chunk_t *c)
{
    c->slot_location = loc->id;
    c->slot_seq = loc->buffer.n_chunks++;
    c->live_end = c->data;
    loc->end = c->data + c->capacity;
    loc->live_end = c->slot_offset ? &c->live_end : NULL;
    if (c->slot_offset) {
        c->slot_pad = sm_slot_check(c, 0);
        __atomic_store_n(&c->slot_magic, SM_SLOT_MAGIC, __ATOMIC_RELEASE);
    }
}

/* Bytes used in chunk c of loc (the current chunk's end is loc->pos). */
static inline uint32_t sm_chunk_used(const sm_location_t *loc, const sm_chunk_t *c)
{
    if (c == loc->buffer.current && loc->pos && loc->buffer.stop_state != SM_STOP_UNTRACED)
        return (uint32_t)(__atomic_load_n(&loc->pos, __ATOMIC_ACQUIRE) - c->data);
    return c->used;
}

static inline uint32_t sm_count_records(const uint8_t *p, const uint8_t *end)
{
    uint32_t n = 0;
    while (p + sizeof(sm_record_t) <= end) {
        p += sm_record_size((const sm_record_t *)p);
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- shared between the files */

/* buffer.c: the budget and the chunks. */
extern uint64_t sm_budget SM_HIDDEN;
extern uint64_t sm_chunk_bytes SM_HIDDEN;
extern uint64_t sm_mark SM_HIDDEN;       /* hand over above this */
extern int sm_crash SM_HIDDEN;           /* --crash-safe */
extern uint64_t sm_slot_bytes SM_HIDDEN; /* crash-safe slot size (page multiple) */
extern uint64_t sm_in_use SM_HIDDEN;     /* atomic */
extern uint64_t sm_peak SM_HIDDEN;       /* atomic */
extern int sm_discard SM_HIDDEN;         /* forked child: records are not kept */
extern pthread_mutex_t sm_free_lock SM_HIDDEN;
sm_chunk_t *sm_chunk_alloc(void) SM_HIDDEN;
void sm_chunk_free(sm_chunk_t *c) SM_HIDDEN;

/* buffer_spill_file.c: the spill file (IO on it under sm_file_lock). */
extern pthread_mutex_t sm_spill_dir_lock SM_HIDDEN;
extern pthread_mutex_t sm_file_lock SM_HIDDEN;
extern int sm_spill_fd SM_HIDDEN;
extern char *sm_spill_file SM_HIDDEN;
extern uint64_t sm_spill_end SM_HIDDEN;    /* where the next frame (crash-safe: slot) goes */
extern uint64_t sm_crash_size SM_HIDDEN;   /* crash-safe: the file's size (slots allocated) */
extern int sm_spill_broken SM_HIDDEN;      /* cannot be created or was replaced: give up */
extern uint32_t sm_spill_users SM_HIDDEN;  /* locations with frames in it (writer lock) */
extern int sm_spill_error_said SM_HIDDEN;  /* a failed spill said once per process */
int sm_pread_all(int fd, void *buf, size_t n, uint64_t off) SM_HIDDEN;
int sm_spill_fd_checked(void) SM_HIDDEN;
int sm_spill_open(void) SM_HIDDEN;
void sm_frame_seal(sm_chunk_t *c, uint32_t loc_id, uint32_t used) SM_HIDDEN;
int sm_spill_write_frames(sm_chunk_t **c, uint32_t n, uint64_t *offsets) SM_HIDDEN;
void sm_report_write_error(int err) SM_HIDDEN;

/* buffer_crash_safe.c: slots of a crash-safe spill file. */
uint64_t sm_crash_slot_take(int fd) SM_HIDDEN;
sm_chunk_t *sm_crash_chunk_map_now(void) SM_HIDDEN;
void sm_crash_chunk_unmap(sm_chunk_t *c) SM_HIDDEN;

/* buffer_writer.c: the writer thread (its state under sm_w_lock). */
#define SM_W_BATCH 64
extern pthread_mutex_t sm_w_lock SM_HIDDEN;
extern pthread_cond_t sm_w_work SM_HIDDEN; /* queue not empty, or stop */
extern pthread_cond_t sm_w_room SM_HIDDEN; /* chunks written, or stopped */
extern sm_chunk_t *sm_q_head SM_HIDDEN, *sm_q_tail SM_HIDDEN;
extern int sm_w_stop SM_HIDDEN;
extern uint32_t sm_room_waiters SM_HIDDEN; /* threads waiting for the disk */
sm_chunk_t *sm_crash_chunk_map(void) SM_HIDDEN;
void sm_note_extent(sm_location_t *loc, uint64_t offset, const sm_spill_frame_t *f,
                    uint32_t seq) SM_HIDDEN;
void sm_chunks_done(sm_chunk_t **c, uint32_t n, const uint64_t *offsets, int ok) SM_HIDDEN;
void sm_hand_over_locked(sm_location_t *loc) SM_HIDDEN;
int sm_writer_usable_locked(void) SM_HIDDEN;

/* buffer_spill.c: a new chunk while the trace records. */
uint8_t *sm_buffer_next_chunk_now(sm_location_t *loc) SM_HIDDEN;

/* buffer_stop.c: the trace stopped. */
void sm_scratch_settle(sm_location_t *loc) SM_HIDDEN;

/* buffer_readback.c: reading back. */

/* Delivers records in order.  A record written right after a wait for the
 * disk carries a time taken before the wait began (it waited while reserving
 * its room), so it is delivered before the BufferFlush record that precedes
 * it. */
typedef struct sm_replay {
    sm_record_fn fn;
    void *arg;
    uint8_t flush[sizeof(sm_record_t) + 8];
    int have_flush;
} sm_replay_t;

/* One run of adjacent frames, read at once and checked: the frames
 * e[i..i+k) of the extents, their bytes in buf, whether each is intact. */
typedef struct sm_run {
    uint32_t i, k;
    int unreadable;  /* the read failed: all k frames are lost */
    uint8_t *buf;
    size_t cap;
    uint8_t *good;   /* per frame: 1 intact (or a live chunk's records) */
    size_t good_cap;
} sm_run_t;

int sm_replay_bytes(sm_replay_t *rp, const uint8_t *p, const uint8_t *end) SM_HIDDEN;
int sm_replay_end(sm_replay_t *rp, int rc) SM_HIDDEN;
int sm_frame_intact(const sm_spill_frame_t *f) SM_HIDDEN;
int sm_run_load(sm_run_t *r, int fd, uint32_t loc_id, const sm_spill_extent_t *e, uint32_t n,
                uint32_t i) SM_HIDDEN;
int sm_replay_extents(sm_replay_t *rp, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                      uint32_t n, uint64_t *lost, uint64_t *lost_frames) SM_HIDDEN;

/* buffer_feed.c: background encoding (lock order: sm_enc_lock, then sm_w_lock). */
extern const sm_buffer_encoder_t *sm_encoder SM_HIDDEN;
extern int sm_enc_stopped SM_HIDDEN; /* sm_buffers_staging_stop (atomic) */
extern int sm_enc_wanted SM_HIDDEN;  /* writer lock */
extern pthread_mutex_t sm_enc_lock SM_HIDDEN;
extern sm_location_t *sm_enc_ended_head SM_HIDDEN, *sm_enc_ended_tail SM_HIDDEN;
void sm_enc_wake(void) SM_HIDDEN;
void sm_enc_ahead(void) SM_HIDDEN;
void sm_enc_before_write(sm_chunk_t **c, uint32_t n) SM_HIDDEN;

#endif
