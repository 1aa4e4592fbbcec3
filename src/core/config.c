/* Configuration: the table from config_vars.def, applied from defaults, a
 * config file and the environment.  Used by the runtime (inside the
 * application, so no output and no global state here: errors go back to the
 * caller as one line) and by the command-line tools. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/fs.h"
#include "../util/log.h"
#include "../util/utf8.h"
#include "../util/mpi_groups.h"
#include "../util/gpu_metrics.h"
#include "../util/gpu_sampling.h"


/* The config key is the field name: config_vars.def keeps each field equal to
 * its NAME in lower case (test_config checks it), so no copy is made at run time. */
const sm_config_var_t sm_config_vars[SM_CONFIG_COUNT] = {
#define SM_CONFIG_VAR(field, NAME, TYPE, def, opt, choices, help)                          \
    {#NAME, SM_ENV_PREFIX #NAME, #field, SM_CONFIG_TYPE_##TYPE, def, opt, choices, help,   \
     offsetof(sm_config_t, field)},
#include "config_vars.def"
#undef SM_CONFIG_VAR
};

#define SM_FIELD(cfg, var, ctype) ((ctype *)(void *)((char *)(cfg) + (var)->offset))
#define SM_CFIELD(cfg, var, ctype) \
    ((ctype const *)(const void *)((const char *)(cfg) + (var)->offset))

static size_t sm_var_index(const sm_config_var_t *var)
{
    return (size_t)(var - sm_config_vars);
}

const sm_config_var_t *sm_config_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        if (!strcmp(name, v->name) || !strcmp(name, v->env) || !strcmp(name, v->key))
            return v;
    }
    return NULL;
}

const char *sm_config_source_name(sm_config_source_t source)
{
    switch (source) {
    case SM_CONFIG_FROM_DEFAULT: return "default";
    case SM_CONFIG_FROM_FILE: return "config file";
    case SM_CONFIG_FROM_ENV: return "environment";
    }
    return "?";
}

/* ------------------------------------------------------------------ parsing */

/* [*start, *end) without surrounding white space. */
static void sm_trim_span(const char *text, const char **start, const char **end)
{
    const char *s = text, *e = text + strlen(text);
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *start = s;
    *end = e;
}

