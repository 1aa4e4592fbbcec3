/* Compiler instrumentation: the hooks that code built with
 * -finstrument-functions calls at every function's entry and exit
 * (sysmeasure-instrument adds the option and links this library).
 *
 * Each function is resolved once, at its first call: name (demangled, the
 * mangled one kept for the filter's MANGLED rules), source file and line,
 * then the filter decides and the region is defined.  The result goes into
 * a table keyed by the function's address that the hooks read without a
 * lock, so a later call costs a hash probe and a state test before the
 * core's enter/leave; a filtered function costs only the probe.
 *
 * Throttling (throttle_*, throttle.h): a function starts "counting", and
 * after throttle_calls calls is either traced from then on or, when its
 * calls were tiny, throttled: no longer entered, only counted.
 *
 * System headers: a function whose source file lies in a system include
 * folder (/usr/include, the compilers' own) is never a region, decided at
 * its first call like the filter.  gcc leaves these functions out when
 * compiling (-finstrument-functions-exclude-file-list, which the wrapper
 * passes); clang has no such option, and inlines most of them away
 * (-finstrument-functions-after-inlining), so what is left is caught here.
 *
 * Without the launcher (the core not active) each hook is one load and a
 * branch. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler_hooks.h"
#include "throttle.h"
#include "core/clock.h"
#include "core/sig_hold.h"
#include "core/compiler.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "util/filter.h"
#include "util/log.h"
#include "util/srcloc.h"
#include "util/symbols.h"

SM_EXPORT void __cyg_profile_func_enter(void *fn, void *site);
SM_EXPORT void __cyg_profile_func_exit(void *fn, void *site);

typedef struct sm_fn {
    uintptr_t addr;       /* 0: empty slot; published last, with release */
    sm_throttle_fn_t t;   /* region, state (sm_fn_state_t), throttling */
} sm_fn_t;

#define SM_FN_BITS 17
#define SM_FN_SLOTS (1u << SM_FN_BITS)
#define SM_FN_MAX_PROBE 64

static sm_fn_t *sm_fn_table; /* calloc'ed at the first call, never moves */
static pthread_mutex_t sm_fn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t sm_fn_count, sm_fn_lost, sm_fn_system;

static inline uint32_t sm_fn_hash(uintptr_t addr)
{
    return (uint32_t)(((uint64_t)addr * 0x9E3779B97F4A7C15ull) >> (64 - SM_FN_BITS));
}

/* Lock-free: the slot of addr, or NULL when it is not in the table yet. */
static inline sm_fn_t *sm_fn_find(uintptr_t addr)
{
    sm_fn_t *t = __atomic_load_n(&sm_fn_table, __ATOMIC_ACQUIRE);
    if (SM_UNLIKELY(!t))
        return NULL;
    uint32_t i = sm_fn_hash(addr);
    for (uint32_t k = 0; k < SM_FN_MAX_PROBE; k++, i = (i + 1) & (SM_FN_SLOTS - 1)) {
        uintptr_t a = __atomic_load_n(&t[i].addr, __ATOMIC_ACQUIRE);
        if (SM_LIKELY(a == addr))
            return &t[i];
        if (!a)
            return NULL;
    }
    return NULL;
}

/* The name of a function no symbol names: its offset in its object. */
static void sm_fn_anonymous(const void *fn, const sm_symbol_t *sym, char *name, size_t len)
{
    snprintf(name, len, "0x%" PRIxPTR "@%s", (uintptr_t)sym->offset,
             sym->object[0] ? sym->object : "?");
    (void)fn;
}

/* gfortran's symbol names as the source names them: module procedures
 * __mod_MOD_name become mod::name, external procedures lose the trailing
 * underscore (only for code from Fortran source files: a C function may
 * well end in '_').  The symbol stays the mangled name for the filter. */
static void sm_fn_fortran_name(const char *file, char *name, size_t len)
{
    const char *dot = file ? strrchr(file, '.') : NULL;
    static const char *const ext[] = {".f", ".F", ".f90", ".F90", ".f95", ".F95", ".f03",
                                      ".F03", ".f08", ".F08", ".for", ".FOR", ".ftn", NULL};
    int fortran = 0;
    for (int i = 0; dot && ext[i]; i++)
        fortran |= strcmp(dot, ext[i]) == 0;
    if (!fortran)
        return;
    char *mod = strstr(name, "_MOD_");
    size_t n = strlen(name);
    if (name[0] == '_' && name[1] == '_' && mod && mod > name + 2) {
        char out[1024];
        snprintf(out, sizeof out, "%.*s::%s", (int)(mod - name - 2), name + 2, mod + 5);
        snprintf(name, len, "%s", out);
    } else if (n > 1 && name[n - 1] == '_' && name[n - 2] != '_') {
        name[n - 1] = '\0';
    }
}

