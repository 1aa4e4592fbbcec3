/* The module rules of Python measurement (SYSMEASURE_PYTHON_MODULES):
 * which modules' functions are recorded.  Read by the launcher (to refuse
 * bad rules before the program starts) and by the Python adapter. */
#ifndef SM_PY_MODULE_RULES_H
#define SM_PY_MODULE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/compiler.h"

typedef struct sm_py_rules sm_py_rules_t;

/* "-numpy,+numpy.linalg,-/usr/lib/python3": NULL with one line in err when
 * a rule is bad; an empty text gives rules that keep everything. */
sm_py_rules_t *sm_py_rules_parse(const char *text, char *err, size_t errlen) SM_HIDDEN;
/* Whether a function of module (may be NULL) from file (may be NULL) is
 * left out: the last rule that matches decides; none: kept. */
bool sm_py_rules_exclude(const sm_py_rules_t *rules, const char *module, const char *file) SM_HIDDEN;
size_t sm_py_rules_count(const sm_py_rules_t *rules) SM_HIDDEN;
void sm_py_rules_free(sm_py_rules_t *rules) SM_HIDDEN;

#endif
