/* ROCTx: the roctx* calls of an application answered here, so that ROCm's
 * annotation API works without roctracer (which Debian does not ship):
 *
 *   roctxRangePushA / roctxRangePop  -> a region on the calling thread's
 *                                       stack (nests with MPI, OpenMP, user)
 *   roctxMarkA                       -> a mark: enter and leave of a region
 *                                       at one timestamp on the calling thread
 *   roctxRangeStartA / roctxRangeStop -> may cross threads: a mark on each
 *                                       end's thread (attribute "roctx range
 *                                       id"), and the whole range on an
 *                                       "async ranges" lane (async_ranges.h)
 *   roctxNameOsThread                -> the thread's name in metadata
 *
 * The launcher preloads this library; a program linked with -lroctx64 finds
 * our definitions first, and each call is passed on to the next definition
 * (a real libroctx64, dlsym(RTLD_NEXT)) so that other tools still see it.
 * The same library is installed as libroctx64.so.4 for programs built
 * against ROCTx on machines without roctracer. */
#define _GNU_SOURCE
#include "roctx.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/adapter_api.h"
#include "core/compiler.h"
#include "util/log.h"

SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

/* ---------------------------------------------------------------- the core and the next library */

static const sm_adapter_api_t *sm_rx_api; /* NULL: the core is not up or too old */
static sm_attribute_id_t sm_rx_attr_id = SM_INVALID_ID;

const char sysmeasure_roctx_library[] = "sysmeasure ROCTx";

static struct {
    int (*push)(const char *);
    int (*pop)(void);
    void (*mark)(const char *);
    uint64_t (*start)(const char *);
    void (*stop)(uint64_t);
    int (*name_thread)(const char *);
} sm_rx_next;

static pthread_once_t sm_rx_once = PTHREAD_ONCE_INIT;

#define SM_RX_NEXT(field, name)                                                           \
    do {                                                                                  \
        void *sym = dlsym(RTLD_NEXT, name);                                               \
        memcpy(&sm_rx_next.field, &sym, sizeof sym);                                      \
    } while (0)

static void sm_rx_init(void)
{
    int saved_errno = errno;
    SM_RX_NEXT(push, "roctxRangePushA");
    SM_RX_NEXT(pop, "roctxRangePop");
    SM_RX_NEXT(mark, "roctxMarkA");
    SM_RX_NEXT(start, "roctxRangeStartA");
    SM_RX_NEXT(stop, "roctxRangeStop");
    SM_RX_NEXT(name_thread, "roctxNameOsThread");
    /* The next definition may be another copy of this library (preloaded
     * libsysmeasure-roctx.so, and libroctx64.so.4 that the program linked):
     * calling it would count every call twice. */
    void *twin = dlsym(RTLD_NEXT, "sysmeasure_roctx_library");
    Dl_info a, b;
    if (twin && sm_rx_next.push && dladdr(twin, &a) && dladdr((void *)sm_rx_next.push, &b) &&
        a.dli_fbase == b.dli_fbase)
        memset(&sm_rx_next, 0, sizeof sm_rx_next);
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    /* The core measures this process when the launcher (or SYSMEASURE_ENABLE)
     * asked for it: its constructor brought it up.  We never start it. */
    if (api && SM_ADAPTER_API_HAS(api, async_range))
        sm_rx_api = api;
    errno = saved_errno;
}

static inline const sm_adapter_api_t *sm_rx(void)
{
    pthread_once(&sm_rx_once, sm_rx_init);
    return sm_rx_api && sm_rx_api->runtime_active() ? sm_rx_api : NULL;
}

/* The attribute naming a start/stop range's id, defined at first use. */
static pthread_once_t sm_rx_attr_once = PTHREAD_ONCE_INIT;

static void sm_rx_attr_init(void)
{
    sm_rx_attr_id = sm_rx_api->attribute_define("roctx range id", SM_ATTR_INT64);
}

