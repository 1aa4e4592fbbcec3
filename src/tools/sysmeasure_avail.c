/* sysmeasure-avail: what can be configured and what this build does.  Every
 * format comes from the one table (config_vars.def): text for people (with the
 * values the environment sets now), troff for the man page, Markdown for
 * doc/configuration.md and JSON for scripts. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */

#include "../core/config.h"
#include "../core/config_category.h"
#include "../util/fs.h"
#include "../util/log.h"
#ifdef SM_HAVE_PAPI
#include "../sources/papi/papi_events.h"
#endif

#include "short_options.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* Paragraphs before the variables; `x` marks code (bold in troff). */
static const char *const sm_intro[] = {
    "sysmeasure reads its configuration from, in increasing order of precedence: the "
    "defaults below, the config file named by `SYSMEASURE_CONFIG_FILE`, and the "
    "environment. The launcher's options set the environment variables for the "
    "program they run.",
    "The config file holds `key = value` lines; the key is the variable's name in lower "
    "case without the `SYSMEASURE_` prefix (or the full name). A `#` at the start of a "
    "line or after a space starts a comment.",
    "Booleans are yes/no, true/false, on/off or 1/0. Sizes are bytes with an optional K, "
    "M, G or T suffix (binary: 1K = 1024). An unknown `SYSMEASURE_` variable, an unknown "
    "key or a bad value is an error, reported in one line; the launcher then does not "
    "start the program.",
};
#define SM_NINTRO (sizeof sm_intro / sizeof sm_intro[0])

static const char *sm_type_name(const sm_config_var_t *v)
{
    switch (v->type) {
    case SM_CONFIG_TYPE_BOOL: return "bool";
    case SM_CONFIG_TYPE_INT: return "integer";
    case SM_CONFIG_TYPE_SIZE: return "size";
    case SM_CONFIG_TYPE_STRING: return "string";
    case SM_CONFIG_TYPE_PATH: return "path";
    case SM_CONFIG_TYPE_ENUM: return "enum";
    }
    return "?";
}

/* "bool", "size", "one of auto|tsc|monotonic" */
static void sm_type_text(const sm_config_var_t *v, char *buf, size_t len)
{
    if (v->type == SM_CONFIG_TYPE_ENUM)
        snprintf(buf, len, "one of %s", v->choices);
    else
        snprintf(buf, len, "%s", sm_type_name(v));
}

/* The launcher option as used: "--trace, --no-trace", "-o DIR, --output DIR",
 * "-v, --verbose[=N]", "--clock auto|tsc|monotonic"; "" without one. */
static void sm_option_text(const sm_config_var_t *v, char *buf, size_t len)
{
    char letter = 0;
    const char *metavar = NULL;
    buf[0] = '\0';
    if (!v->option)
        return;
    for (size_t i = 0; i < SM_N_SHORT_OPTIONS; i++)
        if (!strcmp(v->option, sm_short_options[i].option)) {
            letter = sm_short_options[i].letter;
            metavar = sm_short_options[i].metavar;
        }
    if (!metavar) {
        switch (v->type) {
        case SM_CONFIG_TYPE_INT: metavar = "N"; break;
        case SM_CONFIG_TYPE_SIZE: metavar = "SIZE"; break;
        case SM_CONFIG_TYPE_PATH: metavar = "PATH"; break;
        case SM_CONFIG_TYPE_ENUM: metavar = v->choices; break;
        default: metavar = "TEXT"; break;
        }
    }
    if (v->type == SM_CONFIG_TYPE_BOOL)
        snprintf(buf, len, "--%s, --no-%s", v->option, v->option);
    else if (v->type == SM_CONFIG_TYPE_INT && letter == 'v')
        snprintf(buf, len, "-v, --%s[=N]", v->option);
    else if (letter)
        snprintf(buf, len, "-%c %s, --%s %s", letter, metavar, v->option, metavar);
    else
        snprintf(buf, len, "--%s %s", v->option, metavar);
}