static int sm_span_eq_ci(const char *s, const char *e, const char *word)
{
    size_t n = (size_t)(e - s);
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

int sm_config_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    const char *s, *e;
    if (!text)
        return -1;
    sm_trim_span(text, &s, &e);
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (sm_span_eq_ci(s, e, yes[i])) {
            *out = true;
            return 0;
        }
        if (sm_span_eq_ci(s, e, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int sm_config_parse_size(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t v = 0;
    unsigned shift = 0;
    if (!text)
        return -1;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    while (isspace((unsigned char)*p))
        p++;
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift)
        p++;
    /* "64M", "64MB", "64MiB", "4096B" */
    if (shift && (*p == 'i' || *p == 'I') && toupper((unsigned char)p[1]) == 'B')
        p += 2;
    else if (toupper((unsigned char)*p) == 'B')
        p++;
    while (isspace((unsigned char)*p))
        p++;
    if (*p || v == 0 || v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

static int sm_parse_int(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int sm_parse_enum(const char *text, const char *choices, int *out)
{
    const char *s, *e;
    sm_trim_span(text, &s, &e);
    int index = 0;
    for (const char *c = choices; c && *c; index++) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if ((size_t)(e - s) == n && strncasecmp(s, c, n) == 0) {
            *out = index;
            return 0;
        }
        if (!bar)
            break;
        c = bar + 1;
    }
    return -1;
}

/* The index-th choice of "a|b|c" into buf. */
static void sm_enum_name(const char *choices, int index, char *buf, size_t len)
{
    const char *c = choices ? choices : "";
    for (int i = 0; i < index && c; i++) {
        c = strchr(c, '|');
        if (c)
            c++;
    }
    if (!c || index < 0) {
        snprintf(buf, len, "%d", index);
        return;
    }
    const char *bar = strchr(c, '|');
    int n = bar ? (int)(bar - c) : (int)strlen(c);
    snprintf(buf, len, "%.*s", n, c);
}

static void sm_format_size(uint64_t v, char *buf, size_t len)
{
    static const char suffix[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        unsigned shift = (unsigned)(40 - 10 * i);
        if (v && v % (UINT64_C(1) << shift) == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v >> shift), suffix[i]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* A value as it can be shown inside a one-line message: quoted by the caller,
 * control characters escaped (an environment value may hold a newline), long
 * values cut. */
static void sm_quote_value(const char *text, char *buf, size_t len)
{
    size_t o = 0, i = 0;
    if (!len)
        return;
    for (; text[i] && o + 5 < len && i < 100; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    if (text[i] && o + 4 < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
}

int sm_config_parse_free_space(const char *text, uint64_t *bytes, double *fraction, char *why,
                               size_t whylen)
{
    const char *p = text ? text : "";
    while (isspace((unsigned char)*p))
        p++;
    *bytes = 0;
    *fraction = 0.0;
    const char *pct = strchr(p, '%');
    if (pct) {
        char *end = (char *)p;
        double v = isdigit((unsigned char)*p) ? strtod(p, &end) : -1.0;
        const char *q = pct + 1;
        while (isspace((unsigned char)*q))
            q++;
        if (v < 0.0 || v >= 100.0 || *q) {
            snprintf(why, whylen, "expected a share of the file system below 100%% (5%%), a "
                     "size (1G) or 0");
            return -1;
        }
        for (; end < pct; end++)
            if (!isspace((unsigned char)*end)) {
                snprintf(why, whylen, "expected a share of the file system below 100%% (5%%), "
                         "a size (1G) or 0");
                return -1;
            }
        *fraction = v / 100.0;
        return 0;
    }
    const char *q = p;
    while (*q == '0')
        q++;
    if (q > p) {
        while (isspace((unsigned char)*q))
            q++;
        if (!*q)
            return 0; /* "0": no floor */
    }
    if (sm_config_parse_size(p, bytes) != 0) {
        snprintf(why, whylen, "expected a size (1G), a share of the file system (5%%) or 0");
        return -1;
    }
    return 0;
}

/* Checks beyond the type, per variable. */
static const char *sm_check_range(const sm_config_var_t *var, const void *value)
{
    switch (sm_var_index(var)) {
    case SM_CONFIG_VERBOSE:
        if (*(const int64_t *)value < 0)
            return "must be 0 or more";
        break;
    case SM_CONFIG_PROFILE_DEPTH:
        if (*(const int64_t *)value < 1 || *(const int64_t *)value > 1000000)
            return "must be between 1 and 1000000";
        break;
    case SM_CONFIG_SAMPLING_FREQ:
        if (*(const int64_t *)value < 1 || *(const int64_t *)value > 10000)
            return "must be between 1 and 10000 (samples per second)";
        break;
    case SM_CONFIG_SAMPLING_INTERVAL:
        if (*(const int64_t *)value < 1 || *(const int64_t *)value > 3600000)
            return "must be between 1 and 3600000 (milliseconds)";
        break;
    case SM_CONFIG_CAUSAL_PERIOD:
        if (*(const int64_t *)value < 100 || *(const int64_t *)value > 1000000)
            return "must be between 100 and 1000000 (microseconds)";
        break;
    case SM_CONFIG_CAUSAL_EXPERIMENT:
        if (*(const int64_t *)value < 10 || *(const int64_t *)value > 600000)
            return "must be between 10 and 600000 (milliseconds)";
        break;
    case SM_CONFIG_CAUSAL_COOLOFF:
        if (*(const int64_t *)value < 0 || *(const int64_t *)value > 60000)
            return "must be between 0 and 60000 (milliseconds)";
        break;
    case SM_CONFIG_CAUSAL_MIN_VISITS:
        if (*(const int64_t *)value < 0)
            return "must be 0 or more";
        break;
    case SM_CONFIG_CAUSAL_SPEEDUP:
        if (*(const int64_t *)value < -1 || *(const int64_t *)value > 100)
            return "must be -1 (chosen at random) or between 0 and 100 (percent)";
        break;
    case SM_CONFIG_BUFFER_CHUNK_SIZE: {
        uint64_t v = *(const uint64_t *)value;
        if (v < (UINT64_C(4) << 10) || v > (UINT64_C(1) << 30))
            return "must be between 4K and 1G";
        break;
    }
    case SM_CONFIG_OTF2_END_THREADS:
        if (*(const int64_t *)value < 0 || *(const int64_t *)value > SM_CONFIG_END_THREADS_MAX)
            return "must be between 0 and 64";
        break;
    case SM_CONFIG_THROTTLE_CALLS:
        if (*(const int64_t *)value < 1)
            return "must be 1 or more";
        break;
    case SM_CONFIG_THROTTLE_PER_CALL:
        if (*(const int64_t *)value < 0)
            return "must be 0 or more";
        break;
    default:
        break;
    }
    return NULL;
}

/* Parses and stores value; on failure leaves cfg as it was and says why. */
static int sm_config_apply(sm_config_t *cfg, const sm_config_var_t *var, const char *value,
                           sm_config_source_t source, char *why, size_t whylen)
{
    const char *range = NULL;
    if (!value)
        value = "";
    switch (var->type) {
    case SM_CONFIG_TYPE_BOOL: {
        bool b;
        if (sm_config_parse_bool(value, &b)) {
            snprintf(why, whylen, "expected yes or no (or true/false, on/off, 1/0)");
            return -1;
        }
        *SM_FIELD(cfg, var, bool) = b;
        break;
    }
    case SM_CONFIG_TYPE_INT: {
        int64_t v;
        if (sm_parse_int(value, &v)) {
            snprintf(why, whylen, "expected a whole number");
            return -1;
        }
        if ((range = sm_check_range(var, &v)))
            break;
        *SM_FIELD(cfg, var, int64_t) = v;
        break;
    }
    case SM_CONFIG_TYPE_SIZE: {
        uint64_t v;
        if (sm_config_parse_size(value, &v)) {
            snprintf(why, whylen,
                     "expected a size in bytes above 0 with an optional K, M, G or T suffix "
                     "(1K = 1024), e.g. 64M");
            return -1;
        }
        if ((range = sm_check_range(var, &v)))
            break;
        *SM_FIELD(cfg, var, uint64_t) = v;
        break;
    }
    case SM_CONFIG_TYPE_ENUM: {
        int v;
        if (sm_parse_enum(value, var->choices, &v)) {
            snprintf(why, whylen, "expected one of %s", var->choices ? var->choices : "");
            return -1;
        }
        *SM_FIELD(cfg, var, int) = v;
        break;
    }
    case SM_CONFIG_TYPE_STRING:
    case SM_CONFIG_TYPE_PATH: {
        uint32_t groups;
        if (sm_var_index(var) == SM_CONFIG_MPI_GROUPS &&
            sm_mpi_groups_parse(value, &groups, why, whylen) != 0)
            return -1;
        if (sm_var_index(var) == SM_CONFIG_GPU_SAMPLING) {
            static sm_gpu_spec_t spec; /* big: not on the stack */
            sm_gpu_spec_init(&spec);
            int bad = sm_gpu_sampling_list(value, &spec, why, whylen);
            sm_gpu_spec_free(&spec);
            if (bad)
                return -1;
        }
        if (sm_var_index(var) == SM_CONFIG_MIN_FREE_SPACE) {
            uint64_t bytes;
            double fraction;
            if (sm_config_parse_free_space(value, &bytes, &fraction, why, whylen) != 0)
                return -1;
        }
        if (sm_var_index(var) == SM_CONFIG_GPU_SAMPLING_INTERVAL) {
            uint64_t ns;
            if (sm_gpu_sampling_interval(value, &ns, why, whylen) != 0)
                return -1;
        }
        if (sm_var_index(var) == SM_CONFIG_GPU_METRICS) {
            static sm_gpu_spec_t spec; /* big: not on the stack */
            sm_gpu_spec_init(&spec);
            int bad = sm_gpu_spec_parse_list(value, &spec, why, whylen);
            sm_gpu_spec_free(&spec);
            if (bad)
                return -1;
        }
        char *copy = strdup(value);
        if (!copy) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        char **field = SM_FIELD(cfg, var, char *);
        free(*field);
        *field = copy;
        break;
    }
    }
    if (range) {
        snprintf(why, whylen, "%s", range);
        return -1;
    }
    cfg->source[sm_var_index(var)] = source;
    return 0;
}

int sm_config_set(sm_config_t *cfg, const sm_config_var_t *var, const char *value,
                  sm_config_source_t source, char *err, size_t errlen)
{
    char why[256], quoted[512];
    if (!var) {
        snprintf(err, errlen, "unknown configuration variable");
        return -1;
    }
    if (sm_config_apply(cfg, var, value, source, why, sizeof why) == 0)
        return 0;
    sm_quote_value(value ? value : "", quoted, sizeof quoted);
    sm_log_one_line(why); /* (the reason may quote the value as it is) */
    snprintf(err, errlen, "bad value '%s' for %s: %s", quoted,
             source == SM_CONFIG_FROM_FILE ? var->key : var->env, why);
    return -1;
}

void sm_config_init_defaults(sm_config_t *cfg)
{
    char why[256];
    memset(cfg, 0, sizeof *cfg);
    /* The defaults are checked by test_config; a bad one leaves the field 0. */
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++)
        (void)sm_config_apply(cfg, &sm_config_vars[i], sm_config_vars[i].def,
                              SM_CONFIG_FROM_DEFAULT, why, sizeof why);
}

void sm_config_free(sm_config_t *cfg)
{
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        if (v->type == SM_CONFIG_TYPE_STRING || v->type == SM_CONFIG_TYPE_PATH) {
            char **field = SM_FIELD(cfg, v, char *);
            free(*field);
            *field = NULL;
        }
    }
}

void sm_config_format(const sm_config_t *cfg, const sm_config_var_t *var, char *buf, size_t len)
{
    if (!len)
        return;
    switch (var->type) {
    case SM_CONFIG_TYPE_BOOL:
        snprintf(buf, len, "%s", *SM_CFIELD(cfg, var, bool) ? "yes" : "no");
        break;
    case SM_CONFIG_TYPE_INT:
        snprintf(buf, len, "%lld", (long long)*SM_CFIELD(cfg, var, int64_t));
        break;
    case SM_CONFIG_TYPE_SIZE:
        sm_format_size(*SM_CFIELD(cfg, var, uint64_t), buf, len);
        break;
    case SM_CONFIG_TYPE_ENUM:
        sm_enum_name(var->choices, *SM_CFIELD(cfg, var, int), buf, len);
        break;
    case SM_CONFIG_TYPE_STRING:
    case SM_CONFIG_TYPE_PATH: {
        const char *s = *SM_CFIELD(cfg, var, char *);
        snprintf(buf, len, "%s", s ? s : "");
        break;
    }
    }
}

/* ------------------------------------------------------------------ config file */

/* A '#' at the start of a line or after white space starts a comment, so
 * "buffer_size = 64M  # per process" works and a path like a#b survives. */
static void sm_strip_comment(char *line)
{
    for (char *p = line; *p; p++) {
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            return;
        }
    }
}

static char *sm_trim(char *s)
{
    char *e = s + strlen(s);
    while (isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

/* A config file is a few lines: anything longer is not one (a log, a
 * binary), and reading it must not grow without bound. */
#define SM_CONFIG_FILE_MAX ((size_t)1 << 20)

/* The whole file (the path the user named: a regular file, its links
 * followed; fs.h) into a malloc'd, NUL-terminated buffer of at most
 * SM_CONFIG_FILE_MAX bytes; NULL with err. */
static char *sm_config_slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    char *buf = sm_fs_read_input(path, SM_FS_INPUT_NAMED, SM_CONFIG_FILE_MAX, len);
    if (buf)
        return buf;
    int e = errno;
    char why[200];
    if (e == SM_FS_TOO_LARGE)
        snprintf(err, errlen, "config file %s is larger than %zuM (it is not a config file?)",
                 path, SM_CONFIG_FILE_MAX >> 20);
    else if (sm_fs_input_refused(e))
        snprintf(err, errlen, "config file %s %s", path,
                 sm_fs_input_why(path, SM_FS_INPUT_NAMED, e, SM_CONFIG_FILE_MAX, why, sizeof why));
    else
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(e));
    return NULL;
}

/* What is not text: a byte-order mark, NUL bytes, control characters and
 * invalid UTF-8 are named with their line, before any line is applied. */
static int sm_config_check_text(const char *path, const char *buf, size_t n, char *err,
                                size_t errlen)
{
    if (n >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) {
        snprintf(err, errlen, "config file %s starts with a UTF-8 byte-order mark (bytes EF BB "
                 "BF); save it without one", path);
        return -1;
    }
    unsigned long line = 1;
    size_t col = 1;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n') {
            line++;
            col = 1;
            i++;
            continue;
        }
        if (c == '\0') {
            snprintf(err, errlen, "%s:%lu: NUL byte at column %zu: a binary file, not a config "
                     "file?", path, line, col);
            return -1;
        }
        size_t k = c == '\t' || c == '\r' || (c >= 0x20 && c != 0x7f)
                       ? sm_utf8_seq((const unsigned char *)buf + i, n - i) : 0;
        if (!k) {
            snprintf(err, errlen, "%s:%lu: binary data (byte 0x%02x at column %zu, %s): not a "
                     "config file?", path, line, c, col,
                     c < 0x20 || c == 0x7f ? "a control character" : "not UTF-8");
            return -1;
        }
        i += k;
        col++;
    }
    return 0;
}

int sm_config_read_file(sm_config_t *cfg, const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *buf = sm_config_slurp(path, &len, err, errlen);
    if (!buf)
        return -1;
    if (sm_config_check_text(path, buf, len, err, errlen) != 0) {
        free(buf);
        return -1;
    }
    char why[256], quoted[512];
    unsigned long lineno = 0, first[SM_CONFIG_COUNT] = {0};
    int rc = 0;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        sm_strip_comment(line);
        char *text = sm_trim(line);
        if (!*text)
            continue;
        char *eq = strchr(text, '=');
        if (!eq) {
            sm_quote_value(text, quoted, sizeof quoted);
            snprintf(err, errlen, "%s:%lu: missing '=' in \"%s\"", path, lineno, quoted);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = sm_trim(text), *value = sm_trim(eq + 1);
        const sm_config_var_t *var = sm_config_find(key);
        if (!var) {
            sm_quote_value(key, quoted, sizeof quoted);
            snprintf(err, errlen, "%s:%lu: unknown key '%s'", path, lineno, quoted);
            rc = -1;
            break;
        }
        /* The file is named by the environment; naming another one here would
         * be silently ignored, so say so. */
        if (sm_var_index(var) == SM_CONFIG_CONFIG_FILE) {
            snprintf(err, errlen, "%s:%lu: key '%s' cannot be set in a config file", path,
                     lineno, key);
            rc = -1;
            break;
        }
        if (sm_config_apply(cfg, var, value, SM_CONFIG_FROM_FILE, why, sizeof why)) {
            char qkey[128];
            sm_quote_value(key, qkey, sizeof qkey);
            sm_quote_value(value, quoted, sizeof quoted);
            sm_log_one_line(why); /* (the reason may quote the value as it is) */
            snprintf(err, errlen, "%s:%lu: bad value '%s' for %s: %s", path, lineno, quoted,
                     qkey, why);
            rc = -1;
            break;
        }
        /* A key given twice: the last one counts, and the caller warns. */
        size_t k = sm_var_index(var);
        if (first[k] && !cfg->warning[0])
            snprintf(cfg->warning, sizeof cfg->warning, "%s:%lu: key '%s' given twice (first on "
                     "line %lu); the value of line %lu counts", path, lineno, var->key, first[k],
                     lineno);
        else if (!first[k])
            first[k] = lineno;
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ load */

/* "SYSMEASURE_BUFFER_SIZE=1M", "buffer_size = 1M (config file F)" or
 * "buffer_size 64M (default)": where a conflicting value came from. */
static void sm_describe(const sm_config_t *cfg, const sm_config_var_t *var, char *buf, size_t len)
{
    char value[128];
    sm_config_format(cfg, var, value, sizeof value);
    switch (cfg->source[sm_var_index(var)]) {
    case SM_CONFIG_FROM_ENV:
        snprintf(buf, len, "%s=%s", var->env, value);
        break;
    case SM_CONFIG_FROM_FILE:
        snprintf(buf, len, "%s = %s (config file %s)", var->key, value,
                 cfg->config_file ? cfg->config_file : "?");
        break;
    default:
        snprintf(buf, len, "%s %s (default)", var->key, value);
        break;
    }
}

static int sm_config_check(const sm_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->buffer_size < cfg->buffer_chunk_size) {
        char a[256], b[256];
        sm_describe(cfg, &sm_config_vars[SM_CONFIG_BUFFER_SIZE], a, sizeof a);
        sm_describe(cfg, &sm_config_vars[SM_CONFIG_BUFFER_CHUNK_SIZE], b, sizeof b);
        snprintf(err, errlen, "%s is smaller than %s: the buffer budget must hold at least one chunk",
                 a, b);
        return -1;
    }
    return 0;
}

/* Names under SYSMEASURE_ that are no measurement setting and that the
 * launcher and the library leave alone: what a modulefile, Spack or a site
 * sets for the installation (the prefix under its conventional names, the
 * version) and what the compiler wrappers read (src/tools/sysmeasure-*). */
static const char *const sm_config_other_names[] = {
    "SYSMEASURE_ROOT", "SYSMEASURE_DIR", "SYSMEASURE_HOME", "SYSMEASURE_PREFIX",
    "SYSMEASURE_VERSION", "SYSMEASURE_CC", "SYSMEASURE_CXX", "SYSMEASURE_FC",
    "SYSMEASURE_LIBDIR",
};

int sm_config_other_name(const char *name)
{
    for (size_t i = 0; i < sizeof sm_config_other_names / sizeof *sm_config_other_names; i++)
        if (!strcmp(name, sm_config_other_names[i]))
            return 1;
    return 0;
}

/* Edit distance of a and b (insertions, deletions, substitutions; letters
 * compared without case), for the nearest name of a misspelt variable.  Names
 * are short (under 128 bytes), so one row on the stack is enough. */
static size_t sm_edit_distance(const char *a, const char *b)
{
    size_t lb = strlen(b), row[128];
    if (lb >= sizeof row / sizeof *row)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1]; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]);
            size_t best = diag + cost;
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

const sm_config_var_t *sm_config_nearest(const char *name)
{
    const char *tail = name;
    if (!strncmp(tail, SM_ENV_PREFIX, sizeof SM_ENV_PREFIX - 1))
        tail += sizeof SM_ENV_PREFIX - 1;
    /* A slip of a letter or two, more in longer names; beyond that a name
     * is no misspelling of ours (SYSMEASURE_FOO suggests nothing). */
    size_t limit = 1 + strlen(tail) / 4, best = (size_t)-1;
    const sm_config_var_t *found = NULL;
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        size_t d = sm_edit_distance(tail, sm_config_vars[i].name);
        if (d <= limit && d < best) {
            best = d;
            found = &sm_config_vars[i];
        }
    }
    return found;
}

static int sm_config_load_steps(sm_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    static const size_t plen = sizeof SM_ENV_PREFIX - 1;
    const char *file = NULL;

    /* Names first, so a typo is reported even when a value is bad as well. */
    for (char *const *e = envp; e && *e; e++) {
        if (strncmp(*e, SM_ENV_PREFIX, plen) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        char name[128], quoted[160];
        snprintf(name, sizeof name, "%.*s", (int)n, *e);
        const sm_config_var_t *var = sm_config_find(name);
        if ((!var || strcmp(var->env, name) != 0) && n < sizeof name && sm_config_other_name(name))
            continue;
        if (!var || strcmp(var->env, name) != 0 || n >= sizeof name) {
            const sm_config_var_t *near = n < sizeof name ? sm_config_nearest(name) : NULL;
            sm_quote_value(name, quoted, sizeof quoted);
            if (near)
                snprintf(err, errlen, "unknown variable %s (did you mean %s? sysmeasure-avail lists them)",
                         quoted, near->env);
            else
                snprintf(err, errlen, "unknown variable %s (sysmeasure-avail lists them)", quoted);
            return -1;
        }
        if (sm_var_index(var) == SM_CONFIG_CONFIG_FILE && !file)
            file = eq ? eq + 1 : "";
    }
    if (file && *file && sm_config_read_file(cfg, file, err, errlen))
        return -1;
    for (char *const *e = envp; e && *e; e++) {
        if (strncmp(*e, SM_ENV_PREFIX, plen) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - *e : (ptrdiff_t)strlen(*e)), *e);
        const sm_config_var_t *var = sm_config_find(name);
        if (!var || strcmp(var->env, name) != 0)
            continue; /* (one of sm_config_other_names) */
        /* getenv() semantics: the first of duplicate entries wins. */
        if (cfg->source[sm_var_index(var)] == SM_CONFIG_FROM_ENV)
            continue;
        if (sm_config_set(cfg, var, eq ? eq + 1 : "", SM_CONFIG_FROM_ENV, err, errlen))
            return -1;
    }
    return sm_config_check(cfg, err, errlen);
}

int sm_config_load(sm_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    sm_config_init_defaults(cfg);
    if (sm_config_load_steps(cfg, envp, err, errlen) == 0)
        return 0;
    /* A half-applied configuration helps nobody: leave the defaults. */
    sm_config_free(cfg);
    sm_config_init_defaults(cfg);
    return -1;
}
