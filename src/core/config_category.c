/* The topics of the configuration variables: each variable belongs to the
 * first row of config_categories.def that names it, or failing that to the
 * first whose "PREFIX*" matches it (so that "GPU_*" does not take what a
 * row above names explicitly). */
#include "config_category.h"

#include <stdbool.h>
#include <string.h>

static const char *const sm_category_members[SM_CONFIG_CAT_COUNT] = {
#define SM_CONFIG_CATEGORY(ID, name, title, members) members,
#include "config_categories.def"
#undef SM_CONFIG_CATEGORY
};

const sm_config_category_info_t sm_config_categories[SM_CONFIG_CAT_COUNT] = {
#define SM_CONFIG_CATEGORY(ID, name, title, members) {name, title},
#include "config_categories.def"
#undef SM_CONFIG_CATEGORY
};

/* Whether a member list names NAME (exact: pattern false) or has a
 * "PREFIX*" that NAME starts with (pattern true). */
static bool sm_members_take(const char *members, const char *name, bool pattern)
{
    size_t n = strlen(name);
    for (const char *p = members; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (!k)
            break;
        bool star = p[k - 1] == '*';
        if (!pattern && !star && k == n && !strncmp(p, name, n))
            return true;
        if (pattern && star && k - 1 <= n && !strncmp(p, name, k - 1))
            return true;
        p += k;
    }
    return false;
}

sm_config_category_t sm_config_category_of(const sm_config_var_t *var)
{
    for (int pattern = 0; pattern < 2; pattern++)
        for (int c = 0; c < SM_CONFIG_CAT_COUNT; c++)
            if (sm_members_take(sm_category_members[c], var->name, pattern))
                return (sm_config_category_t)c;
    return SM_CONFIG_CAT_NONE;
}

sm_config_category_t sm_config_category_find(const char *name)
{
    for (int c = 0; c < SM_CONFIG_CAT_COUNT; c++)
        if (!strcmp(sm_config_categories[c].name, name))
            return (sm_config_category_t)c;
    return SM_CONFIG_CAT_NONE;
}
