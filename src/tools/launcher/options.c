/* The launcher's command line: the options of the configuration table
 * (long, negated, short), --help from the same table, and a bad value
 * said with the option the user typed. */
#include "launcher.h"

#include "../../core/config_category.h"
#include "../short_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const sm_config_var_t *const sm_verbose_var = &sm_config_vars[SM_CONFIG_VERBOSE];

/* ------------------------------------------------------------------ help */

static const char *sm_metavar(const sm_config_var_t *var)
{
    for (size_t i = 0; i < SM_N_SHORT_OPTIONS; i++)
        if (!strcmp(var->option, sm_short_options[i].option) && sm_short_options[i].metavar)
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
    for (size_t i = 0; i < SM_N_SHORT_OPTIONS; i++)
        if (!strcmp(var->option, sm_short_options[i].option))
            return sm_short_options[i].letter;
    return 0;
}

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

/* Whether the option's value is optional (--mpi, --trace, -v): then a value
 * must follow '=', and one given as the next word would be the program. */
static bool sm_value_optional(const sm_config_var_t *var)
{
    return var->type == SM_CONFIG_TYPE_BOOL || var == sm_verbose_var || sm_enum_has(var, "yes");
}

/* Prints a label ("-o, --output DIR", "    --trace, --no-trace",
 * "-v, --verbose[=N]"); returns its width. */
static int sm_print_label(FILE *f, const sm_config_var_t *var)
{
    char letter = sm_short_letter(var);
    int n;
    if (letter)
        n = fprintf(f, "  -%c, ", letter);
    else
        n = fprintf(f, "      ");
    if (var->type == SM_CONFIG_TYPE_BOOL)
        n += fprintf(f, "--%s, --no-%s", var->option, var->option);
    else if (var == sm_verbose_var)
        n += fprintf(f, "--%s[=N]", var->option);
    else if (sm_enum_has(var, "yes") && sm_enum_has(var, "no"))
        n += fprintf(f, "--%s[=%s], --no-%s", var->option, var->choices, var->option);
    else
        n += fprintf(f, "--%s %s", var->option, sm_metavar(var));
    return n;
}

enum { SM_HELP_COL = 32, SM_HELP_WIDTH = 79 };

/* Prints the words of text[0, len) from column col, wrapped at
 * SM_HELP_WIDTH and continuing at indent; a word longer than a line is
 * printed whole on a line of its own.  Returns the column reached. */
static int sm_wrap_part(FILE *f, const char *text, size_t len, int col, int indent)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        size_t n = 0;
        while (p + n < end && p[n] != ' ')
            n++;
        if (!n)
            break;
        if (col > indent && col + 1 + (int)n > SM_HELP_WIDTH) {
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
    return col;
}

static void sm_wrap(FILE *f, const char *text, int col, int indent)
{
    sm_wrap_part(f, text, strlen(text), col, indent);
    fputc('\n', f);
}

/* The length of the first sentence of a description: up to the first ". "
 * outside parentheses that does not end "e.g.", "i.e." or "...". */
static size_t sm_first_sentence(const char *text)
{
    int depth = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth)
            depth--;
        else if (*p == '.' && p[1] == ' ' && !depth) {
            size_t at = (size_t)(p - text);
            if ((at >= 3 && !strncmp(p - 3, "e.g", 3)) || (at >= 3 && !strncmp(p - 3, "i.e", 3)) ||
                (at >= 1 && p[-1] == '.'))
                continue;
            return at + 1;
        }
    }
    return strlen(text);
}

/* The summary --help gives of a description (the whole one is in
 * sysmeasure-avail and the man page): its first sentence without the
 * asides in parentheses, and when that is still long, up to its first
 * ':' or ';'.  Allocated; NULL when out of memory. */
static char *sm_help_summary(const char *help)
{
    enum { LONG = 100 };
    size_t len = sm_first_sentence(help), o = 0;
    char *s = malloc(len + 2);
    int depth = 0;
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (help[i] == '(') {
            if (!depth++)
                while (o && s[o - 1] == ' ')
                    o--;
        } else if (help[i] == ')' && depth) {
            depth--;
        } else if (!depth) {
            s[o++] = help[i];
        }
    }
    s[o] = '\0';
    if (o > LONG) {
        for (size_t i = 0; i < o; i++)
            if ((s[i] == ':' || s[i] == ';') && s[i + 1] == ' ') {
                s[i] = '.';
                s[i + 1] = '\0';
                break;
            }
    }
    return s;
}

/* One option: its label, then from SM_HELP_COL (or below the label when
 * it is wider) the first sentence of its description and, in brackets,
 * its variable and default. */
static void sm_help_option(FILE *f, const sm_config_var_t *v)
{
    int col = sm_print_label(f, v);
    if (col >= SM_HELP_COL - 1) {
        fprintf(f, "\n%*s", SM_HELP_COL, "");
    } else {
        fprintf(f, "%*s", SM_HELP_COL - col, "");
    }
    char *summary = sm_help_summary(v->help);
    const char *text = summary ? summary : v->help;
    col = sm_wrap_part(f, text, strlen(text), SM_HELP_COL, SM_HELP_COL);
    free(summary);
    if (v == sm_verbose_var)
        col = sm_wrap_part(f, " Each -v adds one.", 18, col, SM_HELP_COL);
    char tail[256];
    snprintf(tail, sizeof tail, "[%s, default %s]", v->env, *v->def ? v->def : "empty");
    sm_wrap(f, tail, col, SM_HELP_COL);
}