/* Whether file (as the compiler recorded it: "/usr/bin/../lib/gcc/...")
 * lies in a system include folder, after resolving "." and "..". */
static int sm_fn_system_file(const char *file)
{
    static const char *const dirs[] = {"/usr/include/", "/usr/local/include/", "/usr/lib/gcc/",
                                       "/usr/lib/llvm-", "/usr/lib/clang/", "/usr/lib64/gcc/",
                                       NULL};
    if (file[0] != '/')
        return 0;
    char norm[1024];
    size_t n = 0;
    const char *p = file;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.')) {
            /* nothing */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && norm[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* the slash */
        } else {
            if (n + 1 + len + 1 >= sizeof norm)
                return 0;
            norm[n++] = '/';
            memcpy(norm + n, p, len);
            n += len;
        }
        p += len;
    }
    norm[n] = '\0';
    for (int i = 0; dirs[i]; i++)
        if (strncmp(norm, dirs[i], strlen(dirs[i])) == 0)
            return 1;
    return 0;
}

/* First call of fn: resolve, filter, define, publish. */
static SM_NOINLINE sm_fn_t *sm_fn_miss(sm_location_t *loc, void *fn)
{
    if (loc->in_compiler_hook)
        return NULL; /* the resolution itself called instrumented code */
    loc->in_compiler_hook = 1;
    int saved_errno = errno;
    uintptr_t addr = (uintptr_t)fn;
    sm_fn_t *e = NULL;
    sm_sig_hold(SM_SIG_LOCKS); /* no handler may jump out of the lock (sig_hold.h) */
    pthread_mutex_lock(&sm_fn_lock);
    if (!sm_fn_table) {
        sm_fn_t *t = calloc(SM_FN_SLOTS, sizeof *t);
        __atomic_store_n(&sm_fn_table, t, __ATOMIC_RELEASE);
    }
    if (!sm_fn_table)
        goto out;
    uint32_t i = sm_fn_hash(addr);
    uint32_t k;
    for (k = 0; k < SM_FN_MAX_PROBE; k++, i = (i + 1) & (SM_FN_SLOTS - 1)) {
        if (sm_fn_table[i].addr == addr) {
            e = &sm_fn_table[i]; /* another thread was first */
            goto out;
        }
        if (!sm_fn_table[i].addr)
            break;
    }
    if (k == SM_FN_MAX_PROBE) {
        sm_fn_lost++;
        goto out;
    }
    e = &sm_fn_table[i];

    static char mangled[4096], name[4096]; /* under sm_fn_lock */
    sm_symbol_t sym;
    sm_symbol_lookup_names(fn, &sym, mangled, sizeof mangled, name, sizeof name);
    if (!name[0])
        sm_fn_anonymous(fn, &sym, name, sizeof name);
    sm_srcloc_t src;
    int have_src = sm_srcloc_function(fn, &src) == 0;
    if (have_src && sm_fn_system_file(src.file)) {
        e->t.region = SM_INVALID_ID;
        e->t.state = SM_FN_FILTERED;
        sm_fn_count++;
        sm_fn_system++;
        __atomic_store_n(&e->addr, addr, __ATOMIC_RELEASE);
        goto out;
    }
    if (have_src)
        sm_fn_fortran_name(src.file, name, sizeof name);
    sm_region_id_t r = sm_region_define_mangled(
        name, mangled[0] && strcmp(mangled, name) != 0 ? mangled : NULL, have_src ? src.file : NULL,
        have_src ? src.line : 0, SM_PARADIGM_COMPILER, SM_ROLE_FUNCTION);
    e->t.region = r;
    e->t.state = sm_throttle_initial_state(r);
    sm_fn_count++;
    __atomic_store_n(&e->addr, addr, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&sm_fn_lock);
    sm_sig_release();
    errno = saved_errno;
    loc->in_compiler_hook = 0;
    return e;
}

/* Leave region r: the top frame, or (a frame left open when its function
 * became throttled) the frames above its innermost open frame.  A leave
 * whose enter was not recorded (measurement was off) is dropped. */
static SM_NOINLINE void sm_fn_leave_other(sm_location_t *loc, sm_region_id_t r, uint64_t t)
{
    if (loc->deep_open) { /* beyond the depth limit: matched by the count */
        sm_event_leave_top(loc, t);
        return;
    }
    for (sm_frame_t *f = loc->sp; f > loc->stack; f--)
        if (f->region == r) {
            while (loc->sp >= f)
                sm_event_leave_top(loc, t);
            return;
        }
}

