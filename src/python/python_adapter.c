/* Python functions as regions.
 *
 * One build serves every CPython from 3.9 on: nothing here includes
 * Python.h or links libpython.  The C API is found at run time (dlsym in
 * the process: the python executable exports it, or the libpython it
 * links), and only the stable parts of it are used: functions, the
 * Py_tracefunc signature and its what codes, PyMethodDef.
 *
 * Getting in.  At start-up (our constructor runs before the interpreter's
 * main) an audit hook is added (PySys_AddAuditHook, which may be called
 * before Py_Initialize and survives it).  The interpreter raises
 * "cpython.run_file" (run_command, run_module, run_stdin, ...) once it is
 * initialised, site and all, right before it runs the program: there the
 * hooks are installed, with the GIL held, on the main thread.  Nothing on
 * PYTHONPATH, no sitecustomize, so -I, -S and virtual environments work,
 * and the interpreter's start-up (site, .pth files) is not measured.
 *
 * The hooks.  From 3.12, sys.monitoring (a tool id of our own, C callbacks
 * made with PyCFunction_NewEx): PY_START and PY_RESUME enter, PY_RETURN,
 * PY_YIELD and PY_UNWIND leave, PY_THROW enters (a generator resumed by
 * throw() or close()); it covers every thread, costs only the events asked
 * for, and a filtered function returns DISABLE, after which it costs
 * nothing.  Up to 3.11, the profile hook (PyEval_SetProfile) of each
 * thread: CALL enters, RETURN leaves (also on an exception and at a
 * yield); threads started later get it from a wrapper of
 * _thread.start_new_thread (which threading uses), set before the thread's
 * function runs.  Built-in functions (python_c_calls): C_CALL/C_RETURN/
 * C_EXCEPTION up to 3.11, CALL/C_RETURN/C_RAISE from 3.12.
 *
 * The hot path.  Each code object (each built-in function) is resolved
 * once, at its first call: qualified name (co_qualname from 3.11, else
 * co_name), file, first line, its module for the module rules, then the
 * region filter and throttling decide.  The result goes into a table keyed
 * by the object's address that the callbacks read without a lock; the
 * table keeps a reference to the object, so its address is never reused.
 * Each thread keeps a shadow stack of the Python frames it saw start (the
 * key and whether a region was entered), so that every leave matches its
 * own enter whatever happened in between: measurement switched off, the
 * function throttled, frames that began before the hooks were installed
 * (their returns find an empty stack and are ignored). */
#define _GNU_SOURCE
#include "python_adapter.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/throttle.h"
#include "../core/clock.h"
#include "../core/config.h"
#include "../core/definitions.h"
#include "../core/events.h"
#include "../core/location.h"
#include "../core/runtime.h"
#include "../core/sig_hold.h"
#include "../util/log.h"
#include "module_rules.h"

/* ---------------------------------------------------------------- the C API, found at run time */

typedef struct sm_pyobj sm_pyobj_t; /* PyObject, never looked into */
typedef intptr_t sm_py_ssize_t;
typedef int (*sm_py_tracefunc)(sm_pyobj_t *obj, void *frame, int what, sm_pyobj_t *arg);
typedef sm_pyobj_t *(*sm_py_fastcall)(sm_pyobj_t *self, sm_pyobj_t *const *args,
                                      sm_py_ssize_t nargs);
typedef sm_pyobj_t *(*sm_py_varargs)(sm_pyobj_t *self, sm_pyobj_t *args);

/* PyMethodDef, part of the stable ABI. */
typedef struct sm_py_methoddef {
    const char *ml_name;
    void *ml_meth;
    int ml_flags;
    const char *ml_doc;
} sm_py_methoddef_t;

#define SM_PY_METH_VARARGS 0x0001
#define SM_PY_METH_FASTCALL 0x0080

/* Py_tracefunc's what codes (stable since 3.8). */
enum {
    SM_PYTRACE_CALL = 0,
    SM_PYTRACE_RETURN = 3,
    SM_PYTRACE_C_CALL = 4,
    SM_PYTRACE_C_EXCEPTION = 5,
    SM_PYTRACE_C_RETURN = 6,
};

#define SM_PY_FUNCTIONS(X)                                                                    \
    X(const char *, Py_GetVersion, (void), 1)                                                 \
    X(int, PySys_AddAuditHook, (int (*)(const char *, sm_pyobj_t *, void *), void *), 1)      \
    X(sm_pyobj_t *, PyImport_ImportModule, (const char *), 1)                                 \
    X(sm_pyobj_t *, PyObject_GetAttrString, (sm_pyobj_t *, const char *), 1)                  \
    X(int, PyObject_SetAttrString, (sm_pyobj_t *, const char *, sm_pyobj_t *), 1)             \
    X(sm_pyobj_t *, PyObject_CallFunction, (sm_pyobj_t *, const char *, ...), 1)              \
    X(sm_pyobj_t *, PyObject_Call, (sm_pyobj_t *, sm_pyobj_t *, sm_pyobj_t *), 1)             \
    X(int, PyCallable_Check, (sm_pyobj_t *), 1)                                               \
    X(sm_pyobj_t *, PyCFunction_NewEx, (sm_py_methoddef_t *, sm_pyobj_t *, sm_pyobj_t *), 1)  \
    X(const char *, PyUnicode_AsUTF8, (sm_pyobj_t *), 1)                                      \
    X(long, PyLong_AsLong, (sm_pyobj_t *), 1)                                                 \
    X(sm_py_ssize_t, PyTuple_Size, (sm_pyobj_t *), 1)                                         \
    X(sm_pyobj_t *, PyTuple_GetItem, (sm_pyobj_t *, sm_py_ssize_t), 1)                        \
    X(sm_py_ssize_t, PyDict_Size, (sm_pyobj_t *), 1)                                          \
    X(sm_pyobj_t *, PyDict_GetItemString, (sm_pyobj_t *, const char *), 1)                    \
    X(sm_pyobj_t *, PyEval_GetGlobals, (void), 1)                                             \
    X(void, PyErr_Clear, (void), 1)                                                           \
    X(void, Py_IncRef, (sm_pyobj_t *), 1)                                                     \
    X(void, Py_DecRef, (sm_pyobj_t *), 1)                                                     \
    X(void, PyEval_SetProfile, (sm_py_tracefunc, sm_pyobj_t *), 1)                            \
    X(sm_pyobj_t *, PyFrame_GetCode, (void *), 1)                                             \
    X(sm_pyobj_t *, PyObject_Type, (sm_pyobj_t *), 1)                                         \
    X(void *, PyCFunction_GetFunction, (sm_pyobj_t *), 1)                                     \
    X(void *, PyInterpreterState_Get, (void), 0)                                              \
    X(void *, PyInterpreterState_ThreadHead, (void *), 0)                                     \
    X(void *, PyThreadState_Next, (void *), 0)                                                \
    X(void *, PyThreadState_Get, (void), 0)                                                   \
    X(int, _PyEval_SetProfile, (void *, sm_py_tracefunc, sm_pyobj_t *), 0)

