/* The topics of the configuration variables (config_categories.def), for
 * the launcher's --help, sysmeasure-avail and the man page. */
#ifndef SM_CONFIG_CATEGORY_H
#define SM_CONFIG_CATEGORY_H

#include "config.h"

typedef enum {
#define SM_CONFIG_CATEGORY(ID, name, title, members) SM_CONFIG_CAT_##ID,
#include "config_categories.def"
#undef SM_CONFIG_CATEGORY
    SM_CONFIG_CAT_NONE, /* a variable no row takes (a test fails on it) */
    SM_CONFIG_CAT_COUNT = SM_CONFIG_CAT_NONE
} sm_config_category_t;

typedef struct {
    const char *name;  /* "gpu" */
    const char *title; /* "GPUs: CUDA, HIP/HSA, NCCL/RCCL" */
} sm_config_category_info_t;

extern const sm_config_category_info_t sm_config_categories[SM_CONFIG_CAT_COUNT];

/* The topic of a variable, or SM_CONFIG_CAT_NONE. */
sm_config_category_t sm_config_category_of(const sm_config_var_t *var);
/* A topic by its name ("gpu"), or SM_CONFIG_CAT_NONE. */
sm_config_category_t sm_config_category_find(const char *name);

#endif