static void sm_help_row(FILE *f, const char *label, const char *text)
{
    int col = fprintf(f, "  %s", label);
    fprintf(f, "%*s", SM_HELP_COL - col, "");
    sm_wrap(f, text, SM_HELP_COL, SM_HELP_COL);
}

/* Examples: a command and what it does. */
static const char *const sm_examples[][2] = {
    {"sysmeasure ./app input.dat",
     "Measure a program: trace, profile, report.html in a new folder sysmeasure-app-..."},
    {"mpirun -np 4 sysmeasure -o run1 ./mpi_app", "An MPI job: one folder, one archive."},
    {"sysmeasure --no-trace --papi=PAPI_TOT_INS ./app",
     "Profile only, with a PAPI counter per call path."},
    {"sysmeasure --sampling --sampling-freq=1000 ./app",
     "Call-stack sampling at 1000 Hz besides the instrumented regions."},
    {"sysmeasure --mpi=no --gpu=no ./app", "Leave MPI and the GPUs unmeasured."},
    {"sysmeasure-avail -G site.conf; sysmeasure -c site.conf ./app",
     "Write a commented config file of every variable, edit it, use it."},
};

static void sm_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure [options] [--] program [args...]\n\n");
    sm_wrap(f,
            "Runs PROGRAM with the sysmeasure measurement library preloaded. Its trace "
            "(OTF2), profile and metadata go to one output folder.",
            0, 0);
    fprintf(f, "\nGeneral:\n");
    sm_help_row(f, "-h, --help", "Show this help and exit.");
    sm_help_row(f, "-V, --version", "Show the version and exit.");
    for (int c = 0; c <= SM_CONFIG_CAT_NONE; c++) {
        bool heading = false;
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
            const sm_config_var_t *v = &sm_config_vars[i];
            if (!v->option || (int)sm_config_category_of(v) != c)
                continue;
            if (!heading)
                fprintf(f, "\n%s:\n", c < SM_CONFIG_CAT_COUNT ? sm_config_categories[c].title
                                                              : "Other");
            heading = true;
            sm_help_option(f, v);
        }
    }
    fprintf(f, "\nExamples:\n");
    for (size_t i = 0; i < sizeof sm_examples / sizeof sm_examples[0]; i++) {
        fprintf(f, "  %s\n", sm_examples[i][0]);
        fprintf(f, "%*s", 6, "");
        sm_wrap(f, sm_examples[i][1], 6, 6);
    }
    fputc('\n', f);
    sm_wrap(f,
            "Each option sets the environment variable in brackets for the program. "
            "Environment variables and the config file set the others. Each entry is "
            "the summary of a description: 'sysmeasure-avail -s WORD' shows the "
            "variables whose name or description has WORD, with the whole description and "
            "current value; 'man sysmeasure' has them all.",
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

/* An option whose value is optional (--mpi, --trace, --verbose, -v) given
 * with its value as the next word ("--mpi no"): that word would be taken
 * as the program ("program 'no' not found"), so say the form meant.  A
 * program of that name is still run after "--". */
static void sm_check_detached_value(const sm_config_var_t *var, const char *typed,
                                    const char *next)
{
    bool is_value = false;
    if (!next || !*next)
        return;
    if (var == sm_verbose_var) {
        is_value = strspn(next, "0123456789") == strlen(next);
    } else if (var->type == SM_CONFIG_TYPE_BOOL) {
        bool b;
        is_value = sm_config_parse_bool(next, &b) == 0;
    } else if (var->type == SM_CONFIG_TYPE_ENUM) {
        is_value = sm_enum_has(var, next);
    }
    if (!is_value)
        return;
    if (var == sm_verbose_var)
        sm_die(SM_EXIT_USAGE, "'%s %s': the level goes after '=' (--verbose=%s, or -v%s); a "
               "program named '%s' goes after '--'", typed, next, next, next, next);
    sm_die(SM_EXIT_USAGE, "'%s %s': the value goes after '=' (--%s=%s); a program named '%s' "
           "goes after '--'", typed, next, var->option, next, next);
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
            if (!negated && !value && sm_value_optional(var))
                sm_check_detached_value(var, a, i + 1 < argc ? argv[i + 1] : NULL);
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
                /* -v2 and -v=2 mean --verbose=2. */
                if (p[1] == '=' || (p[1] >= '0' && p[1] <= '9')) {
                    sm_give(opts, sm_verbose_var, p + 1 + (p[1] == '='));
                    break;
                }
                opts->verbose_increments++;
                if (!p[1])
                    sm_check_detached_value(sm_verbose_var, a, i + 1 < argc ? argv[i + 1] : NULL);
                continue;
            }
            const sm_config_var_t *var = NULL;
            for (size_t k = 0; k < SM_N_SHORT_OPTIONS; k++)
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
