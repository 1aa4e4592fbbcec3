/* Fuzz harness: the OTF2 anchor file (traces.otf2) as sysmeasure-convert
 * checks it before libotf2 reads it (src/util/otf2_anchor.c).  What must
 * hold: a refused anchor says why in one line; an anchor the check lets
 * through is one libotf2 opens (or refuses) in bounded time and memory,
 * the defect the check is there for.  So each anchor let through is
 * handed to libotf2, in a child process: libotf2 leaks its archive when
 * an open fails (the leaks of millions of inputs would fill the fuzzer),
 * and the child's own time and peak memory are what is measured. */
#include "fuzz_common.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <otf2/otf2.h>

#include "util/otf2_anchor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What libotf2 may take to open an archive by a checked anchor (a few ms
 * and a few MB are what it takes). */
#define SM_FUZZ_OTF2_SECONDS 3
#define SM_FUZZ_OTF2_KB (256L << 10)

/* libotf2's own messages about a damaged archive: not wanted here. */
static OTF2_ErrorCode sm_fuzz_otf2_quiet(void *data, const char *file, uint64_t line,
                                         const char *function, OTF2_ErrorCode code,
                                         const char *fmt, va_list va)
{
    (void)data, (void)file, (void)line, (void)function, (void)fmt, (void)va;
    return code;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[300] = "", path[512];
    sm_otf2_anchor_t a;
    if (sm_otf2_anchor_check(data, size, &a, why, sizeof why) != 0) {
        sm_fuzz_one_line(why);
        return 0;
    }
    SM_FUZZ_ASSERT(a.anchor_format != 0, "an anchor of format 0 let through");
    sm_fuzz_put("traces.otf2", data, size, path, sizeof path);
    pid_t pid = fork();
    SM_FUZZ_ASSERT(pid >= 0, "fork failed");
    if (pid == 0) {
        /* (the child starts with the fuzzer's pages: its growth is what
         * libotf2 takes) */
        struct rusage before, after;
        getrusage(RUSAGE_SELF, &before);
        signal(SIGALRM, SIG_DFL); /* (not the fuzzer's or the replay's handler) */
        alarm(SM_FUZZ_OTF2_SECONDS);
        OTF2_Error_RegisterCallback(sm_fuzz_otf2_quiet, NULL);
        OTF2_Reader *r = OTF2_Reader_Open(path);
        if (r) {
            uint64_t n = 0;
            OTF2_Reader_GetNumberOfLocations(r, &n);
            OTF2_Reader_Close(r);
        }
        getrusage(RUSAGE_SELF, &after);
        _exit(after.ru_maxrss - before.ru_maxrss > SM_FUZZ_OTF2_KB ? 3 : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        SM_FUZZ_ASSERT(errno == EINTR, "waitpid failed");
    SM_FUZZ_ASSERT(!WIFSIGNALED(status), "libotf2 on an anchor the check let through: %s",
                   WTERMSIG(status) == SIGALRM ? "more than 3 s (a hang)"
                                               : strsignal(WTERMSIG(status)));
    SM_FUZZ_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "libotf2 grew by more than "
                   "256 MiB on an anchor of %zu bytes the check let through", size);
    return 0;
}
