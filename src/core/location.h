/* Locations: where events happen.  One per application thread, created on the
 * thread's first event; later also GPU streams and metric sources, whose events
 * arrive late and in batches from other threads (they append under the
 * location's own lock, see sm_location_create). */
#ifndef SM_LOCATION_H
#define SM_LOCATION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "buffer.h"
#include "compiler.h"
#include "definitions.h"
#include "event_record.h"
#include "profile.h"

typedef enum {
    SM_LOCATION_CPU_THREAD,
    SM_LOCATION_GPU_STREAM,
    SM_LOCATION_METRIC
} sm_location_type_t;

typedef struct sm_frame {
    sm_profile_node_t *node; /* NULL when not profiling */
    uint64_t start;          /* ticks */
    uint64_t child;          /* ticks spent in children so far */
    sm_region_id_t region;
    uint32_t pad;
} sm_frame_t;

typedef struct sm_location {
    /* --- hot: every event touches these --- */
    uint8_t *pos;            /* next free byte in the current chunk */
    uint8_t *end;            /* end of the current chunk */
    /* --crash-safe: the current chunk's fill word in its memory-mapped file
     * (buffer.h), stored with every commit; NULL otherwise. */
    uint8_t **live_end;
    sm_frame_t *sp;          /* top frame; stack[0] is the root frame */
    sm_frame_t *stack_limit; /* last usable frame */
    uint8_t tracing;
    uint8_t profiling;
    uint8_t thread_enabled;  /* sysmeasure_start/stop_thread */
    uint8_t closed;          /* no more events (sm_location_state_t) */
    /* A timestamp taken by an event right before a leave (a message
     * received, a collective ended), for that leave to reuse: it belongs to
     * the frame stamp_frame.  Saves a clock read per MPI call. */
    const struct sm_frame *stamp_frame;
    uint64_t stamp;
    /* Counters of this thread (counters.h); NULL when none. */
    struct sm_counters_thread *counters;

    /* --- cold --- */
    sm_frame_t *stack;
    uint32_t stack_capacity;
    uint32_t id;             /* dense, 0 = the first thread of the process */
    sm_location_type_t type;
    char name[64];
    pid_t tid;
    uint32_t creator;              /* location that created this thread, or SM_INVALID_ID */
    void *start_routine;           /* pthread_create's start routine, or NULL */
    uint32_t creator_depth;        /* regions open in the creator at pthread_create */
    sm_region_id_t *creator_path;  /* those regions, outermost first */
    uint64_t begin_time, end_time; /* ticks */
    uint64_t unmatched_leaves;     /* leaves that matched no open region */
    /* Enters beyond the trace depth limit (sm_trace_max_depth): not recorded,
     * counted; while deep_open > 0 the top frame is a sentinel
     * (SM_DEEP_REGION) and every leave closes one of them. */
    uint64_t deep_open;
    uint64_t deep_enters;
    struct {                       /* user API: region name pointer -> id */
        const char *name;
        sm_region_id_t region;
        uint32_t immutable;        /* name is in read-only memory: no strcmp */
    } name_cache[64];
    /* Point-to-point messages sent, per receiving process (2 words each:
     * messages, bytes), allocated at the first send; see sm_event_matrix. */
    uint64_t *msg_matrix;
    uint32_t msg_matrix_n;
    /* An adapter call whose region the filter left out (adapter_api.c):
     * the frame that was on top at its enter, and its start time (read by
     * the first event inside it that needs it; 0 until then). */
    const struct sm_frame *pass_frame;
    uint64_t pass_start;
    /* Closed by the end of a --dormant run's window (window.h), not by its
     * thread's end: the next window opens it again. */
    uint8_t window_closed;
    /* Set while the compiler hooks resolve a function (no recursion). */
    uint8_t in_compiler_hook;
    /* Calls of throttled functions on this thread, by throttle slot
     * (compiler hooks; allocated at the first one, summed at finalize):
     * no atomic read-modify-write on that path. */
    uint64_t *throttled_calls;
    /* Events beside enter/leave, by record kind, and their payload words
     * (for enter/leave: attribute words only), counted whether traced or
     * not: what a full trace would hold (sysmeasure-score). */
    uint64_t record_count[SM_REC_KIND_COUNT];
    uint64_t record_words[SM_REC_KIND_COUNT];
    /* Running totals of the transfer metrics (I/O, one-sided bytes). */
    uint64_t transfer_total[8];
    sm_buffer_t buffer;
    sm_profile_t profile;
    pthread_mutex_t lock;          /* for locations fed by other threads */
} sm_location_t;

