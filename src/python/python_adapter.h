/* Python functions as regions (python_adapter.c): the interpreter's own
 * hooks, reached at run time, in any Python 3.9 or newer. */
#ifndef SM_PYTHON_ADAPTER_H
#define SM_PYTHON_ADAPTER_H

#include "../core/compiler.h"
#include "../core/subsystem.h"

/* src/plugins.def: at start-up it finds the interpreter (when the process
 * is one) and waits for it to run the program; at the end, its notes. */
extern const sm_subsystem_t sm_python_subsystem SM_HIDDEN;

#endif
