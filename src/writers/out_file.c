/* Output text files: see out_file.h. */
#include "out_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../util/fs.h"
#include "../util/log.h"

int sm_out_open(sm_out_t *o, const char *dir, const char *name)
{
    memset(o, 0, sizeof *o);
    size_t len = strlen(dir) + 1 + strlen(name) + 1;
    o->path = malloc(len);
    if (!o->path) {
        sm_error("writing %s/%s failed: %s", dir, name, strerror(ENOMEM));
        return -1;
    }
    snprintf(o->path, len, "%s/%s", dir, name);
    /* Never through a link or over someone else's file (fs.h). */
    int fd = sm_fs_open_output(dir, name);
    o->f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!o->f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        sm_error("%s not written: %s", o->path, sm_fs_why(e));
        free(o->path);
        o->path = NULL;
        return -1;
    }
    o->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    o->old_locale = o->c_locale ? uselocale(o->c_locale) : (locale_t)0;
    return 0;
}

void sm_out_fail(sm_out_t *o, int err)
{
    if (!o->err)
        o->err = err ? err : EIO;
}

void sm_out_printf(sm_out_t *o, const char *fmt, ...)
{
    if (o->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(o->f, fmt, ap) < 0)
        sm_out_fail(o, errno);
    va_end(ap);
}

void sm_out_repeat(sm_out_t *o, char c, size_t n)
{
    for (size_t i = 0; i < n && !o->err; i++)
        if (putc(c, o->f) == EOF)
            sm_out_fail(o, errno);
}

int sm_out_close(sm_out_t *o)
{
    if (fflush(o->f) == EOF || ferror(o->f))
        sm_out_fail(o, errno);
    errno = 0;
    if (fclose(o->f) == EOF)
        sm_out_fail(o, errno);
    if (o->old_locale)
        uselocale(o->old_locale);
    if (o->c_locale)
        freelocale(o->c_locale);
    if (o->err)
        sm_error("writing %s failed: %s", o->path, strerror(o->err));
    free(o->path);
    int rc = o->err ? -1 : 0;
    memset(o, 0, sizeof *o);
    return rc;
}
