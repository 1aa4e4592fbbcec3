/* The launcher's look at the program and for libraries: the program found
 * as execvp would, what its ELF headers say (its dynamic loader, its
 * DT_NEEDED), the libraries its loader would load (as ldd does), a CUDA
 * runtime linked statically; our libraries and LLVM's OpenMP runtime
 * found. */
#include "launcher.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../util/fs.h"

/* Like execvp's search.  Fills path; returns 0, SM_EXIT_NOEXEC or SM_EXIT_NOTFOUND. */
int sm_resolve_program(const char *name, char *path, size_t len)
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
int sm_find_library(const char *name, char *lib, size_t len, char *tried, size_t tlen)
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
int sm_program_interp(const char *path, char *interp, size_t len)
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

void sm_program_libraries(const char *path, sm_program_libs_t *libs)
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
bool sm_program_is_python(const char *path)
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
bool sm_under_mpi_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* nvcc links the CUDA runtime statically by default: such a program names
 * no CUDA library, but carries the name of the driver it loads. */
bool sm_program_has_cuda_runtime(const char *path)
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
int sm_find_libomp(char *lib, size_t len, char *tried, size_t tlen)
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
