// C entry points to CUPTI's profiler host API (cupti_host.h).  C++ only
// because cupti_profiler_host.h includes <string>; the code is plain C
// style, and no C++ exception or allocation crosses into the C side.
#include "cupti_host.h"

#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sm_cuh {
    CUpti_Profiler_Host_Object *obj;
};

static void sm_cuh_err(char *err, size_t errlen, const char *what, CUptiResult rc)
{
    const char *text = NULL;
    cuptiGetResultString(rc, &text);
    if (err && errlen)
        snprintf(err, errlen, "%s failed (%s)", what, text ? text : "unknown CUPTI error");
}

sm_cuh_t *sm_cuh_open(const char *chip, const uint8_t *avail, int pm, char *err, size_t errlen)
{
    CUpti_Profiler_Host_Initialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = pm ? CUPTI_PROFILER_TYPE_PM_SAMPLING : CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail;
    CUptiResult rc = cuptiProfilerHostInitialize(&p);
    if (rc != CUPTI_SUCCESS) {
        sm_cuh_err(err, errlen, "cuptiProfilerHostInitialize", rc);
        return NULL;
    }
    sm_cuh_t *h = (sm_cuh_t *)calloc(1, sizeof *h);
    if (!h) {
        CUpti_Profiler_Host_Deinitialize_Params d;
        memset(&d, 0, sizeof d);
        d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
        d.pHostObject = p.pHostObject;
        cuptiProfilerHostDeinitialize(&d);
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->obj = p.pHostObject;
    return h;
}

void sm_cuh_close(sm_cuh_t *h)
{
    if (!h)
        return;
    CUpti_Profiler_Host_Deinitialize_Params d;
    memset(&d, 0, sizeof d);
    d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    d.pHostObject = h->obj;
    cuptiProfilerHostDeinitialize(&d);
    free(h);
}

int sm_cuh_known(sm_cuh_t *h, const char *metric)
{
    CUpti_Profiler_Host_GetMetricProperties_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    p.pHostObject = h->obj;
    p.pMetricName = metric;
    return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
}

const char *sm_cuh_unit(sm_cuh_t *h, const char *metric)
{
    CUpti_Profiler_Host_GetMetricProperties_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    p.pHostObject = h->obj;
    p.pMetricName = metric;
    if (cuptiProfilerHostGetMetricProperties(&p) != CUPTI_SUCCESS || !p.pDimUnit)
        return "";
    return p.pDimUnit;
}

int sm_cuh_config(sm_cuh_t *h, const char *const *metrics, size_t n, uint8_t **image,
                  size_t *size, size_t *passes, char *err, size_t errlen)
{
    *image = NULL;
    *size = 0;
    /* One at a time first, so that a refusal names its metric. */
    for (size_t i = 0; i < n; i++)
        if (!sm_cuh_known(h, metrics[i])) {
            if (err && errlen)
                snprintf(err, errlen, "%s", metrics[i]);
            return -1;
        }
    CUpti_Profiler_Host_ConfigAddMetrics_Params a;
    memset(&a, 0, sizeof a);
    a.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    a.pHostObject = h->obj;
    a.ppMetricNames = const_cast<const char **>(metrics);
    a.numMetrics = n;
    CUptiResult rc = cuptiProfilerHostConfigAddMetrics(&a);
    if (rc != CUPTI_SUCCESS) {
        sm_cuh_err(err, errlen, "cuptiProfilerHostConfigAddMetrics", rc);
        return -1;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params s;
    memset(&s, 0, sizeof s);
    s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    s.pHostObject = h->obj;
    if ((rc = cuptiProfilerHostGetConfigImageSize(&s)) != CUPTI_SUCCESS) {
        sm_cuh_err(err, errlen, "cuptiProfilerHostGetConfigImageSize", rc);
        return -1;
    }
    uint8_t *buf = (uint8_t *)malloc(s.configImageSize ? s.configImageSize : 1);
    if (!buf) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    CUpti_Profiler_Host_GetConfigImage_Params g;
    memset(&g, 0, sizeof g);
    g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    g.pHostObject = h->obj;
    g.configImageSize = s.configImageSize;
    g.pConfigImage = buf;
    if ((rc = cuptiProfilerHostGetConfigImage(&g)) != CUPTI_SUCCESS) {
        free(buf);
        sm_cuh_err(err, errlen, "cuptiProfilerHostGetConfigImage", rc);
        return -1;
    }
    CUpti_Profiler_Host_GetNumOfPasses_Params np;
    memset(&np, 0, sizeof np);
    np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    np.configImageSize = s.configImageSize;
    np.pConfigImage = buf;
    if (cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS)
        *passes = np.numOfPasses;
    else
        *passes = 0;
    *image = buf;
    *size = s.configImageSize;
    return 0;
}

int sm_cuh_evaluate(sm_cuh_t *h, const uint8_t *data, size_t size, size_t range,
                    const char *const *metrics, size_t n, double *values)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    p.pHostObject = h->obj;
    p.pCounterDataImage = data;
    p.counterDataImageSize = size;
    p.rangeIndex = range;
    p.ppMetricNames = const_cast<const char **>(metrics);
    p.numMetrics = n;
    p.pMetricValues = values;
    return cuptiProfilerHostEvaluateToGpuValues(&p) == CUPTI_SUCCESS ? 0 : -1;
}

size_t sm_cuh_list(sm_cuh_t *h, void (*fn)(const char *, const char *, void *), void *arg)
{
    static const char *const types[] = {"counter", "ratio", "throughput"};
    size_t total = 0;
    for (int t = 0; t < 3; t++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
        p.pHostObject = h->obj;
        p.metricType = (CUpti_MetricType)t;
        if (cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS)
            continue;
        for (size_t i = 0; i < p.numMetrics; i++)
            if (fn)
                fn(p.ppMetricNames[i], types[t], arg);
        total += p.numMetrics;
    }
    return total;
}

/* Levenshtein distance of a[0..la) and b[0..lb), capped rows. */
static size_t sm_cuh_distance(const char *a, size_t la, const char *b, size_t lb)
{
    if (la > 127)
        la = 127;
    if (lb > 127)
        lb = 127;
    size_t row[128];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

struct sm_cuh_near {
    const char *want;
    size_t want_len;
    const char *best[8];
    size_t dist[8];
    int max;
};

static void sm_cuh_near_fn(const char *name, const char *type, void *arg)
{
    (void)type;
    struct sm_cuh_near *x = (struct sm_cuh_near *)arg;
    size_t d = sm_cuh_distance(x->want, x->want_len, name, strlen(name));
    for (int i = 0; i < x->max; i++) {
        if (!x->best[i] || d < x->dist[i]) {
            for (int k = x->max - 1; k > i; k--) {
                x->best[k] = x->best[k - 1];
                x->dist[k] = x->dist[k - 1];
            }
            x->best[i] = name;
            x->dist[i] = d;
            return;
        }
    }
}

void sm_cuh_nearest(sm_cuh_t *h, const char *metric, char *out, size_t len, int max)
{
    struct sm_cuh_near x;
    memset(&x, 0, sizeof x);
    x.want = metric;
    const char *dot = strchr(metric, '.');
    x.want_len = dot ? (size_t)(dot - metric) : strlen(metric);
    x.max = max > 8 ? 8 : max;
    sm_cuh_list(h, sm_cuh_near_fn, &x);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < x.max && x.best[i] && at + 1 < len; i++) {
        int w = snprintf(out + at, len - at, "%s%s%s", i ? ", " : "", x.best[i], dot ? dot : "");
        if (w < 0)
            break;
        at += (size_t)w;
    }
}