/* ---------------------------------------------------------------- region names */

/* Names seen before map to their regions without a lock: a small table per
 * thread, looked up by the text's address first (an application passes the
 * same literal again and again) and confirmed by the text itself (it may
 * reuse a buffer).  One entry holds every region of one text: the range,
 * the mark, and a start/stop range's start and stop marks, each defined at
 * its first use. */
#define SM_RX_CACHE 128
#define SM_RX_DEPTH 256

enum { SM_RX_RANGE, SM_RX_MARK, SM_RX_START, SM_RX_STOP, SM_RX_KINDS };

typedef struct sm_rx_name {
    const char *key; /* the application's pointer last seen for this text */
    char *name;      /* our copy of the text */
    sm_region_id_t region[SM_RX_KINDS];
} sm_rx_name_t;

typedef struct sm_rx_thread {
    sm_rx_name_t cache[SM_RX_CACHE];
    /* push/pop: the regions pushed on this thread (more than SM_RX_DEPTH
     * deep are counted, not stored: their pops leave nothing). */
    sm_region_id_t pushed[SM_RX_DEPTH];
    uint32_t depth;
} sm_rx_thread_t;

static SM_TLS sm_rx_thread_t *sm_rx_tls;
static pthread_key_t sm_rx_key;
static pthread_once_t sm_rx_key_once = PTHREAD_ONCE_INIT;

static void sm_rx_thread_release(void *p)
{
    sm_rx_thread_t *t = p;
    for (int i = 0; i < SM_RX_CACHE; i++)
        free(t->cache[i].name);
    free(t);
    sm_rx_tls = NULL;
}

static void sm_rx_key_create(void)
{
    if (pthread_key_create(&sm_rx_key, sm_rx_thread_release) != 0)
        sm_rx_key = (pthread_key_t)-1;
}

static SM_NOINLINE sm_rx_thread_t *sm_rx_thread_slow(void)
{
    int saved_errno = errno;
    sm_rx_thread_t *t = calloc(1, sizeof *t);
    if (t) {
        pthread_once(&sm_rx_key_once, sm_rx_key_create);
        if (sm_rx_key != (pthread_key_t)-1)
            pthread_setspecific(sm_rx_key, t);
        sm_rx_tls = t;
    }
    errno = saved_errno;
    return t;
}

static inline sm_rx_thread_t *sm_rx_thread(void)
{
    sm_rx_thread_t *t = sm_rx_tls;
    return SM_LIKELY(t != NULL) ? t : sm_rx_thread_slow();
}

static const char *const sm_rx_suffix[SM_RX_KINDS] = {"", "", " (start)", " (stop)"};

/* Defines the region of kind k for text (marks: role ARTIFICIAL, so that a
 * mark and a range of one text are two regions). */
static sm_region_id_t sm_rx_define(const sm_adapter_api_t *api, const char *text, int k)
{
    char name[512];
    const char *n = text;
    if (k == SM_RX_START || k == SM_RX_STOP) {
        snprintf(name, sizeof name, "%s%s", text, sm_rx_suffix[k]);
        n = name;
    }
    return api->region_define(n, NULL, 0, SM_PARADIGM_USER,
                              k == SM_RX_RANGE ? SM_ROLE_CODE : SM_ROLE_ARTIFICIAL);
}

