/* Code address -> source file and line, through libdwfl (elfutils). */
#define _GNU_SOURCE
#include "srcloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sm_build.h" /* from configure: SM_HAVE_LIBDW */
#include "log.h"
#include "symbols.h"

#ifdef SM_HAVE_LIBDW
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

/* libdw (and libelf with it) is loaded at the first lookup, not linked:
 * every measured program would otherwise load and relocate them at
 * start-up, whether anything is ever looked up or not. */
#define SM_DW_FUNCTIONS(X)                                                              \
    X(dwarf_attr) X(dwarf_decl_file) X(dwarf_decl_line) X(dwarf_formstring)              \
    X(dwarf_getscopes) X(dwarf_getsrc_die) X(dwarf_haspc) X(dwarf_linecol)               \
    X(dwarf_lineno) X(dwarf_linesrc) X(dwarf_tag) X(dwfl_addrmodule) X(dwfl_begin)       \
    X(dwfl_build_id_find_debuginfo) X(dwfl_end) X(dwfl_linecu) X(dwfl_lineinfo)          \
    X(dwfl_module_addrdie) X(dwfl_module_getsrc) X(dwfl_module_nextcu)                   \
    X(dwfl_offline_section_address) X(dwfl_report_begin) X(dwfl_report_elf)              \
    X(dwfl_report_end)
static struct {
#define SM_DW_POINTER(name) __typeof__(name) *name;
    SM_DW_FUNCTIONS(SM_DW_POINTER)
#undef SM_DW_POINTER
} sm_dw;
static pthread_once_t sm_dw_once = PTHREAD_ONCE_INIT;
static int sm_dw_loaded; /* 1: every function found */

static void sm_dw_load(void)
{
    void *lib = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { /* no source lines: names fall back to function+offset */
        const char *why = dlerror();
        sm_info(1, "no source lines: libdw cannot be loaded (%s)", why ? why : "libdw.so.1");
        return;
    }
#define SM_DW_RESOLVE(name)                                                             \
    if (!(*(void **)&sm_dw.name = dlsym(lib, #name))) {                                 \
        sm_info(1, "no source lines: libdw.so.1 lacks %s", #name);                      \
        return;                                                                         \
    }
    SM_DW_FUNCTIONS(SM_DW_RESOLVE)
#undef SM_DW_RESOLVE
    sm_dw_loaded = 1;
}
/* From here on, libdw's names call through the pointers (a macro is not
 * expanded again inside its own expansion). */
#define dwarf_attr sm_dw.dwarf_attr
#define dwarf_decl_file sm_dw.dwarf_decl_file
#define dwarf_decl_line sm_dw.dwarf_decl_line
#define dwarf_formstring sm_dw.dwarf_formstring
#define dwarf_getscopes sm_dw.dwarf_getscopes
#define dwarf_getsrc_die sm_dw.dwarf_getsrc_die
#define dwarf_haspc sm_dw.dwarf_haspc
#define dwarf_linecol sm_dw.dwarf_linecol
#define dwarf_lineno sm_dw.dwarf_lineno
#define dwarf_linesrc sm_dw.dwarf_linesrc
#define dwarf_tag sm_dw.dwarf_tag
#define dwfl_addrmodule sm_dw.dwfl_addrmodule
#define dwfl_begin sm_dw.dwfl_begin
#define dwfl_end sm_dw.dwfl_end
#define dwfl_linecu sm_dw.dwfl_linecu
#define dwfl_lineinfo sm_dw.dwfl_lineinfo
#define dwfl_module_addrdie sm_dw.dwfl_module_addrdie
#define dwfl_module_getsrc sm_dw.dwfl_module_getsrc
#define dwfl_module_nextcu sm_dw.dwfl_module_nextcu
#define dwfl_report_begin sm_dw.dwfl_report_begin
#define dwfl_report_elf sm_dw.dwfl_report_elf
#define dwfl_report_end sm_dw.dwfl_report_end

/* One Dwfl per loaded object, made at its first lookup: objects loaded
 * later (dlopen) get theirs when first asked about, and an object without
 * debug information is searched once. */
typedef struct sm_srcloc_object {
    uintptr_t bias; /* the object's load bias: which object this is */
    Dwfl *dwfl;     /* NULL: the file could not be read as ELF */
} sm_srcloc_object_t;

#define SM_MAX_SRCLOC_OBJECTS 64
static pthread_mutex_t sm_srcloc_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_srcloc_object_t sm_srcloc_objects[SM_MAX_SRCLOC_OBJECTS];
static unsigned sm_srcloc_n;

/* Modules are reported with their file already open, so libdwfl never
 * needs to find one; if it asks anyway, there is none. */
static int sm_srcloc_no_elf(Dwfl_Module *mod, void **userdata, const char *modname,
                            Dwarf_Addr base, char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    return -1;
}

/* Separate debug files are looked up by build ID in the local debug folders
 * only: dwfl_standard_find_debuginfo would also ask debuginfod servers
 * (DEBUGINFOD_URLS), a download from inside the measured program. */
static char *sm_srcloc_debuginfo_path; /* NULL: libdwfl's default folders */
static Dwfl_Callbacks sm_srcloc_callbacks = { /* libdw's two: set by sm_srcloc_lookup_as */
    .find_elf = sm_srcloc_no_elf,
    .debuginfo_path = &sm_srcloc_debuginfo_path,
};

static Dwfl *sm_srcloc_open(const char *path, uintptr_t bias)
{
    Dwfl *dwfl = dwfl_begin(&sm_srcloc_callbacks);
    if (!dwfl)
        return NULL;
    /* Our descriptor rather than libdwfl's, to keep it out of the
     * program's children; the module keeps it open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Dwfl_Module *mod = NULL;
    if (fd >= 0) {
        dwfl_report_begin(dwfl);
        /* add_p_vaddr: bias is what the object's addresses are moved by */
        mod = dwfl_report_elf(dwfl, path, path, fd, bias, true);
        dwfl_report_end(dwfl, NULL, NULL);
        if (!mod) /* consumed only on success */
            close(fd);
    }
    if (!mod) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}

/* The line table row of addr (a process address) in mod, and its unit.
 * libdwfl finds the compilation unit through .debug_aranges, which clang
 * does not emit by default: without them, the unit whose address ranges
 * hold addr. */
static const char *sm_srcloc_find(Dwfl_Module *mod, Dwarf_Addr addr, int *line, int *column,
                                  Dwarf_Die **unit)
{
    Dwarf_Addr bias;
    Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
    if (l) {
        *unit = dwfl_linecu(l);
        return dwfl_lineinfo(l, NULL, line, column, NULL, NULL);
    }
    for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL;) {
        if (dwarf_haspc(cu, addr - bias) <= 0)
            continue;
        Dwarf_Line *dl = dwarf_getsrc_die(cu, addr - bias);
        if (!dl || dwarf_lineno(dl, line) != 0)
            return NULL;
        if (dwarf_linecol(dl, column) != 0)
            *column = 0;
        *unit = cu;
        return dwarf_linesrc(dl, NULL, NULL);
    }
    return NULL;
}

/* The declaration of the function whose code holds addr (DW_AT_decl_file and
 * _line, through its specification or abstract origin): where its source
 * begins, rather than the line of its first instruction. */
static const char *sm_srcloc_decl(Dwfl_Module *mod, Dwarf_Addr addr, int *line, Dwarf_Die **unit)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    if (!cu)
        for (cu = NULL; (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL;)
            if (dwarf_haspc(cu, addr - bias) > 0)
                break;
    Dwarf_Die *scopes = NULL;
    int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    const char *file = NULL;
    for (int i = 0; i < n && !file; i++) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
            continue;
        if (dwarf_decl_line(&scopes[i], line) == 0 && *line > 0)
            file = dwarf_decl_file(&scopes[i]);
        break;
    }
    free(scopes);
    if (file)
        *unit = cu;
    return file;
}

