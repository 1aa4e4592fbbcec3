/* Minimal unit-test helpers: CHECK records a failure and goes on; the test's
 * exit status is the number of failures (0: passed). */
#ifndef SM_UNIT_H
#define SM_UNIT_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int unit_failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            unit_failures++;                                                            \
        }                                                                               \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                \
    do {                                                                                \
        unsigned long long unit_a = (unsigned long long)(a), unit_b = (unsigned long long)(b); \
        if (unit_a != unit_b) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu != %llu)\n", __FILE__, \
                    __LINE__, #a, #b, unit_a, unit_b);                                  \
            unit_failures++;                                                            \
        }                                                                               \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                           \
    do {                                                                                \
        double unit_a = (double)(a), unit_b = (double)(b);                              \
        if (!(fabs(unit_a - unit_b) <= (tol))) {                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s ~ %s (%.9g vs %.9g, tol %g)\n",    \
                    __FILE__, __LINE__, #a, #b, unit_a, unit_b, (double)(tol));         \
            unit_failures++;                                                            \
        }                                                                               \
    } while (0)

#define CHECK_STR(a, b)                                                                 \
    do {                                                                                \
        const char *unit_a = (a), *unit_b = (b);                                        \
        if (!unit_a || !unit_b || strcmp(unit_a, unit_b) != 0) {                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n",       \
                    __FILE__, __LINE__, #a, #b, unit_a ? unit_a : "(null)",             \
                    unit_b ? unit_b : "(null)");                                        \
            unit_failures++;                                                            \
        }                                                                               \
    } while (0)

#define UNIT_RESULT() (unit_failures ? 1 : 0)

#endif
