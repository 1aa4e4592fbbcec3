/* The environment the launcher prepares for the program: our libraries
 * in LD_PRELOAD, the CUDA and NVTX injection, Kokkos's tool variables and
 * AMD's (ROCTx, HIP preloaded, the HSA tool). */
#include "launcher.h"

#include <dlfcn.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../util/log.h"

void sm_setenv(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        sm_die(SM_EXIT_USAGE, "cannot set %s: %s", name, strerror(errno));
}

/* LD_PRELOAD = our library, then what was there (without another copy of ours). */
void sm_set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *value = malloc(n);
    if (!value)
        sm_die(SM_EXIT_USAGE, "out of memory");
    strcpy(value, lib);
    /* ld.so separates entries by spaces or colons. */
    for (const char *p = old; p && *p;) {
        size_t k = strcspn(p, " :");
        if (k && !(k == strlen(lib) && !strncmp(p, lib, k))) {
            strcat(value, ":");
            strncat(value, p, k);
        }
        p += k;
        if (*p)
            p++;
    }
    sm_setenv("LD_PRELOAD", value);
    free(value);
}

/* CUDA: the driver loads the library named by CUDA_INJECTION64_PATH when the
 * program initialises CUDA, NVTX the one named by NVTX_INJECTION64_PATH at its
 * first call; ours hands NVTX on to CUPTI.  So the backend is named for every
 * program: one that never initialises CUDA never loads it, and one that loads
 * CUDA late (dlopen by Python, Julia, a plugin) is measured all the same.
 * `uses`: the program links CUDA or was asked for (--gpu); only then does a
 * missing backend, driver or a place taken by another tool deserve a warning
 * (loading the driver to check costs milliseconds, so it is done only then). */
void sm_set_cuda_injection(const char *program, bool asked, bool uses, char *tried,
                                  size_t tlen)
{
    char lib[PATH_MAX];
    if (sm_find_library("libsysmeasure-cuda.so", lib, sizeof lib, tried, tlen) != 0) {
        if (asked)
            sm_die(SM_EXIT_USAGE, "--gpu: this sysmeasure was built without the CUDA backend "
                   "(libsysmeasure-cuda.so not found; looked for %s)", tried);
        if (uses)
            sm_warning("%s uses CUDA, but this sysmeasure was built without the CUDA backend: "
                       "its GPU work is not measured", program);
        return;
    }
    if (uses) {
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!driver) {
            sm_warning("GPU work of %s is not measured: no CUDA driver here (libcuda.so.1 not "
                       "found); the program runs on and CPU measurement continues", program);
            return;
        }
        dlclose(driver);
    }
    const char *old = getenv("CUDA_INJECTION64_PATH");
    if (old && old[0] && strcmp(old, lib) != 0) {
        if (uses)
            sm_warning("GPU work of %s is not measured: CUDA_INJECTION64_PATH already names %s "
                       "(another tool); it is kept", program, old);
        else
            sm_info(1, "CUDA_INJECTION64_PATH already names %s (another tool); it is kept", old);
        return;
    }
    sm_setenv("CUDA_INJECTION64_PATH", lib);
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (!nvtx || !nvtx[0])
        sm_setenv("NVTX_INJECTION64_PATH", lib);
    sm_info(1, "CUDA: %s (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH)", lib);
}

/* Kokkos loads the first library of KOKKOS_TOOLS_LIBS (3.7 and newer) or of
 * KOKKOS_PROFILE_LIBRARY (before) itself, and only a program that uses Kokkos
 * does: so ours is named for every program, which also covers a Kokkos
 * linked statically or loaded by dlopen.  Both variables get the same list
 * (newer Kokkos reads the first, older the second); in the program, before
 * main, the core unsets the one its Kokkos does not read, so that Kokkos 4
 * does not warn of the deprecated one (src/core/kokkos_env.h).  A tool the user named
 * stays, after ours: our library loads it and forwards every callback. */