/* Text wrapped at 79 columns, every line indented. */
static void sm_wrap(const char *text, int indent)
{
    int col = 0;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (col && col + 1 + (int)n > 79) {
            putchar('\n');
            col = 0;
        }
        if (!col)
            col = printf("%*s", indent, "");
        else
            col += printf(" ");
        col += printf("%.*s", (int)n, p);
        p += n;
    }
    putchar('\n');
}

/* ------------------------------------------------------------------ selection */

/* Which variables to show: those of one topic (-c), those whose name,
 * option or description has a word (-s, without regard to case). */
typedef struct {
    sm_config_category_t category; /* SM_CONFIG_CAT_NONE: any */
    const char *word;              /* NULL: any */
} sm_select_t;

static bool sm_has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    if (!text)
        return false;
    for (const char *p = text; *p; p++)
        if (!strncasecmp(p, word, n))
            return true;
    return false;
}

static bool sm_selected(const sm_select_t *sel, const sm_config_var_t *v)
{
    if (sel->category != SM_CONFIG_CAT_NONE && sm_config_category_of(v) != sel->category)
        return false;
    if (sel->word && !sm_has_word(v->env, sel->word) && !sm_has_word(v->key, sel->word) &&
        !sm_has_word(v->option, sel->word) && !sm_has_word(v->help, sel->word))
        return false;
    return true;
}

static bool sm_selects_all(const sm_select_t *sel)
{
    return sel->category == SM_CONFIG_CAT_NONE && !sel->word;
}

/* The title of a topic, "Other" for a variable no row takes. */
static const char *sm_category_title(int c)
{
    return c < SM_CONFIG_CAT_COUNT ? sm_config_categories[c].title : "Other";
}

/* --categories: each topic, its name for -c and how many variables. */
static void sm_print_categories(void)
{
    for (int c = 0; c <= SM_CONFIG_CAT_NONE; c++) {
        size_t n = 0;
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++)
            n += (int)sm_config_category_of(&sm_config_vars[i]) == c;
        if (c < SM_CONFIG_CAT_COUNT)
            printf("%-10s %3zu  %s\n", sm_config_categories[c].name, n, sm_category_title(c));
        else if (n)
            printf("%-10s %3zu  %s\n", "(none)", n, "Variables of no topic");
    }
}

/* ------------------------------------------------------------------ text */

