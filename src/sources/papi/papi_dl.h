/* PAPI, loaded when first asked for (sm_papi_load), not when the program
 * starts: libpapi and libpfm take tens of milliseconds to load and
 * relocate, which every measured program and every launcher run would pay,
 * counting or not.  Included after <papi.h> by the files that call PAPI: the
 * PAPI_* names below then call through the pointers that sm_papi_load
 * filled (a macro is not expanded again inside its own expansion). */
#ifndef SM_PAPI_DL_H
#define SM_PAPI_DL_H

#include <papi.h>
#include "../../core/compiler.h"

#define SM_PAPI_FUNCTIONS(X)                                                            \
    X(PAPI_add_event) X(PAPI_assign_eventset_component) X(PAPI_cleanup_eventset)        \
    X(PAPI_create_eventset) X(PAPI_destroy_eventset) X(PAPI_disable_component_by_name) X(PAPI_enum_cmp_event)             \
    X(PAPI_enum_event) X(PAPI_event_name_to_code) X(PAPI_get_component_info)            \
    X(PAPI_get_event_component) X(PAPI_get_event_info) X(PAPI_library_init)             \
    X(PAPI_multiplex_init) X(PAPI_num_components) X(PAPI_read) X(PAPI_register_thread)  \
    X(PAPI_set_multiplex) X(PAPI_start) X(PAPI_stop) X(PAPI_strerror)                   \
    X(PAPI_thread_init) X(PAPI_unregister_thread)

typedef struct sm_papi_functions {
#define SM_PAPI_POINTER(name) __typeof__(name) *name;
    SM_PAPI_FUNCTIONS(SM_PAPI_POINTER)
#undef SM_PAPI_POINTER
} sm_papi_functions_t;

extern sm_papi_functions_t sm_papi_fn SM_HIDDEN;

/* Loads libpapi (once; thread-safe).  0, or -1 with the reason in err. */
int sm_papi_load(char *err, size_t errlen) SM_HIDDEN;

#ifndef SM_PAPI_DL_IMPL /* papi_dl.c names the real functions */
#define PAPI_add_event sm_papi_fn.PAPI_add_event
#define PAPI_assign_eventset_component sm_papi_fn.PAPI_assign_eventset_component
#define PAPI_cleanup_eventset sm_papi_fn.PAPI_cleanup_eventset
#define PAPI_create_eventset sm_papi_fn.PAPI_create_eventset
#define PAPI_destroy_eventset sm_papi_fn.PAPI_destroy_eventset
#define PAPI_disable_component_by_name sm_papi_fn.PAPI_disable_component_by_name
#define PAPI_enum_cmp_event sm_papi_fn.PAPI_enum_cmp_event
#define PAPI_enum_event sm_papi_fn.PAPI_enum_event
#define PAPI_event_name_to_code sm_papi_fn.PAPI_event_name_to_code
#define PAPI_get_component_info sm_papi_fn.PAPI_get_component_info
#define PAPI_get_event_component sm_papi_fn.PAPI_get_event_component
#define PAPI_get_event_info sm_papi_fn.PAPI_get_event_info
#define PAPI_library_init sm_papi_fn.PAPI_library_init
#define PAPI_multiplex_init sm_papi_fn.PAPI_multiplex_init
#define PAPI_num_components sm_papi_fn.PAPI_num_components
#define PAPI_read sm_papi_fn.PAPI_read
#define PAPI_register_thread sm_papi_fn.PAPI_register_thread
#define PAPI_set_multiplex sm_papi_fn.PAPI_set_multiplex
#define PAPI_start sm_papi_fn.PAPI_start
#define PAPI_stop sm_papi_fn.PAPI_stop
#define PAPI_strerror sm_papi_fn.PAPI_strerror
#define PAPI_thread_init sm_papi_fn.PAPI_thread_init
#define PAPI_unregister_thread sm_papi_fn.PAPI_unregister_thread
#endif

#endif
