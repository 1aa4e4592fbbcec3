/* sysmeasure: the launcher.  Checks everything it can before the program
 * starts (options, environment, config file, output folder, program), so that
 * a mistake costs one line on stderr and not a whole job, then exports the
 * configuration, preloads libsysmeasure.so and execs the program. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */

#include "../core/config.h"
#include "../core/job.h"
#include "../util/fs.h"
#include "../util/log.h"
#ifdef SM_HAVE_PAPI
#include "../sources/papi/papi_events.h"
#include "../util/filter.h"
#include "../util/gpu_metrics.h"
#include "../python/module_rules.h"
#endif

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define SM_EXIT_USAGE 2
#define SM_EXIT_NOEXEC 126
#define SM_EXIT_NOTFOUND 127

/* Short forms of some table options. */
static const struct {
    char letter;
    const char *option;
    const char *metavar;
} sm_short_options[] = {
    {'o', "output", "DIR"},
    {'c', "config", "FILE"},
};

/* What the command line said, per variable: the last value given. */
typedef struct {
    const char *given[SM_CONFIG_COUNT];
    int verbose_increments; /* -v after the last --verbose=N */
} sm_options_t;

static const sm_config_var_t *const sm_verbose_var = &sm_config_vars[SM_CONFIG_VERBOSE];

static _Noreturn void sm_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The output folders this launcher made (the topmost, and the folder
 * itself): taken away again when it stops on bad input. */
static char sm_made_top[PATH_MAX], sm_made_dir[PATH_MAX];

static void sm_die(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sm_error("%s", msg);
    if (sm_made_top[0])
        sm_fs_remove_empty(sm_made_dir, sm_made_top);
    exit(status);
}

/* ------------------------------------------------------------------ help */

static const char *sm_metavar(const sm_config_var_t *var)
{
    for (size_t i = 0; i < sizeof sm_short_options / sizeof sm_short_options[0]; i++)
        if (!strcmp(var->option, sm_short_options[i].option))
            return sm_short_options[i].metavar;
    switch (var->type) {
    case SM_CONFIG_TYPE_INT: return "N";
    case SM_CONFIG_TYPE_SIZE: return "SIZE";
    case SM_CONFIG_TYPE_PATH: return "PATH";
    case SM_CONFIG_TYPE_ENUM: return var->choices;
    default: return "TEXT";
    }
}

static char sm_short_letter(const sm_config_var_t *var)
{
    if (var == sm_verbose_var)
        return 'v';
    for (size_t i = 0; i < sizeof sm_short_options / sizeof sm_short_options[0]; i++)
        if (!strcmp(var->option, sm_short_options[i].option))
            return sm_short_options[i].letter;
    return 0;
}

/* "-o, --output DIR", "    --trace, --no-trace", "-v, --verbose[=N]" */
/* Whether an ENUM variable offers this choice ("auto|yes|no"). */
static bool sm_enum_has(const sm_config_var_t *var, const char *choice)
{
    size_t n = strlen(choice);
    if (var->type != SM_CONFIG_TYPE_ENUM || !var->choices)
        return false;
    for (const char *p = var->choices; *p;) {
        size_t k = strcspn(p, "|");
        if (k == n && !strncmp(p, choice, n))
            return true;
        p += k + (p[k] == '|');
    }
    return false;
}

static void sm_option_label(const sm_config_var_t *var, char *buf, size_t len)
{
    char letter = sm_short_letter(var);
    char lead[8] = "    ";
    if (letter)
        snprintf(lead, sizeof lead, "-%c, ", letter);
    if (var->type == SM_CONFIG_TYPE_BOOL)
        snprintf(buf, len, "%s--%s, --no-%s", lead, var->option, var->option);
    else if (var == sm_verbose_var)
        snprintf(buf, len, "%s--%s[=N]", lead, var->option);
    else if (sm_enum_has(var, "yes") && sm_enum_has(var, "no"))
        snprintf(buf, len, "%s--%s[=%s], --no-%s", lead, var->option, var->choices, var->option);
    else
        snprintf(buf, len, "%s--%s %s", lead, var->option, sm_metavar(var));
}

/* Prints text from column col, wrapped at 79 columns, continuing at indent. */
static void sm_wrap(FILE *f, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (col > indent && col + 1 + (int)n > 79) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, p);
        col += (int)n;
        p += n;
    }
    fputc('\n', f);
}

static void sm_help_row(FILE *f, const char *label, const char *text)
{
    enum { COL = 31 };
    int col = fprintf(f, "  %s", label);
    if (col >= COL - 1) {
        fprintf(f, "\n%*s", COL, "");
    } else {
        fprintf(f, "%*s", COL - col, "");
    }
    sm_wrap(f, text, COL, COL);
}

static void sm_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure [options] [--] program [args...]\n\n");
    sm_wrap(f,
            "Runs PROGRAM with the sysmeasure measurement library preloaded. Its trace "
            "(OTF2), profile and metadata go to one output folder.",
            0, 0);
    fprintf(f, "\nOptions:\n");
    sm_help_row(f, "-h, --help", "Show this help and exit.");
    sm_help_row(f, "-V, --version", "Show the version and exit.");
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char label[128], text[1024];
        if (!v->option)
            continue;
        sm_option_label(v, label, sizeof label);
        if (v == sm_verbose_var)
            snprintf(text, sizeof text, "%s -v adds one. [%s, default %s]", v->help, v->env,
                     v->def);
        else
            snprintf(text, sizeof text, "%s [%s, default %s]", v->help, v->env,
                     *v->def ? v->def : "empty");
        sm_help_row(f, label, text);
    }
    fputc('\n', f);
    sm_wrap(f,
            "Each option sets the environment variable in brackets for the program. "
            "Environment variables and the config file set the others; "
            "'sysmeasure-avail' lists every variable with its current value.",
            0, 0);
}