static size_t sm_print_text(const sm_select_t *sel)
{
    sm_config_t cfg;
    char err[1024];
    size_t shown = 0;
    if (sm_config_load(&cfg, environ, err, sizeof err) != 0) {
        sm_warning("%s; showing the defaults", err);
        sm_config_init_defaults(&cfg);
    }
    if (sm_selects_all(sel)) {
        printf("sysmeasure %s (OTF2 %s)\n\n", PACKAGE_VERSION, SM_OTF2_VERSION);
        printf("Configuration variables\n=======================\n\n");
        for (size_t i = 0; i < SM_NINTRO; i++) {
            char *plain = strdup(sm_intro[i]);
            if (!plain)
                continue;
            for (char *p = plain; *p; p++)
                if (*p == '`')
                    *p = '\'';
            sm_wrap(plain, 0);
            free(plain);
            putchar('\n');
        }
    }
    for (int c = 0; c <= SM_CONFIG_CAT_NONE; c++) {
        bool heading = false;
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
            const sm_config_var_t *v = &sm_config_vars[i];
            if ((int)sm_config_category_of(v) != c || !sm_selected(sel, v))
                continue;
            if (!heading) {
                const char *title = sm_category_title(c);
                printf("%s  [-c %s]\n", title,
                       c < SM_CONFIG_CAT_COUNT ? sm_config_categories[c].name : "(none)");
                for (size_t k = 0; title[k]; k++)
                    putchar('-');
                printf("\n\n");
                heading = true;
            }
            char type[512], option[512], value[4096];
            sm_type_text(v, type, sizeof type);
            sm_option_text(v, option, sizeof option);
            sm_config_format(&cfg, v, value, sizeof value);
            printf("%s\n", v->env);
            printf("    type:     %s\n", type);
            printf("    default:  %s\n", *v->def ? v->def : "(empty)");
            printf("    value:    %s (%s", *value ? value : "(empty)",
                   sm_config_source_name(cfg.source[i]));
            if (cfg.source[i] == SM_CONFIG_FROM_FILE)
                printf(" %s", cfg.config_file);
            printf(")\n");
            printf("    option:   %s\n", *option ? option : "(none)");
            printf("    key:      %s\n", v->key);
            sm_wrap(v->help, 4);
            putchar('\n');
            shown++;
        }
    }
    sm_config_free(&cfg);
    if (!sm_selects_all(sel)) {
        if (!shown)
            sm_error("no variable %s%s%s%s%s (sysmeasure-avail --categories lists the topics)",
                     sel->word ? "has '" : "", sel->word ? sel->word : "", sel->word ? "'" : "",
                     sel->category != SM_CONFIG_CAT_NONE ? " in topic " : "",
                     sel->category != SM_CONFIG_CAT_NONE
                         ? sm_config_categories[sel->category].name
                         : "");
        return shown;
    }

    static const char *const components[][2] = {
        {"core library (libsysmeasure.so)", "yes"},
        {"launcher (sysmeasure)", "yes"},
        {"user API (sysmeasure.h)", "yes"},
        {"OTF2 trace writer", "yes (OTF2 " SM_OTF2_VERSION ")"},
#ifdef SM_BUILT_MPI
        {"MPI adapter", SM_BUILT_MPI},
#else
        {"MPI adapter", "no (configure found no MPI; see its closing table)"},
#endif
#ifdef SM_BUILT_OMPT
        {"OpenMP (OMPT) adapter", SM_BUILT_OMPT},
#else
        {"OpenMP (OMPT) adapter", "no (configure found no omp-tools.h; see its closing table)"},
#endif
        {"Kokkos tool library", "yes: libsysmeasure-kokkos.so (KokkosP)"},
#ifdef SM_HAVE_PAPI
        {"PAPI counters", "yes: --papi EVENTS (sysmeasure-avail --papi lists this machine's)"},
#else
        {"PAPI counters", "no (configure found no PAPI; see its closing table)"},
#endif
#ifdef SM_HAVE_LIBUNWIND
        {"call-stack sampling", "yes (libunwind): --sampling"},
#else
        {"call-stack sampling", "no (configure found no libunwind; see its closing table)"},
#endif
        {"process sampling", "yes (/proc): --process-sampling"},
        {"Python functions", "yes: --python (on by default for Python programs)"},
#ifdef SM_HAVE_PERFETTO
        {"Perfetto trace (trace.pftrace)", "yes: --perfetto"},
#else
        {"Perfetto trace (trace.pftrace)", "no (configure found no protobuf-c; see its closing table)"},
#endif
#ifdef SM_BUILT_CUPTI
        {"CUDA/CUPTI adapter", SM_BUILT_CUPTI},
#else
        {"CUDA/CUPTI adapter", "no (configure found no CUDA toolkit with CUPTI; see its closing table)"},
#endif
        {"NCCL/RCCL calls", "yes: libsysmeasure-nccl.so, preloaded (calls without NCCL tested "
                            "here; NCCL on GPUs not yet verified, RCCL built only)"},
        /* AMD: what was tested on this kind of machine (no AMD GPU) and
         * what was built but never run on AMD hardware (manual, AMD GPUs). */
        {"ROCTx ranges and marks", "yes: libsysmeasure-roctx.so, libroctx64.so.4 (tested here)"},
#ifdef SM_BUILT_HIP
        {"HIP without an AMD GPU", "yes: one line, program unchanged (tested here)"},
        {"HIP API calls as regions", "yes: libsysmeasure-hip.so (built, not verified on AMD hardware)"},
        {"HIP kernels and copies", "yes: activity records (built, not verified on AMD hardware; "
                                   "record conversion unit-tested)"},
        {"rocm-smi sampling", "yes: failure is one line (tested here); samples (built, not "
                              "verified on AMD hardware)"},
#else
        {"HIP adapter", "no (configure found no HIP headers; see its closing table)"},
#endif
#ifdef SM_BUILT_HSA
        {"HSA calls, kernel and copy timing", "yes: libsysmeasure-hsa.so, HSA_TOOLS_LIB (built, not "
                                              "verified on AMD hardware)"},
#else
        {"HSA tool", "no (configure found no usable hsa_api_trace.h; see its closing table)"},
#endif
    };
    printf("This build\n==========\n\n");
    for (size_t i = 0; i < sizeof components / sizeof components[0]; i++) {
        /* The name, then its text wrapped below itself. */
        int col = printf("  %-34s", components[i][0]);
        for (const char *p = components[i][1]; *p;) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, " ");
            if (!n)
                break;
            if (col > 37 && col + 1 + (int)n > 99) {
                col = printf("\n%*s", 37, "") - 1;
            } else {
                col += printf(" ");
            }
            col += printf("%.*s", (int)n, p);
            p += n;
        }
        putchar('\n');
    }
    return shown;
}

