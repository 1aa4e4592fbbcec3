/* Which functions an experiment may choose (causal_internal.h): the
 * function symbols of the binaries in scope, read once at start from
 * their files' symbol tables (.symtab, else .dynsym), kept sorted by
 * address so that the sample handler finds a PC's function by a binary
 * search without a lock or an allocation. */
#define _GNU_SOURCE
#include "causal_internal.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/log.h"

static sm_causal_fn_t *sm_scope_fns;
static uint32_t sm_scope_n, sm_scope_cap;
static uint32_t sm_scope_n_objects;

/* Binaries never in the default scope: the C library and the system's,
 * the MPI, GPU and communication runtimes, sysmeasure itself. */
static const char *const sm_scope_never[] = {
    "libsysmeasure", "libmpi", "libopen-", "libpmix", "libucp", "libucs", "libuct",
    "libfabric", "libcuda", "libcupti", "libnvidia", "libamdhip", "libhsa", "libnccl",
    "librccl", "libomp", "libgomp", "libiomp", "libc.so", "libm.so", "libpthread",
    "libstdc++", "libgcc", "ld-linux", "linux-vdso", "libdl", "libunwind", "libdw",
    "libelf", "libotf2", "libpapi", "libkokkos"};

/* System folders: what lies there is not the program's own. */
static const char *const sm_scope_system_dirs[] = {"/lib/", "/lib64/", "/usr/lib/",
                                                   "/usr/lib64/", "/usr/libexec/"};

typedef struct {
    const sm_config_t *cfg;
    regex_t binary, function, binary_out, function_out;
    int have_binary, have_function, have_binary_out, have_function_out;
    int failed;
} sm_scope_ctx_t;

static int sm_scope_add(const char *name, const char *object, uintptr_t lo, uintptr_t hi)
{
    if (sm_scope_n == sm_scope_cap) {
        uint32_t cap = sm_scope_cap ? sm_scope_cap * 2 : 1024;
        sm_causal_fn_t *p = realloc(sm_scope_fns, cap * sizeof *p);
        if (!p)
            return -1;
        sm_scope_fns = p;
        sm_scope_cap = cap;
    }
    sm_scope_fns[sm_scope_n].lo = lo;
    sm_scope_fns[sm_scope_n].hi = hi;
    sm_scope_fns[sm_scope_n].name = name;
    sm_scope_fns[sm_scope_n].object = object;
    sm_scope_fns[sm_scope_n].hash = sm_causal_name_hash(name);
    sm_scope_n++;
    return 0;
}

/* Start-up and tool code that is no one's to optimise. */
static int sm_scope_ignored_name(const char *name)
{
    static const char *const skip[] = {"_start", "_init", "_fini", "frame_dummy",
                                       "register_tm_clones", "deregister_tm_clones", "main"};
    if (!name[0] || !strncmp(name, "__", 2) || !strncmp(name, "sm_", 3) ||
        !strncmp(name, "sysmeasure_", 11))
        return 1;
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
        if (!strcmp(name, skip[i]))
            return 1;
    return 0;
}

/* The function symbols of one ELF file loaded at bias. */
static void sm_scope_read_object(sm_scope_ctx_t *c, const char *path, uintptr_t bias)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    const unsigned char *base = map;
    size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    /* The full table where the file has one, else the dynamic one. */
    const Elf64_Shdr *symtab = NULL;
    for (int pass = 0; pass < 2 && !symtab; pass++)
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) {
                symtab = &sh[i];
                break;
            }
    if (!symtab || symtab->sh_link >= eh->e_shnum || symtab->sh_entsize != sizeof(Elf64_Sym))
        goto out;
    const Elf64_Shdr *strtab = &sh[symtab->sh_link];
    if (symtab->sh_offset + symtab->sh_size > size || strtab->sh_offset + strtab->sh_size > size)
        goto out;
    const Elf64_Sym *syms = (const Elf64_Sym *)(base + symtab->sh_offset);
    const char *strs = (const char *)(base + strtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
    char *object = strdup(path);
    if (!object)
        goto out;
    uint32_t before = sm_scope_n;
    for (size_t i = 0; i < nsyms; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_size == 0 ||
            s->st_shndx == SHN_UNDEF || s->st_name >= strtab->sh_size)
            continue;
        const char *name = strs + s->st_name;
        if (sm_scope_ignored_name(name) ||
            (c->have_function && regexec(&c->function, name, 0, NULL, 0) != 0) ||
            (c->have_function_out && regexec(&c->function_out, name, 0, NULL, 0) == 0))
            continue;
        char *copy = strdup(name);
        if (!copy || sm_scope_add(copy, object, bias + s->st_value,
                                  bias + s->st_value + s->st_size) != 0) {
            free(copy);
            break;
        }
    }
    if (sm_scope_n > before)
        sm_scope_n_objects++;
    else
        free(object);
