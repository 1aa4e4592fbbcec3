/* trace.pftrace: the job's OTF2 archive converted to Perfetto's protobuf
 * trace format, which ui.perfetto.dev opens.  One module serves the
 * converter (sysmeasure-convert --perfetto), sysmeasure-merge --perfetto and
 * --perfetto at finalize: each runs it after traces.otf2 is complete, so it
 * reads the archive with libotf2's reader, one location at a time, and
 * writes packets as it reads them (memory does not grow with the trace).
 *
 * What it writes: a process track per rank, a thread track per CPU thread,
 * a track per GPU stream and per metric location; a slice per region visit
 * with its attributes as debug arguments; a counter track per metric and
 * location; flows from each MPI send to its receive (the n-th message on a
 * (communicator, sender, receiver, tag) channel, as MPI orders them) and from
 * each GPU API call to the device work with its correlation id. */
#ifndef SM_PERFETTO_H
#define SM_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "../core/compiler.h"

/* What one conversion wrote. */
typedef struct sm_perfetto_stats {
    uint64_t events;  /* OTF2 events read */
    uint64_t slices;  /* slices begun (region visits) */
    uint64_t instants;
    uint64_t counter_values;
    uint64_t flows_begun;     /* flow ids started (sends, GPU API calls) */
    uint64_t flows_ended;     /* receives, device work with a correlation id */
    uint64_t tracks;
    uint64_t bytes;   /* size of trace.pftrace */
} sm_perfetto_stats_t;

#define SM_PERFETTO_NOT_OUTPUT (-2)  /* no archive there, or it is damaged */
#define SM_PERFETTO_UNAVAILABLE (-3) /* built without protobuf-c */

/* Whether this build writes Perfetto traces. */
int sm_perfetto_available(void) SM_HIDDEN;

/* dir/trace.pftrace from dir/traces.otf2.  0; -1 after one line on stderr
 * naming the problem (a full disk); SM_PERFETTO_NOT_OUTPUT or
 * SM_PERFETTO_UNAVAILABLE with the problem in err, not printed.  Nothing is
 * left at dir/trace.pftrace unless it was written whole.  stats may be NULL. */
int sm_perfetto_write(const char *dir, sm_perfetto_stats_t *stats, char *err,
                      size_t errlen) SM_HIDDEN;

/* The conversion itself lives in the plugin libsysmeasure-perfetto.so
 * (perfetto/, linked with protobuf-c), which sm_perfetto_write loads
 * (perfetto_loader.c) beside the library or tool that asks: a measured
 * process that writes no Perfetto trace never loads protobuf-c.  Same
 * contract as sm_perfetto_write. */
#define SM_PERFETTO_PLUGIN "libsysmeasure-perfetto.so"
#define SM_PERFETTO_ENTRY "sysmeasure_perfetto_convert"
typedef int (*sm_perfetto_convert_fn)(const char *dir, sm_perfetto_stats_t *stats, char *err,
                                      size_t errlen);
int sysmeasure_perfetto_convert(const char *dir, sm_perfetto_stats_t *stats, char *err,
                                size_t errlen) SM_EXPORT;

#endif