/* ------------------------------------------------------------------ man */

/* troff: backslashes escaped, hyphens of names and options as \- (so that
 * they can be copied), no line starting with a control character. */
static void sm_troff(const char *text, bool code)
{
    if (*text == '.' || *text == '\'')
        fputs("\\&", stdout);
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            fputs("\\e", stdout);
        else if (*p == '-' && code)
            fputs("\\-", stdout);
        else
            putchar(*p);
    }
}

static void sm_print_man_var(const sm_config_var_t *v)
{
    char type[512], option[512];
    sm_type_text(v, type, sizeof type);
    sm_option_text(v, option, sizeof option);
    printf(".TP\n.B ");
    sm_troff(v->env, true);
    putchar('\n');
    sm_troff(v->help, false);
    printf("\n.br\nType: ");
    sm_troff(type, false);
    printf(". Default: ");
    if (*v->def) {
        printf("\\fB");
        sm_troff(v->def, true);
        printf("\\fR");
    } else {
        printf("empty");
    }
    printf(". Option: ");
    if (*option) {
        printf("\\fB");
        sm_troff(option, true);
        printf("\\fR");
    } else {
        printf("none");
    }
    printf(". Config key: \\fB");
    sm_troff(v->key, true);
    printf("\\fR.\n");
}

static void sm_print_man(void)
{
    printf(".SH CONFIGURATION VARIABLES\n");
    for (size_t i = 0; i < SM_NINTRO; i++) {
        if (i)
            printf(".PP\n");
        /* `x` -> \fBx\fR */
        bool code = false;
        for (const char *p = sm_intro[i]; *p;) {
            size_t n = strcspn(p, "`");
            char *part = strndup(p, n);
            if (part)
                sm_troff(part, code);
            free(part);
            p += n;
            if (*p == '`') {
                fputs(code ? "\\fR" : "\\fB", stdout);
                code = !code;
                p++;
            }
        }
        putchar('\n');
    }
    for (int c = 0; c <= SM_CONFIG_CAT_NONE; c++)
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
            const sm_config_var_t *v = &sm_config_vars[i];
            if ((int)sm_config_category_of(v) != c)
                continue;
            bool first = true;
            for (size_t k = 0; k < i; k++)
                first = first && (int)sm_config_category_of(&sm_config_vars[k]) != c;
            if (first) {
                printf(".SS ");
                sm_troff(sm_category_title(c), false);
                putchar('\n');
            }
            sm_print_man_var(v);
        }
}

/* ------------------------------------------------------------------ markdown */

/* Prose: characters Markdown would take as markup are escaped ("<program>"
 * would vanish as an HTML tag); in a table, '|' too. */
static void sm_md(const char *text, bool table)
{
    for (const char *p = text; *p; p++) {
        if (strchr("\\`*_<>[]", *p) || (table && *p == '|'))
            putchar('\\');
        putchar(*p);
    }
}

/* `code`; in a table a '|' must be escaped even inside code. */
static void sm_md_code(const char *text, bool table)
{
    putchar('`');
    for (const char *p = text; *p; p++) {
        if (table && *p == '|')
            putchar('\\');
        putchar(*p);
    }
    putchar('`');
}