/* The region of kind k named by text (a NULL text is "(null)"). */
static sm_region_id_t sm_rx_region(const sm_adapter_api_t *api, sm_rx_thread_t *t,
                                   const char *text, int k)
{
    if (!text)
        text = "(null)";
    if (SM_UNLIKELY(!t)) {
        int saved_errno = errno;
        sm_region_id_t r = sm_rx_define(api, text, k);
        errno = saved_errno;
        return r;
    }
    uintptr_t p = (uintptr_t)text;
    sm_rx_name_t *e = &t->cache[(p ^ p >> 7 ^ p >> 15) & (SM_RX_CACHE - 1)];
    if (SM_UNLIKELY(e->key != text || !e->name || strcmp(e->name, text) != 0)) {
        int saved_errno = errno;
        char *copy = strdup(text);
        if (!copy) {
            sm_region_id_t r = sm_rx_define(api, text, k);
            errno = saved_errno;
            return r;
        }
        free(e->name);
        e->name = copy;
        e->key = text;
        for (int i = 0; i < SM_RX_KINDS; i++)
            e->region[i] = SM_INVALID_ID;
        errno = saved_errno;
    }
    if (SM_UNLIKELY(e->region[k] == SM_INVALID_ID)) {
        int saved_errno = errno;
        e->region[k] = sm_rx_define(api, text, k);
        errno = saved_errno;
    }
    return e->region[k];
}

/* ---------------------------------------------------------------- start/stop ranges */

/* Open start/stop ranges by id, in an open-addressed table of fixed size
 * whose slots are claimed with a compare-and-swap: a range may stop on
 * another thread than its start, and neither end takes a lock. */
#define SM_RX_OPEN 4096

typedef struct sm_rx_open {
    uint64_t id; /* 0: free; SM_RX_BUSY: being filled or emptied */
    uint64_t start;
    sm_region_id_t region;
    sm_region_id_t stop_mark;
} sm_rx_open_t;

#define SM_RX_BUSY UINT64_MAX

static sm_rx_open_t sm_rx_open_ranges[SM_RX_OPEN];
static uint64_t sm_rx_next_id = 1;
static uint64_t sm_rx_lost;

static inline uint32_t sm_rx_open_slot(uint64_t id)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 52) & (SM_RX_OPEN - 1);
}