static struct {
#define SM_PY_FIELD(ret, name, args, needed) ret(*name) args;
    SM_PY_FUNCTIONS(SM_PY_FIELD)
#undef SM_PY_FIELD
    /* Objects: data symbols. */
    sm_pyobj_t *None;
    sm_pyobj_t *cfunction_type, *cmethod_type, *methoddescr_type;
} sm_py;

/* ---------------------------------------------------------------- state */

typedef enum sm_py_phase {
    SM_PY_OFF,      /* not a Python process, or not wanted */
    SM_PY_WAITING,  /* the audit hook waits for the program to start */
    SM_PY_ON,       /* the hooks are installed */
} sm_py_phase_t;

typedef enum sm_py_mechanism {
    SM_PY_PROFILE,    /* PyEval_SetProfile per thread (3.9 to 3.11) */
    SM_PY_MONITORING, /* sys.monitoring (3.12 on) */
} sm_py_mechanism_t;

static volatile int sm_py_phase = SM_PY_OFF;
static sm_py_mechanism_t sm_py_mechanism;
static int sm_py_major, sm_py_minor;
static bool sm_py_c_calls;
static sm_py_rules_t *sm_py_rules;
static sm_pyobj_t *sm_py_disable; /* sys.monitoring.DISABLE */
static sm_pyobj_t *sm_py_start_thread_orig; /* _thread.start_new_thread */
static int sm_py_tool_id = -1;
static char sm_py_problem[256]; /* why the hooks are not installed, for the note */

/* ---------------------------------------------------------------- the function table */

typedef struct sm_py_fn {
    uintptr_t key;        /* 0: empty slot; published last, with release */
    sm_throttle_fn_t t;   /* region, state (sm_fn_state_t), throttling */
} sm_py_fn_t;

#define SM_PY_BITS 17
#define SM_PY_SLOTS (1u << SM_PY_BITS)
#define SM_PY_MAX_PROBE 64

static sm_py_fn_t *sm_py_table; /* calloc'ed at the first call, never moves */
static pthread_mutex_t sm_py_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t sm_py_count, sm_py_lost, sm_py_left_out;

static inline uint32_t sm_py_hash(uintptr_t key)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - SM_PY_BITS));
}

/* Lock-free: the entry of key, or NULL when it is not in the table yet. */
static inline sm_py_fn_t *sm_py_find(uintptr_t key)
{
    sm_py_fn_t *t = __atomic_load_n(&sm_py_table, __ATOMIC_ACQUIRE);
    if (SM_UNLIKELY(!t))
        return NULL;
    uint32_t i = sm_py_hash(key);
    for (uint32_t k = 0; k < SM_PY_MAX_PROBE; k++, i = (i + 1) & (SM_PY_SLOTS - 1)) {
        uintptr_t a = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);
        if (SM_LIKELY(a == key))
            return &t[i];
        if (!a)
            return NULL;
    }
    return NULL;
}

/* ---------------------------------------------------------------- the threads' shadow stacks */

typedef enum sm_py_kind {
    SM_PY_FRAME,  /* a Python function's frame */
    SM_PY_CCALL,  /* a call of a built-in function */
} sm_py_kind_t;

typedef struct sm_py_frame {
    uintptr_t key;
    sm_py_fn_t *fn;   /* NULL: not in the table (full) */
    uint8_t entered;  /* a region was entered for it */
    uint8_t kind;     /* sm_py_kind_t */
} sm_py_frame_t;

typedef struct sm_py_thread {
    uint32_t depth, cap;
    uint64_t overflow; /* frames beyond the largest stack: counted */
    sm_py_frame_t *stack;
} sm_py_thread_t;

#define SM_PY_STACK_MAX (1u << 20)

static SM_TLS sm_py_thread_t *sm_py_self;
static SM_TLS uint8_t sm_py_resolving; /* in a first call's resolution */
static pthread_key_t sm_py_thread_key;

static void sm_py_thread_free(void *p)
{
    sm_py_thread_t *th = p;
    if (th == sm_py_self)
        sm_py_self = NULL;
    free(th->stack);
    free(th);
}

/* A frame pushed beyond the thread's stack: the stack made (or grown),
 * or the frame only counted.  NULL when counted. */
