/* PAPI event names and their check; see papi_events.h. */
#include "papi_events.h"

#include <papi.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "papi_dl.h"

static void sm_say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sm_say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

int sm_papi_names_parse(const char *list, sm_papi_names_t *out, char *err, size_t errlen)
{
    out->n = 0;
    if (!list)
        return 0;
    /* An empty or blank list means no events, not one empty name. */
    if (list[strspn(list, " \t")] == '\0')
        return 0;
    for (const char *p = list;;) {
        size_t k = strcspn(p, ",");
        const char *b = p, *e = p + k;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        size_t n = (size_t)(e - b);
        if (!n) {
            sm_say(err, errlen, "empty event name in '%s'", list);
            return -1;
        }
        if (n >= SM_PAPI_NAME_LEN) {
            sm_say(err, errlen, "event name '%.*s' is too long (at most %d characters)", (int)n, b,
                   SM_PAPI_NAME_LEN - 1);
            return -1;
        }
        if (out->n == SM_PAPI_MAX_EVENTS) {
            sm_say(err, errlen, "too many events (at most %d)", SM_PAPI_MAX_EVENTS);
            return -1;
        }
        char *slot = out->name[out->n];
        memcpy(slot, b, n);
        slot[n] = '\0';
        for (unsigned i = 0; i < out->n; i++)
            if (!strcmp(out->name[i], slot)) {
                sm_say(err, errlen, "event '%s' is named twice", slot);
                return -1;
            }
        out->n++;
        if (!p[k])
            return 0;
        p += k + 1;
    }
}

bool sm_papi_name_is_sde(const char *name)
{
    return !strncmp(name, "sde:::", 6);
}

void sm_papi_names_join(const sm_papi_names_t *names, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < names->n && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", names->name[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

static pthread_once_t sm_papi_once = PTHREAD_ONCE_INIT;
static int sm_papi_init_rc;

static void sm_papi_init_once(void)
{
    /* PAPI's AMD GPU components call rsmi_init, which on a machine without
     * an AMD GPU prints two lines of its own on stderr at every start
     * (Debian's PAPI 7 with librocm-smi installed).  sysmeasure reads
     * rocm-smi itself (gpu/rocm/rsmi_sampler.c); GPU counters per CPU region
     * are not offered, so these components stay off. */
    PAPI_disable_component_by_name("rocm_smi");
    PAPI_disable_component_by_name("rocm");
    sm_papi_init_rc = PAPI_library_init(PAPI_VER_CURRENT);
}

/* Every use of PAPI starts here: the library is loaded now, not before. */
int sm_papi_init(char *err, size_t errlen)
{
    if (sm_papi_load(err, errlen) != 0)
        return -1;
    pthread_once(&sm_papi_once, sm_papi_init_once);
    if (sm_papi_init_rc != PAPI_VER_CURRENT) {
        sm_say(err, errlen, "PAPI does not start (%s)",
               sm_papi_init_rc > 0 ? "library version differs from the one sysmeasure was built with"
                                   : PAPI_strerror(sm_papi_init_rc));
        return -1;
    }
    return 0;
}

/* Calls fn for each preset this machine can count; returns how many. */
static unsigned sm_papi_each_preset(void (*fn)(const PAPI_event_info_t *info, void *arg),
                                    void *arg)
{
    unsigned n = 0;
    int code = PAPI_PRESET_MASK;
    if (PAPI_enum_event(&code, PAPI_ENUM_FIRST) != PAPI_OK)
        return 0;
    do {
        PAPI_event_info_t info;
        if (PAPI_get_event_info(code, &info) != PAPI_OK || !info.count)
            continue;
        fn(&info, arg);
        n++;
    } while (PAPI_enum_event(&code, PAPI_PRESET_ENUM_AVAIL) == PAPI_OK);
    return n;
}

/* Native events that PAPI knows but this machine cannot count (hardware
 * events in a VM) are not offered. */
static unsigned sm_papi_count_native(void)
{
    unsigned n = 0;
    for (int c = 0; c < PAPI_num_components(); c++) {
        const PAPI_component_info_t *ci = PAPI_get_component_info(c);
        int code = PAPI_NATIVE_MASK;
        if (!ci || ci->disabled || PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, c) != PAPI_OK)
            continue;
        do
            n += sm_papi_try_set(&code, 1, false) == PAPI_OK;
        while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, c) == PAPI_OK);
    }
    return n;
}

