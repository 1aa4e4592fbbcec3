/* Region filters (--filter FILE): include/exclude rules on region names,
 * source files and paradigms.  The file format is the one Score-P's filter
 * files use, so users bring theirs unchanged:
 *
 *   SCOREP_REGION_NAMES_BEGIN          rules on region names
 *     EXCLUDE *                        each rule: INCLUDE or EXCLUDE, then
 *     INCLUDE main solve*              patterns (shell wildcards * ? [..]),
 *             setup                    continued on the next lines;
 *     EXCLUDE MANGLED _ZN3foo*         MANGLED: match the mangled name
 *   SCOREP_REGION_NAMES_END
 *   SCOREP_FILE_NAMES_BEGIN            rules on the region's source file
 *     EXCLUDE /opt/vendor/src*          (full path as the compiler wrote it)
 *   SCOREP_FILE_NAMES_END
 *   SYSMEASURE_PARADIGMS_BEGIN         ours: rules on paradigms (user,
 *     EXCLUDE openmp                   compiler, mpi, openmp, kokkos, ...)
 *   SYSMEASURE_PARADIGMS_END
 *
 * '#' starts a comment (write \# for a literal one).  Within a block the
 * last rule that matches decides; no rule matching means included.  A region
 * is excluded when its name, its file or its paradigm is excluded; a region
 * without a file is not touched by file rules.  Used once per region, at its
 * definition: never on the hot path. */
#ifndef SM_FILTER_H
#define SM_FILTER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sm_filter sm_filter_t;

/* Bytes of the largest filter file read (a list of every function of a
 * large code stays below; /dev/zero or a log is no filter file). */
#define SM_FILTER_FILE_MAX ((size_t)16 << 20)

/* The filter file the user named (a regular file, its links followed, at
 * most SM_FILTER_FILE_MAX bytes).  NULL with "FILE:LINE: problem" (one
 * line) in err. */
sm_filter_t *sm_filter_read(const char *path, char *err, size_t errlen);
/* The same from text in memory; origin names it in messages. */
sm_filter_t *sm_filter_parse(const char *text, const char *origin, char *err, size_t errlen);
void sm_filter_free(sm_filter_t *f);

/* Whether the region goes out.  mangled, file: NULL when unknown;
 * paradigm: its name as sm_paradigm_name gives it. */
bool sm_filter_excludes(const sm_filter_t *f, const char *name, const char *mangled,
                        const char *file, const char *paradigm);

/* name as a pattern that matches exactly it (wildcards, spaces and '#'
 * escaped), for the filter files we write. */
void sm_filter_escape(const char *name, char *out, size_t len);

/* Number of rules (for messages). */
size_t sm_filter_rule_count(const sm_filter_t *f);

#endif