static int sm_srcloc_lookup_as(const void *addr, sm_srcloc_t *out, int decl);

int sm_srcloc_lookup(const void *addr, sm_srcloc_t *out)
{
    return sm_srcloc_lookup_as(addr, out, 0);
}

int sm_srcloc_function(const void *addr, sm_srcloc_t *out)
{
    return sm_srcloc_lookup_as(addr, out, 1);
}

static int sm_srcloc_lookup_as(const void *addr, sm_srcloc_t *out, int decl)
{
    memset(out, 0, sizeof *out);
    pthread_once(&sm_dw_once, sm_dw_load);
    if (!sm_dw_loaded)
        return -1;
    char path[PATH_MAX];
    uintptr_t bias;
    if (sm_symbol_object(addr, path, sizeof path, &bias) != 0 || !path[0])
        return -1;

    int rc = -1;
    pthread_mutex_lock(&sm_srcloc_lock); /* a Dwfl is not thread-safe */
    sm_srcloc_callbacks.find_debuginfo = sm_dw.dwfl_build_id_find_debuginfo;
    sm_srcloc_callbacks.section_address = sm_dw.dwfl_offline_section_address;
    sm_srcloc_object_t *o = NULL;
    for (unsigned i = 0; i < sm_srcloc_n && !o; i++)
        if (sm_srcloc_objects[i].bias == bias)
            o = &sm_srcloc_objects[i];
    if (!o && sm_srcloc_n < SM_MAX_SRCLOC_OBJECTS) {
        o = &sm_srcloc_objects[sm_srcloc_n++];
        o->bias = bias;
        o->dwfl = sm_srcloc_open(path, bias);
    }
    Dwfl_Module *mod = o && o->dwfl ? dwfl_addrmodule(o->dwfl, (Dwarf_Addr)(uintptr_t)addr) : NULL;
    int line = 0, column = 0;
    Dwarf_Die *unit = NULL;
    const char *file =
        mod && decl ? sm_srcloc_decl(mod, (Dwarf_Addr)(uintptr_t)addr, &line, &unit) : NULL;
    if (!file)
        file = mod ? sm_srcloc_find(mod, (Dwarf_Addr)(uintptr_t)addr, &line, &column, &unit) : NULL;
    if (file && file[0] && line > 0) {
        /* A file named relative to the compiler's folder (DWARF 5 often
         * does): made absolute, so that it names the same file anywhere. */
        Dwarf_Attribute attr;
        const char *dir = file[0] != '/' && unit
                              ? dwarf_formstring(dwarf_attr(unit, DW_AT_comp_dir, &attr))
                              : NULL;
        if (dir && dir[0])
            snprintf(out->file, sizeof out->file, "%s/%s", dir, file);
        else
            snprintf(out->file, sizeof out->file, "%s", file);
        out->line = (uint32_t)line;
        out->column = column > 0 ? (uint32_t)column : 0;
        rc = 0;
    }
    pthread_mutex_unlock(&sm_srcloc_lock);
    return rc;
}

#else /* no libdw: no source locations */

int sm_srcloc_lookup(const void *addr, sm_srcloc_t *out)
{
    (void)addr;
    memset(out, 0, sizeof *out);
    return -1;
}

int sm_srcloc_function(const void *addr, sm_srcloc_t *out)
{
    return sm_srcloc_lookup(addr, out);
}

#endif

const char *sm_srcloc_basename(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}