/* "available here: 2 presets (PAPI_TOT_INS, PAPI_TOT_CYC) and 160 native
 * events; sysmeasure-avail --papi lists them": what the user can name
 * instead, short enough for one line. */
/* The first presets' names, comma-separated, for sm_papi_available. */
typedef struct sm_papi_first {
    char names[256];
    size_t at;
    unsigned n;
} sm_papi_first_t;

static void sm_papi_first_preset(const PAPI_event_info_t *info, void *arg)
{
    sm_papi_first_t *x = arg;
    if (x->n++ < 6 && x->at < sizeof x->names) {
        int w = snprintf(x->names + x->at, sizeof x->names - x->at, "%s%s", x->at ? ", " : "",
                         info->symbol);
        x->at += w > 0 ? (size_t)w : 0;
    }
}

static void sm_papi_available(char *buf, size_t len)
{
    sm_papi_first_t first = {.names = ""};
    unsigned npresets = sm_papi_each_preset(sm_papi_first_preset, &first), nnative;
    const char *presets = first.names;
    nnative = sm_papi_count_native();
    if (npresets)
        snprintf(buf, len, "available here: %u preset%s (%s%s) and %u native events; "
                 "sysmeasure-avail --papi lists them", npresets, npresets == 1 ? "" : "s",
                 presets, npresets > 6 ? ", ..." : "", nnative);
    else
        snprintf(buf, len, "available here: no presets (no hardware counters) and %u native "
                 "events; sysmeasure-avail --papi lists them", nnative);
}

int sm_papi_make_set(const int *codes, unsigned n, bool multiplex, int *set)
{
    *set = PAPI_NULL;
    int rc = PAPI_create_eventset(set);
    if (rc != PAPI_OK)
        return rc;
    if (multiplex) {
        /* A multiplexed set must know its component before it is switched. */
        rc = PAPI_assign_eventset_component(*set, PAPI_get_event_component(codes[0]));
        if (rc == PAPI_OK)
            rc = PAPI_set_multiplex(*set);
    }
    for (unsigned i = 0; i < n && rc == PAPI_OK; i++)
        rc = PAPI_add_event(*set, codes[i]);
    if (rc != PAPI_OK)
        sm_papi_free_set(set);
    return rc;
}

void sm_papi_free_set(int *set)
{
    PAPI_cleanup_eventset(*set);
    PAPI_destroy_eventset(set);
}

int sm_papi_try_set(const int *codes, unsigned n, bool multiplex)
{
    int set, rc = sm_papi_make_set(codes, n, multiplex, &set);
    if (rc == PAPI_OK)
        sm_papi_free_set(&set);
    return rc;
}

