/* The table behind metrics.h: fixed, small (adapters define a handful of
 * metrics: one per memory space), entries never move, so samples need no
 * lock. */
#include "metrics.h"
#include "gpu_memory.h"
#include "journal.h"
#include "sig_hold.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "../util/bytes.h"

#define SM_METRICS_MAX 256

static sm_metric_def_t sm_metrics[SM_METRICS_MAX];
static uint32_t sm_metrics_n; /* published with release order */
static pthread_mutex_t sm_metrics_lock = PTHREAD_MUTEX_INITIALIZER;

sm_metric_id_t sm_metric_define(const char *name, const char *unit)
{
    return sm_metric_define_kind(name, unit, SM_METRIC_SAMPLED);
}

sm_metric_id_t sm_metric_define_kind(const char *name, const char *unit, sm_metric_kind_t kind)
{
    if (!name || !name[0])
        return SM_INVALID_ID;
    sm_string_id_t s_name = sm_string_intern(name);
    sm_string_id_t s_unit = sm_string_intern(unit && unit[0] ? unit : "1");
    if (s_name == SM_INVALID_ID || s_unit == SM_INVALID_ID)
        return SM_INVALID_ID;
    /* (Also on the application's threads: no handler may jump out of the
     * lock, sig_hold.h.) */
    sm_sig_hold(sm_journal_on() ? SM_SIG_LOCKS_IO : SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_metrics_lock);
    uint32_t n = sm_metrics_n, id = SM_INVALID_ID;
    for (uint32_t i = 0; i < n && id == SM_INVALID_ID; i++)
        if (sm_metrics[i].name == s_name)
            id = i;
    if (id == SM_INVALID_ID && n < SM_METRICS_MAX) {
        memset(&sm_metrics[n], 0, sizeof sm_metrics[n]);
        sm_metrics[n].name = s_name;
        sm_metrics[n].unit = s_unit;
        sm_metrics[n].kind = kind;
        sm_metrics[n].min = UINT64_MAX;
        id = n;
        __atomic_store_n(&sm_metrics_n, n + 1, __ATOMIC_RELEASE);
        if (sm_journal_on()) {
            uint32_t e[4] = {id, s_name, s_unit, (uint32_t)kind};
            sm_journal_add(SM_J_METRIC, e, sizeof e, NULL, 0);
        }
    }
    pthread_mutex_unlock(&sm_metrics_lock);
    sm_sig_release();
    return id;
}

void sm_metric_sample(sm_metric_id_t id, uint64_t value)
{
    if (id >= __atomic_load_n(&sm_metrics_n, __ATOMIC_ACQUIRE))
        return;
    sm_metric_def_t *m = &sm_metrics[id];
    __atomic_store_n(&m->last, value, __ATOMIC_RELAXED);
    __atomic_add_fetch(&m->samples, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&m->sum, value, __ATOMIC_RELAXED);
    uint64_t min = __atomic_load_n(&m->min, __ATOMIC_RELAXED);
    while (value < min &&
           !__atomic_compare_exchange_n(&m->min, &min, value, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    uint64_t max = __atomic_load_n(&m->max, __ATOMIC_RELAXED);
    while (value > max &&
           !__atomic_compare_exchange_n(&m->max, &max, value, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
}

void sm_metrics_restart(void)
{
    uint32_t n = __atomic_load_n(&sm_metrics_n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        sm_metric_def_t *m = &sm_metrics[i];
        __atomic_store_n(&m->samples, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&m->sum, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&m->min, UINT64_MAX, __ATOMIC_RELAXED);
        __atomic_store_n(&m->max, 0, __ATOMIC_RELAXED);
    }
}

uint32_t sm_metric_count(void)
{
    return __atomic_load_n(&sm_metrics_n, __ATOMIC_ACQUIRE);
}

int sm_metric_get(sm_metric_id_t id, sm_metric_def_t *out)
{
    if (id >= sm_metric_count())
        return -1;
    const sm_metric_def_t *m = &sm_metrics[id];
    out->name = m->name;
    out->unit = m->unit;
    out->kind = m->kind;
    out->last = __atomic_load_n(&m->last, __ATOMIC_RELAXED);
    out->max = __atomic_load_n(&m->max, __ATOMIC_RELAXED);
    out->samples = __atomic_load_n(&m->samples, __ATOMIC_RELAXED);
    out->min = __atomic_load_n(&m->min, __ATOMIC_RELAXED);
    out->sum = __atomic_load_n(&m->sum, __ATOMIC_RELAXED);
    return 0;
}

static void sm_metrics_put_string(sm_wbuf_t *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    sm_put_u32(w, (uint32_t)n);
    sm_put_bytes(w, s, n);
}

void *sm_metrics_serialize(uint64_t *len)
{
    sm_wbuf_t w = {0};
    uint32_t n = sm_metric_count(), sampled = 0;
    for (uint32_t id = 0; id < n; id++)
        sampled += sm_metrics[id].kind == SM_METRIC_SAMPLED;
    sm_put_u32(&w, sampled);
    for (uint32_t id = 0; id < n; id++) {
        sm_metric_def_t m;
        sm_metric_get(id, &m);
        if (m.kind != SM_METRIC_SAMPLED)
            continue;
        sm_metrics_put_string(&w, sm_string_get(m.name));
        sm_metrics_put_string(&w, sm_string_get(m.unit));
        sm_put_u64(&w, m.last);
        sm_put_u64(&w, m.max);
        sm_put_u64(&w, m.samples);
        sm_put_u64(&w, m.samples ? m.min : 0);
        sm_put_u64(&w, m.sum);
    }
    /* Then the GPU memory figures, which travel with the metrics to rank
     * 0 and into process files (readers of the metrics stop before them). */
    sm_gpu_memory_serialize(&w);
    return sm_wbuf_finish(&w, len);
}

/* Reads the metrics of a blob (fn may be NULL); returns where they end. */
static const uint8_t *sm_metrics_read(const void *blob, uint64_t len,
                                      void (*fn)(const sm_metric_entry_t *e, void *arg),
                                      void *arg)
{
    sm_rbuf_t r = {blob, (const uint8_t *)blob + len, false};
    uint32_t n = sm_get_u32(&r);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        sm_metric_entry_t e;
        for (int k = 0; k < 2; k++) {
            char *text = k ? e.unit : e.name;
            uint32_t l = sm_get_u32(&r);
            const uint8_t *s = sm_get_bytes(&r, l);
            size_t keep = l < sizeof e.name ? l : sizeof e.name - 1;
            if (s)
                memcpy(text, s, keep);
            text[s ? keep : 0] = '\0';
        }
        e.last = sm_get_u64(&r);
        e.max = sm_get_u64(&r);
        e.samples = sm_get_u64(&r);
        e.min = sm_get_u64(&r);
        e.sum = sm_get_u64(&r);
        if (!r.bad && fn)
            fn(&e, arg);
    }
    return r.bad ? NULL : r.p;
}

void sm_metrics_deserialize(const void *blob, uint64_t len,
                            void (*fn)(const sm_metric_entry_t *e, void *arg), void *arg)
{
    sm_metrics_read(blob, len, fn, arg);
}

const uint8_t *sm_metrics_tail(const void *blob, uint64_t len, uint64_t *tail_len)
{
    const uint8_t *end = (const uint8_t *)blob + len;
    const uint8_t *p = blob ? sm_metrics_read(blob, len, NULL, NULL) : NULL;
    *tail_len = p ? (uint64_t)(end - p) : 0;
    return p;
}
