/* A program that drives its KokkosP tool as Kokkos 4 does (no Kokkos 4 is
 * packaged here): the tool from KOKKOS_TOOLS_LIBS, or from
 * KOKKOS_PROFILE_LIBRARY with a deprecation warning on stderr; the first
 * library of the ;-list opened; the tool asked for its settings, and where
 * it asks for global fencing, a fence named as Kokkos names those before
 * each kernel callback.  It runs the kernel "k4_kernel" three times and
 * fences once itself ("k4_user_fence").  Built with OpenMP (the report's
 * test), each kernel runs an OpenMP parallel loop of about 20 ms on 2
 * threads, as Kokkos' OpenMP backend would.  Linked with the C++ runtime,
 * as a Kokkos program is (sysmeasure looks for Kokkos in the executable of
 * a C++ program).  Exit 3 when no tool was named. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*init_fn)(int, uint64_t, uint32_t, void *);
typedef void (*begin_fn)(const char *, uint32_t, uint64_t *);
typedef void (*end_fn)(uint64_t);
typedef void (*finalize_fn)(void);
struct settings {
    bool requires_global_fencing;
    bool padding[255];
};
typedef void (*settings_fn)(uint32_t, struct settings *);

static void *sym(void *tool, const char *name)
{
    return dlsym(tool, name);
}

static begin_fn begin_fence;
static end_fn end_fence;
static bool global_fencing;

/* What Kokkos does before a callback that may need a fence. */
static void tool_fence(void)
{
    uint64_t id = 0;
    if (!global_fencing || !begin_fence || !end_fence)
        return;
    begin_fence("Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence", 0, &id);
    end_fence(id);
}

static double work(void)
{
    double x = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(2) reduction(+ : x)
    {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            for (int i = 0; i < 1000; i++)
                x += i;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 20e6);
    }
#else
    for (int i = 0; i < 100000; i++)
        x += i;
#endif
    return x;
}

int main(void)
{
    const char *libs = getenv("KOKKOS_TOOLS_LIBS");
    const char *old = getenv("KOKKOS_PROFILE_LIBRARY");
    if (old)
        fprintf(stderr, "Warning: environment variable 'KOKKOS_PROFILE_LIBRARY' is deprecated. "
                        "Use 'KOKKOS_TOOLS_LIBS' instead.\n");
    if (!libs)
        libs = old;
    if (!libs)
        return 3;
    char first[4096];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(libs, ";"), libs);
    void *tool = dlopen(first, RTLD_NOW | RTLD_GLOBAL);
    if (!tool) {
        fprintf(stderr, "cannot open %s: %s\n", first, dlerror());
        return 4;
    }
    init_fn init;
    begin_fn begin;
    end_fn end;
    finalize_fn finalize;
    settings_fn request;
    void *s[7] = {sym(tool, "kokkosp_init_library"), sym(tool, "kokkosp_begin_parallel_for"),
                  sym(tool, "kokkosp_end_parallel_for"), sym(tool, "kokkosp_finalize_library"),
                  sym(tool, "kokkosp_request_tool_settings"), sym(tool, "kokkosp_begin_fence"),
                  sym(tool, "kokkosp_end_fence")};
    memcpy(&init, &s[0], sizeof init);
    memcpy(&begin, &s[1], sizeof begin);
    memcpy(&end, &s[2], sizeof end);
    memcpy(&finalize, &s[3], sizeof finalize);
    memcpy(&request, &s[4], sizeof request);
    memcpy(&begin_fence, &s[5], sizeof begin_fence);
    memcpy(&end_fence, &s[6], sizeof end_fence);
    if (!init || !begin || !end || !finalize)
        return 5;
    init(0, 20240906, 0, NULL);
    struct settings settings = {.requires_global_fencing = true}; /* Kokkos' default */
    if (request)
        request(1, &settings);
    global_fencing = settings.requires_global_fencing;
    double x = 0;
    for (int k = 0; k < 3; k++) {
        uint64_t id = 0;
        tool_fence();
        begin("k4_kernel", 1u << 24, &id);
        x += work();
        tool_fence();
        end(id);
    }
    if (begin_fence && end_fence) {
        uint64_t id = 0;
        begin_fence("k4_user_fence", 1u << 24, &id);
        end_fence(id);
    }
    finalize();
    printf("done %.0f\n", x > 0 ? 1.0 : 0.0);
    return 0;
}