/* ------------------------------------------------------------------ options */

static const sm_config_var_t *sm_find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const char *o = sm_config_vars[i].option;
        if (o && strlen(o) == len && !strncmp(o, name, len))
            return &sm_config_vars[i];
    }
    return NULL;
}

static void sm_give(sm_options_t *opts, const sm_config_var_t *var, const char *value)
{
    opts->given[var - sm_config_vars] = value;
    if (var == sm_verbose_var)
        opts->verbose_increments = 0;
}

/* Returns the index of the program in argv. */
static int sm_parse_options(int argc, char **argv, sm_options_t *opts)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const char *value = eq ? eq + 1 : NULL;
            const sm_config_var_t *var;
            bool negated = false;
            if (((len == 4 && !strncmp(name, "help", 4)) ||
                 (len == 7 && !strncmp(name, "version", 7))) && value)
                sm_die(SM_EXIT_USAGE, "option '--%.*s' takes no value", (int)len, name);
            if (len == 4 && !strncmp(name, "help", 4)) {
                sm_usage(stdout);
                exit(0);
            }
            if (len == 7 && !strncmp(name, "version", 7)) {
                printf("sysmeasure %s (OTF2 %s)\n", PACKAGE_VERSION, SM_OTF2_VERSION);
                exit(0);
            }
            var = sm_find_option(name, len);
            if (!var && len > 3 && !strncmp(name, "no-", 3)) {
                var = sm_find_option(name + 3, len - 3);
                if (var && var->type != SM_CONFIG_TYPE_BOOL && !sm_enum_has(var, "no"))
                    var = NULL;
                negated = true;
            }
            if (!var)
                sm_die(SM_EXIT_USAGE, "unknown option '--%.*s' (sysmeasure --help lists them)",
                       (int)len, name);
            if (negated) {
                if (value)
                    sm_die(SM_EXIT_USAGE, "option '--%.*s' takes no value", (int)len, name);
                sm_give(opts, var, "no");
            } else if (var->type == SM_CONFIG_TYPE_BOOL ||
                       (!value && sm_enum_has(var, "yes"))) {
                /* --mpi means --mpi=yes for choices that have "yes". */
                sm_give(opts, var, value ? value : "yes");
            } else if (var == sm_verbose_var) {
                /* --verbose N would swallow the program name: only --verbose=N. */
                if (value)
                    sm_give(opts, var, value);
                else
                    opts->verbose_increments++;
            } else {
                if (!value) {
                    if (i + 1 >= argc)
                        sm_die(SM_EXIT_USAGE, "option '--%s' needs a value (%s)", var->option,
                               sm_metavar(var));
                    value = argv[++i];
                }
                sm_give(opts, var, value);
            }
            continue;
        }
        /* Short options; "-vv" and "-oDIR" work. */
        for (const char *p = a + 1; *p; p++) {
            if (*p == 'h') {
                sm_usage(stdout);
                exit(0);
            }
            if (*p == 'V') {
                printf("sysmeasure %s (OTF2 %s)\n", PACKAGE_VERSION, SM_OTF2_VERSION);
                exit(0);
            }
            if (*p == 'v') {
                opts->verbose_increments++;
                continue;
            }
            const sm_config_var_t *var = NULL;
            for (size_t k = 0; k < sizeof sm_short_options / sizeof sm_short_options[0]; k++)
                if (sm_short_options[k].letter == *p)
                    var = sm_find_option(sm_short_options[k].option,
                                         strlen(sm_short_options[k].option));
            if (!var)
                sm_die(SM_EXIT_USAGE, "unknown option '-%c' (sysmeasure --help lists them)", *p);
            const char *value = p + 1;
            if (!*value) {
                if (i + 1 >= argc)
                    sm_die(SM_EXIT_USAGE, "option '-%c' needs a value (%s)", *p, sm_metavar(var));
                value = argv[++i];
            }
            sm_give(opts, var, value);
            break;
        }
    }
    if (i >= argc)
        sm_die(SM_EXIT_USAGE,
               "no program given (usage: sysmeasure [options] [--] program [args]; "
               "sysmeasure --help)");
    if (!argv[i][0])
        sm_die(SM_EXIT_USAGE, "the program name is empty (usage: sysmeasure [options] [--] "
               "program [args])");
    return i;
}

/* A bad option value, said with the option the user typed: config.c names
 * the environment variable ("bad value 'x' for SYSMEASURE_X: why"). */
static _Noreturn void sm_option_value_error(const sm_config_var_t *var, const char *err)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, " for %s: ", var->env);
    const char *at = strstr(err, pattern);
    if (at)
        sm_die(SM_EXIT_USAGE, "%.*s for --%s: %s", (int)(at - err), err, var->option,
               at + strlen(pattern));
    sm_die(SM_EXIT_USAGE, "--%s: %s", var->option, err);
}

/* ------------------------------------------------------------------ paths */

/* path made absolute against the working directory; malloc'd. */
static char *sm_absolute(const char *path)
{
    char cwd[PATH_MAX], *out;
    if (path[0] == '/')
        return strdup(path);
    if (!getcwd(cwd, sizeof cwd))
        sm_die(SM_EXIT_USAGE, "cannot get the working directory: %s", strerror(errno));
    size_t n = strlen(cwd) + strlen(path) + 2;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", cwd, path);
    return out;
}


