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
 * Throttling (throttle_*): a function starts "counting": its calls and
 * their inclusive time are summed; after throttle_calls calls it is either
 * traced from then on or, when its calls took less than throttle_per_call
 * us each, throttled: no longer entered, only counted.  The summary lists
 * the throttled ones and throttled.filter collects them as filter lines.
 * A throttled function gets a slot; its calls are counted per thread
 * (loc->throttled_calls[slot], a plain increment: no atomic on that path)
 * and summed at finalize.
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

enum {
    SM_FN_TRACED,    /* the common case: enter and leave */
    SM_FN_COUNTING,  /* traced, calls and time summed until throttling decides */
    SM_FN_THROTTLED, /* only counted */
    SM_FN_FILTERED,  /* left out by the filter */
};

typedef struct sm_fn {
    uintptr_t addr;       /* 0: empty slot; published last, with release */
    sm_region_id_t region;
    uint32_t state;
    uint32_t slot;        /* throttled: index into loc->throttled_calls */
    uint64_t calls;       /* while counting (and throttled beyond the slots) */
    uint64_t ticks;       /* inclusive, while counting */
} sm_fn_t;

/* Throttled functions with a per-thread counter; beyond, an atomic one. */
#define SM_FN_THROTTLE_SLOTS 1024u
static uint32_t sm_fn_n_slots;

#define SM_FN_BITS 17
#define SM_FN_SLOTS (1u << SM_FN_BITS)
#define SM_FN_MAX_PROBE 64

static sm_fn_t *sm_fn_table; /* calloc'ed at the first call, never moves */
static pthread_mutex_t sm_fn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t sm_fn_count, sm_fn_lost, sm_fn_system;
static int sm_fn_throttle = -1; /* -1 not configured yet */
static uint64_t sm_fn_throttle_calls;
static double sm_fn_throttle_ns;
/* A calibration point of our own: the clock's is only final at the end,
 * and throttling decides during the run. */
static uint64_t sm_fn_t0_ticks, sm_fn_t0_ns;

static double sm_fn_ns_per_tick(void)
{
    uint64_t ticks = sm_clock_now() - sm_fn_t0_ticks;
    uint64_t ns = sm_clock_monotonic_ns() - sm_fn_t0_ns;
    if (ns < 1000000 || !ticks) /* under 1 ms: too short to tell */
        return sm_clock_ns_per_tick();
    return (double)ns / (double)ticks;
}

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

static void sm_fn_configure(void)
{
    const sm_config_t *cfg = sm_runtime_config();
    sm_fn_throttle = cfg && cfg->throttle;
    sm_fn_throttle_calls = cfg ? (uint64_t)cfg->throttle_calls : 100000;
    sm_fn_throttle_ns = (cfg ? (double)cfg->throttle_per_call : 10.0) * 1000.0;
    sm_fn_t0_ticks = sm_clock_now();
    sm_fn_t0_ns = sm_clock_monotonic_ns();
}

static void sm_fn_finalize(const sm_run_info_t *run);

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
        if (t) {
            sm_fn_configure();
        }
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
        e->region = SM_INVALID_ID;
        e->state = SM_FN_FILTERED;
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
    e->region = r;
    e->state = r == SM_INVALID_ID || sm_region_filtered(r) ? SM_FN_FILTERED
               : sm_fn_throttle                            ? SM_FN_COUNTING
                                                           : SM_FN_TRACED;
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

/* A throttled call without the thread's counters yet (or beyond the slots). */
static SM_NOINLINE void sm_fn_count_throttled(sm_location_t *loc, sm_fn_t *e)
{
    if (!loc->throttled_calls && e->slot < SM_FN_THROTTLE_SLOTS)
        loc->throttled_calls = calloc(SM_FN_THROTTLE_SLOTS, sizeof *loc->throttled_calls);
    if (loc->throttled_calls && e->slot < SM_FN_THROTTLE_SLOTS)
        loc->throttled_calls[e->slot]++;
    else
        __atomic_fetch_add(&e->calls, 1, __ATOMIC_RELAXED);
}

static inline void sm_fn_throttled_call(sm_location_t *loc, sm_fn_t *e)
{
    uint32_t slot = e->slot;
    uint64_t *c = loc->throttled_calls;
    if (SM_LIKELY(c != NULL && slot < SM_FN_THROTTLE_SLOTS))
        c[slot]++;
    else
        sm_fn_count_throttled(loc, e);
}

static SM_NOINLINE void sm_fn_enter_slow(sm_location_t *loc, sm_fn_t *e, uint32_t state)
{
    if (state == SM_FN_FILTERED)
        return;
    if (state == SM_FN_THROTTLED) {
        sm_fn_throttled_call(loc, e);
        return;
    }
    __atomic_fetch_add(&e->calls, 1, __ATOMIC_RELAXED);
    sm_event_enter(loc, e->region, sm_clock_now());
}

