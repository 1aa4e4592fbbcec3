/* Per-location event buffers: chunks drawn from one per-process memory budget
 * (SYSMEASURE_BUFFER_SIZE).
 *
 * Spilling happens off the application's path: when the chunks in memory
 * pass a mark below the budget, the location that needs room hands its full
 * chunks to one background writer thread (started at the first spill, asleep
 * on a condition variable when there is nothing to write) and goes on in a
 * free chunk.  Chunks in flight count against the budget until they are on
 * disk; an application thread waits only when the budget is spent and its
 * own chunks are still in flight (the disk is slower than the event rate),
 * and a BufferFlush record with start and stop time marks that wait in the
 * trace.  A thread that ends while memory is tight hands over its chunks too.
 *
 * All locations of a process share one spill file, <spill dir>/<pid>.events:
 * a header naming the job (sm_job_id), host, pid and rank of the process
 * (sysmeasure-merge places a file by it, whatever its name), then frames, each one
 * chunk of one location with its own checksums.  The file descriptor is
 * checked (device and inode recorded at open) before every use and reopened
 * by path when the application closed or reused its number.  Writers read a
 * location's records back in order: its frames in the spill file, then the
 * chunks still in flight, then memory.
 *
 * When the trace must stop before a disk limit (trace_space.h), each
 * location ends its trace at its next chunk, closing the regions open
 * there, and counts its later records without keeping them
 * (sm_buffer_next_chunk, buffer_stop.c). */
#ifndef SM_BUFFER_H
#define SM_BUFFER_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "event_record.h"

typedef struct sm_chunk sm_chunk_t;
struct sm_location;

/* What a frame of a file left behind is (sm_spill_extent_t.live). */
enum {
    SM_EXTENT_SEALED = 0, /* checksummed: checked when read */
    SM_EXTENT_LIVE,       /* a chunk a killed process was writing (crash-safe file): no
                           * checksum, its whole records in order up to its fill word */
    SM_EXTENT_DAMAGED     /* a sealed crash-safe chunk that fails its checks: its
                           * `records` are lost */
};

/* One frame of a location in the spill file. */
typedef struct sm_spill_extent {
    uint64_t offset; /* of the frame header */
    uint32_t bytes;  /* payload bytes */
    uint32_t records;
    uint32_t live;   /* SM_EXTENT_* */
    uint32_t seq;    /* its place among its location's chunks (crash-safe file) */
    uint32_t cut;    /* SM_EXTENT_LIVE: bytes after its whole records in order, up to
                      * its fill word: damaged (their events lost) */
} sm_spill_extent_t;

typedef struct sm_buffer {
    sm_chunk_t *first;        /* chunks in memory, oldest first */
    sm_chunk_t *current;      /* the one being written */
    /* Chunks handed to the writer thread, not yet on disk, oldest first
     * (under the writer's lock). */
    sm_chunk_t *flying_first, *flying_last;
    sm_spill_extent_t *spilled; /* its frames in the spill file, in order */
    uint32_t n_spilled, cap_spilled;
    uint64_t spills;          /* hand-overs of chunks to the disk */
    uint64_t spilled_bytes;
    uint64_t spill_waits;     /* times the thread waited for the disk (BufferFlush) */
    uint64_t dropped_records; /* lost because a spill could not be written */
    uint32_t n_chunks;        /* chunks it ever had (crash-safe slots' order) */
    /* Background encoding (sm_buffers_set_encoder), on the writer thread:
     * the encoder's state, whether it runs (SM_ENC_*), how many of its chunks
     * (in order: spilled, in flight, in memory) it has taken, and a
     * BufferFlush held back across a chunk's end (see sm_replay_t). */
    void *enc;
    uint32_t enc_status;
    uint32_t enc_chunks;
    uint32_t enc_have_flush;
    /* Its thread spilled it, or waited for the disk: the encoder takes its
     * next chunks back from the spill file while the writer is idle, and
     * goes on in memory once it has caught up (sm_enc_catch_up). */
    uint32_t enc_frozen;
    uint32_t enc_spill_i;  /* where the spilled frame to take next is looked for */
    uint32_t enc_no_back;  /* a frame could not be read back: the rest at the end */
    uint32_t enc_ended;  /* its thread ended: its last chunk is complete too */
    uint32_t enc_closed; /* every record encoded, the encoder's state closed */
    struct sm_location *enc_next_ended; /* queue of ended locations (writer lock) */
    uint64_t enc_flush[3];
    /* The trace stopped (trace_space.h), on the thread that writes loc:
     * its state (sm_buffer_stop_t), the regions open when it was armed and
     * its chunk's real end then (see sm_buffer_next_chunk), the chunk its
     * records go to from then on (never read nor written to disk), and the
     * records that went there. */
    uint32_t stop_state;
    uint32_t stop_depth;
    uint32_t *stop_open;
    uint8_t *stop_end;
    sm_chunk_t *scratch;
    uint64_t untraced;
} sm_buffer_t;

