/* Code address -> function name, from the dynamic symbols (dladdr) or the
 * object file's full symbol table. */
#define _GNU_SOURCE
#include "symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The .symtab of one loaded object, mapped from its file and kept for the
 * life of the process (only the pages looked at are read in). */
typedef struct sm_symtab {
    uintptr_t bias; /* the object's load bias: which object this is */
    const ElfW(Sym) *syms;
    size_t n;       /* 0: the file has no .symtab (stripped) or cannot be read */
    const char *strs;
    size_t strsz;
} sm_symtab_t;

#define SM_MAX_SYMTABS 64
static pthread_mutex_t sm_sym_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_symtab_t sm_symtabs[SM_MAX_SYMTABS];
static unsigned sm_n_symtabs;

static void sm_symtab_read(const char *path, sm_symtab_t *t)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    size_t size = (size_t)st.st_size;
    const unsigned char *base = map;
    const ElfW(Ehdr) *eh = map;
    const ElfW(Shdr) *sh = NULL;
    if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
        eh->e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
        eh->e_shentsize == sizeof(ElfW(Shdr)) && eh->e_shoff &&
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= size)
        sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
    for (unsigned i = 0; sh && i < eh->e_shnum; i++) {
        const ElfW(Shdr) *s = &sh[i];
        if (s->sh_type != SHT_SYMTAB || s->sh_link >= eh->e_shnum ||
            s->sh_entsize != sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *strs = &sh[s->sh_link];
        if (s->sh_offset + s->sh_size > size || strs->sh_offset + strs->sh_size > size ||
            !strs->sh_size)
            break;
        t->syms = (const ElfW(Sym) *)(base + s->sh_offset);
        t->n = s->sh_size / sizeof(ElfW(Sym));
        t->strs = (const char *)(base + strs->sh_offset);
        t->strsz = strs->sh_size;
        return; /* keep the mapping */
    }
    munmap(map, size);
}

/* The function of .symtab that holds rel (an address less the bias). */
static const char *sm_symtab_find(const sm_symtab_t *t, uintptr_t rel, uintptr_t *start)
{
    for (size_t i = 0; i < t->n; i++) {
        const ElfW(Sym) *s = &t->syms[i];
        unsigned type = ELF64_ST_TYPE(s->st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF ||
            !s->st_size || rel < s->st_value || rel - s->st_value >= s->st_size ||
            s->st_name >= t->strsz)
            continue;
        *start = s->st_value;
        return t->strs + s->st_name;
    }
    return NULL;
}

static void sm_symbol_demangle(const char *name, char *out, size_t len)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn demangle;
    static int looked;
    if (!looked) { /* under sm_sym_lock */
        demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked = 1;
    }
    int status = -1;
    char *d = (demangle && name[0] == '_' && name[1] == 'Z') ? demangle(name, NULL, NULL, &status)
                                                              : NULL;
    snprintf(out, len, "%s", d && status == 0 ? d : name);
    free(d);
}

static void sm_symbol_path(const struct link_map *map, char *path, size_t len)
{
    if (map->l_name && map->l_name[0])
        snprintf(path, len, "%s", map->l_name);
    else { /* the executable */
        ssize_t n = readlink("/proc/self/exe", path, len - 1);
        path[n > 0 ? n : 0] = '\0';
    }
}

int sm_symbol_object(const void *addr, char *path, size_t len, uintptr_t *bias)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!addr || !len || !dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return -1;
    sm_symbol_path(map, path, len);
    *bias = map->l_addr;
    return 0;
}

int sm_symbol_lookup(const void *addr, sm_symbol_t *out)
{
    return sm_symbol_lookup_names(addr, out, NULL, 0, NULL, 0);
}

int sm_symbol_lookup_names(const void *addr, sm_symbol_t *out, char *mangled, size_t mlen,
                           char *demangled, size_t dlen)
{
    if (mangled && mlen)
        mangled[0] = '\0';
    if (demangled && dlen)
        demangled[0] = '\0';
    memset(out, 0, sizeof *out);
    out->offset = (uintptr_t)addr;
    Dl_info info;
    struct link_map *map = NULL;
    const ElfW(Sym) *dsym = NULL;
    if (!addr || !dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return -1;
    if (!dladdr1(addr, &info, (void **)&dsym, RTLD_DL_SYMENT))
        dsym = NULL;

    char path[PATH_MAX];
    sm_symbol_path(map, path, sizeof path);
    const char *slash = strrchr(path, '/');
    snprintf(out->object, sizeof out->object, "%.*s", (int)sizeof out->object - 1,
             slash ? slash + 1 : path); /* a longer name is cut */
    out->offset = (uintptr_t)addr - map->l_addr;

    pthread_mutex_lock(&sm_sym_lock);
    const char *name = NULL;
    uintptr_t start = 0;
    /* dladdr names the nearest exported symbol below: only take it if the
     * address lies inside it. */
    if (dsym && info.dli_sname && info.dli_saddr && dsym->st_size &&
        (uintptr_t)addr - (uintptr_t)info.dli_saddr < dsym->st_size) {
        name = info.dli_sname;
        start = (uintptr_t)info.dli_saddr - map->l_addr;
    } else {
        sm_symtab_t *t = NULL;
        for (unsigned i = 0; i < sm_n_symtabs && !t; i++)
            if (sm_symtabs[i].bias == map->l_addr)
                t = &sm_symtabs[i];
        if (!t && sm_n_symtabs < SM_MAX_SYMTABS && path[0]) {
            t = &sm_symtabs[sm_n_symtabs++];
            t->bias = map->l_addr;
            sm_symtab_read(path, t);
        }
        if (t)
            name = sm_symtab_find(t, (uintptr_t)addr - map->l_addr, &start);
    }
    if (name) {
        if (mangled && mlen)
            snprintf(mangled, mlen, "%s", name);
        if (demangled && dlen)
            sm_symbol_demangle(name, demangled, dlen);
        sm_symbol_demangle(name, out->function, sizeof out->function);
        out->offset = (uintptr_t)addr - map->l_addr - start;
    }
    pthread_mutex_unlock(&sm_sym_lock);
    return 0;
}
