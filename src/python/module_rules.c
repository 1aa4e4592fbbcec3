/* The module rules of Python measurement: see module_rules.h. */
#include "module_rules.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sm_py_rule {
    bool exclude;
    bool file;     /* a path prefix, else a module name */
    char *pattern; /* a file rule's ends in '*' */
} sm_py_rule_t;

struct sm_py_rules {
    size_t n;
    sm_py_rule_t *rule;
};

void sm_py_rules_free(sm_py_rules_t *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->n; i++)
        free(rules->rule[i].pattern);
    free(rules->rule);
    free(rules);
}

size_t sm_py_rules_count(const sm_py_rules_t *rules)
{
    return rules ? rules->n : 0;
}

sm_py_rules_t *sm_py_rules_parse(const char *text, char *err, size_t errlen)
{
    sm_py_rules_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (const char *p = text ? text : ""; *p;) {
        size_t len = strcspn(p, ",");
        const char *s = p, *e = p + len;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e == s) {
            snprintf(err, errlen, "python_modules '%s': an empty rule (each rule is -PATTERN "
                     "or +PATTERN, separated by commas)", text);
            goto bad;
        }
        if ((*s != '-' && *s != '+') || e - s < 2) {
            snprintf(err, errlen, "python_modules '%s': rule '%.*s' must be -PATTERN (leave "
                     "out) or +PATTERN (keep)", text, (int)(e - s), s);
            goto bad;
        }
        sm_py_rule_t *grown = realloc(r->rule, (r->n + 1) * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            goto bad;
        }
        r->rule = grown;
        sm_py_rule_t *rule = &r->rule[r->n];
        rule->exclude = *s == '-';
        s++;
        rule->file = memchr(s, '/', (size_t)(e - s)) != NULL;
        rule->pattern = malloc((size_t)(e - s) + 2);
        if (!rule->pattern) {
            snprintf(err, errlen, "out of memory");
            goto bad;
        }
        memcpy(rule->pattern, s, (size_t)(e - s));
        rule->pattern[e - s] = '\0';
        if (rule->file)
            strcat(rule->pattern, "*"); /* a path prefix */
        r->n++;
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(err, errlen, "python_modules '%s': an empty rule at the end", text);
                goto bad;
            }
        }
    }
    return r;
bad:
    sm_py_rules_free(r);
    return NULL;
}

/* module or one of the packages it lies in ("a.b.c": "a.b.c", "a.b", "a"). */
static bool sm_py_module_match(const char *pattern, const char *module)
{
    char buf[1024];
    size_t n = strlen(module);
    if (n >= sizeof buf)
        return fnmatch(pattern, module, 0) == 0;
    memcpy(buf, module, n + 1);
    for (;;) {
        if (fnmatch(pattern, buf, 0) == 0)
            return true;
        char *dot = strrchr(buf, '.');
        if (!dot)
            return false;
        *dot = '\0';
    }
}

bool sm_py_rules_exclude(const sm_py_rules_t *rules, const char *module, const char *file)
{
    if (!rules)
        return false;
    for (size_t i = rules->n; i-- > 0;) {
        const sm_py_rule_t *rule = &rules->rule[i];
        bool hit = rule->file ? file && fnmatch(rule->pattern, file, 0) == 0
                              : module && sm_py_module_match(rule->pattern, module);
        if (hit)
            return rule->exclude;
    }
    return false;
}