/* Writable, tried by creating a file: access() does not see every reason
 * (read-only or full file systems, quotas, ACLs). 0 or -1 with errno. */
static int sm_probe_writable(const char *dir)
{
    char host[64] = "host", probe[PATH_MAX];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    /* Ranks on several hosts share the folder: make the name unique to us. */
    for (int n = 0; n < 100; n++) {
        snprintf(probe, sizeof probe, "%s/.sysmeasure-probe-%s-%ld-%d", dir, host, (long)getpid(),
                 n);
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            unlink(probe);
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

/* The output folder, created and checked; malloc'd absolute path or NULL
 * when the runtime picks one in the working directory (checked too). */
static char *sm_prepare_output(const char *output)
{
    if (!output || !*output) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            sm_die(SM_EXIT_USAGE, "cannot get the working directory: %s", strerror(errno));
        if (sm_probe_writable(cwd) != 0)
            sm_die(SM_EXIT_USAGE, "output folder '%s' is not writable: %s", cwd, strerror(errno));
        return NULL;
    }
    char *abs = sm_absolute(output), resolved[PATH_MAX];
    if (!abs)
        sm_die(SM_EXIT_USAGE, "out of memory");
    int rc = sm_mkdir_p_created(abs, sm_made_top, sizeof sm_made_top);
    if (rc == 0 && sm_made_top[0])
        snprintf(sm_made_dir, sizeof sm_made_dir, "%s", abs);
    if (rc != 0 || !realpath(abs, resolved) || sm_probe_writable(resolved) != 0)
        sm_die(SM_EXIT_USAGE, "output folder '%s' is not writable: %s", output, strerror(errno));
    free(abs);
    return strdup(resolved);
}

/* Like execvp's search.  Fills path; returns 0, SM_EXIT_NOEXEC or SM_EXIT_NOTFOUND. */
static int sm_resolve_program(const char *name, char *path, size_t len)
{
    struct stat st;
    if (strchr(name, '/')) {
        snprintf(path, len, "%s", name);
        if (stat(path, &st) != 0)
            return (errno == ENOENT || errno == ENOTDIR) ? SM_EXIT_NOTFOUND : SM_EXIT_NOEXEC;
        return (S_ISREG(st.st_mode) && access(path, X_OK) == 0) ? 0 : SM_EXIT_NOEXEC;
    }
    const char *dirs = getenv("PATH");
    int found_other = 0;
    char first[PATH_MAX] = "";
    if (!dirs)
        dirs = "/bin:/usr/bin";
    for (const char *d = dirs;; d++) {
        size_t n = strcspn(d, ":");
        /* An empty PATH entry is the working directory. */
        if (n)
            snprintf(path, len, "%.*s/%s", (int)n, d, name);
        else
            snprintf(path, len, "./%s", name);
        if (stat(path, &st) == 0) {
            if (S_ISREG(st.st_mode) && access(path, X_OK) == 0)
                return 0;
            if (!found_other++)
                snprintf(first, sizeof first, "%s", path);
        }
        d += n;
        if (!*d)
            break;
    }
    /* execvp: a match that cannot be run is "permission denied", not "not found". */
    if (found_other) {
        snprintf(path, len, "%s", first);
        return SM_EXIT_NOEXEC;
    }
    return SM_EXIT_NOTFOUND;
}

/* One of our libraries (sm_fs_find_library: the build tree's, beside this
 * launcher, the configured libdir). */
static int sm_find_library(const char *name, char *lib, size_t len, char *tried, size_t tlen)
{
    return sm_fs_find_library(name, lib, len, tried, tlen);
}

/* What the program's own DT_NEEDED entries say, read from the file: 1 it
 * names an MPI library, 0 it names only libraries of the C/C++ runtime and
 * OpenMP (which never load MPI), -1 anything else or unreadable.  Spares a
 * run of the dynamic loader (milliseconds) for most programs. */
static int sm_needed_says_mpi(FILE *f, const ElfW(Ehdr) *eh)
{
    static const char *const plain[] = {"libc.so", "libm.so", "libpthread.so", "libdl.so",
                                        "librt.so", "libgcc_s.so", "libstdc++.so", "libomp.so",
                                        "libgomp.so", "libiomp5.so", "ld-linux", "libcrypt.so",
                                        "libutil.so"};
    ElfW(Phdr) dyn = {0}, load[16];
    int nload = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        ElfW(Phdr) ph;
        if (fseek(f, (long)(eh->e_phoff + (ElfW(Off))i * eh->e_phentsize), SEEK_SET) != 0 ||
            fread(&ph, sizeof ph, 1, f) != 1)
            return -1;
        if (ph.p_type == PT_DYNAMIC)
            dyn = ph;
        else if (ph.p_type == PT_LOAD && nload < 16)
            load[nload++] = ph;
    }
    size_t n = dyn.p_filesz / sizeof(ElfW(Dyn));
    if (!n || n > 4096)
        return -1;
    ElfW(Dyn) *d = malloc(n * sizeof *d);
    if (!d || fseek(f, (long)dyn.p_offset, SEEK_SET) != 0 || fread(d, sizeof *d, n, f) != n) {
        free(d);
        return -1;
    }
    ElfW(Addr) strtab = 0;
    for (size_t i = 0; i < n && d[i].d_tag != DT_NULL; i++)
        if (d[i].d_tag == DT_STRTAB)
            strtab = d[i].d_un.d_ptr;
    long stroff = -1; /* the string table's file offset, through its segment */
    for (int i = 0; i < nload; i++)
        if (strtab >= load[i].p_vaddr && strtab < load[i].p_vaddr + load[i].p_filesz)
            stroff = (long)(load[i].p_offset + (strtab - load[i].p_vaddr));
    int verdict = stroff < 0 ? -1 : 0;
    for (size_t i = 0; i < n && verdict == 0 && d[i].d_tag != DT_NULL; i++) {
        char name[128];
        if (d[i].d_tag != DT_NEEDED)
            continue;
        if (fseek(f, stroff + (long)d[i].d_un.d_val, SEEK_SET) != 0 ||
            !fgets(name, sizeof name, f)) {
            verdict = -1;
            break;
        }
        if (!strncmp(name, "libmpi", 6)) {
            verdict = 1;
            break;
        }
        bool known = false;
        for (size_t k = 0; k < sizeof plain / sizeof *plain && !known; k++)
            known = !strncmp(name, plain[k], strlen(plain[k]));
        if (!known)
            verdict = -1;
    }
    free(d);
    return verdict;
}

