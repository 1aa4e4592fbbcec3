/* PAPI counters per thread (papi_source.h). */
#include "papi_source.h"

#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/log.h"
#include "papi_events.h"
#include "papi_dl.h"

static sm_papi_names_t sm_papi_counted; /* the events counted, in order */
static char sm_papi_dropped[1024];      /* "A, B": left out */
static bool sm_papi_multiplex;
static bool sm_papi_counting; /* init succeeded */
static int sm_papi_codes[SM_PAPI_MAX_EVENTS];

typedef struct sm_papi_thread {
    int eventset;
    long long read[SM_PAPI_MAX_EVENTS]; /* PAPI's output */
} sm_papi_thread_t;

static unsigned long sm_papi_thread_id(void)
{
    return (unsigned long)pthread_self();
}

/* A fresh event set with the process's events; PAPI's status. */
static int sm_papi_new_set(int *set)
{
    return sm_papi_make_set(sm_papi_codes, sm_papi_counted.n, sm_papi_multiplex, set);
}

/* In-process check of what the launcher could not check (software-defined
 * events exist only here) and of anything that changed since: the events
 * that cannot be counted go into `dropped`. */
static void sm_papi_resolve(sm_papi_names_t *dropped)
{
    sm_papi_names_t keep = {0};
    for (unsigned i = 0; i < sm_papi_counted.n; i++) {
        int code;
        const char *name = sm_papi_counted.name[i];
        if (PAPI_event_name_to_code(name, &code) == PAPI_OK &&
            sm_papi_try_set(&code, 1, false) == PAPI_OK) {
            sm_papi_codes[keep.n] = code;
            memcpy(keep.name[keep.n++], name, SM_PAPI_NAME_LEN);
        } else {
            memcpy(dropped->name[dropped->n++], name, SM_PAPI_NAME_LEN);
        }
    }
    sm_papi_counted = keep;
}

/* Events this process cannot count are left out when cfg->papi_optional
 * (named in the notes), else none is counted; either way one line says so. */
static uint32_t sm_papi_init_source(const sm_config_t *cfg, const char **names, uint32_t max)
{
    char err[1024];
    const char *list = cfg->papi_events;
    if (!list || !list[0])
        return 0;
    if (sm_papi_names_parse(list, &sm_papi_counted, err, sizeof err) != 0) {
        sm_error("papi_events: %s; no PAPI events are counted", err);
        return 0;
    }
    if (sm_papi_init(err, sizeof err) != 0 || PAPI_thread_init(sm_papi_thread_id) != PAPI_OK) {
        sm_error("%s; no PAPI events are counted", err[0] ? err : "PAPI_thread_init failed");
        return 0;
    }
    sm_papi_names_t dropped = {0};
    sm_papi_resolve(&dropped);
    if (dropped.n) {
        char joined[1024];
        sm_papi_names_join(&dropped, joined, sizeof joined);
        if (!cfg->papi_optional) {
            sm_error("PAPI event%s %s cannot be counted in this process%s; no PAPI events are "
                     "counted (papi_optional counts the others)",
                     dropped.n == 1 ? "" : "s", joined,
                     sm_papi_name_is_sde(dropped.name[0])
                         ? " (a software-defined event needs the program's library to link libsde)"
                         : "");
            snprintf(sm_papi_dropped, sizeof sm_papi_dropped, "%s", list);
            return 0;
        }
        snprintf(sm_papi_dropped, sizeof sm_papi_dropped, "%s", joined);
        sm_warning("PAPI event%s %s cannot be counted in this process: left out",
                   dropped.n == 1 ? "" : "s", joined);
    }
    if (!sm_papi_counted.n)
        return 0;
    if (sm_papi_counted.n > max) {
        sm_error("PAPI: %u events asked for, room for %u; no PAPI events are counted",
                 sm_papi_counted.n, max);
        return 0;
    }
    /* All together, or multiplexed when the hardware cannot hold them all. */
    int set;
    if (sm_papi_new_set(&set) != PAPI_OK) {
        sm_papi_multiplex = PAPI_multiplex_init() == PAPI_OK;
        if (!sm_papi_multiplex || sm_papi_new_set(&set) != PAPI_OK) {
            char joined[1024];
            sm_papi_names_join(&sm_papi_counted, joined, sizeof joined);
            sm_error("PAPI events %s cannot be counted together, even multiplexed; no PAPI "
                     "events are counted", joined);
            return 0;
        }
    }
    sm_papi_free_set(&set);
    for (unsigned i = 0; i < sm_papi_counted.n; i++)
        names[i] = sm_papi_counted.name[i];
    sm_papi_counting = true;
    return sm_papi_counted.n;
}

static void *sm_papi_thread_start(const char *thread)
{
    sm_papi_thread_t *c = calloc(1, sizeof *c);
    int rc = c ? PAPI_register_thread() : PAPI_ENOMEM;
    if (rc == PAPI_OK)
        rc = sm_papi_new_set(&c->eventset);
    if (rc == PAPI_OK)
        rc = PAPI_start(c->eventset);
    if (rc != PAPI_OK) {
        sm_warning("%s: PAPI counters do not start (%s); its regions have no counter values",
                   thread, PAPI_strerror(rc));
        free(c);
        return NULL;
    }
    return c;
}

static bool sm_papi_read(void *state, uint64_t *values)
{
    sm_papi_thread_t *c = state;
    if (PAPI_read(c->eventset, c->read) != PAPI_OK)
        return false;
    for (unsigned i = 0; i < sm_papi_counted.n; i++)
        values[i] = (uint64_t)c->read[i];
    return true;
}

static void sm_papi_thread_stop(void *state, const char *thread)
{
    (void)thread;
    sm_papi_thread_t *c = state;
    PAPI_stop(c->eventset, c->read);
    sm_papi_free_set(&c->eventset);
    PAPI_unregister_thread();
    free(c);
}

/* What the summary must say about the events: estimates, left out. */
static void sm_papi_notes(void (*add)(const char *line))
{
    char note[1200];
    if (sm_papi_counting && sm_papi_multiplex)
        add("PAPI events multiplexed (more than the hardware counts at once): their values are "
            "estimates");
    if (sm_papi_dropped[0]) {
        snprintf(note, sizeof note, "PAPI events not counted (this process cannot count them): %s",
                 sm_papi_dropped);
        add(note);
    }
}

const sm_counter_source_t sm_papi_source = {
    .name = "PAPI",
    .init = sm_papi_init_source,
    .unit = "events",
    .thread_start = sm_papi_thread_start,
    .read = sm_papi_read,
    .thread_stop = sm_papi_thread_stop,
    .notes = sm_papi_notes,
};
