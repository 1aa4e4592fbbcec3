/* A program that finds its KokkosP tool as Kokkos 4 does (no Kokkos 4 is
 * packaged here): KOKKOS_TOOLS_LIBS first, KOKKOS_PROFILE_LIBRARY with a
 * deprecation warning on stderr, the first library of the ;-list opened and
 * its kokkosp_* entry points called for one parallel_for "k4_kernel" run
 * three times.  Exit 3 when no tool was named. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*init_fn)(int, uint64_t, uint32_t, void *);
typedef void (*begin_fn)(const char *, uint32_t, uint64_t *);
typedef void (*end_fn)(uint64_t);
typedef void (*finalize_fn)(void);

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
    void *sym[4] = {dlsym(tool, "kokkosp_init_library"), dlsym(tool, "kokkosp_begin_parallel_for"),
                    dlsym(tool, "kokkosp_end_parallel_for"),
                    dlsym(tool, "kokkosp_finalize_library")};
    memcpy(&init, &sym[0], sizeof init);
    memcpy(&begin, &sym[1], sizeof begin);
    memcpy(&end, &sym[2], sizeof end);
    memcpy(&finalize, &sym[3], sizeof finalize);
    if (!init || !begin || !end || !finalize)
        return 5;
    init(0, 20240906, 0, NULL);
    volatile double x = 0;
    for (int k = 0; k < 3; k++) {
        uint64_t id = 0;
        begin("k4_kernel", 1u << 24, &id);
        for (int i = 0; i < 100000; i++)
            x += i;
        end(id);
    }
    finalize();
    printf("done %.0f\n", x);
    return 0;
}