int sm_papi_check(const sm_papi_names_t *names, sm_papi_names_t *dropped, bool *multiplex,
                  char *err, size_t errlen)
{
    sm_papi_names_t unknown = {0}, uncountable = {0};
    int codes[SM_PAPI_MAX_EVENTS];
    unsigned ncodes = 0;
    dropped->n = 0;
    *multiplex = false;
    if (sm_papi_init(err, errlen) != 0)
        return -1;
    /* Without multiplexing the check below says so when it is needed. */
    (void)PAPI_multiplex_init();
    for (unsigned i = 0; i < names->n; i++) {
        const char *name = names->name[i];
        int code;
        if (sm_papi_name_is_sde(name))
            continue;
        if (PAPI_event_name_to_code(name, &code) != PAPI_OK) {
            memcpy(unknown.name[unknown.n++], name, SM_PAPI_NAME_LEN);
            memcpy(dropped->name[dropped->n++], name, SM_PAPI_NAME_LEN);
        } else if (sm_papi_try_set(&code, 1, false) != PAPI_OK) {
            memcpy(uncountable.name[uncountable.n++], name, SM_PAPI_NAME_LEN);
            memcpy(dropped->name[dropped->n++], name, SM_PAPI_NAME_LEN);
        } else {
            codes[ncodes++] = code;
        }
    }
    char avail[512], list[1024];
    avail[0] = '\0';
    if (unknown.n || uncountable.n) {
        char u[1024] = "", c[1024] = "";
        sm_papi_available(avail, sizeof avail);
        if (unknown.n) {
            sm_papi_names_join(&unknown, list, sizeof list);
            sm_say(u, sizeof u, "unknown PAPI event%s %s", unknown.n > 1 ? "s" : "", list);
        }
        if (uncountable.n) {
            sm_papi_names_join(&uncountable, list, sizeof list);
            sm_say(c, sizeof c, "PAPI event%s %s cannot be counted on this machine",
                     uncountable.n > 1 ? "s" : "", list);
        }
        sm_say(err, errlen, "%s%s%s; %s", u, *u && *c ? "; " : "", c, avail);
        return 1;
    }
    if (ncodes > 1 && sm_papi_try_set(codes, ncodes, false) != PAPI_OK) {
        if (sm_papi_try_set(codes, ncodes, true) == PAPI_OK) {
            *multiplex = true;
            return 0;
        }
        /* Together they do not fit even multiplexed: all of them are the
         * problem, none alone. */
        sm_papi_names_t together = {0};
        for (unsigned i = 0; i < names->n; i++)
            if (!sm_papi_name_is_sde(names->name[i])) {
                memcpy(together.name[together.n++], names->name[i], SM_PAPI_NAME_LEN);
                memcpy(dropped->name[dropped->n++], names->name[i], SM_PAPI_NAME_LEN);
            }
        sm_papi_available(avail, sizeof avail);
        sm_papi_names_join(&together, list, sizeof list);
        sm_say(err, errlen, "PAPI events %s cannot be counted together, not even multiplexed; "
               "name fewer of them; %s", list, avail);
        return 1;
    }
    return 0;
}

static void sm_papi_print_preset(const PAPI_event_info_t *info, void *f)
{
    fprintf(f, "  %-16s %s\n", info->symbol, info->long_descr);
}

int sm_papi_list(FILE *f, char *err, size_t errlen)
{
    if (sm_papi_init(err, errlen) != 0)
        return -1;
    fprintf(f, "PAPI %d.%d.%d presets available here:\n", PAPI_VERSION_MAJOR(PAPI_VERSION),
            PAPI_VERSION_MINOR(PAPI_VERSION), PAPI_VERSION_REVISION(PAPI_VERSION));
    if (!sm_papi_each_preset(sm_papi_print_preset, f))
        fprintf(f, "  (none: this machine shows no hardware counters to PAPI)\n");
    for (int c = 0; c < PAPI_num_components(); c++) {
        const PAPI_component_info_t *ci = PAPI_get_component_info(c);
        if (!ci)
            continue;
        if (ci->disabled) {
            fprintf(f, "component %s: disabled (%s)\n", ci->name, ci->disabled_reason);
            continue;
        }
        fprintf(f, "component %s: native events\n", ci->name);
        int code = PAPI_NATIVE_MASK;
        unsigned n = 0, skipped = 0;
        if (PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, c) == PAPI_OK) {
            do {
                PAPI_event_info_t info;
                if (PAPI_get_event_info(code, &info) != PAPI_OK)
                    continue;
                if (sm_papi_try_set(&code, 1, false) != PAPI_OK) {
                    skipped++;
                    continue;
                }
                fprintf(f, "  %s  %s\n", info.symbol, info.long_descr);
                n++;
            } while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, c) == PAPI_OK);
        }
        if (!n)
            fprintf(f, "  (none)\n");
        if (skipped)
            fprintf(f, "  (%u more that this machine cannot count)\n", skipped);
    }
    fprintf(f, "software-defined events (sde:::LIBRARY::COUNTER) exist once the program's "
           "libraries register them; the launcher passes them on unchecked\n");
    return 0;
}