static void sm_rx_open_put(uint64_t id, uint64_t start, sm_region_id_t region,
                           sm_region_id_t stop_mark)
{
    uint32_t s = sm_rx_open_slot(id);
    for (uint32_t k = 0; k < SM_RX_OPEN; k++, s = (s + 1) & (SM_RX_OPEN - 1)) {
        sm_rx_open_t *o = &sm_rx_open_ranges[s];
        uint64_t free_id = 0;
        if (!__atomic_compare_exchange_n(&o->id, &free_id, SM_RX_BUSY, false, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        o->start = start;
        o->region = region;
        o->stop_mark = stop_mark;
        __atomic_store_n(&o->id, id, __ATOMIC_RELEASE);
        return;
    }
    /* More than SM_RX_OPEN ranges open at once: this one is not recorded. */
    if (__atomic_fetch_add(&sm_rx_lost, 1, __ATOMIC_RELAXED) == 0)
        sm_warning("more than %d ROCTx start/stop ranges open at once: the others are not "
                   "recorded", SM_RX_OPEN);
}

/* 0 when the range is not open here (not started while measuring). */
static int sm_rx_open_take(uint64_t id, sm_rx_open_t *out)
{
    uint32_t s = sm_rx_open_slot(id);
    for (uint32_t k = 0; k < SM_RX_OPEN; k++, s = (s + 1) & (SM_RX_OPEN - 1)) {
        sm_rx_open_t *o = &sm_rx_open_ranges[s];
        uint64_t want = id;
        if (!__atomic_compare_exchange_n(&o->id, &want, SM_RX_BUSY, false, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED)) {
            if (want == 0)
                return 0; /* a free slot ends the probe: never stored */
            continue;
        }
        *out = *o;
        __atomic_store_n(&o->id, 0, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the ROCTx API */

int roctxRangePushA(const char *message)
{
    const sm_adapter_api_t *api = sm_rx();
    int level = -1;
    if (sm_rx_next.push)
        level = sm_rx_next.push(message);
    sm_rx_thread_t *t = sm_rx_thread();
    if (!t)
        return level;
    uint32_t depth = t->depth++;
    sm_region_id_t r = SM_INVALID_ID;
    if (api) {
        r = sm_rx_region(api, t, message, SM_RX_RANGE);
        if (r != SM_INVALID_ID)
            api->enter(r);
    }
    if (depth < SM_RX_DEPTH)
        t->pushed[depth] = r;
    /* roctracer's answer: the nesting level of the range just pushed, from 0. */
    return sm_rx_next.push ? level : (int)depth;
}

int roctxRangePop(void)
{
    const sm_adapter_api_t *api = sm_rx();
    int level = -1;
    if (sm_rx_next.pop)
        level = sm_rx_next.pop();
    sm_rx_thread_t *t = sm_rx_thread();
    if (!t || t->depth == 0) {
        /* A pop without a push: roctracer answers -1; we record nothing. */
        return sm_rx_next.pop ? level : -1;
    }
    uint32_t depth = --t->depth;
    if (api && depth < SM_RX_DEPTH && t->pushed[depth] != SM_INVALID_ID)
        api->leave(t->pushed[depth]);
    return sm_rx_next.pop ? level : (int)depth;
}

void roctxMarkA(const char *message)
{
    const sm_adapter_api_t *api = sm_rx();
    if (sm_rx_next.mark)
        sm_rx_next.mark(message);
    if (!api)
        return;
    sm_region_id_t r = sm_rx_region(api, sm_rx_thread(), message, SM_RX_MARK);
    if (r != SM_INVALID_ID)
        api->mark(r, NULL, 0);
}

roctx_range_id_t roctxRangeStartA(const char *message)
{
    const sm_adapter_api_t *api = sm_rx();
    uint64_t id;
    if (sm_rx_next.start)
        id = sm_rx_next.start(message);
    else
        id = __atomic_fetch_add(&sm_rx_next_id, 1, __ATOMIC_RELAXED);
    if (!api || id == 0 || id == SM_RX_BUSY)
        return id;
    pthread_once(&sm_rx_attr_once, sm_rx_attr_init);
    sm_rx_thread_t *t = sm_rx_thread();
    sm_region_id_t range = sm_rx_region(api, t, message, SM_RX_RANGE);
    sm_region_id_t start_mark = sm_rx_region(api, t, message, SM_RX_START);
    sm_region_id_t stop_mark = sm_rx_region(api, t, message, SM_RX_STOP);
    if (range == SM_INVALID_ID || start_mark == SM_INVALID_ID || stop_mark == SM_INVALID_ID)
        return id;
    sm_adapter_attr_t a = {sm_rx_attr_id, id};
    uint64_t now = api->now();
    api->mark(start_mark, &a, sm_rx_attr_id != SM_INVALID_ID);
    sm_rx_open_put(id, now, range, stop_mark);
    return id;
}

void roctxRangeStop(roctx_range_id_t id)
{
    const sm_adapter_api_t *api = sm_rx();
    if (sm_rx_next.stop)
        sm_rx_next.stop(id);
    sm_rx_open_t o;
    if (!api || id == 0 || id == SM_RX_BUSY || !sm_rx_open_take(id, &o))
        return;
    sm_adapter_attr_t a = {sm_rx_attr_id, id};
    uint32_t n = sm_rx_attr_id != SM_INVALID_ID;
    api->mark(o.stop_mark, &a, n);
    /* The range spans both marks: its end is read after the stop mark. */
    api->async_range(o.region, o.start, api->now(), &a, n);
}

int roctxNameOsThread(const char *name)
{
    const sm_adapter_api_t *api = sm_rx();
    int rc = 0;
    if (sm_rx_next.name_thread)
        rc = sm_rx_next.name_thread(name);
    if (api && name) {
        /* Names the thread in metadata.json: the OS thread id and the name. */
        char key[64];
        snprintf(key, sizeof key, "roctx_thread_name_%ld", (long)gettid());
        api->metadata(key, name);
    }
    return rc;
}
