/* sysmeasure-merge's side of --crash-safe.  A process killed without
 * warning (SIGKILL, the out-of-memory killer) writes no process file; what
 * it leaves in <output>/.spill is its definitions journal
 * (<job>.<host>.<pid>.defs, core/journal.h) and its crash-safe spill file
 * (<job>.<host>.<pid>.events, core/buffer.h).  This rebuilds the process
 * file it would have written from them: the definitions replayed in the
 * order they were made, its locations, rank and clock, its events (the
 * chunk being written at the kill up to its last complete record), regions
 * still open at the kill closed at its last event, and its profile
 * computed from those events. */
#ifndef SM_RECOVER_H
#define SM_RECOVER_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "process_file.h"

/* The process file rebuilt from the journal at path, its events from the
 * crash-safe spill file events_path (NULL: none; the caller has checked
 * that its header names the journal's process); *events gets the number of
 * events recovered.  NULL with err when the journal cannot be read.  Damage
 * in the journal is said (one line) and counted in f->damaged. */
sm_process_file_t *sm_recover_process(const char *journal_path, const char *events_path,
                                      uint64_t *events, char *err, size_t errlen) SM_HIDDEN;

/* The journal's job, pid and host without reading the rest (its header
 * checked); 0, or -1 with err. */
int sm_recover_peek(const char *journal_path, char *job, size_t job_len, int64_t *pid,
                    char *host, size_t host_len, char *err, size_t errlen) SM_HIDDEN;

/* The image of a recovered process file: as sm_process_file_image, and
 * regions still open at the end of a location's records are left at its
 * last event (the archive stays balanced). */
void sm_recover_image(sm_process_file_t *f, sm_image_t *img) SM_HIDDEN;

#endif
