/* One-line messages on stderr.  Formatted into one buffer and written with one
 * write(2), so lines from several threads or ranks do not interleave. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int sm_verbosity;
/* The prefix of every line: the runtime and the launcher are "sysmeasure",
 * each other tool names itself (sm_log_set_program). */
static const char *sm_log_program = "sysmeasure";

void sm_log_set_program(const char *name)
{
    sm_log_program = name;
}

void sm_log_set_verbosity(int level)
{
    sm_verbosity = level;
}

int sm_log_verbosity(void)
{
    return sm_verbosity;
}

void sm_log_one_line(char *text)
{
    for (unsigned char *p = (unsigned char *)text; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
}

static void sm_log_line(const char *kind, const char *fmt, va_list ap)
{
    int saved_errno = errno;
    char line[1024];
    int n = snprintf(line, sizeof line, "%s: %s", sm_log_program, kind);
    if (n < 0)
        n = 0;
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    sm_log_one_line(line);
    size_t len = strlen(line);
    if (len + 1 >= sizeof line)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    errno = saved_errno;
}

void sm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sm_log_line("error: ", fmt, ap);
    va_end(ap);
}

void sm_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sm_log_line("warning: ", fmt, ap);
    va_end(ap);
}

void sm_info(int level, const char *fmt, ...)
{
    if (sm_verbosity < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    sm_log_line("", fmt, ap);
    va_end(ap);
}

void sm_log_step(const char *done)
{
    static uint64_t last_ns;
    if (sm_log_verbosity() < 2)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (done && last_ns)
        sm_info(2, "end of run: %s took %.1f ms", done, (double)(now - last_ns) / 1e6);
    last_ns = now;
}
