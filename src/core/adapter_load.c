/* The MPI adapter library where the launcher could not see MPI: see
 * adapter_load.h.
 *
 * Why a restart, for a program exec'd under the launcher's environment:
 * - Preloading the wrappers into every process under an MPI launcher would
 *   load libmpi (their dependency) into the shell, into every tool a job
 *   script runs and into programs built with another MPI.  Making the
 *   library harmless there would need every MPI symbol it uses weak, which
 *   the wrappers and mpi.h's handles (data symbols in Open MPI) do not
 *   allow portably.
 * - Loading them later (dlopen) cannot interpose: the program's MPI calls
 *   bind to libmpi, which comes before a library opened later in the
 *   lookup order, so no MPI call would be recorded.
 * - Starting the same program again with the wrappers in LD_PRELOAD costs
 *   one exec (the dynamic loading once more, a few ms) and only in a
 *   process that has MPI without the wrappers, before main runs: nothing of
 *   the program has happened yet.  Every other process pays one walk over
 *   its loaded libraries (microseconds).
 * A core brought up by a tool library the program loaded itself (KokkosP)
 * is past that point: there the wrappers are loaded late to join the job
 * (one folder, every rank), without recording MPI calls. */
#define _GNU_SOURCE
#include "adapter_load.h"
#include "../util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define SM_MPI_ADAPTER "libsysmeasure-mpi.so"

typedef struct sm_loaded_query {
    const char *prefix; /* a library whose file name starts so */
    int found;
} sm_loaded_query_t;

static int sm_loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sm_loaded_query_t *q = arg;
    const char *name = info->dlpi_name, *slash = name ? strrchr(name, '/') : NULL;
    const char *base = slash ? slash + 1 : name;
    if (base && !strncmp(base, q->prefix, strlen(q->prefix))) {
        q->found = 1;
        return 1;
    }
    return 0;
}

/* Whether a library whose file name starts with prefix is loaded. */
static int sm_loaded(const char *prefix)
{
    sm_loaded_query_t q = {prefix, 0};
    dl_iterate_phdr(sm_loaded_cb, &q);
    return q.found;
}

/* An MPI library: Open MPI's libmpi, MPICH's libmpich or libmpi (Intel MPI,
 * MVAPICH), as the launcher's check names them. */
static int sm_has_mpi(void)
{
    return sm_loaded("libmpi.so") || sm_loaded("libmpich");
}

/* The adapter beside the libsysmeasure.so this code runs in (the build
 * tree's .libs, or the installed lib folder).  0, or -1 when it is not there. */
static int sm_adapter_path(char *path, size_t len)
{
    Dl_info self;
    if (!dladdr((void *)sm_adapter_path, &self) || !self.dli_fname || !self.dli_fname[0])
        return -1;
    const char *slash = strrchr(self.dli_fname, '/');
    int n = slash ? snprintf(path, len, "%.*s/%s", (int)(slash - self.dli_fname),
                             self.dli_fname, SM_MPI_ADAPTER)
                  : snprintf(path, len, "%s", SM_MPI_ADAPTER);
    return n > 0 && (size_t)n < len && access(path, R_OK) == 0 ? 0 : -1;
}

void sm_adapter_load_restart(int argc, char **argv)
{
    if (argc <= 0 || !argv || !argv[0] || getauxval(AT_SECURE))
        return;
    if (!sm_has_mpi() || sm_loaded("libsysmeasure-mpi"))
        return;
    char lib[PATH_MAX];
    if (sm_adapter_path(lib, sizeof lib) != 0)
        return; /* built without MPI: the launcher says so where it sees MPI */
    const char *old = getenv("LD_PRELOAD");
    if (old && strstr(old, SM_MPI_ADAPTER)) {
        /* Named already, yet not loaded: the dynamic loader refused it, and
         * another start would end the same way. */
        sm_warning("%s uses MPI, but the dynamic loader did not load %s from LD_PRELOAD: its MPI "
                   "calls are not measured", argv[0], SM_MPI_ADAPTER);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld.so", 5) || !strncmp(base, "ld64.so", 7)) {
        /* Started as `ld.so PROGRAM`: a restart would lose how. */
        sm_warning("%s uses MPI but was started through the dynamic loader, where sysmeasure "
                   "cannot add its MPI wrappers: its MPI calls are not measured", argv[0]);
        return;
    }
    size_t len = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *value = malloc(len);
    char *saved = old ? strdup(old) : NULL;
    if (!value || (old && !saved)) {
        free(value);
        free(saved);
        return;
    }
    /* First, as the launcher puts them: before libmpi in the lookup order. */
    snprintf(value, len, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
    if (setenv("LD_PRELOAD", value, 1) == 0)
        execv(exe, argv);
    int err = errno;
    if (saved)
        setenv("LD_PRELOAD", saved, 1);
    else
        unsetenv("LD_PRELOAD");
    sm_warning("%s uses MPI, but it could not be started again with sysmeasure's MPI wrappers "
               "(%s): its MPI calls are not measured", argv[0], strerror(err));
    free(value);
    free(saved);
}

void sm_adapter_load_join(void)
{
    if (!sm_has_mpi() || sm_loaded("libsysmeasure-mpi"))
        return;
    char lib[PATH_MAX];
    if (sm_adapter_path(lib, sizeof lib) != 0)
        return;
    /* Local: the program's own MPI calls stay bound to libmpi. */
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sm_warning("cannot load %s (%s): the ranks of this MPI job are measured one by one",
                   lib, dlerror());
        return;
    }
    void *sym = dlsym(h, "sysmeasure_mpi_join");
    int (*join)(void) = NULL;
    memcpy(&join, &sym, sizeof sym);
    if (!join || join() != 0)
        dlclose(h); /* MPI not (or no longer) initialized: nothing to join */
}