static void sm_print_markdown(void)
{
    printf("# Configuration variables\n\n");
    printf("<!-- Generated by 'sysmeasure-avail --format=markdown' from "
           "src/core/config_vars.def: do not edit. -->\n\n");
    for (size_t i = 0; i < SM_NINTRO; i++) {
        /* Code spans are kept as they are. */
        bool code = false;
        for (const char *p = sm_intro[i]; *p; p++) {
            if (*p == '`')
                code = !code;
            if (!code && *p != '`' && strchr("\\*_<>[]", *p))
                putchar('\\');
            putchar(*p);
        }
        printf("\n\n");
    }
    printf("| Variable | Type | Default | Launcher option | Config key |\n");
    printf("| --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char type[128], option[128], anchor[128];
        size_t k;
        sm_type_text(v, type, sizeof type);
        sm_option_text(v, option, sizeof option);
        /* The heading's anchor, as GitHub and most renderers make it. */
        for (k = 0; v->env[k] && k + 1 < sizeof anchor; k++)
            anchor[k] = (char)(v->env[k] >= 'A' && v->env[k] <= 'Z' ? v->env[k] + 32 : v->env[k]);
        anchor[k] = '\0';
        printf("| [`%s`](#%s) | ", v->env, anchor);
        sm_md(type, true);
        printf(" | ");
        if (*v->def)
            sm_md_code(v->def, true);
        else
            printf("(empty)");
        printf(" | ");
        if (*option)
            sm_md_code(option, true);
        printf(" | ");
        sm_md_code(v->key, true);
        printf(" |\n");
    }
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char type[128], option[128];
        sm_type_text(v, type, sizeof type);
        sm_option_text(v, option, sizeof option);
        printf("\n## %s\n\n", v->env);
        sm_md(v->help, false);
        printf("\n\n- Type: ");
        sm_md(type, false);
        printf("\n- Default: ");
        if (*v->def)
            sm_md_code(v->def, false);
        else
            printf("(empty)");
        printf("\n- Launcher option: ");
        if (*option)
            sm_md_code(option, false);
        else
            printf("none");
        printf("\n- Config key: ");
        sm_md_code(v->key, false);
        printf("\n");
    }
}

/* ------------------------------------------------------------------ json */

static void sm_json_string(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", stdout);
        else if (*p == '\t')
            fputs("\\t", stdout);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void sm_print_json(void)
{
    sm_config_t cfg;
    char err[1024];
    if (sm_config_load(&cfg, environ, err, sizeof err) != 0) {
        sm_warning("%s; showing the defaults", err);
        sm_config_init_defaults(&cfg);
    }
    printf("[\n");
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char value[4096], option[128];
        sm_config_format(&cfg, v, value, sizeof value);
        snprintf(option, sizeof option, "--%s", v->option ? v->option : "");
        printf("  {\"name\": ");
        sm_json_string(v->name);
        printf(", \"env\": ");
        sm_json_string(v->env);
        printf(", \"key\": ");
        sm_json_string(v->key);
        printf(", \"type\": ");
        sm_json_string(sm_type_name(v));
        printf(", \"choices\": ");
        if (v->choices) {
            printf("[");
            for (const char *c = v->choices; *c;) {
                size_t n = strcspn(c, "|");
                printf("%s\"%.*s\"", c == v->choices ? "" : ", ", (int)n, c);
                c += n;
                if (*c)
                    c++;
            }
            printf("]");
        } else {
            printf("null");
        }
        printf(", \"default\": ");
        sm_json_string(v->def);
        printf(", \"option\": ");
        sm_json_string(v->option ? option : NULL);
        printf(", \"value\": ");
        sm_json_string(value);
        printf(", \"source\": ");
        sm_json_string(sm_config_source_name(cfg.source[i]));
        printf(", \"category\": ");
        sm_config_category_t cat = sm_config_category_of(v);
        sm_json_string(cat < SM_CONFIG_CAT_COUNT ? sm_config_categories[cat].name : NULL);
        printf(", \"help\": ");
        sm_json_string(v->help);
        printf("}%s\n", i + 1 < SM_CONFIG_COUNT ? "," : "");
    }
    printf("]\n");
    sm_config_free(&cfg);
}

