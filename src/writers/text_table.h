/* The box-drawn text tables of profile.txt (profile_text.c): columns sized
 * by a first pass over the rows, then printed, aligned by characters. */
#ifndef SM_TEXT_TABLE_H
#define SM_TEXT_TABLE_H

#include <stddef.h>
#include "../core/compiler.h"
#include "out_file.h"

/* Every row's cells are formatted twice, once to measure the columns and
 * once to print them, so that a table of many threads x many paths needs no
 * memory beyond one row. */
#define SM_TABLE_MAX_COLS 18 /* the matrix: sender, 16 ranks, total */
#define SM_CELL_SIZE 96      /* numbers and short words; five ranks and their times */
#define SM_LABEL_SIZE 1024   /* the label: prefix, indentation, name */
#define SM_LABEL_MAX_INDENT 32 /* levels; DEPTH tells deeper ones apart */

typedef struct sm_row {
    char label[SM_LABEL_SIZE];
    char cell[SM_TABLE_MAX_COLS][SM_CELL_SIZE]; /* cell[0] unused: the label */
} sm_row_t;

typedef struct sm_table {
    const char *title;
    const char *const *heads;
    const char *align; /* per column: 'l' or 'r' */
    size_t ncols;
    size_t width[SM_TABLE_MAX_COLS];
    sm_out_t *out; /* NULL while measuring */
    size_t rows;
} sm_table_t;

/* The width of s in characters (UTF-8 lead bytes). */
size_t sm_text_width(const char *s) SM_HIDDEN;
/* Control characters and bytes that are not UTF-8 made '?', in place. */
void sm_text_sanitize(char *s) SM_HIDDEN;

/* A table of ncols columns (heads, align 'l'/'r' each); rows go through
 * sm_table_row twice: first to measure (before sm_table_begin), then to
 * print (after it). */
void sm_table_init(sm_table_t *t, const char *title, const char *const *heads,
                   const char *align, size_t ncols) SM_HIDDEN;
void sm_table_row(sm_table_t *t, const sm_row_t *row) SM_HIDDEN;
void sm_table_begin(sm_table_t *t, sm_out_t *o) SM_HIDDEN;
void sm_table_end(sm_table_t *t) SM_HIDDEN;

#endif
