/* Configuration: one table (config_vars.def) read from defaults, a config file
 * and the environment, in that order of increasing precedence.  Shared by the
 * runtime library and the command-line tools. */
#ifndef SM_CONFIG_H
#define SM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SM_ENV_PREFIX "SYSMEASURE_"

typedef enum {
    SM_CONFIG_TYPE_BOOL,
    SM_CONFIG_TYPE_INT,
    SM_CONFIG_TYPE_SIZE,
    SM_CONFIG_TYPE_STRING,
    SM_CONFIG_TYPE_PATH,
    SM_CONFIG_TYPE_ENUM
} sm_config_type_t;

typedef enum {
    SM_CONFIG_FROM_DEFAULT,
    SM_CONFIG_FROM_FILE,
    SM_CONFIG_FROM_ENV
} sm_config_source_t;

/* C type of each table type. */
#define SM_CONFIG_CTYPE_BOOL bool
#define SM_CONFIG_CTYPE_INT int64_t
#define SM_CONFIG_CTYPE_SIZE uint64_t
#define SM_CONFIG_CTYPE_STRING char *
#define SM_CONFIG_CTYPE_PATH char *
#define SM_CONFIG_CTYPE_ENUM int /* index into the choices */

/* Index of each variable in the table. */
enum {
#define SM_CONFIG_VAR(field, NAME, TYPE, def, opt, choices, help) SM_CONFIG_##NAME,
#include "config_vars.def"
#undef SM_CONFIG_VAR
    SM_CONFIG_COUNT
};

/* Most encoders SYSMEASURE_OTF2_END_THREADS may ask for. */
#define SM_CONFIG_END_THREADS_MAX 64

typedef struct sm_config {
#define SM_CONFIG_VAR(field, NAME, TYPE, def, opt, choices, help) SM_CONFIG_CTYPE_##TYPE field;
#include "config_vars.def"
#undef SM_CONFIG_VAR
    sm_config_source_t source[SM_CONFIG_COUNT]; /* where each value came from */
    char warning[320]; /* the config file's first warning (a key given twice), or "" */
} sm_config_t;

/* Enum values, in the order of their "choices" strings. */
enum { SM_INIT_ENABLED_AUTO, SM_INIT_ENABLED_YES, SM_INIT_ENABLED_NO };
enum { SM_CLOCK_AUTO, SM_CLOCK_TSC, SM_CLOCK_MONOTONIC };
enum { SM_MPI_AUTO, SM_MPI_YES, SM_MPI_NO };
enum { SM_OPENMP_RUNTIME_NATIVE, SM_OPENMP_RUNTIME_LLVM };
enum { SM_GPU_AUTO, SM_GPU_YES, SM_GPU_NO };
enum { SM_SAMPLING_CLOCK_CPU, SM_SAMPLING_CLOCK_REAL };
enum { SM_CAUSAL_MODE_FUNCTION, SM_CAUSAL_MODE_LINE };
enum { SM_OTF2_BACKGROUND_AUTO, SM_OTF2_BACKGROUND_YES, SM_OTF2_BACKGROUND_NO,
       SM_OTF2_BACKGROUND_CHECK };

typedef struct sm_config_var {
    const char *name;    /* "BUFFER_SIZE" */
    const char *env;     /* "SYSMEASURE_BUFFER_SIZE" */
    const char *key;     /* "buffer_size" (config file) */
    sm_config_type_t type;
    const char *def;     /* default, as text */
    const char *option;  /* launcher long option, or NULL */
    const char *choices; /* "a|b|c" for ENUM, else NULL */
    const char *help;
    size_t offset;       /* of the field in sm_config_t */
} sm_config_var_t;

extern const sm_config_var_t sm_config_vars[SM_CONFIG_COUNT];

/* Look a variable up by table name ("BUFFER_SIZE"), env name or config key. */
const sm_config_var_t *sm_config_find(const char *name);

/* 1 if NAME (SYSMEASURE_ROOT, SYSMEASURE_CC, ...) is one of the names under
 * the prefix that are no measurement setting: left alone, never refused. */
int sm_config_other_name(const char *name);

/* The variable whose environment name is nearest to NAME (a slip of a
 * letter or two, case aside), or NULL when none is that near. */
const sm_config_var_t *sm_config_nearest(const char *name);

/* Defaults only. */
void sm_config_init_defaults(sm_config_t *cfg);

/* Set one variable from text; on a bad value returns -1 with a message in err. */
int sm_config_set(sm_config_t *cfg, const sm_config_var_t *var, const char *value,
                  sm_config_source_t source, char *err, size_t errlen);

/* Read a config file into cfg; -1 with "FILE:LINE: problem" in err. */
int sm_config_read_file(sm_config_t *cfg, const char *path, char *err, size_t errlen);

/* Defaults, then the config file named by SYSMEASURE_CONFIG_FILE, then every
 * SYSMEASURE_* variable of envp.  An unknown SYSMEASURE_* variable is an error.
 * Returns 0, or -1 with a one-line message in err. */
int sm_config_load(sm_config_t *cfg, char *const *envp, char *err, size_t errlen);

/* The value of a variable as text (for metadata.json and sysmeasure-avail). */
void sm_config_format(const sm_config_t *cfg, const sm_config_var_t *var, char *buf, size_t len);

/* Parse helpers, also used by the launcher for option values. */
int sm_config_parse_bool(const char *text, bool *out);
int sm_config_parse_size(const char *text, uint64_t *out);
/* SYSMEASURE_MIN_FREE_SPACE: a size (*bytes) or "N%" (*fraction, 0 to
 * 0.99), or "0" (both 0).  0, or -1 with why. */
int sm_config_parse_free_space(const char *text, uint64_t *bytes, double *fraction, char *why,
                               size_t whylen);
const char *sm_config_source_name(sm_config_source_t source);

void sm_config_free(sm_config_t *cfg);

#endif