/* ------------------------------------------------------------------ -G */

/* Text wrapped at 79 columns into comment lines "# ...". */
static void sm_comment(FILE *f, const char *text)
{
    int col = 0;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (col && col + 1 + (int)n > 79) {
            fputc('\n', f);
            col = 0;
        }
        col += fprintf(f, col ? " " : "# ");
        col += fprintf(f, "%.*s", (int)n, p);
        p += n;
    }
    if (col)
        fputc('\n', f);
}

/* Whether the config file can hold a value as it is: its reader ends a
 * value at a '#' after a space, trims spaces and reads one line. */
static bool sm_file_can_hold(const char *value)
{
    size_t n = strlen(value);
    if (value[0] == '#' || (n && (value[0] == ' ' || value[n - 1] == ' ')))
        return false;
    for (const char *p = value; *p; p++)
        if (*p == '\n' || *p == '\r' || (*p == '#' && p > value && (p[-1] == ' ' || p[-1] == '\t')))
            return false;
    return true;
}

/* -G FILE: a config file of every variable, grouped by topic, each with
 * its description, type, default and option; a value that the environment
 * or the current config file sets is written as an active line, every
 * other as "# key = default", ready to be uncommented.  sysmeasure -c FILE
 * (or SYSMEASURE_CONFIG_FILE=FILE) reads it back. */
static int sm_write_config(const char *path)
{
    sm_config_t cfg;
    char err[1024];
    if (sm_config_load(&cfg, environ, err, sizeof err) != 0) {
        sm_warning("%s; writing the defaults", err);
        sm_config_init_defaults(&cfg);
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        sm_config_free(&cfg);
        return 1;
    }
    fprintf(f, "# sysmeasure configuration file, by sysmeasure-avail -G (sysmeasure %s).\n",
            PACKAGE_VERSION);
    sm_comment(f, "Use it with 'sysmeasure -c FILE program' or "
                  "SYSMEASURE_CONFIG_FILE=FILE. Lines are 'key = value'; '#' at the start of a "
                  "line or after a space starts a comment. The environment (SYSMEASURE_*) and "
                  "the launcher's options override this file.");
    sm_comment(f, "Each variable is commented out at its default: remove the '# ' before its "
                  "key to set it. Values that the environment or a config file set when this "
                  "file was written are active lines.");
    for (int c = 0; c <= SM_CONFIG_CAT_NONE; c++) {
        bool heading = false;
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
            const sm_config_var_t *v = &sm_config_vars[i];
            if ((int)sm_config_category_of(v) != c)
                continue;
            if (!heading) {
                fprintf(f, "\n# ======== %s", sm_category_title(c));
                if (c < SM_CONFIG_CAT_COUNT)
                    fprintf(f, " [-c %s]", sm_config_categories[c].name);
                fprintf(f, "\n");
                heading = true;
            }
            char type[512], option[512], value[4096];
            sm_type_text(v, type, sizeof type);
            sm_option_text(v, option, sizeof option);
            sm_config_format(&cfg, v, value, sizeof value);
            fprintf(f, "\n# %s: %s, default %s\n", v->env, type, *v->def ? v->def : "empty");
            if (*option)
                fprintf(f, "# option: %s\n", option);
            sm_comment(f, v->help);
            if (i == SM_CONFIG_CONFIG_FILE) {
                fprintf(f, "# (not in a config file: SYSMEASURE_CONFIG_FILE or -c names the "
                           "file)\n");
                continue;
            }
            bool set = cfg.source[i] != SM_CONFIG_FROM_DEFAULT;
            if (set && !sm_file_can_hold(value)) {
                sm_warning("the value of %s cannot be written in a config file (a '#' after a "
                           "space, spaces at an end or a line break); written as the default",
                           v->env);
                set = false;
            }
            if (set)
                fprintf(f, "%s = %s\n", v->key, value);
            else
                fprintf(f, "# %s =%s%s\n", v->key, *v->def ? " " : "", v->def);
        }
    }
    sm_config_free(&cfg);
    if (fflush(f) != 0 || ferror(f) || (f != stdout && fclose(f) != 0)) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ main */

