/* sysmeasure: the launcher, in parts (src/tools/launcher/).  Checks
 * everything it can before the program starts (options, environment, config
 * file, output folder, program), so that a mistake costs one line on stderr
 * and not a whole job, then exports the configuration, preloads
 * libsysmeasure.so and execs the program.
 *
 *   main.c         the steps in order, to the exec; sm_die
 *   options.c      the command line and --help
 *   checks.c       what is checked before the program runs: the output
 *                  folder, PAPI events, GPU metrics (and the pass driver)
 *   program.c      the program found and inspected (ELF, the libraries its
 *                  loader would load, a static CUDA runtime); our
 *                  libraries and LLVM's OpenMP runtime found
 *   environment.c  the environment the program gets: LD_PRELOAD, CUDA
 *                  and NVTX injection, Kokkos tools, AMD (ROCTx, HIP, HSA)
 *
 * This header is what they share. */
#ifndef SM_LAUNCHER_H
#define SM_LAUNCHER_H

#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "../../core/compiler.h"
#include "../../core/config.h"

#define SM_EXIT_USAGE 2
#define SM_EXIT_NOEXEC 126
#define SM_EXIT_NOTFOUND 127

/* What the command line said, per variable: the last value given. */
typedef struct {
    const char *given[SM_CONFIG_COUNT];
    int verbose_increments; /* -v after the last --verbose=N */
} sm_options_t;

/* Which of the libraries that matter the program loads, directly or
 * through another library: its dynamic loader lists what it would load (as
 * ldd does), without running the program. */
typedef struct sm_program_libs {
    bool mpi;  /* libmpi, libmpich */
    bool cuda; /* libcudart, libcuda */
    bool hip;   /* libamdhip64 */
    bool hsa;   /* libhsa-runtime64 */
    bool roctx; /* libroctx64 */
} sm_program_libs_t;

/* ---------------------------------------------------------------- main.c */

_Noreturn void sm_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))) SM_HIDDEN;

/* The output folders this launcher made (the topmost, and the folder
 * itself): taken away again when it stops on bad input. */
extern char sm_made_top[PATH_MAX] SM_HIDDEN, sm_made_dir[PATH_MAX] SM_HIDDEN;

/* ---------------------------------------------------------------- options.c */

extern const sm_config_var_t *const sm_verbose_var SM_HIDDEN;
int sm_parse_options(int argc, char **argv, sm_options_t *opts) SM_HIDDEN;
_Noreturn void sm_option_value_error(const sm_config_var_t *var, const char *err) SM_HIDDEN;

/* ---------------------------------------------------------------- checks.c */

char *sm_absolute(const char *path) SM_HIDDEN;
char *sm_prepare_output(const char *output) SM_HIDDEN;
void sm_check_papi(const sm_config_t *cfg, bool from_option) SM_HIDDEN;
void sm_check_gpu_metrics(const sm_config_t *cfg, int argc, char **argv) SM_HIDDEN;

/* ---------------------------------------------------------------- program.c */

int sm_resolve_program(const char *name, char *path, size_t len) SM_HIDDEN;
int sm_find_library(const char *name, char *lib, size_t len, char *tried, size_t tlen) SM_HIDDEN;
int sm_program_interp(const char *path, char *interp, size_t len) SM_HIDDEN;
void sm_program_libraries(const char *path, sm_program_libs_t *libs) SM_HIDDEN;
bool sm_program_has_cuda_runtime(const char *path) SM_HIDDEN;
/* Whether the program is a Python interpreter (its name, its link's, its #!
 * line's), and whether an MPI launcher started this process as a rank. */
bool sm_program_is_python(const char *path) SM_HIDDEN;
bool sm_under_mpi_launcher(void) SM_HIDDEN;
int sm_find_libomp(char *lib, size_t len, char *tried, size_t tlen) SM_HIDDEN;

/* ---------------------------------------------------------------- environment.c */

void sm_setenv(const char *name, const char *value) SM_HIDDEN;
void sm_set_preload(const char *lib) SM_HIDDEN;
void sm_set_cuda_injection(const char *program, bool asked, bool uses, char *tried,
                           size_t tlen) SM_HIDDEN;
void sm_set_kokkos_tools(char *tried, size_t tlen) SM_HIDDEN;
void sm_set_nccl(char *tried, size_t tlen) SM_HIDDEN;
void sm_set_causal(const sm_config_t *cfg, char *tried, size_t tlen) SM_HIDDEN;
/* The sysmeasure Python module's folder at the end of PYTHONPATH. */
void sm_set_python_path(void) SM_HIDDEN;
void sm_set_amd(bool asked, const sm_program_libs_t *uses, char *tried, size_t tlen) SM_HIDDEN;

#endif