void sm_set_kokkos_tools(char *tried, size_t tlen)
{
    char lib[PATH_MAX];
    if (sm_find_library("libsysmeasure-kokkos.so", lib, sizeof lib, tried, tlen) != 0) {
        sm_info(1, "libsysmeasure-kokkos.so not found (looked for %s): Kokkos is not measured",
                tried);
        return;
    }
    const char *user = getenv("KOKKOS_TOOLS_LIBS");
    if (!user || !*user)
        user = getenv("KOKKOS_PROFILE_LIBRARY");
    if (user && strstr(user, "libsysmeasure-kokkos")) {
        sm_setenv("KOKKOS_TOOLS_LIBS", user); /* the user put ours in already */
        sm_setenv("KOKKOS_PROFILE_LIBRARY", user);
        return;
    }
    size_t n = strlen(lib) + (user ? strlen(user) + 1 : 0) + 1;
    char *value = malloc(n);
    if (!value)
        sm_die(SM_EXIT_USAGE, "out of memory");
    snprintf(value, n, "%s%s%s", lib, user && *user ? ";" : "", user && *user ? user : "");
    sm_setenv("KOKKOS_TOOLS_LIBS", value);
    sm_setenv("KOKKOS_PROFILE_LIBRARY", value);
    sm_info(2, "KOKKOS_TOOLS_LIBS=KOKKOS_PROFILE_LIBRARY=%s", value);
    free(value);
}

/* NCCL and RCCL: our library in LD_PRELOAD for every program, so that its
 * definitions come before a libnccl.so / librccl.so loaded later (PyTorch
 * loads it with libtorch_cuda.so, from Python); a program that never calls
 * NCCL pays the loading of a small library, nothing else. */
void sm_set_nccl(char *tried, size_t tlen)
{
    char lib[PATH_MAX];
    if (sm_find_library("libsysmeasure-nccl.so", lib, sizeof lib, tried, tlen) != 0) {
        sm_info(1, "libsysmeasure-nccl.so not found (looked for %s): NCCL is not measured",
                tried);
        return;
    }
    sm_set_preload(lib);
}

/* Causal profiling: the wrappers of the calls that wake or block threads,
 * in front of the C library's (and of libsysmeasure's own), only now. */
void sm_set_causal(const sm_config_t *cfg, char *tried, size_t tlen)
{
    /* A bad scope costs one line now, not a run without experiments. */
    const char *regexes[4][2] = {
        {"causal-scope-binary", cfg->causal_scope_binary},
        {"causal-scope-function", cfg->causal_scope_function},
        {"causal-scope-binary-exclude", cfg->causal_scope_binary_exclude},
        {"causal-scope-function-exclude", cfg->causal_scope_function_exclude}};
    for (int i = 0; i < 4; i++) {
        regex_t re;
        int rc;
        if (!regexes[i][1] || !regexes[i][1][0])
            continue;
        if ((rc = regcomp(&re, regexes[i][1], REG_EXTENDED | REG_NOSUB)) != 0) {
            char why[200];
            regerror(rc, &re, why, sizeof why);
            sm_die(SM_EXIT_USAGE, "--%s '%s': not a regular expression (%s)", regexes[i][0],
                   regexes[i][1], why);
        }
        regfree(&re);
    }
    char lib[PATH_MAX];
    if (sm_find_library("libsysmeasure-causal.so", lib, sizeof lib, tried, tlen) != 0)
        sm_die(SM_EXIT_USAGE, "--causal: libsysmeasure-causal.so not found (looked for %s)",
               tried);
    sm_set_preload(lib);
}

/* ------------------------------------------------------------------ AMD GPUs */

/* The sysmeasure Python module (the user API, python/sysmeasure) for a
 * Python program, or one that a script starts: its folder at the end of
 * PYTHONPATH, after the user's own.  Where the launcher's build tree has
 * it, beside this launcher's installation, or where it was installed. */
