/* Loading libpapi on first use (see papi_dl.h). */
#define _GNU_SOURCE
#define SM_PAPI_DL_IMPL
#include "papi_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

sm_papi_functions_t sm_papi_fn;

static pthread_once_t sm_papi_load_once = PTHREAD_ONCE_INIT;
static char sm_papi_load_error[512];

static void sm_papi_load_now(void)
{
    /* The library's soname carries PAPI's major.minor version (Debian:
     * libpapi.so.7.0); the unversioned name is there with the headers. */
    char names[3][64];
    snprintf(names[0], sizeof names[0], "libpapi.so.%d.%d", PAPI_VERSION_MAJOR(PAPI_VERSION),
             PAPI_VERSION_MINOR(PAPI_VERSION));
    snprintf(names[1], sizeof names[1], "libpapi.so.%d", PAPI_VERSION_MAJOR(PAPI_VERSION));
    snprintf(names[2], sizeof names[2], "libpapi.so");
    void *lib = NULL;
    const char *why = "";
    /* Global, as if linked: libsde in the program finds PAPI by its symbols. */
    for (int i = 0; i < 3 && !lib; i++)
        if (!(lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL)))
            why = dlerror();
    if (!lib) {
        snprintf(sm_papi_load_error, sizeof sm_papi_load_error, "PAPI cannot be loaded (%s)",
                 why ? why : names[0]);
        return;
    }
    sm_papi_functions_t fn;
#define SM_PAPI_RESOLVE(name)                                                           \
    if (!(*(void **)&fn.name = dlsym(lib, #name))) {                                    \
        snprintf(sm_papi_load_error, sizeof sm_papi_load_error,                         \
                 "PAPI library %s lacks %s", names[0], #name);                          \
        return;                                                                         \
    }
    SM_PAPI_FUNCTIONS(SM_PAPI_RESOLVE)
#undef SM_PAPI_RESOLVE
    sm_papi_fn = fn;
}

int sm_papi_load(char *err, size_t errlen)
{
    pthread_once(&sm_papi_load_once, sm_papi_load_now);
    if (sm_papi_load_error[0]) {
        if (err && errlen)
            snprintf(err, errlen, "%s", sm_papi_load_error);
        return -1;
    }
    return 0;
}