static SM_NOINLINE sm_py_frame_t *sm_py_push_slow(void)
{
    int saved_errno = errno;
    sm_py_thread_t *th = sm_py_self;
    if (!th) {
        th = calloc(1, sizeof *th);
        if (!th) {
            errno = saved_errno;
            return NULL; /* this thread's frames stay unmeasured */
        }
        sm_py_self = th;
        pthread_setspecific(sm_py_thread_key, th);
    }
    if (th->depth == th->cap && th->cap < SM_PY_STACK_MAX && !th->overflow) {
        uint32_t cap = th->cap ? 2 * th->cap : 256;
        sm_py_frame_t *s = realloc(th->stack, cap * sizeof *s);
        if (s) {
            th->stack = s;
            th->cap = cap;
        }
    }
    errno = saved_errno;
    if (th->depth < th->cap && !th->overflow)
        return &th->stack[th->depth++];
    th->overflow++;
    return NULL;
}

static inline sm_py_frame_t *sm_py_push(void)
{
    sm_py_thread_t *th = sm_py_self;
    if (SM_LIKELY(th && th->depth < th->cap))
        return &th->stack[th->depth++];
    return sm_py_push_slow();
}

/* ---------------------------------------------------------------- first call: resolve */

static const char *sm_py_str(sm_pyobj_t *s)
{
    const char *u = s ? sm_py.PyUnicode_AsUTF8(s) : NULL;
    if (!u)
        sm_py.PyErr_Clear(); /* not a str, or one with lone surrogates */
    return u;
}

static sm_pyobj_t *sm_py_attr(sm_pyobj_t *o, const char *name)
{
    sm_pyobj_t *a = sm_py.PyObject_GetAttrString(o, name);
    if (!a)
        sm_py.PyErr_Clear();
    return a;
}

/* The module the running code belongs to (its frame's globals' __name__:
 * the callbacks run while the function's frame is the current one). */
static const char *sm_py_current_module(void)
{
    sm_pyobj_t *g = sm_py.PyEval_GetGlobals();
    sm_pyobj_t *name = g ? sm_py.PyDict_GetItemString(g, "__name__") : NULL;
    return name ? sm_py_str(name) : NULL;
}

/* sysmeasure's own module (the user API): never a region, so that its
 * regions open and close where the program's code does. */
static bool sm_py_own_module(const char *module)
{
    return module && !strncmp(module, "sysmeasure", 10) && (!module[10] || module[10] == '.');
}

/* Why a function is not a region. */
typedef enum sm_py_left_out {
    SM_PY_KEPT,
    SM_PY_OWN,       /* sysmeasure's module */
    SM_PY_BY_RULES,  /* python_modules */
} sm_py_left_out_t;

static sm_py_left_out_t sm_py_decide(const char *module, const char *file)
{
    if (sm_py_own_module(module))
        return SM_PY_OWN;
    return sm_py_rules_exclude(sm_py_rules, module, file) ? SM_PY_BY_RULES : SM_PY_KEPT;
}

/* The region of a code object: SM_INVALID_ID when left out. */
static sm_region_id_t sm_py_define_code(sm_pyobj_t *code, sm_py_left_out_t *left_out)
{
    sm_pyobj_t *name = sm_py_attr(code, "co_qualname"); /* 3.11 on */
    if (!name)
        name = sm_py_attr(code, "co_name");
    sm_pyobj_t *file = sm_py_attr(code, "co_filename");
    sm_pyobj_t *line = sm_py_attr(code, "co_firstlineno");
    const char *n = sm_py_str(name), *f = sm_py_str(file);
    long l = line ? sm_py.PyLong_AsLong(line) : 0;
    if (l < 0) {
        sm_py.PyErr_Clear();
        l = 0;
    }
    const char *module = sm_py_current_module();
    sm_region_id_t r = SM_INVALID_ID;
    *left_out = sm_py_decide(module, f);
    if (*left_out == SM_PY_KEPT)
        r = sm_region_define(n ? n : "?", f && f[0] ? f : NULL, (uint32_t)l, SM_PARADIGM_PYTHON,
                             SM_ROLE_FUNCTION);
    if (name)
        sm_py.Py_DecRef(name);
    if (file)
        sm_py.Py_DecRef(file);
    if (line)
        sm_py.Py_DecRef(line);
    return r;
}

/* The region of a built-in function: module.name (builtins' without the
 * module), or a method's type.name. */
static sm_region_id_t sm_py_define_builtin(sm_pyobj_t *fn, sm_py_left_out_t *left_out)
{
    sm_pyobj_t *name = sm_py_attr(fn, "__qualname__");
    if (!name)
        name = sm_py_attr(fn, "__name__");
    sm_pyobj_t *mod = sm_py_attr(fn, "__module__");
    const char *n = sm_py_str(name), *m = mod ? sm_py_str(mod) : NULL;
    char full[1024];
    if (m && strcmp(m, "builtins") != 0)
        snprintf(full, sizeof full, "%s.%s", m, n ? n : "?");
    else
        snprintf(full, sizeof full, "%s", n ? n : "?");
    sm_region_id_t r = SM_INVALID_ID;
    *left_out = sm_py_decide(m, NULL);
    if (*left_out == SM_PY_KEPT)
        r = sm_region_define(full, NULL, 0, SM_PARADIGM_PYTHON, SM_ROLE_FUNCTION);
    if (name)
        sm_py.Py_DecRef(name);
    if (mod)
        sm_py.Py_DecRef(mod);
    return r;
}

/* First call of key (obj: the code object or the built-in): resolve,
 * decide, publish.  NULL when it cannot be measured (table full, or a
 * call made by the resolution itself). */
