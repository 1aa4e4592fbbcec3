/* The launcher's command line: the options of the configuration table
 * (long, negated, short), --help from the same table, and a bad value
 * said with the option the user typed. */
#include "launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Short forms of some table options. */
static const struct {
    char letter;
    const char *option;
    const char *metavar;
} sm_short_options[] = {
    {'o', "output", "DIR"},
    {'c', "config", "FILE"},
};

const sm_config_var_t *const sm_verbose_var = &sm_config_vars[SM_CONFIG_VERBOSE];

/* ------------------------------------------------------------------ help */

static const char *sm_metavar(const sm_config_var_t *var)
{
    for (size_t i = 0; i < sizeof sm_short_options / sizeof sm_short_options[0]; i++)
        if (!strcmp(var->option, sm_short_options[i].option))
            return sm_short_options[i].metavar;
    switch (var->type) {
    case SM_CONFIG_TYPE_INT: return "N";
    case SM_CONFIG_TYPE_SIZE: return "SIZE";
    case SM_CONFIG_TYPE_PATH: return "PATH";
    case SM_CONFIG_TYPE_ENUM: return var->choices;
    default: return "TEXT";
    }
}

static char sm_short_letter(const sm_config_var_t *var)
{
    if (var == sm_verbose_var)
        return 'v';
    for (size_t i = 0; i < sizeof sm_short_options / sizeof sm_short_options[0]; i++)
        if (!strcmp(var->option, sm_short_options[i].option))
            return sm_short_options[i].letter;
    return 0;
}

/* "-o, --output DIR", "    --trace, --no-trace", "-v, --verbose[=N]" */
/* Whether an ENUM variable offers this choice ("auto|yes|no"). */
static bool sm_enum_has(const sm_config_var_t *var, const char *choice)
{
    size_t n = strlen(choice);
    if (var->type != SM_CONFIG_TYPE_ENUM || !var->choices)
        return false;
    for (const char *p = var->choices; *p;) {
        size_t k = strcspn(p, "|");
        if (k == n && !strncmp(p, choice, n))
            return true;
        p += k + (p[k] == '|');
    }
    return false;
}

static void sm_option_label(const sm_config_var_t *var, char *buf, size_t len)
{
    char letter = sm_short_letter(var);
    char lead[8] = "    ";
    if (letter)
        snprintf(lead, sizeof lead, "-%c, ", letter);
    if (var->type == SM_CONFIG_TYPE_BOOL)
        snprintf(buf, len, "%s--%s, --no-%s", lead, var->option, var->option);
    else if (var == sm_verbose_var)
        snprintf(buf, len, "%s--%s[=N]", lead, var->option);
    else if (sm_enum_has(var, "yes") && sm_enum_has(var, "no"))
        snprintf(buf, len, "%s--%s[=%s], --no-%s", lead, var->option, var->choices, var->option);
    else
        snprintf(buf, len, "%s--%s %s", lead, var->option, sm_metavar(var));
}

/* Prints text from column col, wrapped at 79 columns, continuing at indent. */
static void sm_wrap(FILE *f, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (col > indent && col + 1 + (int)n > 79) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, p);
        col += (int)n;
        p += n;
    }
    fputc('\n', f);
}

static void sm_help_row(FILE *f, const char *label, const char *text)
{
    enum { COL = 31 };
    int col = fprintf(f, "  %s", label);
    if (col >= COL - 1) {
        fprintf(f, "\n%*s", COL, "");
    } else {
        fprintf(f, "%*s", COL - col, "");
    }
    sm_wrap(f, text, COL, COL);
}

static void sm_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure [options] [--] program [args...]\n\n");
    sm_wrap(f,
            "Runs PROGRAM with the sysmeasure measurement library preloaded. Its trace "
            "(OTF2), profile and metadata go to one output folder.",
            0, 0);
    fprintf(f, "\nOptions:\n");
    sm_help_row(f, "-h, --help", "Show this help and exit.");
    sm_help_row(f, "-V, --version", "Show the version and exit.");
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char label[128], text[1024];
        if (!v->option)
            continue;
        sm_option_label(v, label, sizeof label);
        if (v == sm_verbose_var)
            snprintf(text, sizeof text, "%s -v adds one. [%s, default %s]", v->help, v->env,
                     v->def);
        else
            snprintf(text, sizeof text, "%s [%s, default %s]", v->help, v->env,
                     *v->def ? v->def : "empty");
        sm_help_row(f, label, text);
    }
    fputc('\n', f);
    sm_wrap(f,
            "Each option sets the environment variable in brackets for the program. "
            "Environment variables and the config file set the others; "
            "'sysmeasure-avail' lists every variable with its current value.",
            0, 0);
}

/* ------------------------------------------------------------------ options */