out:
    munmap(map, size);
}

static int sm_scope_default_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof sm_scope_never / sizeof *sm_scope_never; i++)
        if (!strncmp(base, sm_scope_never[i], strlen(sm_scope_never[i])))
            return 0;
    for (size_t i = 0; i < sizeof sm_scope_system_dirs / sizeof *sm_scope_system_dirs; i++)
        if (!strncmp(path, sm_scope_system_dirs[i], strlen(sm_scope_system_dirs[i])))
            return 0;
    return 1;
}

static int sm_scope_object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sm_scope_ctx_t *c = arg;
    char exe[4096];
    const char *path = info->dlpi_name;
    int is_main = !path || !path[0];
    if (is_main) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 0;
        exe[n] = '\0';
        path = exe;
    }
    if (strstr(path, "linux-vdso") || strstr(path, "linux-gate"))
        return 0;
    int in = c->have_binary ? regexec(&c->binary, path, 0, NULL, 0) == 0
                            : is_main || sm_scope_default_object(path);
    if (in && c->have_binary_out && regexec(&c->binary_out, path, 0, NULL, 0) == 0)
        in = 0;
    if (in)
        sm_scope_read_object(c, path, (uintptr_t)info->dlpi_addr);
    return 0;
}

static int sm_scope_cmp(const void *a, const void *b)
{
    const sm_causal_fn_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* One regex of the configuration: 0 (*have set when given), or -1 said. */
static int sm_scope_regex(regex_t *re, int *have, const char *text, const char *option)
{
    *have = 0;
    if (!text || !text[0])
        return 0;
    int rc = regcomp(re, text, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[200];
        regerror(rc, re, why, sizeof why);
        sm_error("--%s '%s': not a regular expression (%s); causal profiling is off", option,
                 text, why);
        return -1;
    }
    *have = 1;
    return 0;
}

int sm_causal_scope_load(const sm_config_t *cfg)
{
    sm_scope_ctx_t c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    int rc = sm_scope_regex(&c.binary, &c.have_binary, cfg->causal_scope_binary,
                            "causal-scope-binary");
    if (!rc)
        rc = sm_scope_regex(&c.function, &c.have_function, cfg->causal_scope_function,
                            "causal-scope-function");
    if (!rc)
        rc = sm_scope_regex(&c.binary_out, &c.have_binary_out, cfg->causal_scope_binary_exclude,
                            "causal-scope-binary-exclude");
    if (!rc)
        rc = sm_scope_regex(&c.function_out, &c.have_function_out,
                            cfg->causal_scope_function_exclude, "causal-scope-function-exclude");
    if (!rc)
        dl_iterate_phdr(sm_scope_object_cb, &c);
    if (c.have_binary)
        regfree(&c.binary);
    if (c.have_function)
        regfree(&c.function);
    if (c.have_binary_out)
        regfree(&c.binary_out);
    if (c.have_function_out)
        regfree(&c.function_out);
    if (rc)
        return -1;
    if (!sm_scope_n) {
        sm_error("causal profiling is off: no function in scope (the program has no symbol "
                 "table, or the --causal-scope-* expressions leave nothing)");
        return -1;
    }
    qsort(sm_scope_fns, sm_scope_n, sizeof *sm_scope_fns, sm_scope_cmp);
    /* Aliases (one code, several names) and overlaps: the first keeps it. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < sm_scope_n; i++) {
        if (k && sm_scope_fns[i].lo < sm_scope_fns[k - 1].hi)
            continue;
        sm_scope_fns[k++] = sm_scope_fns[i];
    }
    sm_scope_n = k;
    return 0;
}

int32_t sm_causal_scope_find(uintptr_t pc)
{
    uint32_t lo = 0, hi = sm_scope_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sm_scope_fns[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= sm_scope_fns[lo - 1].hi)
        return -1;
    return (int32_t)(lo - 1);
}

uint64_t sm_causal_name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h ? h : 1;
}

int32_t sm_causal_scope_by_hash(uint64_t hash)
{
    for (uint32_t i = 0; i < sm_scope_n; i++)
        if (sm_scope_fns[i].hash == hash)
            return (int32_t)i;
    return -1;
}

uint32_t sm_causal_scope_count(void)
{
    return sm_scope_n;
}

const sm_causal_fn_t *sm_causal_scope_fn(uint32_t i)
{
    return i < sm_scope_n ? &sm_scope_fns[i] : NULL;
}

uint32_t sm_causal_scope_objects(void)
{
    return sm_scope_n_objects;
}