enum { SM_ENC_NONE, SM_ENC_ON, SM_ENC_OFF };

/* A location once the trace stopped: recording as before; armed (its next
 * record closes the regions open in its trace); closing them; untraced
 * (records are counted, not kept). */
typedef enum {
    SM_STOP_NONE,
    SM_STOP_ARMED,
    SM_STOP_CLOSING,
    SM_STOP_UNTRACED
} sm_buffer_stop_t;

/* Budget and chunk size from the configuration. */
void sm_buffers_configure(uint64_t budget_bytes, uint64_t chunk_bytes) SM_HIDDEN;
/* --crash-safe: every chunk is a slot of the spill file, mapped shared (and
 * the spill file is made at the first chunk), so that the records of a
 * process killed without warning are in the kernel's page cache; the fill
 * of each chunk is a word in its slot (SM_BUFFER_COMMIT).  Call before the
 * first event.  A slot that cannot be had (disk full) leaves that chunk in
 * memory, written to a slot when it spills (said once). */
void sm_buffers_set_crash_safe(int on) SM_HIDDEN;
int sm_buffers_crash_safe(void) SM_HIDDEN;
/* The output is complete: the crash-safe spill file goes (and no chunk is
 * mapped from a file any more). */
void sm_buffers_crash_safe_done(void) SM_HIDDEN;
/* The crash-safe spill file moves into folder dir (renamed: the mapped
 * chunks stay as they are).  0 or -1 (errno). */
int sm_buffers_crash_safe_move(const char *dir) SM_HIDDEN;
/* The process's rank, for the spill file's header (written again when the
 * file exists already). */
#define SM_SPILL_NO_RANK UINT32_MAX
void sm_buffers_set_rank(uint32_t rank, uint32_t n_ranks) SM_HIDDEN;
/* Folder for spill files, created (with parents) at the first spill. */
void sm_buffers_set_spill_dir(const char *dir) SM_HIDDEN;
/* Or ask `provider` at the first spill (the runtime: it creates the output
 * folder then, under the name it chose); NULL when there is none.  Takes
 * precedence over sm_buffers_set_spill_dir.  The provider runs on the writer
 * thread: it must not wait for anything that waits for the writer. */
void sm_buffers_set_spill_provider(const char *(*provider)(void)) SM_HIDDEN;
/* The spill folder (made now, as at the first spill) into out: 0, or -1. */
int sm_buffers_spill_dir(char *out, size_t len) SM_HIDDEN;
/* Bytes this process's spill file takes on disk (a crash-safe file: its
 * slots, allocated), for trace_space.h. */
uint64_t sm_buffers_disk_bytes(void) SM_HIDDEN;
/* The space of the file system that holds the spill folder: bytes free to
 * anyone (f_bavail) and its size; where gets the folder.  0, or -1. */
