/* Names for code addresses: the function that holds an address and the
 * offset into it, from the loaded object's symbol tables.  Executables
 * export almost no symbols, so when the dynamic table has no function
 * there, the full table (.symtab) is read from the object's file, once per
 * object.  Slow and thread-safe: callers cache what they get. */
#ifndef SM_SYMBOLS_H
#define SM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"

typedef struct sm_symbol {
    char function[128]; /* demangled where possible; "" when not found */
    char object[64];    /* basename of the object; "" when unknown */
    uintptr_t offset;   /* from the function's start, else from the object's base */
} sm_symbol_t;

/* 0 when at least the object was found, else -1 (out->function and
 * out->object empty, out->offset the address). */
int sm_symbol_lookup(const void *addr, sm_symbol_t *out) SM_HIDDEN;
/* The same, with the symbol's name as the object has it (mangled) and
 * demangled in full, into buffers of the caller's size (either may be NULL;
 * "" when not found). */
int sm_symbol_lookup_names(const void *addr, sm_symbol_t *out, char *mangled, size_t mlen,
                           char *demangled, size_t dlen) SM_HIDDEN;

/* The loaded object that holds addr: its file (the executable's through
 * /proc/self/exe) and its load bias.  0 when found, else -1. */
int sm_symbol_object(const void *addr, char *path, size_t len, uintptr_t *bias) SM_HIDDEN;

#endif