static SM_NOINLINE sm_py_fn_t *sm_py_miss(uintptr_t key, sm_pyobj_t *obj, sm_py_kind_t kind)
{
    if (sm_py_resolving)
        return NULL;
    sm_py_resolving = 1;
    int saved_errno = errno;
    /* The interpreter is asked outside the lock (it may run a finalizer,
     * which calls back here). */
    sm_py_left_out_t left_out = SM_PY_KEPT;
    sm_region_id_t r = kind == SM_PY_FRAME ? sm_py_define_code(obj, &left_out)
                                           : sm_py_define_builtin(obj, &left_out);
    sm_py_fn_t *e = NULL;
    bool added = false;
    sm_sig_hold(SM_SIG_LOCKS); /* no handler may jump out of the lock (sig_hold.h) */
    pthread_mutex_lock(&sm_py_lock);
    if (!sm_py_table)
        __atomic_store_n(&sm_py_table, calloc(SM_PY_SLOTS, sizeof *sm_py_table),
                         __ATOMIC_RELEASE);
    if (!sm_py_table)
        goto out;
    uint32_t i = sm_py_hash(key), k;
    for (k = 0; k < SM_PY_MAX_PROBE; k++, i = (i + 1) & (SM_PY_SLOTS - 1)) {
        if (sm_py_table[i].key == key) {
            e = &sm_py_table[i]; /* another thread was first */
            goto out;
        }
        if (!sm_py_table[i].key)
            break;
    }
    if (k == SM_PY_MAX_PROBE) {
        sm_py_lost++;
        goto out;
    }
    e = &sm_py_table[i];
    e->t.region = r;
    e->t.state = left_out != SM_PY_KEPT ? SM_FN_FILTERED : sm_throttle_initial_state(r);
    sm_py_count += left_out != SM_PY_OWN;
    sm_py_left_out += left_out == SM_PY_BY_RULES;
    __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
    added = true;
out:
    pthread_mutex_unlock(&sm_py_lock);
    sm_sig_release();
    if (added && kind == SM_PY_FRAME)
        sm_py.Py_IncRef(obj); /* its address stays this code's */
    if (added && kind == SM_PY_CCALL && key == (uintptr_t)obj)
        sm_py.Py_IncRef(obj); /* a method descriptor, keyed by itself */
    errno = saved_errno;
    sm_py_resolving = 0;
    return e;
}

/* ---------------------------------------------------------------- enter and leave */

typedef enum sm_py_verdict {
    SM_PY_GO_ON,   /* the callback returns None */
    SM_PY_DISABLE, /* ... sys.monitoring.DISABLE: this place is never reported again */
} sm_py_verdict_t;

/* A frame (or built-in call) starts. */
static inline sm_py_verdict_t sm_py_start(uintptr_t key, sm_pyobj_t *obj, sm_py_kind_t kind)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return SM_PY_GO_ON;
    sm_py_fn_t *e = sm_py_find(key);
    if (SM_UNLIKELY(!e))
        e = sm_py_miss(key, obj, kind);
    uint32_t state = e ? __atomic_load_n(&e->t.state, __ATOMIC_ACQUIRE) : SM_FN_FILTERED;
    if (e && state == SM_FN_FILTERED)
        return SM_PY_DISABLE; /* never pushed: none of its leaves finds it */
    sm_py_frame_t *f = sm_py_push();
    if (SM_UNLIKELY(!f))
        return SM_PY_GO_ON; /* beyond the stack: counted, matched by the count */
    f->key = key;
    f->fn = e;
    f->entered = 0;
    f->kind = (uint8_t)kind;
    if (SM_UNLIKELY(!e))
        return SM_PY_GO_ON;
    sm_location_t *loc = sm_location_current();
    if (SM_UNLIKELY(!sm_measuring(loc) || loc->closed))
        return SM_PY_GO_ON;
    if (SM_LIKELY(state == SM_FN_TRACED)) {
        if (!sm_event_enter_fast(loc, e->t.region))
            sm_event_enter(loc, e->t.region, sm_clock_now());
        f->entered = 1;
    } else if (state == SM_FN_THROTTLED) {
        sm_throttle_call(loc, &e->t);
    } else { /* counting */
        __atomic_fetch_add(&e->t.calls, 1, __ATOMIC_RELAXED);
        sm_event_enter(loc, e->t.region, sm_clock_now());
        f->entered = 1;
    }
    return SM_PY_GO_ON;
}

/* Leave the region of frame f (entered): the top of the location's
 * stack, or, when regions opened inside were left open (a user region),
 * those too. */
static inline void sm_py_leave(const sm_py_frame_t *f)
{
    sm_location_t *loc = sm_location_current();
    if (SM_UNLIKELY(loc->closed))
        return;
    sm_py_fn_t *e = f->fn;
    sm_region_id_t r = e->t.region;
    bool top = loc->sp->region == r && loc->sp != loc->stack;
    /* The clock after the loads of the checks (events.h says why). */
    uint64_t t = top ? sm_clock_tsc_or_zero() : 0;
    if (SM_LIKELY(t && __atomic_load_n(&e->t.state, __ATOMIC_RELAXED) == SM_FN_TRACED &&
                  sm_event_leave_top_fast(loc, t)))
        return;
    if (!t)
        t = sm_clock_now();
    if (SM_LIKELY(top)) {
        uint64_t incl = t - loc->sp->start;
        sm_event_leave_top(loc, t);
        if (SM_UNLIKELY(__atomic_load_n(&e->t.state, __ATOMIC_RELAXED) == SM_FN_COUNTING))
            sm_throttle_counted_leave(&e->t, incl);
    } else {
        sm_event_leave(loc, r, t);
    }
}