int sm_buffers_fs_space(uint64_t *avail, uint64_t *total, char *where, size_t len) SM_HIDDEN;
/* The background encoder takes no more chunks (trace_space.h: the copy on
 * disk is bounded): locations it encodes keep what it took, the rest is
 * encoded at the end; none is opened any more. */
void sm_buffers_staging_stop(void) SM_HIDDEN;
/* Records of loc counted, not recorded, since the trace stopped (after
 * loc is closed). */
uint64_t sm_buffer_untraced(struct sm_location *loc) SM_HIDDEN;
/* Bytes of chunks currently allocated in the process (in flight included). */
uint64_t sm_buffers_in_use(void) SM_HIDDEN;
/* The most that sm_buffers_in_use ever was. */
uint64_t sm_buffers_peak(void) SM_HIDDEN;
uint64_t sm_buffers_chunk_size(void) SM_HIDDEN;
/* The memory budget (SYSMEASURE_BUFFER_SIZE). */
uint64_t sm_buffers_budget(void) SM_HIDDEN;
/* Return the recycled chunks to the system (end of the run). */
void sm_buffers_release(void) SM_HIDDEN;
/* Stop the writer thread after the write it is doing (chunks still queued
 * stay in memory, where the readers find them); from then on spills are
 * written by the thread that needs room.  Idempotent; called before the
 * buffers are read at the end. */
void sm_buffers_quiesce(void) SM_HIDDEN;
/* daemon(): the process goes on in a forked child, the parent ends.
 * pause, before the fork: the writer thread stops after the write it is
 * doing, so that none is under way at the fork.  resume, after it, in the
 * child (child: the locks made new, their holders are not there) or in the
 * parent when the fork failed: the writer thread may start again.  The
 * spill file, the crash-safe slots and every location's chunks stay the
 * process's, which goes on. */
void sm_buffers_pause(void) SM_HIDDEN;
void sm_buffers_resume(int child) SM_HIDDEN;
/* In a forked child: the writer thread is not there and the spill file is
 * the parent's.  The child's events are discarded (the runtime writes
 * nothing for it): full chunks are simply reused. */
void sm_buffers_after_fork_child(void) SM_HIDDEN;
/* The same for a forked child that measures on as a process of its own
 * (sm_locations_fork_child): self (the forking thread's location, or NULL)
 * starts with empty buffers, and the child's records go to a spill file of
 * its own. */
void sm_buffers_fork_child(struct sm_location *self) SM_HIDDEN;
/* The spill file of this process, or NULL before the first spill. */
const char *sm_buffers_spill_path(void) SM_HIDDEN;
/* Bytes of chunk memory loc holds now. */
uint64_t sm_buffer_memory(const struct sm_location *loc) SM_HIDDEN;

void sm_buffer_init(struct sm_location *loc) SM_HIDDEN;
/* Frees loc's chunks: only when no thread can write to loc any more. */
void sm_buffer_free(struct sm_location *loc) SM_HIDDEN;
/* Forgets loc's frames in the spill file (its events are in the archive);
 * the file is deleted when no location has any left. */
void sm_buffer_remove_spill(struct sm_location *loc) SM_HIDDEN;
/* The same, the spill file kept on disk (closed with its last user; the
 * next spill makes a new one where the spill provider says now). */
void sm_buffer_spill_forget(struct sm_location *loc) SM_HIDDEN;
/* A window of a --dormant run was written (window.h): loc's chunks go back,
 * its spilled events stay in the window's file, its counts start again.
 * Only while its thread records nothing (measurement off, loc closed). */
void sm_buffer_forget(struct sm_location *loc) SM_HIDDEN;
/* The spill file holding loc's events, or NULL when none of them is there. */
const char *sm_buffer_spill_path(const struct sm_location *loc) SM_HIDDEN;

/* Slow path of sm_buffer_reserve: a new chunk (allocating or spilling). */
uint8_t *sm_buffer_next_chunk(struct sm_location *loc, size_t bytes) SM_HIDDEN;

