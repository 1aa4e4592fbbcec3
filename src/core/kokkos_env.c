/* Which KokkosP variable the program's Kokkos reads: see kokkos_env.h.
 *
 * A Kokkos that reads KOKKOS_TOOLS_LIBS has the name among its read-only
 * strings; every Kokkos has "KOKKOS_PROFILE_LIBRARY" there.  Strings rather
 * than a version symbol: a statically linked Kokkos exports no symbols, and
 * the variable names are exactly what decides.  Only libraries named
 * *kokkos* are searched, and the executable when a C++ runtime is loaded
 * (Kokkos is C++), so that the shell and the tools of a job script pay one
 * walk over the list of their libraries, and a C++ program one pass over
 * its read-only data (memmem: 4 ms for the 47 MB of a 300 MB executable
 * whose pages are in memory, 16 ms when they were not). */
#define _GNU_SOURCE
#include "kokkos_env.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>

#define SM_KOKKOS_OLD_VAR "KOKKOS_PROFILE_LIBRARY"
#define SM_KOKKOS_NEW_VAR "KOKKOS_TOOLS_LIBS"

typedef struct sm_kokkos_scan {
    int cxx; /* a C++ runtime is loaded */
    int has_old, has_new;
} sm_kokkos_scan_t;

/* Whether the object's read-only data holds the string (without its NUL:
 * a literal may end a longer one the linker merged it into).  Strings are
 * in the read-only segment that is not code, where the linker makes one
 * (binutils' default since 2.31); else also in the code's. */
static int sm_object_has(const struct dl_phdr_info *info, const char *s)
{
    size_t len = strlen(s);
    int data_only = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        data_only |= ph->p_type == PT_LOAD && (ph->p_flags & (PF_R | PF_W | PF_X)) == PF_R;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !(ph->p_flags & PF_R) ||
            (data_only && (ph->p_flags & PF_X)))
            continue;
        const void *at = (const void *)(info->dlpi_addr + ph->p_vaddr);
        if (memmem(at, ph->p_filesz, s, len))
            return 1;
    }
    return 0;
}

static int sm_kokkos_scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sm_kokkos_scan_t *scan = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(name, '/'), *base = slash ? slash + 1 : name;
    /* The executable comes first, with an empty name; then libraries. */
    int candidate = (!name[0] && scan->cxx) ||
                    (strstr(base, "kokkos") && !strstr(base, "sysmeasure"));
    if (candidate && sm_object_has(info, SM_KOKKOS_OLD_VAR)) {
        scan->has_old = 1;
        scan->has_new |= sm_object_has(info, SM_KOKKOS_NEW_VAR);
    }
    return 0;
}

static int sm_cxx_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(name, '/'), *base = slash ? slash + 1 : name;
    if (!strncmp(base, "libstdc++", 9) || !strncmp(base, "libc++", 6)) {
        *(int *)arg = 1;
        return 1;
    }
    return 0;
}

sm_kokkos_reads_t sm_kokkos_reads(void)
{
    sm_kokkos_scan_t scan = {0, 0, 0};
    dl_iterate_phdr(sm_cxx_cb, &scan.cxx);
    dl_iterate_phdr(sm_kokkos_scan_cb, &scan);
    if (!scan.has_old)
        return SM_KOKKOS_NOT_LOADED;
    return scan.has_new ? SM_KOKKOS_TOOLS_LIBS : SM_KOKKOS_PROFILE_LIBRARY;
}

void sm_kokkos_env_settle(void)
{
    const char *old = getenv(SM_KOKKOS_OLD_VAR), *new = getenv(SM_KOKKOS_NEW_VAR);
    if (!old || !new || strcmp(old, new) != 0 || !strstr(new, "libsysmeasure-kokkos"))
        return; /* not the launcher's setting: the user's choice stands */
    switch (sm_kokkos_reads()) {
    case SM_KOKKOS_TOOLS_LIBS:
        unsetenv(SM_KOKKOS_OLD_VAR);
        break;
    case SM_KOKKOS_PROFILE_LIBRARY:
        unsetenv(SM_KOKKOS_NEW_VAR);
        break;
    case SM_KOKKOS_NOT_LOADED:
        break;
    }
}