static SM_NOINLINE sm_py_verdict_t sm_py_stop_other(sm_py_thread_t *th, uintptr_t key,
                                                   sm_py_kind_t kind)
{
    if (th && th->overflow) {
        th->overflow--;
        return SM_PY_GO_ON;
    }
    /* Built-in calls left open above a Python frame that ends (a C_RETURN
     * that never came) end with it. */
    if (th && kind == SM_PY_FRAME) {
        uint32_t d = th->depth;
        while (d > 0 && th->stack[d - 1].kind == SM_PY_CCALL && th->stack[d - 1].key != key)
            d--;
        if (d > 0 && d < th->depth && th->stack[d - 1].key == key) {
            while (th->depth >= d) {
                sm_py_frame_t *f = &th->stack[--th->depth];
                if (f->entered)
                    sm_py_leave(f);
            }
            return SM_PY_GO_ON;
        }
    }
    /* A frame that began before the hooks, or a filtered function's first
     * leave at this place. */
    sm_py_fn_t *e = sm_py_find(key);
    return e && __atomic_load_n(&e->t.state, __ATOMIC_RELAXED) == SM_FN_FILTERED ? SM_PY_DISABLE
                                                                                  : SM_PY_GO_ON;
}

/* A frame (or built-in call) ends. */
static inline sm_py_verdict_t sm_py_stop(uintptr_t key, sm_py_kind_t kind)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return SM_PY_GO_ON;
    sm_py_thread_t *th = sm_py_self;
    if (SM_UNLIKELY(!th || !th->depth || th->overflow || th->stack[th->depth - 1].key != key))
        return sm_py_stop_other(th, key, kind);
    sm_py_frame_t *f = &th->stack[--th->depth];
    if (f->entered)
        sm_py_leave(f);
    return SM_PY_GO_ON;
}

/* ---------------------------------------------------------------- built-in calls */

/* The key of a built-in callable: its C function (a bound built-in method
 * is made anew for many calls, its function is not), a method descriptor
 * itself; 0 for anything else (Python functions, classes, ...). */
static uintptr_t sm_py_builtin_key(sm_pyobj_t *callable)
{
    sm_pyobj_t *type = sm_py.PyObject_Type(callable);
    if (!type) {
        sm_py.PyErr_Clear();
        return 0;
    }
    sm_py.Py_DecRef(type); /* a type outlives its instances */
    if (type == sm_py.cfunction_type || (type == sm_py.cmethod_type && type)) {
        void *fn = sm_py.PyCFunction_GetFunction(callable);
        if (!fn)
            sm_py.PyErr_Clear();
        return (uintptr_t)fn;
    }
    if (type == sm_py.methoddescr_type && type)
        return (uintptr_t)callable;
    return 0;
}

static SM_NOINLINE void sm_py_builtin_start(sm_pyobj_t *callable)
{
    uintptr_t key = sm_py_builtin_key(callable);
    if (key)
        (void)sm_py_start(key, callable, SM_PY_CCALL);
}

static SM_NOINLINE void sm_py_builtin_stop(sm_pyobj_t *callable)
{
    uintptr_t key = sm_py_builtin_key(callable);
    if (key)
        (void)sm_py_stop(key, SM_PY_CCALL);
}

/* ---------------------------------------------------------------- up to 3.11: the profile hook */

static int sm_py_profile(sm_pyobj_t *obj, void *frame, int what, sm_pyobj_t *arg)
{
    (void)obj;
    switch (what) {
    case SM_PYTRACE_CALL:
    case SM_PYTRACE_RETURN: {
        /* A new reference; the frame keeps the code alive meanwhile. */
        sm_pyobj_t *code = sm_py.PyFrame_GetCode(frame);
        if (SM_UNLIKELY(!code))
            break;
        sm_py.Py_DecRef(code);
        if (what == SM_PYTRACE_CALL)
            (void)sm_py_start((uintptr_t)code, code, SM_PY_FRAME);
        else
            (void)sm_py_stop((uintptr_t)code, SM_PY_FRAME);
        break;
    }
    case SM_PYTRACE_C_CALL:
        if (sm_py_c_calls && arg)
            sm_py_builtin_start(arg);
        break;
    case SM_PYTRACE_C_RETURN:
    case SM_PYTRACE_C_EXCEPTION:
        if (sm_py_c_calls && arg)
            sm_py_builtin_stop(arg);
        break;
    default:
        break;
    }
    return 0;
}

/* A thread started by _thread.start_new_thread (threading's too): the
 * profile hook, then the thread's function.  self: the caller's
 * (function, args[, kwargs]). */
static sm_pyobj_t *sm_py_thread_boot(sm_pyobj_t *self, sm_pyobj_t *unused)
{
    (void)unused;
    if (sm_py_phase == SM_PY_ON && sm_runtime_active)
        sm_py.PyEval_SetProfile(sm_py_profile, NULL);
    sm_pyobj_t *fn = sm_py.PyTuple_GetItem(self, 0);
    sm_pyobj_t *args = sm_py.PyTuple_GetItem(self, 1);
    sm_pyobj_t *kwargs = sm_py.PyTuple_Size(self) > 2 ? sm_py.PyTuple_GetItem(self, 2) : NULL;
    if (!fn || !args)
        return NULL; /* cannot be: checked when the thread was started */
    return sm_py.PyObject_Call(fn, args, kwargs);
}

static sm_py_methoddef_t sm_py_thread_boot_def = {
    "sysmeasure_thread", (void *)sm_py_thread_boot, SM_PY_METH_VARARGS,
    "Runs a thread's function with sysmeasure's profile hook."};

/* _thread.start_new_thread(function, args[, kwargs]), ours: the same
 * thread, its function run by sm_py_thread_boot.  Arguments the original
 * would refuse go to it unchanged, for its own error. */
