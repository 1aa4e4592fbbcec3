/* Which KokkosP variable the program's Kokkos reads.
 *
 * The launcher cannot see which Kokkos a program uses (linked statically,
 * through a Trilinos library, behind a job script), so it names our tool in
 * both KOKKOS_TOOLS_LIBS and KOKKOS_PROFILE_LIBRARY.  Kokkos 4 (and 3.7 on)
 * reads the first and warns on every rank that the second is deprecated;
 * Kokkos up to 3.4 reads only the second.  In the process itself, before
 * main, the loaded Kokkos can be seen: the variable it does not read is
 * removed. */
#ifndef SM_KOKKOS_ENV_H
#define SM_KOKKOS_ENV_H

#include "compiler.h"

/* Which variables a Kokkos reads, from the strings of its library. */
typedef enum sm_kokkos_reads {
    SM_KOKKOS_NOT_LOADED,     /* no Kokkos in the program (yet) */
    SM_KOKKOS_PROFILE_LIBRARY, /* before 3.5: KOKKOS_PROFILE_LIBRARY only */
    SM_KOKKOS_TOOLS_LIBS,     /* KOKKOS_TOOLS_LIBS (and the old one, deprecated) */
} sm_kokkos_reads_t;

/* What the Kokkos in this process (the executable, or a loaded library
 * whose file name has "kokkos" in it) reads. */
sm_kokkos_reads_t sm_kokkos_reads(void) SM_HIDDEN;

/* Before main, in a process the launcher's environment measures: where
 * both variables name the same list with our tool in it (the launcher's
 * setting) and the program has a Kokkos, unsets the one it does not read.
 * Without a Kokkos loaded (one opened later by dlopen) both stay. */
void sm_kokkos_env_settle(void) SM_HIDDEN;

#endif