static inline void sm_fn_leave(sm_location_t *loc, sm_region_id_t r, uint64_t t)
{
    if (SM_LIKELY(loc->sp->region == r && loc->sp != loc->stack))
        sm_event_leave_top(loc, t);
    else
        sm_fn_leave_other(loc, r, t);
}

static SM_NOINLINE void sm_fn_enter_slow(sm_location_t *loc, sm_fn_t *e, uint32_t state)
{
    if (state == SM_FN_FILTERED)
        return;
    if (state == SM_FN_THROTTLED) {
        sm_throttle_call(loc, &e->t);
        return;
    }
    __atomic_fetch_add(&e->t.calls, 1, __ATOMIC_RELAXED);
    sm_event_enter(loc, e->t.region, sm_clock_now());
}

static SM_NOINLINE void sm_fn_exit_slow(sm_location_t *loc, sm_fn_t *e, uint32_t state)
{
    if (state != SM_FN_COUNTING)
        return; /* throttled or filtered: nothing was entered */
    uint64_t t = sm_clock_now();
    if (loc->sp->region == e->t.region && loc->sp != loc->stack) {
        uint64_t incl = t - loc->sp->start;
        sm_event_leave_top(loc, t);
        sm_throttle_counted_leave(&e->t, incl);
    } else {
        sm_fn_leave_other(loc, e->t.region, t);
    }
}

/* The hooks test and dispatch only, ending in tail calls: the paths that
 * record nothing (not measuring, filtered, throttled) then need no stack
 * frame at all. */
static SM_NOINLINE void sm_fn_trace_enter(sm_location_t *loc, sm_region_id_t region)
{
    sm_event_enter(loc, region, sm_clock_now());
}

static SM_NOINLINE void sm_fn_trace_leave(sm_location_t *loc, sm_region_id_t region)
{
    sm_fn_leave(loc, region, sm_clock_now());
}

static SM_NOINLINE void sm_fn_enter_new(sm_location_t *loc, void *fn)
{
    sm_fn_t *e = sm_fn_miss(loc, fn);
    if (!e)
        return;
    uint32_t state = __atomic_load_n(&e->t.state, __ATOMIC_RELAXED);
    if (state == SM_FN_TRACED)
        sm_fn_trace_enter(loc, e->t.region);
    else if (state != SM_FN_FILTERED)
        sm_fn_enter_slow(loc, e, state);
}

/* A filtered function is known from the table alone: the hooks look there
 * before they fetch the thread's location. */
void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_fn_t *e = sm_fn_find((uintptr_t)fn);
    uint32_t state = e ? __atomic_load_n(&e->t.state, __ATOMIC_ACQUIRE) : SM_FN_COUNTING;
    if (state == SM_FN_FILTERED)
        return;
    sm_location_t *loc = sm_location_current();
    if (SM_UNLIKELY(!sm_measuring(loc) || loc->closed))
        return;
    if (SM_UNLIKELY(!e)) {
        sm_fn_enter_new(loc, fn);
        return;
    }
    if (SM_LIKELY(state == SM_FN_TRACED))
        sm_fn_trace_enter(loc, e->t.region);
    else if (state == SM_FN_THROTTLED)
        sm_throttle_call(loc, &e->t);
    else
        sm_fn_enter_slow(loc, e, state);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_fn_t *e = sm_fn_find((uintptr_t)fn);
    if (SM_UNLIKELY(!e))
        return;
    uint32_t state = __atomic_load_n(&e->t.state, __ATOMIC_RELAXED);
    if (state != SM_FN_TRACED && state != SM_FN_COUNTING)
        return; /* filtered or throttled: nothing was entered */
    sm_location_t *loc = sm_location_current();
    if (SM_UNLIKELY(loc->closed))
        return;
    if (SM_LIKELY(state == SM_FN_TRACED))
        sm_fn_trace_leave(loc, e->t.region);
    else
        sm_fn_exit_slow(loc, e, state);
}

/* ---------------------------------------------------------------- summary */

/* The notes of the compiler instrumentation (the throttled functions are
 * throttle.c's). */
static void sm_fn_finalize(const sm_run_info_t *run)
{
    (void)run;
    char note[256];
    pthread_mutex_lock(&sm_fn_lock);
    if (sm_fn_system) {
        snprintf(note, sizeof note, "compiler instrumentation: %u functions of system headers "
                 "not measured", sm_fn_system);
        sm_runtime_add_note(note);
    }
    if (sm_fn_lost) {
        snprintf(note, sizeof note, "compiler instrumentation: %u functions not measured "
                 "(address table full)", sm_fn_lost);
        sm_runtime_add_note(note);
    }
    pthread_mutex_unlock(&sm_fn_lock);
}

const sm_subsystem_t sm_compiler_subsystem = {
    .name = "compiler instrumentation",
    .flush = sm_fn_finalize, /* its notes */
};
