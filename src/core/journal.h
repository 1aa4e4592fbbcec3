/* --crash-safe: the definitions journal.  Everything a process defines
 * (strings, regions, attributes, communicators, metrics, calling contexts,
 * locations, its rank, its clock) is appended, as it is made, to a
 * memory-mapped file beside its spill file:
 *
 *     <spill dir>/<job hash>.<host>.<pid>.defs
 *
 * A header (job, pid, host, program, start) and entries {kind, length,
 * check, payload}, each with its own checksum (a damaged entry is skipped
 * and said, never read as a definition); the header's fill word is stored (release) after each entry is
 * complete, so a process killed without warning leaves every entry it
 * finished in the kernel's page cache.  sysmeasure-merge reads it with the
 * process's crash-safe spill file (buffer.h) when the process left no
 * process file (merge/recover.h).  Definitions are rare: appends take a
 * lock. */
#ifndef SM_JOURNAL_H
#define SM_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "definitions.h"
#include "job.h"

typedef enum {
    SM_J_STRING = 1,  /* u32 id, text */
    SM_J_REGION,      /* u32 id, sm_region_def_t */
    SM_J_ATTRIBUTE,   /* u32 id, sm_attribute_def_t */
    SM_J_COMM,        /* u32 id, sm_comm_key_t, u32 name, size, parent, members[size or 0];
                       * again when renamed or given members: the last one holds */
    SM_J_METRIC,      /* u32 id, u32 name, u32 unit, u32 kind */
    SM_J_CONTEXT,     /* u32 id, sm_context_def_t */
    SM_J_LOCATION,    /* u32 id, type, creator, char name[64]; again when renamed */
    SM_J_RANK,        /* u32 rank, n_ranks */
    SM_J_CLOCK,       /* sm_clock_params_t (at the start, and when offsets are known) */
    SM_J_CLOCK_POINT, /* u64 ticks, u64 CLOCK_MONOTONIC ns (a later calibration point) */
    SM_J_KIND_COUNT
} sm_journal_kind_t;

/* The head of an SM_J_COMM entry (its members follow). */
typedef struct sm_journal_comm {
    uint32_t id;
    uint32_t pad;
    sm_comm_key_t key;
    uint32_t name, size, parent, n_members;
} sm_journal_comm_t;

/* An SM_J_LOCATION entry. */
typedef struct sm_journal_location {
    uint32_t id, type, creator, pad;
    char name[64];
} sm_journal_location_t;

#define SM_JOURNAL_MAGIC "SMJRNL02" /* 02: entries checked */
#define SM_JOURNAL_HEAD 512u /* entries start here */

typedef struct sm_journal_head {
    char magic[8];
    uint64_t fill;          /* bytes of complete entries from SM_JOURNAL_HEAD */
    int64_t pid;
    uint64_t start_realtime_ns;
    uint64_t start_ticks;
    char job[SM_JOB_ID_MAX];
    char host[64];
    char program[256];
    uint64_t check;         /* of the bytes above but fill */
} sm_journal_head_t;

/* Opens the journal in dir (the spill folder; made if need be) and writes
 * the header.  0, or -1 (said once; the run goes on without it). */
int sm_journal_open(const char *dir, const char *program, uint64_t start_realtime_ns,
                    uint64_t start_ticks) SM_HIDDEN;
/* Whether a journal is open (definers call the append only then). */
int sm_journal_on(void) SM_HIDDEN;
/* Appends one entry: head then tail (either may be empty). */
void sm_journal_add(uint32_t kind, const void *head, uint32_t head_len, const void *tail,
                    uint32_t tail_len) SM_HIDDEN;
/* Appends an SM_J_CLOCK_POINT of now: the clocks are read under the
 * journal's lock, so the points of all threads are in time order. */
void sm_journal_add_clock_point(void) SM_HIDDEN;
/* Moves the journal into another folder (the output folder was renamed). */
int sm_journal_move(const char *dir) SM_HIDDEN;
/* The output is complete: the journal is removed. */
void sm_journal_done(void) SM_HIDDEN;
/* In the child that goes on after daemon(): the journal is its own (the
 * parent ends); only the lock is made new. */
void sm_journal_after_daemon_child(void) SM_HIDDEN;
/* In a forked child: its own definitions never reach the parent's file. */
void sm_journal_after_fork_child(void) SM_HIDDEN;

/* An entry's head in the file: kind, payload length, check (FNV-1a of
 * kind, length and payload); the payload follows, padded to 8 bytes. */
typedef struct sm_journal_entry {
    uint32_t kind, len;
    uint64_t check;
} sm_journal_entry_t;

/* What reading a journal found beside its entries. */
typedef struct sm_journal_damage {
    uint64_t entries;       /* entries read */
    uint64_t damaged_bytes; /* bytes of entries that fail their checks (skipped) */
    uint64_t first_damaged; /* offset of the first of them */
    uint32_t damaged_runs;  /* places where entries were skipped */
} sm_journal_damage_t;

/* Reading one back (sysmeasure-merge): fn for every complete entry whose
 * check holds, in order; entries that fail it are skipped (the reader finds
 * the next whole entry) and counted in *damage (may be NULL); stops at fn's
 * non-zero value.  0, or -1 with err when the file is not a journal (of
 * this version) or its header is damaged.  The file is read up to
 * SM_JOURNAL_SPACE bytes. */
/* Recomputes the header's and every entry's check of a journal held in
 * memory (the fuzz harnesses: crafted journals whose checks hold). */
void sm_journal_image_fix_checks(uint8_t *data, size_t len) SM_HIDDEN;
/* The header alone, checked: 0, or -1 with err. */
int sm_journal_peek(const char *path, sm_journal_head_t *head, char *err, size_t errlen) SM_HIDDEN;
typedef int (*sm_journal_fn)(uint32_t kind, const uint8_t *p, uint32_t len, void *arg);
int sm_journal_read(const char *path, sm_journal_head_t *head, sm_journal_fn fn, void *arg,
                    sm_journal_damage_t *damage, char *err, size_t errlen) SM_HIDDEN;

#endif
