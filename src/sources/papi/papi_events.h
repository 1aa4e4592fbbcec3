/* PAPI event names: the list the user gives, checked against this machine
 * before the program starts, and the events this machine offers.  Compiled
 * only where configure found PAPI (SM_HAVE_PAPI); shared by the launcher,
 * sysmeasure-avail and the runtime, so that all three read a list alike. */
#ifndef SM_PAPI_EVENTS_H
#define SM_PAPI_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "../../core/compiler.h"

#define SM_PAPI_MAX_EVENTS 32
#define SM_PAPI_NAME_LEN 128

typedef struct sm_papi_names {
    unsigned n;
    char name[SM_PAPI_MAX_EVENTS][SM_PAPI_NAME_LEN];
} sm_papi_names_t;

/* Splits "A, B,C" into names (blanks around them dropped).  -1 with a
 * message in err for an empty name, a name named twice, a name too long or
 * too many names. */
int sm_papi_names_parse(const char *list, sm_papi_names_t *out, char *err, size_t errlen) SM_HIDDEN;

/* Software-defined events exist only once the program's library registers
 * them, so nothing but the program itself can check them. */
bool sm_papi_name_is_sde(const char *name) SM_HIDDEN;

/* Initialises PAPI once per process; -1 with the reason in err. */
int sm_papi_init(char *err, size_t errlen) SM_HIDDEN;

/* Checks that each event exists, can be counted here, and that all can be
 * counted together (multiplexed if need be).  Returns 0 when all can;
 * otherwise 1 with one line in err naming the events and what is available
 * instead, and the events that cannot be counted in `dropped` (those a run
 * with papi_optional leaves out).  *multiplex tells whether they need it.
 * -1: PAPI itself failed (err says why). */
int sm_papi_check(const sm_papi_names_t *names, sm_papi_names_t *dropped, bool *multiplex,
                  char *err, size_t errlen) SM_HIDDEN;

/* A new event set of the events (codes), multiplexed or not: PAPI's status;
 * on failure nothing is left to free. */
int sm_papi_make_set(const int *codes, unsigned n, bool multiplex, int *set) SM_HIDDEN;
void sm_papi_free_set(int *set) SM_HIDDEN;
/* Whether such a set can be made (it is freed again): PAPI's status. */
int sm_papi_try_set(const int *codes, unsigned n, bool multiplex) SM_HIDDEN;

/* "A, B, C" */
void sm_papi_names_join(const sm_papi_names_t *names, char *buf, size_t len) SM_HIDDEN;

/* Lists the available presets and the native events of every component on f
 * (sysmeasure-avail --papi).  -1 when PAPI cannot start (err says why). */
int sm_papi_list(FILE *f, char *err, size_t errlen) SM_HIDDEN;

#endif
