/* Definitions: interning is idempotent, distinct keys get distinct ids, and
 * concurrent definers agree. */
#include <pthread.h>
#include <stdio.h>

#include "core/definitions.h"
#include "unit.h"

#define THREADS 4
#define NAMES 3000

static sm_region_id_t ids[THREADS][NAMES];

static void *define_all(void *arg)
{
    long t = (long)arg;
    char name[32];
    /* Each thread walks the names in its own order to collide with the others. */
    for (int k = 0; k < NAMES; k++) {
        int i = (int)((k * 7 + t * 1013) % NAMES);
        snprintf(name, sizeof name, "region %d", i);
        ids[t][i] = sm_region_define(name, "file.c", (uint32_t)i, SM_PARADIGM_USER, SM_ROLE_CODE);
    }
    return NULL;
}

int main(void)
{
    sm_definitions_init();
    sm_string_id_t a = sm_string_intern("alpha"), b = sm_string_intern("beta");
    CHECK(a != b);
    CHECK_EQ_U(sm_string_intern("alpha"), a);
    CHECK_STR(sm_string_get(a), "alpha");
    CHECK(sm_string_get(999999) == NULL);

    /* Names with invalid UTF-8 are kept with U+FFFD for each bad byte; the
     * raw and the cleaned name are one region. */
    sm_region_id_t badname = sm_region_define("caf\xe9", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    CHECK_STR(sm_region_name(badname), "caf\xef\xbf\xbd");
    CHECK_EQ_U(sm_region_define("caf\xe9", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE), badname);
    CHECK_EQ_U(sm_region_define("caf\xef\xbf\xbd", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE), badname);
    CHECK_STR(sm_string_get(sm_string_intern("x\x80y")), "x\xef\xbf\xbdy");

    sm_region_id_t r1 = sm_region_define("solve", "solver.c", 10, SM_PARADIGM_USER, SM_ROLE_FUNCTION);
    CHECK_EQ_U(sm_region_define("solve", "solver.c", 10, SM_PARADIGM_USER, SM_ROLE_FUNCTION), r1);
    sm_region_id_t r2 = sm_region_define("solve", "solver.c", 11, SM_PARADIGM_USER, SM_ROLE_FUNCTION);
    sm_region_id_t r3 = sm_region_define("solve", "solver.c", 10, SM_PARADIGM_MPI, SM_ROLE_FUNCTION);
    sm_region_id_t r4 = sm_region_define("solve", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    CHECK(r1 != r2 && r1 != r3 && r2 != r3 && r4 != r1);
    const sm_region_def_t *d = sm_region_get(r1);
    CHECK(d != NULL);
    CHECK_STR(sm_string_get(d->name), "solve");
    CHECK_STR(sm_string_get(d->file), "solver.c");
    CHECK_EQ_U(d->line, 10);
    CHECK_EQ_U(d->paradigm, SM_PARADIGM_USER);
    CHECK_EQ_U(sm_region_get(r4)->file, SM_INVALID_ID);
    CHECK_STR(sm_region_name(r3), "solve");
    CHECK(sm_region_define(NULL, NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE) == SM_INVALID_ID);

    sm_attribute_id_t x = sm_attribute_define("errno", SM_ATTR_INT64);
    CHECK_EQ_U(sm_attribute_define("errno", SM_ATTR_INT64), x);
    CHECK(sm_attribute_define("errno", SM_ATTR_STRING) != x);
    CHECK_EQ_U(sm_attribute_get(x)->type, SM_ATTR_INT64);

    /* Concurrent definers: every thread gets the same id for a name. */
    uint32_t before = sm_region_count();
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, define_all, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_U(sm_region_count() - before, NAMES);
    int disagree = 0;
    for (int i = 0; i < NAMES; i++) {
        for (int k = 1; k < THREADS; k++)
            disagree += ids[k][i] != ids[0][i];
        char name[32];
        snprintf(name, sizeof name, "region %d", i);
        disagree += strcmp(sm_region_name(ids[0][i]), name) != 0;
    }
    CHECK_EQ_U(disagree, 0);

    /* Index growth: many strings stay distinct and retrievable. */
    char s[32];
    int bad = 0;
    sm_string_id_t first = sm_string_intern("bulk 0");
    for (int i = 1; i < 100000; i++) {
        snprintf(s, sizeof s, "bulk %d", i);
        bad += sm_string_intern(s) != first + (sm_string_id_t)i;
    }
    for (int i = 0; i < 100000; i += 997) {
        snprintf(s, sizeof s, "bulk %d", i);
        bad += strcmp(sm_string_get(first + (sm_string_id_t)i), s) != 0;
    }
    CHECK_EQ_U(bad, 0);
    CHECK_STR(sm_paradigm_name(SM_PARADIGM_MPI), "mpi");
    return UNIT_RESULT();
}