void sm_set_python_path(void)
{
    char exe[PATH_MAX], dir[PATH_MAX + 64], probe[PATH_MAX + 96];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *candidates[3][2] = {{exe, "/python"}, {exe, "/../lib/sysmeasure/python"},
                                    {SM_PKGLIBDIR, "/python"}};
    bool found = false;
    for (size_t i = 0; i < 3 && !found; i++) {
        if (!candidates[i][0][0])
            continue;
        snprintf(dir, sizeof dir, "%s%s", candidates[i][0], candidates[i][1]);
        snprintf(probe, sizeof probe, "%s/sysmeasure/__init__.py", dir);
        found = access(probe, R_OK) == 0;
    }
    if (!found) {
        sm_info(1, "the sysmeasure Python module was not found (looked in %s/python, "
                "%s/../lib/sysmeasure/python, %s/python): import sysmeasure will fail", exe, exe,
                SM_PKGLIBDIR);
        return;
    }
    char *real = realpath(dir, NULL);
    const char *add = real ? real : dir;
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(add);
    for (const char *p = old; p && *p;) { /* there already (a launcher under a launcher) */
        size_t k = strcspn(p, ":");
        if (k == len && !strncmp(p, add, k)) {
            free(real);
            return;
        }
        p += k + (p[k] == ':');
    }
    size_t size = len + (old ? strlen(old) : 0) + 2;
    char *value = malloc(size);
    if (!value)
        sm_die(SM_EXIT_USAGE, "out of memory");
    snprintf(value, size, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", add);
    sm_setenv("PYTHONPATH", value);
    sm_info(2, "PYTHONPATH=%s", value);
    free(value);
    free(real);
}

/* ROCTx, HIP and HSA (gpu/rocm), for a program that uses them or when asked
 * (--gpu): the ROCTx library preloaded (it answers roctx* calls before a real
 * libroctx64), the HIP library preloaded where built (it registers with
 * libamdhip64's callback interface).  The HSA tool is named in HSA_TOOLS_LIB
 * for every program where built: the HSA runtime loads it only when it
 * starts, so a program that loads HIP late (dlopen by Python) gets its
 * kernels and copies, and one without HIP pays nothing; only a program that
 * uses AMD's libraries hears about a missing piece. */
void sm_set_amd(bool asked, const sm_program_libs_t *uses, char *tried, size_t tlen)
{
    char lib[PATH_MAX];
    bool amd = asked || uses->hip || uses->hsa || uses->roctx;
    if (amd) {
        if (sm_find_library("libsysmeasure-roctx.so", lib, sizeof lib, tried, tlen) == 0)
            sm_set_preload(lib);
        else
            sm_warning("libsysmeasure-roctx.so not found (looked for %s): ROCTx is not measured",
                       tried);
    }
#ifdef SM_BUILT_HIP
    if (asked || uses->hip) {
        if (sm_find_library("libsysmeasure-hip.so", lib, sizeof lib, tried, tlen) == 0)
            sm_set_preload(lib);
        else
            sm_warning("libsysmeasure-hip.so not found (looked for %s): HIP is not measured",
                       tried);
    }
#endif
#ifdef SM_BUILT_HSA
    if (sm_find_library("libsysmeasure-hsa.so", lib, sizeof lib, tried, tlen) == 0) {
        /* A tool the user named stays, after ours (the runtime loads every
         * library of the list). */
        const char *user = getenv("HSA_TOOLS_LIB");
        if (user && *user && !strstr(user, "libsysmeasure-hsa")) {
            size_t n = strlen(lib) + strlen(user) + 2;
            char *value = malloc(n);
            if (!value)
                sm_die(SM_EXIT_USAGE, "out of memory");
            snprintf(value, n, "%s %s", lib, user);
            sm_setenv("HSA_TOOLS_LIB", value);
            free(value);
        } else if (!user || !*user) {
            sm_setenv("HSA_TOOLS_LIB", lib);
        }
        sm_info(2, "HSA_TOOLS_LIB=%s", getenv("HSA_TOOLS_LIB"));
    } else if (asked || uses->hip || uses->hsa) {
        sm_warning("libsysmeasure-hsa.so not found (looked for %s): HSA is not measured", tried);
    }
#endif
}
