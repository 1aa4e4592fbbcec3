/* profile.txt's text tables (text_table.h). */
#include "text_table.h"

#include <string.h>
#include "../util/json.h"

/* Columns line up by characters, not bytes: count UTF-8 lead bytes. */
size_t sm_text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0) != 0x80)
            w++;
    return w;
}

/* Names come from the application: a newline, a tab or a stray byte would
 * break the table (or the count of characters that aligns it). */
void sm_text_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = sm_utf8_sequence(p);
        if (n == 0 || *p < 0x20 || *p == 0x7f) {
            *p = '?';
            n = 1;
        }
        p += n;
    }
}

void sm_table_init(sm_table_t *t, const char *title, const char *const *heads,
                          const char *align, size_t ncols)
{
    memset(t, 0, sizeof *t);
    t->title = title;
    t->heads = heads;
    t->align = align;
    t->ncols = ncols < SM_TABLE_MAX_COLS ? ncols : SM_TABLE_MAX_COLS;
    for (size_t c = 0; c < t->ncols; c++)
        t->width[c] = sm_text_width(heads[c]);
}

static const char *sm_row_cell(const sm_row_t *row, size_t c)
{
    return c == 0 ? row->label : row->cell[c];
}

static void sm_table_cell(sm_out_t *o, const char *s, size_t width, char align)
{
    size_t w = sm_text_width(s);
    size_t pad = width > w ? width - w : 0;
    if (align == 'r')
        sm_out_repeat(o, ' ', pad);
    sm_out_printf(o, "%s", s);
    if (align != 'r')
        sm_out_repeat(o, ' ', pad);
}

/* One row: widens the columns while measuring, else prints it. */
void sm_table_row(sm_table_t *t, const sm_row_t *row)
{
    t->rows++;
    if (!t->out) {
        for (size_t c = 0; c < t->ncols; c++) {
            size_t w = sm_text_width(sm_row_cell(row, c));
            if (w > t->width[c])
                t->width[c] = w;
        }
        return;
    }
    sm_out_printf(t->out, "|");
    for (size_t c = 0; c < t->ncols; c++) {
        sm_out_printf(t->out, " ");
        sm_table_cell(t->out, sm_row_cell(row, c), t->width[c], t->align[c]);
        sm_out_printf(t->out, " |");
    }
    sm_out_printf(t->out, "\n");
}

/* Characters between the outer bars. */
static size_t sm_table_inner(const sm_table_t *t)
{
    size_t inner = t->ncols ? t->ncols - 1 : 0; /* the inner bars */
    for (size_t c = 0; c < t->ncols; c++)
        inner += t->width[c] + 2;
    return inner;
}

/* After measuring: |---| |title| |---| | HEAD | ... | |----|---|, then
 * switch to printing. */
void sm_table_begin(sm_table_t *t, sm_out_t *o)
{
    size_t title = strlen(t->title);
    size_t inner = sm_table_inner(t);
    if (title + 4 > inner) { /* widen the label column to fit the title */
        t->width[0] += title + 4 - inner;
        inner = title + 4;
    }
    t->out = o;
    t->rows = 0;
    sm_out_printf(o, "|");
    sm_out_repeat(o, '-', inner);
    sm_out_printf(o, "|\n|");
    sm_out_repeat(o, ' ', (inner - title) / 2);
    sm_out_printf(o, "%s", t->title);
    sm_out_repeat(o, ' ', inner - title - (inner - title) / 2);
    sm_out_printf(o, "|\n|");
    sm_out_repeat(o, '-', inner);
    sm_out_printf(o, "|\n|");
    for (size_t c = 0; c < t->ncols; c++) { /* headings centred */
        size_t w = sm_text_width(t->heads[c]);
        size_t left = (t->width[c] - w) / 2;
        sm_out_repeat(o, ' ', 1 + left);
        sm_out_printf(o, "%s", t->heads[c]);
        sm_out_repeat(o, ' ', t->width[c] - w - left + 1);
        sm_out_printf(o, "|");
    }
    sm_out_printf(o, "\n|");
    for (size_t c = 0; c < t->ncols; c++) {
        sm_out_repeat(o, '-', t->width[c] + 2);
        sm_out_printf(o, "|");
    }
    sm_out_printf(o, "\n");
}

void sm_table_end(sm_table_t *t)
{
    sm_out_printf(t->out, "|");
    sm_out_repeat(t->out, '-', sm_table_inner(t));
    sm_out_printf(t->out, "|\n");
}