extern SM_TLS sm_location_t *sm_tls_location SM_HIDDEN;

/* Starts one of sysmeasure's own threads (the spill writer, the sampler):
 * through the C library's pthread_create, so that it is never a measured
 * location, with every signal blocked (the program's signals and the
 * sampling signal go to the program's threads), and STACK bytes of stack
 * (0: the default).  0, or an errno value. */
int sm_internal_thread_create(pthread_t *thread, size_t stack, void *(*start)(void *),
                              void *arg) SM_HIDDEN;

int sm_locations_init(void) SM_HIDDEN;
/* In the child that goes on after daemon(): the registry's lock made new. */
void sm_locations_after_daemon_child(void) SM_HIDDEN;

/* A forked child that measures on as a process of its own (a process of
 * its program's family, job_folder.h), after sm_buffers_fork_child: self,
 * the forking thread's location (NULL: it had none), becomes the only
 * location (id 0), beginning at now with the regions open at the fork
 * entered again (trace and profile); what the parent recorded is gone. */
void sm_locations_fork_child(sm_location_t *self, uint64_t now) SM_HIDDEN;

/* The calling thread's location, created on first use. */
sm_location_t *sm_location_for_thread_slow(void) SM_HIDDEN;
static inline sm_location_t *sm_location_current(void)
{
    sm_location_t *loc = sm_tls_location;
    if (SM_UNLIKELY(!loc))
        loc = sm_location_for_thread_slow();
    return loc;
}

/* A location not bound to the calling thread (GPU stream, metric source). */
sm_location_t *sm_location_create(sm_location_type_t type, const char *name) SM_HIDDEN;

/* Thread creation in two steps, so that both sides can record it: the
 * creating thread makes the new thread's location (with its lineage: the
 * creator and the regions open there), the new thread binds it to itself. */
sm_location_t *sm_location_new_thread(sm_location_t *creator) SM_HIDDEN;
void sm_location_bind_current(sm_location_t *loc) SM_HIDDEN;

/* Defaults for locations created from now on (set by the runtime). */
void sm_locations_set_modes(int tracing, int profiling, int enabled) SM_HIDDEN;

/* The region of the sentinel frame on top of a thread deeper than the trace
 * depth limit (no region has this id: it carries the filter bit). */
#define SM_DEEP_REGION 0xfffffffeu
/* Frames a thread keeps (SYSMEASURE_TRACE_DEPTH); set once at init. */
extern uint32_t sm_trace_max_depth SM_HIDDEN;

/* Grows the frame stack; returns the frame above the current top, or NULL
 * beyond the depth limit (the enter is then counted in deep_open, not
 * recorded). */
sm_frame_t *sm_location_grow_stack(sm_location_t *loc) SM_HIDDEN;
/* A leave while deep_open > 0: closes one of the enters beyond the limit. */
void sm_location_leave_deep(sm_location_t *loc) SM_HIDDEN;

/* The values of `closed`: every event path tests it as a truth value (any
 * but OPEN records nothing). */
typedef enum sm_location_state {
    SM_LOC_OPEN = 0,
    SM_LOC_CLOSED = 1,  /* its end recorded: the thread ended, or the run */
    SM_LOC_STOPPED = 2  /* a terminating signal's handler stopped its own
                         * thread, which goes on without recording: the end
                         * of the run closes what it left open (ending.c) */
} sm_location_state_t;

/* The thread is gone (or stopped): its last events are in; record its end. */
void sm_location_close(sm_location_t *loc, uint64_t time) SM_HIDDEN;

uint32_t sm_location_count(void) SM_HIDDEN;
sm_location_t *sm_location_get(uint32_t id) SM_HIDDEN;

#endif
