/* Compiler instrumentation (-finstrument-functions): every function a
 * region (compiler_hooks.c). */
#ifndef SM_COMPILER_HOOKS_H
#define SM_COMPILER_HOOKS_H

#include "../core/compiler.h"
#include "../core/subsystem.h"

/* Its part of the end (src/plugins.def): the functions' names resolved,
 * the filter's note. */
extern const sm_subsystem_t sm_compiler_subsystem SM_HIDDEN;

#endif