/* The thread of loc has ended (loc is closed): when memory is tight, its
 * chunks go to the writer and their memory back to the pool. */
void sm_buffer_thread_ended(struct sm_location *loc) SM_HIDDEN;

/* Room for `bytes` (at most a chunk) in loc's buffer. */
#define SM_BUFFER_RESERVE(loc, bytes)                                                   \
    (SM_LIKELY((size_t)((loc)->end - (loc)->pos) >= (bytes)) ? (loc)->pos               \
                                                             : sm_buffer_next_chunk((loc), (bytes)))
/* Publish the records written up to `end` (a finalizer on another thread reads
 * only what is published; with --crash-safe the fill word in the chunk's
 * mapped file too, so that a process killed now leaves them complete). */
#define SM_BUFFER_COMMIT(loc, new_end)                                                  \
    do {                                                                                \
        uint8_t *sm_e_ = (uint8_t *)(new_end);                                          \
        __atomic_store_n(&(loc)->pos, sm_e_, __ATOMIC_RELEASE);                         \
        if (SM_UNLIKELY((loc)->live_end != NULL))                                       \
            __atomic_store_n((loc)->live_end, sm_e_, __ATOMIC_RELEASE);                 \
    } while (0)

/* Calls fn for every record of loc, in order; stops early when fn returns
 * non-zero and returns that value; -1 if some of its spilled records cannot
 * be read back (a message says which and how many; the others are still
 * delivered).  Stops the writer thread first (sm_buffers_quiesce). */
typedef int (*sm_record_fn)(const sm_record_t *rec, void *arg);
int sm_buffer_for_each(struct sm_location *loc, sm_record_fn fn, void *arg) SM_HIDDEN;

/* Background encoding (issue 13, fast exit): the OTF2 writer encodes each
 * location's chunks while the run goes on, on the writer thread, as they
 * fill (before they spill), so that the end of the run is left with only
 * the chunks still being filled.  open(loc) is asked once per location,
 * before its first chunk: its state, or NULL to leave the location to the
 * end of the run; record gets each record (arg: the state) and stops the
 * location's encoding with a non-zero value (the location then falls back
 * to the end of the run: its records are all still here).  A location
 * whose first chunk went to disk before it was asked is never encoded; the
 * encoder takes no more of one that its own thread spills (sm_buffer_spill,
 * sm_buffer_save) or whose chunks go to disk while a thread waits for the
 * disk: what it took stays a prefix, the rest is read at the end
 * (sm_buffer_for_each_rest).  NULL turns it off.  Set before the first
 * event. */
typedef struct sm_buffer_encoder {
    void *(*open)(struct sm_location *loc);
    sm_record_fn record;
    /* The thread of loc ended.  complete: every record of loc was given to
     * record, and the state is to be finished (0), or, when that fails
     * (non-zero) or !complete, dropped: loc is then left to the end of the
     * run.  Either way its slot is free and open may give it to another.
     * Ended threads are taken in the order they end, all their chunks (the
     * last one too), so thousands of short threads pass through the few
     * states open gives at a time. */
    int (*close)(struct sm_location *loc, void *state, int complete);
    uint32_t max_locations; /* open gives at most this many states at a time */
} sm_buffer_encoder_t;
void sm_buffers_set_encoder(const sm_buffer_encoder_t *enc) SM_HIDDEN;
/* Count `delta` bytes of the encoder's memory against the budget. */
void sm_buffers_account(int64_t delta) SM_HIDDEN;
/* After sm_buffers_quiesce: the encoder's state of loc when every chunk it
 * took was encoded (NULL when it never ran or stopped). */
void *sm_buffer_encoded(struct sm_location *loc) SM_HIDDEN;
/* The records of loc the encoder has not taken yet, in order (as
 * sm_buffer_for_each); -2 when the encoded part cannot be told apart. */
int sm_buffer_for_each_rest(struct sm_location *loc, sm_record_fn fn, void *arg) SM_HIDDEN;