static SM_NOINLINE void sm_fn_exit_slow(sm_location_t *loc, sm_fn_t *e, uint32_t state)
{
    if (state != SM_FN_COUNTING)
        return; /* throttled or filtered: nothing was entered */
    uint64_t t = sm_clock_now();
    if (loc->sp->region == e->region && loc->sp != loc->stack) {
        uint64_t incl = t - loc->sp->start;
        sm_event_leave_top(loc, t);
        uint64_t ticks = __atomic_add_fetch(&e->ticks, incl, __ATOMIC_RELAXED);
        uint64_t calls = __atomic_load_n(&e->calls, __ATOMIC_RELAXED);
        if (calls >= sm_fn_throttle_calls) {
            /* Once per function: the clock can be read, the lock taken
             * (the slot is set before the state that makes it read). */
            double per_call_ns = (double)ticks * sm_fn_ns_per_tick() / (double)calls;
            uint32_t verdict = per_call_ns < sm_fn_throttle_ns ? SM_FN_THROTTLED : SM_FN_TRACED;
            pthread_mutex_lock(&sm_fn_lock);
            if (e->state == SM_FN_COUNTING) {
                if (verdict == SM_FN_THROTTLED)
                    e->slot = sm_fn_n_slots++;
                __atomic_store_n(&e->state, verdict, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&sm_fn_lock);
        }
    } else {
        sm_fn_leave_other(loc, e->region, t);
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
    uint32_t state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
    if (state == SM_FN_TRACED)
        sm_fn_trace_enter(loc, e->region);
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
    uint32_t state = e ? __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) : SM_FN_COUNTING;
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
        sm_fn_trace_enter(loc, e->region);
    else if (state == SM_FN_THROTTLED)
        sm_fn_throttled_call(loc, e);
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
    uint32_t state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
    if (state != SM_FN_TRACED && state != SM_FN_COUNTING)
        return; /* filtered or throttled: nothing was entered */
    sm_location_t *loc = sm_location_current();
    if (SM_UNLIKELY(loc->closed))
        return;
    if (SM_LIKELY(state == SM_FN_TRACED))
        sm_fn_trace_leave(loc, e->region);
    else
        sm_fn_exit_slow(loc, e, state);
}

/* ---------------------------------------------------------------- summary */

/* The throttled functions: notes for the summary (the first few, each with
 * its filter line) and throttled.filter in the output folder (all). */
static void sm_fn_finalize(const sm_run_info_t *run)
{
    pthread_mutex_lock(&sm_fn_lock);
    if (!sm_fn_table) {
        pthread_mutex_unlock(&sm_fn_lock);
        return;
    }
    uint32_t n = 0;
    FILE *fp = NULL;
    char path[4200], note[8400], pattern[8200];
    double ns_per_tick = sm_fn_ns_per_tick();
    for (uint32_t i = 0; i < SM_FN_SLOTS; i++) {
        sm_fn_t *e = &sm_fn_table[i];
        if (!e->addr || __atomic_load_n(&e->state, __ATOMIC_RELAXED) != SM_FN_THROTTLED)
            continue;
        const char *name = sm_region_name(e->region);
        sm_filter_escape(name, pattern, sizeof pattern);
        uint64_t calls = __atomic_load_n(&e->calls, __ATOMIC_RELAXED);
        for (uint32_t l = 0, nl = sm_location_count(); l < nl && e->slot < SM_FN_THROTTLE_SLOTS;
             l++) {
            const uint64_t *c = sm_location_get(l)->throttled_calls;
            calls += c ? c[e->slot] : 0;
        }
        double us = sm_fn_throttle_calls
                        ? (double)e->ticks * ns_per_tick / 1000.0 / (double)sm_fn_throttle_calls
                        : 0.0;
        if (n < 4) {
            snprintf(note, sizeof note, "throttled: %s (%" PRIu64 " calls, %.3g us per call; "
                     "traced for its first %" PRIu64 "); filter line: EXCLUDE %s", name, calls,
                     us, sm_fn_throttle_calls, pattern);
            sm_runtime_add_note(note);
        }
        if (!fp && run->output_dir) {
            char err[256];
            if (sm_runtime_make_output_dir(err, sizeof err) == 0) {
                if (run->n_ranks > 1 || run->rank)
                    snprintf(path, sizeof path, "%s/throttled.%u.filter", run->output_dir,
                             (unsigned)run->rank);
                else
                    snprintf(path, sizeof path, "%s/throttled.filter", run->output_dir);
                fp = fopen(path, "w");
                if (fp)
                    fprintf(fp, "# functions sysmeasure throttled (more than %" PRIu64
                            " calls at less than %.3g us per call); use with --filter\n"
                            "SCOREP_REGION_NAMES_BEGIN\n",
                            sm_fn_throttle_calls, sm_fn_throttle_ns / 1000.0);
                else
                    sm_warning("cannot write %s: %s", path, strerror(errno));
            }
        }
        if (fp)
            fprintf(fp, "  EXCLUDE %s\n", pattern);
        n++;
    }
    if (fp) {
        fprintf(fp, "SCOREP_REGION_NAMES_END\n");
        fclose(fp);
    }
    if (n > 4) {
        snprintf(note, sizeof note, "throttled: %u more functions (all in throttled.filter)",
                 n - 4);
        sm_runtime_add_note(note);
    }
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
    .flush = sm_fn_finalize, /* the functions' names and the filter note */
};