static const sm_config_var_t *sm_find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const char *o = sm_config_vars[i].option;
        if (o && strlen(o) == len && !strncmp(o, name, len))
            return &sm_config_vars[i];
    }
    return NULL;
}

static void sm_give(sm_options_t *opts, const sm_config_var_t *var, const char *value)
{
    opts->given[var - sm_config_vars] = value;
    if (var == sm_verbose_var)
        opts->verbose_increments = 0;
}

/* Returns the index of the program in argv. */
int sm_parse_options(int argc, char **argv, sm_options_t *opts)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const char *value = eq ? eq + 1 : NULL;
            const sm_config_var_t *var;
            bool negated = false;
            if (((len == 4 && !strncmp(name, "help", 4)) ||
                 (len == 7 && !strncmp(name, "version", 7))) && value)
                sm_die(SM_EXIT_USAGE, "option '--%.*s' takes no value", (int)len, name);
            if (len == 4 && !strncmp(name, "help", 4)) {
                sm_usage(stdout);
                exit(0);
            }
            if (len == 7 && !strncmp(name, "version", 7)) {
                printf("sysmeasure %s (OTF2 %s)\n", PACKAGE_VERSION, SM_OTF2_VERSION);
                exit(0);
            }
            var = sm_find_option(name, len);
            if (!var && len > 3 && !strncmp(name, "no-", 3)) {
                var = sm_find_option(name + 3, len - 3);
                if (var && var->type != SM_CONFIG_TYPE_BOOL && !sm_enum_has(var, "no"))
                    var = NULL;
                negated = true;
            }
            if (!var)
                sm_die(SM_EXIT_USAGE, "unknown option '--%.*s' (sysmeasure --help lists them)",
                       (int)len, name);
            if (negated) {
                if (value)
                    sm_die(SM_EXIT_USAGE, "option '--%.*s' takes no value", (int)len, name);
                sm_give(opts, var, "no");
            } else if (var->type == SM_CONFIG_TYPE_BOOL ||
                       (!value && sm_enum_has(var, "yes"))) {
                /* --mpi means --mpi=yes for choices that have "yes". */
                sm_give(opts, var, value ? value : "yes");
            } else if (var == sm_verbose_var) {
                /* --verbose N would swallow the program name: only --verbose=N. */
                if (value)
                    sm_give(opts, var, value);
                else
                    opts->verbose_increments++;
            } else {
                if (!value) {
                    if (i + 1 >= argc)
                        sm_die(SM_EXIT_USAGE, "option '--%s' needs a value (%s)", var->option,
                               sm_metavar(var));
                    value = argv[++i];
                }
                sm_give(opts, var, value);
            }
            continue;
        }
        /* Short options; "-vv" and "-oDIR" work. */
        for (const char *p = a + 1; *p; p++) {
            if (*p == 'h') {
                sm_usage(stdout);
                exit(0);
            }
            if (*p == 'V') {
                printf("sysmeasure %s (OTF2 %s)\n", PACKAGE_VERSION, SM_OTF2_VERSION);
                exit(0);
            }
            if (*p == 'v') {
                opts->verbose_increments++;
                continue;
            }
            const sm_config_var_t *var = NULL;
            for (size_t k = 0; k < sizeof sm_short_options / sizeof sm_short_options[0]; k++)
                if (sm_short_options[k].letter == *p)
                    var = sm_find_option(sm_short_options[k].option,
                                         strlen(sm_short_options[k].option));
            if (!var)
                sm_die(SM_EXIT_USAGE, "unknown option '-%c' (sysmeasure --help lists them)", *p);
            const char *value = p + 1;
            if (!*value) {
                if (i + 1 >= argc)
                    sm_die(SM_EXIT_USAGE, "option '-%c' needs a value (%s)", *p, sm_metavar(var));
                value = argv[++i];
            }
            sm_give(opts, var, value);
            break;
        }
    }
    if (i >= argc)
        sm_die(SM_EXIT_USAGE,
               "no program given (usage: sysmeasure [options] [--] program [args]; "
               "sysmeasure --help)");
    if (!argv[i][0])
        sm_die(SM_EXIT_USAGE, "the program name is empty (usage: sysmeasure [options] [--] "
               "program [args])");
    return i;
}

/* A bad option value, said with the option the user typed: config.c names
 * the environment variable ("bad value 'x' for SYSMEASURE_X: why"). */
_Noreturn void sm_option_value_error(const sm_config_var_t *var, const char *err)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, " for %s: ", var->env);
    const char *at = strstr(err, pattern);
    if (at)
        sm_die(SM_EXIT_USAGE, "%.*s for --%s: %s", (int)(at - err), err, var->option,
               at + strlen(pattern));
    sm_die(SM_EXIT_USAGE, "--%s: %s", var->option, err);
}