/* Chunks the encoder took back from the spill file during the run: spilled
 * unencoded while their thread waited for the disk, encoded once the
 * writer thread was idle. */
uint64_t sm_buffers_taken_back(void) SM_HIDDEN;

/* Hand all of loc's chunks to the disk now (written by the caller when the
 * writer thread is stopped) and keep one chunk, empty but for a BufferFlush
 * record.  0, or -1 when the spill failed (the records are then dropped and
 * counted). */
int sm_buffer_spill(struct sm_location *loc) SM_HIDDEN;

/* The process is ending without a collective finalize: write all of loc's
 * records to the spill file (created if needed) for sysmeasure-merge.  The
 * location must be closed.  0 or -1 (message printed). */
int sm_buffer_save(struct sm_location *loc) SM_HIDDEN;

/* What a spill file left behind holds, and what of it is damaged. */
typedef struct sm_spill_report {
    char job[128];            /* the job identity in its header ("" if unreadable) */
    int64_t pid;              /* the process that wrote it */
    char host[64];            /* its host (gethostname) */
    uint32_t rank, n_ranks;   /* its rank (SM_SPILL_NO_RANK: not known when written) */
    int header_ok;            /* the file header is intact */
    uint64_t frames;          /* intact chunks */
    uint64_t records;         /* records in them */
    uint64_t damaged_frames;  /* chunks whose data fails its checksum */
    uint64_t lost_records;    /* records of those chunks (their headers say) */
    uint64_t unreadable_bytes;/* bytes after the last readable frame header
                                 (a truncated or overwritten tail): their
                                 record count is unknown */
    int crash_safe;           /* a --crash-safe file (slots) */
    uint64_t live_chunks;     /* of a killed process: recovered to their fill */
    uint64_t live_records;    /* complete records in them (in `records` too) */
    uint64_t live_cut_bytes;  /* bytes after them up to their fill words (a record
                                 cut by the kill, or out of order: damaged) */
    uint64_t damaged_unowned; /* crash-safe slots whose own header is damaged (in
                                 damaged_frames; their records are unknown) */
    uint64_t last_time;       /* latest record time seen (ticks; crash-safe files) */
} sm_spill_report_t;

/* Reads the whole spill file at path: fills *report (when not NULL).
 * 0 when every byte is accounted for by intact frames, 1 when something is
 * damaged or missing (see the report), -1 when it cannot be opened or is not
 * a spill file (message printed). */
int sm_spill_file_check(const char *path, sm_spill_report_t *report) SM_HIDDEN;
/* Recomputes every check of a spill file held in memory (header, slots,
 * frames as far as their lengths allow), so that crafted contents reach
 * the readers beyond the checks, as a file made with intent would (the
 * fuzz harnesses, tests/fuzz).  slots: force the crash-safe format. */
void sm_spill_image_fix_checks(uint8_t *data, size_t len, int slots) SM_HIDDEN;
/* Only the header's identity (job, host, pid, rank, crash_safe) into *id:
 * 0, or -1 when path is not a spill file of this version or its header is
 * damaged. */
int sm_spill_file_identity(const char *path, sm_spill_report_t *id) SM_HIDDEN;

/* Every record of location `location` in the spill file at path, in order
 * (sysmeasure-merge).  Damaged chunks are skipped and reported in one line
 * each (records lost), and the result is then -1 as when the file cannot be
 * read; otherwise 0 or fn's non-zero value. */
int sm_spill_file_for_each(const char *path, uint32_t location, sm_record_fn fn, void *arg)
    SM_HIDDEN;
/* The same, naming the file's process `owner` (e.g. "rank 3") in what it
 * says where the file's header does not know its rank. */
int sm_spill_file_for_each_of(const char *path, uint32_t location, const char *owner,
                              sm_record_fn fn, void *arg) SM_HIDDEN;

/* Number of records of loc (memory and spill file). */
uint64_t sm_buffer_record_count(struct sm_location *loc) SM_HIDDEN;

#endif