/* --papi: the events for SYSMEASURE_PAPI_EVENTS. */
static int sm_print_papi(void)
{
#ifdef SM_HAVE_PAPI
    char err[512];
    if (sm_papi_list(stdout, err, sizeof err) != 0) {
        sm_error("%s", err);
        return 1;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        sm_error("cannot write the output");
        return 1;
    }
    return 0;
#else
    sm_error("this sysmeasure was built without PAPI (libpapi-dev not found at build time)");
    return 1;
#endif
}

/* --gpu: devices, their per-kernel metrics and the passes of a list, from
 * the GPU backend library (CUPTI lives there, never in this tool). */
static int sm_print_gpu(const char *metrics, const char *file, int all)
{
    char lib[PATH_MAX], tried[4 * PATH_MAX];
    if (sm_fs_find_library("libsysmeasure-cuda.so", lib, sizeof lib, tried, sizeof tried) != 0) {
        sm_error("--gpu: this sysmeasure has no NVIDIA backend (libsysmeasure-cuda.so not found; "
                 "looked for %s); AMD GPUs have no per-kernel counters in this build",
                 tried);
        return 2;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sm_error("--gpu: cannot load %s: %s", lib, dlerror());
        return 2;
    }
    int (*avail)(const char *, const char *, int);
    void *sym = dlsym(h, "sysmeasure_cuda_avail");
    memcpy(&avail, &sym, sizeof sym);
    if (!avail) {
        sm_error("--gpu: %s is too old (no sysmeasure_cuda_avail)", lib);
        return 2;
    }
    fflush(stdout);
    return avail(metrics, file, all);
}

static void sm_usage(void)
{
    printf("Usage: sysmeasure-avail [-c TOPIC] [-s WORD] [--format=text|man|markdown|json]\n"
           "       sysmeasure-avail -G FILE | --categories | --papi\n"
           "       sysmeasure-avail --gpu [--all] [--gpu-metrics=LIST] [--gpu-metrics-file=FILE]\n"
           "\n"
           "Lists sysmeasure's configuration variables, with the values the environment\n"
           "and config file give them now, and what this build of sysmeasure supports.\n"
           "\n"
           "Options:\n"
           "  -c, --category=TOPIC  Only the variables of one topic (output, gpu, ...).\n"
           "  --categories          List the topics, with how many variables each has.\n"
           "  -s, --search=WORD     Only the variables whose name, option or description\n"
           "                        has WORD (case does not matter).\n"
           "  -G, --generate-config=FILE\n"
           "                        Write a config file of every variable, by topic, with\n"
           "                        its description and default, commented out; values\n"
           "                        that the environment sets now are active lines.\n"
           "                        'sysmeasure -c FILE' reads it back; '-' for stdout.\n"
           "  --format=FORMAT       text (default), man (troff for the manual page),\n"
           "                        markdown (doc/configuration.md) or json.\n"
           "  --papi                List the PAPI events this machine can count (for --papi).\n"
           "  --gpu                 List the GPUs, how many metrics each counts per kernel\n"
           "                        (--all: their names) and, for the --gpu-metrics list or\n"
           "                        file (default: SYSMEASURE_GPU_METRICS), the passes each\n"
           "                        metric group needs.\n"
           "  -h, --help            Show this help and exit.\n"
           "  -V, --version         Show the version and exit.\n"
           "\n"
           "Examples:\n"
           "  sysmeasure-avail -s buffer\n"
           "      The variables about buffers, with their current values.\n"
           "  sysmeasure-avail -c gpu\n"
           "      The GPU variables.\n"
           "  sysmeasure-avail -G site.conf\n"
           "      A commented config file to edit and use with sysmeasure -c site.conf.\n");
}

/* An option with a value: "-c X", "-cX", "--category=X", "--category X".
 * 1 with *value set when argv[*i] is this option, 0 when it is not, -1
 * (said in one line) when its value is missing. */