/* The program's dynamic loader (PT_INTERP) into interp: 1 when it has one,
 * 0 for an ELF program of this class without one (statically linked), -1
 * otherwise (a script, another class, unreadable). */
static int sm_program_interp(const char *path, char *interp, size_t len)
{
    int rc = -1;
    interp[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    ElfW(Ehdr) eh;
    if (fread(&eh, sizeof eh, 1, f) == 1 && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
        (eh.e_type == ET_EXEC || eh.e_type == ET_DYN)) {
        rc = 0;
        for (int i = 0; i < eh.e_phnum && !interp[0]; i++) {
            ElfW(Phdr) ph;
            if (fseek(f, (long)(eh.e_phoff + (ElfW(Off))i * eh.e_phentsize), SEEK_SET) != 0 ||
                fread(&ph, sizeof ph, 1, f) != 1)
                break;
            if (ph.p_type == PT_INTERP) {
                rc = 1; /* dynamically linked, even if its loader's name is odd */
                if (ph.p_filesz < len && fseek(f, (long)ph.p_offset, SEEK_SET) == 0 &&
                    fread(interp, 1, ph.p_filesz, f) == ph.p_filesz)
                    interp[ph.p_filesz] = '\0';
            }
        }
    }
    fclose(f);
    return rc;
}

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

static void sm_program_libraries(const char *path, sm_program_libs_t *libs)
{
    memset(libs, 0, sizeof *libs);
    char interp[PATH_MAX] = "";
    if (sm_program_interp(path, interp, sizeof interp) != 1 || !interp[0])
        return; /* a script or a static program: no library to wrap */
    /* Its own DT_NEEDED names only the C/C++ and OpenMP runtimes: none of
     * the libraries below can load, and the dynamic loader's run (a few
     * milliseconds) is spared. */
    int needed = -1;
    FILE *f = fopen(path, "rb");
    if (f) {
        ElfW(Ehdr) eh;
        if (fread(&eh, sizeof eh, 1, f) == 1)
            needed = sm_needed_says_mpi(f, &eh);
        fclose(f);
    }
    if (needed == 0)
        return;

    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        dup2(fds[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        close(fds[0]);
        close(fds[1]);
        unsetenv("LD_PRELOAD");
        execl(interp, interp, "--list", path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = child > 0 ? fdopen(fds[0], "r") : NULL;
    char line[PATH_MAX + 128];
    while (out && fgets(line, sizeof line, out)) {
        /* "\tlibmpi.so.40 => /usr/lib/.../libmpi.so.40 (0x...)" */
        const char *name = line + strspn(line, " \t");
        if (!strncmp(name, "libmpi", 6) || !strncmp(name, "libmpich", 8))
            libs->mpi = true;
        if (!strncmp(name, "libcudart.so", 12) || !strncmp(name, "libcuda.so", 10))
            libs->cuda = true;
        if (!strncmp(name, "libamdhip64.", 12))
            libs->hip = true;
        if (!strncmp(name, "libhsa-runtime64.", 17))
            libs->hsa = true;
        if (!strncmp(name, "libroctx64.", 11))
            libs->roctx = true;
    }
    if (out)
        fclose(out);
    else
        close(fds[0]);
    if (child > 0)
        waitpid(child, NULL, 0);
}

/* Whether the program is a Python interpreter: by its name (python3,
 * python3.12, ..., also where a link leads) or, for a script, by its #!
 * line's (#!/usr/bin/python3, #!/usr/bin/env python3). */
static bool sm_program_is_python(const char *path)
{
    const char *base = strrchr(path, '/');
    if (!strncmp(base ? base + 1 : path, "python", 6))
        return true;
    char *real = realpath(path, NULL);
    base = real ? strrchr(real, '/') : NULL;
    bool python = base && !strncmp(base + 1, "python", 6);
    free(real);
    if (python)
        return true;
    char line[512] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
    }
    if (strncmp(line, "#!", 2) != 0)
        return false;
    /* The interpreter, or the program env runs (after its options). */
    char *word = strtok(line + 2, " \t\r\n");
    for (bool env = false; word; word = strtok(NULL, " \t\r\n")) {
        base = strrchr(word, '/');
        base = base ? base + 1 : word;
        if (!env && !strcmp(base, "env")) {
            env = true;
            continue;
        }
        if (env && (word[0] == '-' || strchr(word, '=')))
            continue;
        return !strncmp(base, "python", 6);
    }
    return false;
}

/* Whether an MPI launcher (Open MPI, MPICH's Hydra, PMIx) started this
 * process as one of the ranks of a job. */
static bool sm_under_mpi_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* nvcc links the CUDA runtime statically by default: such a program names
 * no CUDA library, but carries the name of the driver it loads. */
static bool sm_program_has_cuda_runtime(const char *path)
{
    static const char needle[] = "libcuda.so.1";
    const size_t n = sizeof needle - 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 16];
    size_t keep = 0, got;
    bool found = false;
    while (!found && (got = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
        size_t len = keep + got;
        found = memmem(buf, len, needle, n) != NULL;
        keep = len >= n - 1 ? n - 1 : len;
        memmove(buf, buf + len - keep, keep);
    }
    fclose(f);
    return found;
}

/* Whether path is a shared object this launcher's programs can load: same
 * ELF class and machine as the launcher itself. */
static bool sm_loadable(const char *path)
{
    static ElfW(Ehdr) self;
    static int have_self = -1;
    ElfW(Ehdr) eh;
    struct stat st;
    if (have_self < 0) {
        FILE *f = fopen("/proc/self/exe", "rb");
        have_self = f && fread(&self, sizeof self, 1, f) == 1;
        if (f)
            fclose(f);
    }
    FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    if (!f)
        return false;
    bool ok = fread(&eh, sizeof eh, 1, f) == 1 && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
              eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
              eh.e_type == ET_DYN && (!have_self || eh.e_machine == self.e_machine);
    fclose(f);
    return ok;
}

static bool sm_try_lib(const char *path, char *lib, size_t len, char *tried, size_t tlen)
{
    if (sm_loadable(path)) {
        snprintf(lib, len, "%s", path);
        return true;
    }
    size_t t = strlen(tried);
    if (t + strlen(path) + 3 < tlen)
        snprintf(tried + t, tlen - t, "%s%s", t ? ", " : "", path);
    return false;
}

static int sm_version_order(const void *a, const void *b)
{
    return -strverscmp(*(char *const *)a, *(char *const *)b); /* newest first */
}

/* LLVM's OpenMP runtime, for --openmp-runtime=llvm: where the dynamic loader
 * would find it (LD_LIBRARY_PATH, then its cache as `ldconfig -p` lists it),
 * then the one clang used when sysmeasure was built, then the newest of
 * /usr/lib/llvm-N/lib.  0, or -1 with the places tried. */
static int sm_find_libomp(char *lib, size_t len, char *tried, size_t tlen)
{
    static const char *const names[] = {"libomp.so.5", "libomp.so"};
    char path[PATH_MAX];
    tried[0] = '\0';
    const char *llp = getenv("LD_LIBRARY_PATH");
    for (const char *d = llp; d && *d;) {
        size_t n = strcspn(d, ":;");
        for (size_t k = 0; n && k < 2; k++) {
            snprintf(path, sizeof path, "%.*s/%s", (int)n, d, names[k]);
            if (sm_try_lib(path, lib, len, tried, tlen))
                return 0;
        }
        d += n + (d[n] != '\0');
    }
    static const char *const ldconfig[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};
    for (size_t i = 0; i < 2; i++) {
        if (access(ldconfig[i], X_OK) != 0)
            continue;
        char cmd[64];
        snprintf(cmd, sizeof cmd, "%s -p 2>/dev/null", ldconfig[i]);
        FILE *p = popen(cmd, "r");
        char line[PATH_MAX + 128];
        bool found = false;
        /* "\tlibomp.so.5 (libc6,x86-64) => /lib/x86_64-linux-gnu/libomp.so.5" */
        while (p && fgets(line, sizeof line, p)) {
            const char *name = line + strspn(line, " \t"), *arrow = strstr(line, "=> ");
            if (found || !arrow || (strncmp(name, "libomp.so.5 ", 12) && strncmp(name, "libomp.so ", 10)))
                continue;
            snprintf(path, sizeof path, "%s", arrow + 3);
            path[strcspn(path, "\n")] = '\0';
            found = sm_try_lib(path, lib, len, tried, tlen);
        }
        if (p)
            pclose(p);
        if (found)
            return 0;
        break;
    }
#ifdef SM_LIBOMP_BUILD
    if (sm_try_lib(SM_LIBOMP_BUILD, lib, len, tried, tlen))
        return 0;
#endif
    glob_t g;
    if (glob("/usr/lib/llvm-*/lib/libomp.so*", 0, NULL, &g) == 0) {
        qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, sm_version_order);
        for (size_t i = 0; i < g.gl_pathc; i++)
            if (sm_try_lib(g.gl_pathv[i], lib, len, tried, tlen)) {
                globfree(&g);
                return 0;
            }
        globfree(&g);
    }
    if (!tried[0])
        snprintf(tried, tlen, "LD_LIBRARY_PATH, ldconfig -p, /usr/lib/llvm-*/lib");
    return -1;
}

static void sm_setenv(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        sm_die(SM_EXIT_USAGE, "cannot set %s: %s", name, strerror(errno));
}

/* LD_PRELOAD = our library, then what was there (without another copy of ours). */
static void sm_set_preload(const char *lib)
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
static void sm_set_cuda_injection(const char *program, bool asked, bool uses, char *tried,
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
 * (newer Kokkos reads the first, older the second).  A tool the user named
 * stays, after ours: our library loads it and forwards every callback. */
static void sm_set_kokkos_tools(char *tried, size_t tlen)
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

/* The sysmeasure Python module (the user API, python/sysmeasure) for a
 * Python program, or one that a script starts: its folder at the end of
 * PYTHONPATH, after the user's own.  Where the launcher's build tree has
 * it, beside this launcher's installation, or where it was installed. */
static void sm_set_python_path(void)
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

/* ------------------------------------------------------------------ AMD GPUs */

/* ROCTx, HIP and HSA (gpu/rocm), for a program that uses them or when asked
 * (--gpu): the ROCTx library preloaded (it answers roctx* calls before a real
 * libroctx64), the HIP library preloaded where built (it registers with
 * libamdhip64's callback interface).  The HSA tool is named in HSA_TOOLS_LIB
 * for every program where built: the HSA runtime loads it only when it
 * starts, so a program that loads HIP late (dlopen by Python) gets its
 * kernels and copies, and one without HIP pays nothing; only a program that
 * uses AMD's libraries hears about a missing piece. */
static void sm_set_amd(bool asked, const sm_program_libs_t *uses, char *tried, size_t tlen)
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

/* ------------------------------------------------------------------ PAPI */

/* The events named by --papi, checked here so that a name the machine cannot
 * count costs one line and not a job.  With --papi-optional the run goes on;
 * the runtime drops the same events and its summary names them. */
static void sm_check_papi(const sm_config_t *cfg, bool from_option)
{
    const sm_config_var_t *var = &sm_config_vars[SM_CONFIG_PAPI_EVENTS];
    if (!cfg->papi_events || !*cfg->papi_events)
        return;
    /* Named as the user set it. */
    char what[64];
    if (from_option)
        snprintf(what, sizeof what, "--%s", var->option);
    else if (cfg->source[SM_CONFIG_PAPI_EVENTS] == SM_CONFIG_FROM_FILE)
        snprintf(what, sizeof what, "%s (config file)", var->key);
    else
        snprintf(what, sizeof what, "%s", var->env);
#ifdef SM_HAVE_PAPI
    char err[2048];
    sm_papi_names_t names, dropped;
    bool multiplex;
    if (sm_papi_names_parse(cfg->papi_events, &names, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s: %s", what, err);
    int rc = sm_papi_check(&names, &dropped, &multiplex, err, sizeof err);
    if (rc != 0 && !cfg->papi_optional)
        sm_die(SM_EXIT_USAGE, "%s: %s", what, err);
    if (rc != 0)
        sm_warning("%s: %s; running without them (papi_optional)", what, err);
    else if (multiplex)
        sm_info(1, "PAPI events %s: multiplexed (more than the counters count at once)",
                cfg->papi_events);
#else
    if (!cfg->papi_optional)
        sm_die(SM_EXIT_USAGE, "%s: this sysmeasure was built without PAPI (libpapi-dev not "
               "found at build time), so it cannot count %s", what, cfg->papi_events);
    sm_warning("%s: this sysmeasure was built without PAPI; running without %s "
               "(papi_optional)", what, cfg->papi_events);
#endif
}

/* GPU metrics: a list or file that does not parse costs one line before the
 * program runs (names are checked against the GPU at its first context).
 * Application mode needs one run per metric group: sysmeasure-passes drives
 * them (it sets SYSMEASURE_GPU_PASS for each); a launcher not started by it
 * hands the whole command to it, or, under an MPI launcher, says how. */
static void sm_check_gpu_metrics(const sm_config_t *cfg, int argc, char **argv)
{
    if ((!cfg->gpu_metrics || !*cfg->gpu_metrics) &&
        (!cfg->gpu_metrics_file || !*cfg->gpu_metrics_file))
        return;
    static sm_gpu_spec_t spec;
    char err[1024];
    sm_gpu_spec_init(&spec);
    if (sm_gpu_spec_load(cfg->gpu_metrics, cfg->gpu_metrics_file, &spec, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    uint32_t groups = spec.n_groups;
    sm_gpu_spec_free(&spec);
    if (cfg->gpu_counter_mode != 1 /* application */ || getenv("SYSMEASURE_GPU_PASS"))
        return;
    if (groups < 2)
        return; /* one pass: this run is all of it */
    static const char *const ranks[] = {SM_JOB_RANK_VARS};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++)
        if (getenv(ranks[i]))
            sm_die(SM_EXIT_USAGE,
                   "--gpu-counter-mode=application needs %u runs of the whole job: start it as "
                   "'sysmeasure-passes -- mpirun ... sysmeasure ... PROGRAM'",
                   groups);
    char driver[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        sm_die(SM_EXIT_USAGE, "cannot find this launcher's folder for sysmeasure-passes");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(driver, sizeof driver, "%s/sysmeasure-passes", exe);
    if (access(driver, X_OK) != 0)
        sm_die(SM_EXIT_USAGE, "--gpu-counter-mode=application: the pass driver %s is missing",
               driver);
    /* sysmeasure-passes -- <this very command line> */
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        sm_die(SM_EXIT_USAGE, "out of memory");
    args[0] = driver;
    args[1] = (char *)"--";
    args[2] = (char *)"/proc/self/exe";
    char self[PATH_MAX];
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        args[2] = self;
    }
    for (int i = 1; i < argc; i++)
        args[2 + i] = argv[i];
    execv(driver, args);
    sm_die(SM_EXIT_NOEXEC, "cannot run %s: %s", driver, strerror(errno));
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    sm_options_t opts;
    sm_config_t cfg;
    char err[1024];

    memset(&opts, 0, sizeof opts);
    int prog = sm_parse_options(argc, argv, &opts);

    /* b. The config file (absolute: the program may change directory), the
     * environment, then the options on top. */
    const char *config_file = opts.given[SM_CONFIG_CONFIG_FILE];
    char *config_abs = NULL;
    if (config_file && *config_file) {
        config_abs = sm_absolute(config_file);
        if (!config_abs)
            sm_die(SM_EXIT_USAGE, "out of memory");
        opts.given[SM_CONFIG_CONFIG_FILE] = config_abs;
    }
    if (config_file)
        sm_setenv(sm_config_vars[SM_CONFIG_CONFIG_FILE].env, config_abs ? config_abs : "");
    /* The filter file and the GPU metrics file too: the program may change
     * directory. */
    const char *metrics_file = opts.given[SM_CONFIG_GPU_METRICS_FILE];
    if (metrics_file && *metrics_file &&
        !(opts.given[SM_CONFIG_GPU_METRICS_FILE] = sm_absolute(metrics_file)))
        sm_die(SM_EXIT_USAGE, "out of memory");
    const char *filter_file = opts.given[SM_CONFIG_FILTER];
    if (filter_file && *filter_file && !(opts.given[SM_CONFIG_FILTER] = sm_absolute(filter_file)))
        sm_die(SM_EXIT_USAGE, "out of memory");
    if (sm_config_load(&cfg, environ, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    if (cfg.warning[0])
        sm_warning("%s", cfg.warning);
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        if (opts.given[i] && sm_config_set(&cfg, v, opts.given[i], SM_CONFIG_FROM_ENV, err,
                                           sizeof err) != 0)
            sm_option_value_error(v, err);
    }
    if (opts.verbose_increments) {
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)cfg.verbose + opts.verbose_increments);
        if (sm_config_set(&cfg, sm_verbose_var, text, SM_CONFIG_FROM_ENV, err, sizeof err) != 0)
            sm_option_value_error(sm_verbose_var, err);
    }
    sm_log_set_verbosity((int)cfg.verbose);
    sm_check_papi(&cfg, opts.given[SM_CONFIG_PAPI_EVENTS] != NULL);
    /* A filter file that does not parse costs one line, not a job. */
    if (cfg.filter && cfg.filter[0]) {
        sm_filter_t *filter = sm_filter_read(cfg.filter, err, sizeof err);
        if (!filter)
            sm_die(SM_EXIT_USAGE, "%s", err);
        sm_filter_free(filter);
    }
    sm_check_gpu_metrics(&cfg, argc, argv);
    /* Python module rules that do not parse: one line, not a job. */
    if (cfg.python_modules && cfg.python_modules[0]) {
        sm_py_rules_t *rules = sm_py_rules_parse(cfg.python_modules, err, sizeof err);
        if (!rules)
            sm_die(SM_EXIT_USAGE, "%s", err);
        sm_py_rules_free(rules);
    }
#ifndef SM_HAVE_LIBUNWIND
    /* Call-stack sampling was not built: one line, and the program runs. */
    if (cfg.sampling) {
        sm_warning("--sampling: this sysmeasure was built without libunwind (apt-get install "
                   "libunwind-dev, then configure again); running without call-stack sampling");
        cfg.sampling = false;
        opts.given[SM_CONFIG_SAMPLING] = "no";
    }
#endif
#ifndef SM_HAVE_PERFETTO
    /* The Perfetto writer was not built: one line, and the program runs. */
    if (cfg.perfetto) {
        sm_warning("--perfetto: this sysmeasure was built without protobuf-c (apt-get install "
                   "libprotobuf-c-dev protobuf-c-compiler, then configure again); running "
                   "without trace.pftrace");
        cfg.perfetto = false;
        opts.given[SM_CONFIG_PERFETTO] = "no";
    }
#else
    if (cfg.perfetto && !cfg.trace)
        sm_warning("--perfetto: trace.pftrace is made from the trace, which --no-trace turns off; "
                   "none will be written");
#endif

    /* c. Output folder. */
    char *output = sm_prepare_output(cfg.output);

    /* d. Program. */
    const char *name = argv[prog];
    char path[PATH_MAX];
    int rc = sm_resolve_program(name, path, sizeof path);
    if (rc == SM_EXIT_NOTFOUND)
        sm_die(rc, "program '%s' not found", name);
    if (rc && strcmp(name, path) != 0)
        sm_die(rc, "program '%s' is not executable (%s)", name, path);
    if (rc)
        sm_die(rc, "program '%s' is not executable", name);

    /* A statically linked program loads no library: LD_PRELOAD cannot
     * reach it.  It still runs, unmeasured, and the user is told. */
    char interp[PATH_MAX];
    if (sm_program_interp(path, interp, sizeof interp) == 0)
        sm_warning("%s is statically linked: sysmeasure cannot load into it, so it runs "
                   "unmeasured (link it dynamically to measure it)", name);
    if (sm_program_interp(path, interp, sizeof interp) == 0 && sm_made_top[0])
        sm_fs_remove_empty(sm_made_dir, sm_made_top); /* nothing will be written */

    /* e. Environment for the runtime. */
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char value[PATH_MAX];
        bool from_options = opts.given[i] || (v == sm_verbose_var && opts.verbose_increments);
        if (i == SM_CONFIG_OUTPUT && output && cfg.source[i] == SM_CONFIG_FROM_ENV)
            sm_setenv(v->env, output);
        else if (i == SM_CONFIG_CONFIG_FILE)
            continue; /* set above */
        else if (from_options) {
            sm_config_format(&cfg, v, value, sizeof value);
            sm_setenv(v->env, value);
        }
    }
    sm_setenv(sm_config_vars[SM_CONFIG_ENABLE].env, "yes");
    /* exec keeps our pid: it is the program's. */
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    sm_setenv(sm_config_vars[SM_CONFIG_LAUNCHED_PID].env, pid);

    /* The program's runtime will read exactly this environment: check the
     * whole of it now (e.g. --buffer-size against the chunk size). */
    sm_config_t check;
    if (sm_config_load(&check, environ, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    sm_config_free(&check);

    char lib[PATH_MAX], tried[3 * PATH_MAX + 16];
    if (sm_find_library("libsysmeasure.so", lib, sizeof lib, tried, sizeof tried) != 0) {
        sm_error("cannot find the runtime library libsysmeasure.so (looked for %s)", tried);
        exit(SM_EXIT_USAGE);
    }
    /* The MPI wrappers go first, so they come before libmpi in the lookup. */
    sm_program_libs_t libs;
    memset(&libs, 0, sizeof libs);
    if (cfg.mpi == SM_MPI_AUTO || cfg.gpu == SM_GPU_AUTO)
        sm_program_libraries(path, &libs);
    bool mpi = cfg.mpi == SM_MPI_YES || (cfg.mpi == SM_MPI_AUTO && libs.mpi);
    /* A Python program among the ranks of an MPI job loads MPI later
     * (mpi4py, by dlopen), where no look at its libraries can see it: it
     * gets the MPI wrappers (and so libmpi) from the start. */
    bool python_rank = cfg.mpi == SM_MPI_AUTO && !mpi && sm_under_mpi_launcher() &&
                       sm_program_is_python(path);
    char mpilib[PATH_MAX];
    if (python_rank) {
        mpi = sm_find_library("libsysmeasure-mpi.so", mpilib, sizeof mpilib, tried,
                              sizeof tried) == 0;
        if (mpi)
            sm_info(1, "%s: a Python program among the ranks of an MPI job: the MPI wrappers "
                    "are loaded (mpi4py)", name);
    } else if (mpi && sm_find_library("libsysmeasure-mpi.so", mpilib, sizeof mpilib, tried,
                                      sizeof tried) != 0) {
        if (cfg.mpi == SM_MPI_YES)
            sm_die(SM_EXIT_USAGE, "--mpi: this sysmeasure was built without MPI support "
                   "(libsysmeasure-mpi.so not found; looked for %s)", tried);
        sm_warning("%s uses MPI, but this sysmeasure was built without MPI support: its MPI "
                   "calls are not measured", name);
        mpi = false;
    }
    /* LLVM's OpenMP runtime after ours: the program's GOMP_* and omp_* calls
     * find it before libgomp, and it finds our ompt_start_tool. */
    char omplib[PATH_MAX];
    if (cfg.openmp_runtime == SM_OPENMP_RUNTIME_LLVM) {
        if (sm_find_libomp(omplib, sizeof omplib, tried, sizeof tried) != 0)
            sm_die(SM_EXIT_USAGE, "--openmp-runtime=llvm: LLVM's OpenMP runtime (libomp.so.5) not "
                   "found (looked for %s); install it (Debian: apt-get install libomp5) or put "
                   "its folder in LD_LIBRARY_PATH", tried);
#ifndef SM_BUILT_OMPT
        sm_warning("--openmp-runtime=llvm: this sysmeasure was built without the OpenMP adapter "
                   "(no omp-tools.h at build time): the program runs on libomp, but its OpenMP "
                   "constructs are not measured");
#endif
        sm_info(1, "OpenMP runtime: %s (preloaded)", omplib);
        sm_set_preload(omplib);
    }
    sm_set_preload(lib);
    if (mpi)
        sm_set_preload(mpilib);
    if (cfg.kokkos)
        sm_set_kokkos_tools(tried, sizeof tried);
    sm_set_python_path(); /* the user API, with or without --python */
    if (cfg.gpu != SM_GPU_NO) {
        bool asked = cfg.gpu == SM_GPU_YES;
        sm_set_cuda_injection(name, asked,
                              asked || libs.cuda || sm_program_has_cuda_runtime(path), tried,
                              sizeof tried);
        sm_set_amd(asked, &libs, tried, sizeof tried);
    }

    if (sm_log_verbosity() >= 1) {
        char cwd[PATH_MAX] = ".";
        const char *base = strrchr(path, '/');
        if (!getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, ".");
        char where[2 * PATH_MAX + 64];
        if (output)
            snprintf(where, sizeof where, "%s", output);
        else
            snprintf(where, sizeof where, "%s/sysmeasure-%s-<date>-<time>-<pid>", cwd,
                     base ? base + 1 : path);
        sm_info(1, "running %s (trace: %s, profile: %s, output: %s)", path,
                cfg.trace ? "yes" : "no", cfg.profile ? "yes" : "no", where);
        sm_info(2, "LD_PRELOAD=%s", getenv("LD_PRELOAD"));
    }
    sm_config_free(&cfg);

    execv(path, argv + prog);
    if (errno == ENOEXEC) {
        /* execvp runs a script without "#!" with the shell; so do we. */
        int n = argc - prog;
        char **sh = calloc((size_t)n + 2, sizeof *sh);
        if (sh) {
            sh[0] = "/bin/sh";
            sh[1] = path;
            for (int k = 1; k < n; k++)
                sh[k + 1] = argv[prog + k];
            execv("/bin/sh", sh);
            errno = ENOEXEC;
        }
    }
    sm_die(SM_EXIT_NOEXEC, "cannot run program '%s': %s", name, strerror(errno));
}
