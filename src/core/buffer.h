/* Per-location event buffers: chunks drawn from one per-process memory budget
 * (SYSMEASURE_BUFFER_SIZE).  When the budget is spent, the location that needs
 * room writes its own chunks to its spill file and reuses one; a BufferFlush
 * record with start and stop time marks the spill in the trace.  Writers read
 * a location's records back in order: spill file first, then memory. */
#ifndef SM_BUFFER_H
#define SM_BUFFER_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "event_record.h"

typedef struct sm_chunk sm_chunk_t;
struct sm_location;

typedef struct sm_buffer {
    sm_chunk_t *first;        /* chunks in memory, oldest first */
    sm_chunk_t *current;      /* the one being written */
    int spill_fd;             /* -1 until the first spill */
    char *spill_path;
    uint64_t spills;          /* how many times this location spilled */
    uint64_t spilled_bytes;
    uint64_t dropped_records; /* lost because a spill could not be written */
    uint64_t pending_flush_start; /* a spill to mark in the next chunk (ticks) */
    uint64_t pending_flush_stop;
} sm_buffer_t;

/* Budget and chunk size from the configuration. */
void sm_buffers_configure(uint64_t budget_bytes, uint64_t chunk_bytes) SM_HIDDEN;
/* Folder for spill files, created (with parents) at the first spill. */
void sm_buffers_set_spill_dir(const char *dir) SM_HIDDEN;
/* Or ask `provider` at the first spill of each location (the runtime: it
 * creates the output folder then, under the name it chose); NULL when there
 * is none.  Takes precedence over sm_buffers_set_spill_dir. */
void sm_buffers_set_spill_provider(const char *(*provider)(void)) SM_HIDDEN;
/* Bytes of chunks currently allocated in the process. */
uint64_t sm_buffers_in_use(void) SM_HIDDEN;
uint64_t sm_buffers_chunk_size(void) SM_HIDDEN;
/* Return the recycled chunks to the system (end of the run). */
void sm_buffers_release(void) SM_HIDDEN;
/* Bytes of chunk memory loc holds now. */
uint64_t sm_buffer_memory(const struct sm_location *loc) SM_HIDDEN;

void sm_buffer_init(struct sm_location *loc) SM_HIDDEN;
/* Frees loc's chunks: only when no thread can write to loc any more. */
void sm_buffer_free(struct sm_location *loc) SM_HIDDEN;
/* Closes and deletes loc's spill file (its events are in the archive). */
void sm_buffer_remove_spill(struct sm_location *loc) SM_HIDDEN;

/* Slow path of sm_buffer_reserve: a new chunk (allocating or spilling). */
uint8_t *sm_buffer_next_chunk(struct sm_location *loc, size_t bytes) SM_HIDDEN;

/* Room for `bytes` (at most a chunk) in loc's buffer. */
#define SM_BUFFER_RESERVE(loc, bytes)                                                   \
    (SM_LIKELY((size_t)((loc)->end - (loc)->pos) >= (bytes)) ? (loc)->pos               \
                                                             : sm_buffer_next_chunk((loc), (bytes)))
/* Publish the records written up to `end` (a finalizer on another thread reads
 * only what is published). */
#define SM_BUFFER_COMMIT(loc, new_end) __atomic_store_n(&(loc)->pos, (uint8_t *)(new_end), __ATOMIC_RELEASE)

/* Calls fn for every record of loc, in order; stops early when fn returns
 * non-zero and returns that value; -1 if the spill file cannot be read. */
typedef int (*sm_record_fn)(const sm_record_t *rec, void *arg);
int sm_buffer_for_each(struct sm_location *loc, sm_record_fn fn, void *arg) SM_HIDDEN;

/* Write all of loc's chunks to its spill file now and keep one chunk, empty
 * but for a BufferFlush record.  0, or -1 when the spill failed (the records are
 * then dropped and counted). */
int sm_buffer_spill(struct sm_location *loc) SM_HIDDEN;

/* The process is ending without a collective finalize: write all of loc's
 * records to its spill file (created if needed) for sysmeasure-merge.  The
 * location must be closed.  0 or -1 (message printed). */
int sm_buffer_save(struct sm_location *loc) SM_HIDDEN;
/* Every record of a spill file left behind, in order (sysmeasure-merge). */
int sm_spill_file_for_each(const char *path, sm_record_fn fn, void *arg) SM_HIDDEN;

/* Number of records of loc (memory and spill file). */
uint64_t sm_buffer_record_count(struct sm_location *loc) SM_HIDDEN;

#endif