static sm_pyobj_t *sm_py_start_thread(sm_pyobj_t *self, sm_pyobj_t *a)
{
    (void)self;
    sm_py_ssize_t n = sm_py.PyTuple_Size(a);
    sm_pyobj_t *fn = n >= 2 ? sm_py.PyTuple_GetItem(a, 0) : NULL;
    sm_pyobj_t *args = n >= 2 ? sm_py.PyTuple_GetItem(a, 1) : NULL;
    sm_pyobj_t *kwargs = n == 3 ? sm_py.PyTuple_GetItem(a, 2) : NULL;
    bool ok = (n == 2 || n == 3) && fn && args && sm_py.PyCallable_Check(fn) &&
              sm_py.PyTuple_Size(args) >= 0 && (!kwargs || sm_py.PyDict_Size(kwargs) >= 0);
    sm_py.PyErr_Clear();
    sm_pyobj_t *boot = ok ? sm_py.PyCFunction_NewEx(&sm_py_thread_boot_def, a, NULL) : NULL;
    if (!boot) {
        sm_py.PyErr_Clear();
        return sm_py.PyObject_Call(sm_py_start_thread_orig, a, NULL);
    }
    sm_pyobj_t *r = sm_py.PyObject_CallFunction(sm_py_start_thread_orig, "O()", boot);
    sm_py.Py_DecRef(boot);
    return r;
}

static sm_py_methoddef_t sm_py_start_thread_def = {
    "start_new_thread", (void *)sm_py_start_thread, SM_PY_METH_VARARGS,
    "start_new_thread(function, args[, kwargs]): _thread's, with sysmeasure's profile hook "
    "in the new thread."};

/* The profile hook on this thread and on the others that exist; threads
 * started later through the wrapper. */
static int sm_py_install_profile(void)
{
    sm_py.PyEval_SetProfile(sm_py_profile, NULL);
    if (sm_py.PyInterpreterState_Get && sm_py.PyInterpreterState_ThreadHead &&
        sm_py.PyThreadState_Next && sm_py.PyThreadState_Get && sm_py._PyEval_SetProfile) {
        void *self = sm_py.PyThreadState_Get();
        for (void *ts = sm_py.PyInterpreterState_ThreadHead(sm_py.PyInterpreterState_Get()); ts;
             ts = sm_py.PyThreadState_Next(ts))
            if (ts != self && sm_py._PyEval_SetProfile(ts, sm_py_profile, NULL) != 0)
                sm_py.PyErr_Clear();
    }
    sm_pyobj_t *thread = sm_py.PyImport_ImportModule("_thread");
    sm_pyobj_t *orig = thread ? sm_py_attr(thread, "start_new_thread") : NULL;
    sm_pyobj_t *ours = orig ? sm_py.PyCFunction_NewEx(&sm_py_start_thread_def, NULL, NULL) : NULL;
    if (ours && sm_py.PyObject_SetAttrString(thread, "start_new_thread", ours) == 0) {
        sm_py_start_thread_orig = orig; /* kept for ever */
        /* threading took its own copy when it was imported already. */
        sm_pyobj_t *sys = sm_py.PyImport_ImportModule("sys");
        sm_pyobj_t *modules = sys ? sm_py_attr(sys, "modules") : NULL;
        sm_pyobj_t *threading = modules ? sm_py.PyDict_GetItemString(modules, "threading") : NULL;
        sm_pyobj_t *copy = threading ? sm_py_attr(threading, "_start_new_thread") : NULL;
        if (copy == orig && sm_py.PyObject_SetAttrString(threading, "_start_new_thread", ours))
            sm_py.PyErr_Clear();
        if (copy)
            sm_py.Py_DecRef(copy);
        if (modules)
            sm_py.Py_DecRef(modules);
        if (sys)
            sm_py.Py_DecRef(sys);
    } else {
        sm_py.PyErr_Clear();
        snprintf(sm_py_problem, sizeof sm_py_problem, "threads started later are not measured "
                 "(_thread.start_new_thread cannot be wrapped)");
        if (orig)
            sm_py.Py_DecRef(orig);
    }
    if (ours)
        sm_py.Py_DecRef(ours);
    if (thread)
        sm_py.Py_DecRef(thread);
    return 0;
}

/* ---------------------------------------------------------------- from 3.12: sys.monitoring */

static inline sm_pyobj_t *sm_py_answer(sm_py_verdict_t v)
{
    sm_pyobj_t *o = v == SM_PY_DISABLE && sm_py_disable ? sm_py_disable : sm_py.None;
    sm_py.Py_IncRef(o);
    return o;
}

/* PY_START, PY_RESUME (code, offset) */
static sm_pyobj_t *sm_py_on_start(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (SM_UNLIKELY(n < 1))
        return sm_py_answer(SM_PY_GO_ON);
    return sm_py_answer(sm_py_start((uintptr_t)args[0], args[0], SM_PY_FRAME));
}

/* PY_RETURN, PY_YIELD (code, offset, value) */
static sm_pyobj_t *sm_py_on_stop(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (SM_UNLIKELY(n < 1))
        return sm_py_answer(SM_PY_GO_ON);
    return sm_py_answer(sm_py_stop((uintptr_t)args[0], SM_PY_FRAME));
}

/* PY_THROW, PY_UNWIND (code, offset, exception): events that cannot be
 * disabled (DISABLE would raise). */
static sm_pyobj_t *sm_py_on_throw(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (n >= 1)
        (void)sm_py_start((uintptr_t)args[0], args[0], SM_PY_FRAME);
    return sm_py_answer(SM_PY_GO_ON);
}

static sm_pyobj_t *sm_py_on_unwind(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (n >= 1)
        (void)sm_py_stop((uintptr_t)args[0], SM_PY_FRAME);
    return sm_py_answer(SM_PY_GO_ON);
}

