/* sysmeasure user API.
 *
 * Link with -lsysmeasure (pkg-config sysmeasure).  Without the launcher (or
 * SYSMEASURE_ENABLE=yes) every call is a cheap no-op returning
 * SYSMEASURE_ERROR_NOT_ACTIVE, so instrumented programs run as before.
 *
 * Regions pushed through this API are always recorded.  sysmeasure_start/stop
 * switch the automatic measurement (MPI, OpenMP, Kokkos, GPU adapters) on and
 * off; a program that calls them starts with measurement off unless
 * SYSMEASURE_INIT_ENABLED=yes. */
#ifndef SYSMEASURE_H
#define SYSMEASURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SYSMEASURE_VERSION_MAJOR 0
#define SYSMEASURE_VERSION_MINOR 1
#define SYSMEASURE_VERSION_PATCH 0

typedef enum sysmeasure_error {
    SYSMEASURE_SUCCESS = 0,
    SYSMEASURE_ERROR_NOT_ACTIVE,  /* the process is not measured */
    SYSMEASURE_ERROR_BAD_VALUE,   /* NULL name, unknown handle, bad annotation */
    SYSMEASURE_ERROR_NO_REGION,   /* pop of a region that is not open */
    SYSMEASURE_ERROR_INTERNAL
} sysmeasure_error_t;

const char *sysmeasure_error_string(int error);

/* 1 when this process is being measured. */
int sysmeasure_is_active(void);

/* ---------------------------------------------------------------- measurement on/off */
int sysmeasure_start(void);        /* whole process */
int sysmeasure_stop(void);
int sysmeasure_start_thread(void); /* calling thread only */
int sysmeasure_stop_thread(void);

/* ---------------------------------------------------------------- regions by name */
/* Names are copied at first use; pop closes the innermost open region of that
 * name (regions opened inside it are closed too). */
int sysmeasure_push_region(const char *name);
int sysmeasure_pop_region(const char *name);

/* ---------------------------------------------------------------- annotated regions */
typedef enum sysmeasure_annotation_type {
    SYSMEASURE_ANNOTATION_INT64,
    SYSMEASURE_ANNOTATION_DOUBLE,
    SYSMEASURE_ANNOTATION_STRING
} sysmeasure_annotation_type_t;

typedef struct sysmeasure_annotation {
    const char *name;
    sysmeasure_annotation_type_t type;
    union {
        int64_t int64;
        double real;
        const char *string;
    } value;
} sysmeasure_annotation_t;

/* The annotations become OTF2 attributes of the enter (push) or leave (pop)
 * event.  At most 64 per call. */
int sysmeasure_push_annotated_region(const char *name, const sysmeasure_annotation_t *annotations,
                                     size_t count);
int sysmeasure_pop_annotated_region(const char *name, const sysmeasure_annotation_t *annotations,
                                    size_t count);

/* ---------------------------------------------------------------- regions by handle */
/* The fastest form: define once (thread-safe, same name gives the same handle),
 * then enter/leave.  Returns 0 when the process is not measured. */
typedef uint32_t sysmeasure_region_t;
sysmeasure_region_t sysmeasure_region_define(const char *name, const char *file, int line);
int sysmeasure_region_enter(sysmeasure_region_t region);
int sysmeasure_region_leave(sysmeasure_region_t region);

/* ---------------------------------------------------------------- progress points */
/* For causal profiling (sysmeasure --causal): the program made progress.
 * A throughput point counts passes (one loop iteration, one request done);
 * a latency point pairs begin and end (a request's arrival and its
 * answer).  Experiments measure how their rate changes.  Cheap (an atomic
 * increment after the name's first use); nothing without --causal.  0, or
 * an error (not measured, an empty name, too many points). */
int sysmeasure_progress(const char *name);
int sysmeasure_progress_begin(const char *name);
int sysmeasure_progress_end(const char *name);

/* ---------------------------------------------------------------- callbacks */
/* The functions above dispatch through this table.  A program can replace any
 * entry (for example to add annotations to every push) and call the previous
 * one from its replacement. */
typedef struct sysmeasure_callbacks {
    int (*start)(void);
    int (*stop)(void);
    int (*start_thread)(void);
    int (*stop_thread)(void);
    int (*push_region)(const char *name);
    int (*pop_region)(const char *name);
    int (*push_annotated_region)(const char *name, const sysmeasure_annotation_t *annotations,
                                 size_t count);
    int (*pop_annotated_region)(const char *name, const sysmeasure_annotation_t *annotations,
                                size_t count);
} sysmeasure_callbacks_t;

#define SYSMEASURE_CALLBACKS_INIT {0, 0, 0, 0, 0, 0, 0, 0}

/* Installs the non-NULL entries of `replacement` (NULL: installs nothing) and,
 * when `previous` is not NULL, stores there the whole table in effect before. */
int sysmeasure_configure(const sysmeasure_callbacks_t *replacement, sysmeasure_callbacks_t *previous);

#ifdef __cplusplus
}
#endif

#endif
