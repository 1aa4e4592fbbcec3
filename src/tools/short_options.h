/* The launcher's short options, for its parser and --help
 * (src/tools/launcher/options.c) and for sysmeasure-avail, which shows each
 * variable's option: defined here once. */
#ifndef SM_SHORT_OPTIONS_H
#define SM_SHORT_OPTIONS_H

static const struct {
    char letter;
    const char *option;  /* long option of config_vars.def */
    const char *metavar; /* NULL: the type's */
} sm_short_options[] = {
    {'v', "verbose", NULL},
    {'o', "output", "DIR"},
    {'c', "config", "FILE"},
};
#define SM_N_SHORT_OPTIONS (sizeof sm_short_options / sizeof sm_short_options[0])

#endif