/* CALL (code, offset, callable, arg0); C_RETURN, C_RAISE (the same) */
static sm_pyobj_t *sm_py_on_call(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (n >= 3 && sm_runtime_active)
        sm_py_builtin_start(args[2]);
    return sm_py_answer(SM_PY_GO_ON);
}

static sm_pyobj_t *sm_py_on_c_return(sm_pyobj_t *self, sm_pyobj_t *const *args, sm_py_ssize_t n)
{
    (void)self;
    if (n >= 3 && sm_runtime_active)
        sm_py_builtin_stop(args[2]);
    return sm_py_answer(SM_PY_GO_ON);
}

typedef struct sm_py_event {
    const char *name; /* in sys.monitoring.events */
    sm_py_methoddef_t def;
    bool c_calls;     /* only with python_c_calls */
} sm_py_event_t;

#define SM_PY_EVENT(ev, fn, c) {ev, {"sysmeasure_" ev, (void *)fn, SM_PY_METH_FASTCALL, NULL}, c}
static sm_py_event_t sm_py_events[] = {
    SM_PY_EVENT("PY_START", sm_py_on_start, false),
    SM_PY_EVENT("PY_RESUME", sm_py_on_start, false),
    SM_PY_EVENT("PY_THROW", sm_py_on_throw, false),
    SM_PY_EVENT("PY_RETURN", sm_py_on_stop, false),
    SM_PY_EVENT("PY_YIELD", sm_py_on_stop, false),
    SM_PY_EVENT("PY_UNWIND", sm_py_on_unwind, false),
    SM_PY_EVENT("CALL", sm_py_on_call, true),
    SM_PY_EVENT("C_RETURN", sm_py_on_c_return, true),
    SM_PY_EVENT("C_RAISE", sm_py_on_c_return, true),
};
#undef SM_PY_EVENT

/* Our tool id: one of the two that CPython reserves for no kind of tool
 * (4, else 3), so that the program's own profiler (cProfile takes
 * PROFILER_ID, 2, from 3.12), debugger (0) or coverage (1) still starts. */
static int sm_py_install_monitoring(void)
{
    int rc = -1;
    sm_pyobj_t *sys = sm_py.PyImport_ImportModule("sys");
    sm_pyobj_t *mon = sys ? sm_py_attr(sys, "monitoring") : NULL;
    sm_pyobj_t *events = mon ? sm_py_attr(mon, "events") : NULL;
    sm_pyobj_t *r;
    if (!events) {
        snprintf(sm_py_problem, sizeof sm_py_problem, "no sys.monitoring");
        goto out;
    }
    static const int ids[] = {4, 3};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && sm_py_tool_id < 0; i++) {
        sm_pyobj_t *use = sm_py_attr(mon, "use_tool_id");
        r = use ? sm_py.PyObject_CallFunction(use, "is", ids[i], "sysmeasure") : NULL;
        if (use)
            sm_py.Py_DecRef(use);
        if (r) {
            sm_py.Py_DecRef(r);
            sm_py_tool_id = ids[i];
        } else {
            sm_py.PyErr_Clear(); /* in use by another tool */
        }
    }
    if (sm_py_tool_id < 0) {
        snprintf(sm_py_problem, sizeof sm_py_problem, "every sys.monitoring tool id is in use");
        goto out;
    }
    sm_py_disable = sm_py_attr(mon, "DISABLE");
    sm_pyobj_t *reg = sm_py_attr(mon, "register_callback");
    sm_pyobj_t *set = sm_py_attr(mon, "set_events");
    long mask = 0;
    for (size_t i = 0; reg && set && i < sizeof sm_py_events / sizeof sm_py_events[0]; i++) {
        sm_py_event_t *ev = &sm_py_events[i];
        if (ev->c_calls && !sm_py_c_calls)
            continue;
        sm_pyobj_t *bit = sm_py_attr(events, ev->name);
        long b = bit ? sm_py.PyLong_AsLong(bit) : -1;
        if (bit)
            sm_py.Py_DecRef(bit);
        sm_pyobj_t *cb = b > 0 ? sm_py.PyCFunction_NewEx(&ev->def, NULL, NULL) : NULL;
        r = cb ? sm_py.PyObject_CallFunction(reg, "ilO", sm_py_tool_id, b, cb) : NULL;
        if (cb)
            sm_py.Py_DecRef(cb);
        if (!r) {
            sm_py.PyErr_Clear();
            snprintf(sm_py_problem, sizeof sm_py_problem, "sys.monitoring refused the "
                     "callback of %s", ev->name);
            mask = 0;
            break;
        }
        sm_py.Py_DecRef(r);
        mask |= b;
    }
    r = mask ? sm_py.PyObject_CallFunction(set, "il", sm_py_tool_id, mask) : NULL;
    if (r) {
        sm_py.Py_DecRef(r);
        rc = 0;
    } else {
        sm_py.PyErr_Clear();
        if (!sm_py_problem[0])
            snprintf(sm_py_problem, sizeof sm_py_problem, "sys.monitoring.set_events failed");
    }
    if (reg)
        sm_py.Py_DecRef(reg);
    if (set)
        sm_py.Py_DecRef(set);
out:
    sm_py.PyErr_Clear();
    if (events)
        sm_py.Py_DecRef(events);
    if (mon)
        sm_py.Py_DecRef(mon);
    if (sys)
        sm_py.Py_DecRef(sys);
    return rc;
}

/* ---------------------------------------------------------------- getting in */

/* On the main thread, with the GIL, the interpreter initialised. */
static void sm_py_attach(void)
{
    int saved_errno = errno;
    sm_py_phase = SM_PY_ON; /* (what the installation calls is not measured) */
    int rc = sm_py_mechanism == SM_PY_MONITORING ? sm_py_install_monitoring()
                                                 : sm_py_install_profile();
    if (rc != 0) {
        sm_py_phase = SM_PY_OFF;
        sm_warning("Python %d.%d: its functions are not measured (%s)", sm_py_major, sm_py_minor,
                   sm_py_problem);
    }
    errno = saved_errno;
}

