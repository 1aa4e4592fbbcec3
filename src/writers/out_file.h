/* A text file of the output folder (report.html, profile.txt, the CSV
 * files): written through stdio, in the C locale, with one error report.
 * Its own module so that a reader of the folder's files (the report) needs
 * nothing of the writers of the run. */
#ifndef SM_OUT_FILE_H
#define SM_OUT_FILE_H

#include <locale.h>
#include <stdio.h>
#include "../core/compiler.h"

/* A text file of the output folder.  Numbers print in the C locale (the
 * application may use a decimal comma); the first failed write is kept and
 * later writes are skipped (the file is incomplete anyway). */
typedef struct sm_out {
    FILE *f;
    char *path;
    int err;
    locale_t c_locale, old_locale;
} sm_out_t;

/* dir/name: 0, or -1 after one line naming the file. */
int sm_out_open(sm_out_t *o, const char *dir, const char *name) SM_HIDDEN;
void sm_out_printf(sm_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)))
    SM_HIDDEN;
void sm_out_repeat(sm_out_t *o, char c, size_t n) SM_HIDDEN;
/* Record an error of our own (ENOMEM) as the file's failure. */
void sm_out_fail(sm_out_t *o, int err) SM_HIDDEN;
/* Flush and close: 0, or -1 after one line naming the file and the error. */
int sm_out_close(sm_out_t *o) SM_HIDDEN;

#endif