static int sm_option_value(int argc, char **argv, int *i, char letter, const char *name,
                           const char *what, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (a[0] == '-' && a[1] == letter && letter) {
        *value = a[2] ? a + 2 : NULL;
    } else if (!strncmp(a, "--", 2) && !strncmp(a + 2, name, n) && a[2 + n] == '=') {
        *value = a + 3 + n;
    } else if (!strncmp(a, "--", 2) && !strcmp(a + 2, name)) {
        *value = NULL;
    } else {
        return 0;
    }
    if (!*value && *i + 1 < argc)
        *value = argv[++*i];
    if (!*value || !**value) {
        sm_error("option '%s' needs %s", a, what);
        return -1;
    }
    return 1;
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-avail");
    const char *format = "text", *generate = NULL, *value;
    sm_select_t sel = {.category = SM_CONFIG_CAT_NONE, .word = NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int got;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            sm_usage();
            return 0;
        }
        if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            printf("sysmeasure-avail %s (OTF2 %s)\n", PACKAGE_VERSION, SM_OTF2_VERSION);
            return 0;
        }
        if (!strcmp(a, "--papi"))
            return sm_print_papi();
        if (!strcmp(a, "--categories")) {
            sm_print_categories();
            return 0;
        }
        if (!strcmp(a, "--gpu")) {
            const char *metrics = getenv("SYSMEASURE_GPU_METRICS");
            const char *file = getenv("SYSMEASURE_GPU_METRICS_FILE");
            int all = 0;
            for (int k = i + 1; k < argc; k++) {
                if (!strcmp(argv[k], "--all"))
                    all = 1;
                else if (!strncmp(argv[k], "--gpu-metrics=", 14))
                    metrics = argv[k] + 14;
                else if (!strncmp(argv[k], "--gpu-metrics-file=", 19))
                    file = argv[k] + 19;
                else {
                    sm_error("unknown argument '%s' after --gpu (--all, --gpu-metrics=LIST, "
                             "--gpu-metrics-file=FILE)",
                             argv[k]);
                    return 2;
                }
            }
            return sm_print_gpu(metrics, file, all);
        }
        if ((got = sm_option_value(argc, argv, &i, 'c', "category", "a topic (sysmeasure-avail "
                                   "--categories lists them)", &value)) != 0) {
            if (got < 0)
                return 2;
            sel.category = sm_config_category_find(value);
            if (sel.category == SM_CONFIG_CAT_NONE) {
                sm_error("unknown topic '%s' (sysmeasure-avail --categories lists them)", value);
                return 2;
            }
        } else if ((got = sm_option_value(argc, argv, &i, 's', "search", "a word", &value)) != 0) {
            if (got < 0)
                return 2;
            sel.word = value;
        } else if ((got = sm_option_value(argc, argv, &i, 'G', "generate-config",
                                          "a file name ('-': stdout)", &value)) != 0) {
            if (got < 0)
                return 2;
            generate = value;
        } else if ((got = sm_option_value(argc, argv, &i, 0, "format",
                                          "a value (text, man, markdown or json)", &value)) != 0) {
            if (got < 0)
                return 2;
            format = value;
        } else {
            sm_error("unknown argument '%s' (sysmeasure-avail --help lists the options)", a);
            return 2;
        }
    }
    if (generate)
        return sm_write_config(generate);
    if (!sm_selects_all(&sel) && strcmp(format, "text")) {
        sm_error("-c and -s select for the text format only (--format=json gives every "
                 "variable's category)");
        return 2;
    }
    if (!strcmp(format, "text")) {
        if (!sm_print_text(&sel) && !sm_selects_all(&sel))
            return 1;
    } else if (!strcmp(format, "man"))
        sm_print_man();
    else if (!strcmp(format, "markdown"))
        sm_print_markdown();
    else if (!strcmp(format, "json"))
        sm_print_json();
    else {
        sm_error("unknown format '%s' (text, man, markdown or json)", format);
        return 2;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        sm_error("cannot write the output");
        return 1;
    }
    return 0;
}