/* The interpreter is about to run the program ("cpython.run_file", ...). */
static int sm_py_audit(const char *event, sm_pyobj_t *args, void *data)
{
    (void)args;
    (void)data;
    if (SM_LIKELY(sm_py_phase != SM_PY_WAITING))
        return 0;
    if (strncmp(event, "cpython.run_", 12) != 0 || !sm_runtime_active)
        return 0;
    sm_py_attach();
    return 0;
}

/* A fork child whose parent had another thread in the lock: a new lock. */
static void sm_py_after_fork_child(void)
{
    pthread_mutex_init(&sm_py_lock, NULL);
}

/* Whether this process runs a Python interpreter's main (its argv[0]). */
static bool sm_py_program_is_python(void)
{
    char exe[512] = "";
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (f) {
        size_t n = fread(exe, 1, sizeof exe - 1, f);
        exe[n] = '\0';
        fclose(f);
    }
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return !strncmp(base, "python", 6);
}

static int sm_py_init(const sm_config_t *cfg)
{
    if (!cfg->python)
        return -1;
    /* A Python process: its interpreter's entry points are there. */
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!version)
        return -1;
    const char *v = version();
    if (!v || sscanf(v, "%d.%d", &sm_py_major, &sm_py_minor) != 2)
        return -1;
    bool loud = sm_py_program_is_python();
    if (sm_py_major != 3 || sm_py_minor < 9) {
        if (loud)
            sm_warning("Python %d.%d: its functions are not measured (sysmeasure needs Python "
                       "3.9 or newer); native code, MPI and GPU are", sm_py_major, sm_py_minor);
        return -1;
    }
    sm_py_mechanism = sm_py_minor >= 12 ? SM_PY_MONITORING : SM_PY_PROFILE;
#define SM_PY_LOOKUP(ret, name, args, needed)                                               \
    *(void **)&sm_py.name = dlsym(RTLD_DEFAULT, #name);                                     \
    if (needed && !sm_py.name) {                                                            \
        if (loud)                                                                           \
            sm_warning("Python %d.%d: its functions are not measured (the interpreter "    \
                       "has no %s)", sm_py_major, sm_py_minor, #name);                     \
        return -1;                                                                          \
    }
    SM_PY_FUNCTIONS(SM_PY_LOOKUP)
#undef SM_PY_LOOKUP
    sm_py.None = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    sm_py.cfunction_type = dlsym(RTLD_DEFAULT, "PyCFunction_Type");
    sm_py.cmethod_type = dlsym(RTLD_DEFAULT, "PyCMethod_Type");
    sm_py.methoddescr_type = dlsym(RTLD_DEFAULT, "PyMethodDescr_Type");
    if (!sm_py.None) {
        if (loud)
            sm_warning("Python %d.%d: its functions are not measured (the interpreter has no "
                       "_Py_NoneStruct)", sm_py_major, sm_py_minor);
        return -1;
    }
    sm_py_c_calls = cfg->python_c_calls;
    if (cfg->python_modules && cfg->python_modules[0]) {
        char err[512];
        sm_py_rules = sm_py_rules_parse(cfg->python_modules, err, sizeof err);
        if (!sm_py_rules)
            sm_error("%s; every module is measured", err);
    }
    if (pthread_key_create(&sm_py_thread_key, sm_py_thread_free) != 0)
        return -1;
    pthread_atfork(NULL, NULL, sm_py_after_fork_child);
    sm_py_phase = SM_PY_WAITING;
    if (sm_py.PySys_AddAuditHook(sm_py_audit, NULL) != 0) {
        sm_py_phase = SM_PY_OFF;
        return -1;
    }
    sm_info(1, "Python %d.%d: functions measured through %s", sm_py_major, sm_py_minor,
            sm_py_mechanism == SM_PY_MONITORING ? "sys.monitoring" : "the profile hook");
    return 0;
}

/* The summary's note: how, how many. */
static void sm_py_flush(const sm_run_info_t *run)
{
    (void)run;
    if (sm_py_phase != SM_PY_ON)
        return;
    char note[512];
    /* No lock: the end may run in a signal handler (counts written under
     * the lock, with signals held, are read as they are). */
    uint32_t count = __atomic_load_n(&sm_py_count, __ATOMIC_RELAXED);
    uint32_t left_out = __atomic_load_n(&sm_py_left_out, __ATOMIC_RELAXED);
    uint32_t lost = __atomic_load_n(&sm_py_lost, __ATOMIC_RELAXED);
    int n = snprintf(note, sizeof note, "Python %d.%d functions through %s: %u%s", sm_py_major,
                     sm_py_minor, sm_py_mechanism == SM_PY_MONITORING ? "sys.monitoring"
                                                                      : "the profile hook",
                     count - left_out, sm_py_c_calls ? " (built-ins included)" : "");
    if (left_out && n > 0 && (size_t)n < sizeof note)
        n += snprintf(note + n, sizeof note - (size_t)n, ", %u left out by python_modules",
                      left_out);
    if (lost && n > 0 && (size_t)n < sizeof note)
        n += snprintf(note + n, sizeof note - (size_t)n, ", %u not measured (table full)", lost);
    if (sm_py_problem[0] && n > 0 && (size_t)n < sizeof note)
        snprintf(note + n, sizeof note - (size_t)n, "; %s", sm_py_problem);
    sm_runtime_add_note(note);
}

const sm_subsystem_t sm_python_subsystem = {
    .name = "Python",
    .init = sm_py_init,
    .flush = sm_py_flush,
};
