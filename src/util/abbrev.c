/* Long names made short for tables: see abbrev.h. */
#include "abbrev.h"

#include <string.h>

/* The '>' that closes the '<' at s, or NULL (none: not a template). */
static const char *sm_abbrev_close(const char *s)
{
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && --depth == 0)
            return p;
    }
    return NULL;
}

bool sm_abbrev(const char *name, char *out, size_t room, size_t max_chars)
{
    if (!room)
        return false;
    if (!name)
        name = "";
    size_t n = 0;
    bool changed = false;
    /* Templates collapsed. */
    for (const char *p = name; *p && n + 1 < room; p++) {
        const char *close = *p == '<' && p[1] != '<' && p[1] != '=' ? sm_abbrev_close(p) : NULL;
        if (close && close > p + 1 && !(close - p == 4 && !strncmp(p, "<...>", 5))) {
            if (n + 6 > room)
                break;
            memcpy(out + n, "<...>", 5);
            n += 5;
            p = close;
            changed = true;
            continue;
        }
        out[n++] = *p;
    }
    out[n] = '\0';
    /* Then the cap, counting UTF-8 lead bytes. */
    size_t chars = 0, cut = 0, at3 = 0;
    for (size_t i = 0; out[i]; i++) {
        if (((unsigned char)out[i] & 0xC0) == 0x80)
            continue;
        chars++;
        if (chars == max_chars - 2)
            at3 = i; /* where "..." goes if the name is longer than max_chars */
        if (chars == max_chars + 1) {
            cut = 1;
            break;
        }
    }
    if (cut && max_chars >= 4 && at3 + 4 <= room) {
        memcpy(out + at3, "...", 4);
        changed = true;
    }
    return changed || strcmp(out, name) != 0;
}
