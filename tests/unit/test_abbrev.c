/* Names abbreviated for tables (util/abbrev.h), named cases. */
#include "unit.h"
#include "util/abbrev.h"

static char out[512];

static const char *ab(const char *name, size_t max)
{
    sm_abbrev(name, out, sizeof out, max);
    return out;
}

/* Templates: the outermost <...> collapsed, nested ones with them. */
static void templates(void)
{
    CHECK_STR(ab("std::vector<std::pair<int, double> >::push_back", 60),
              "std::vector<...>::push_back");
    CHECK_STR(ab("A<1>::B<C<2>>::run", 60), "A<...>::B<...>::run");
    CHECK_STR(ab("f<>", 60), "f<>"); /* nothing in it: kept */
    CHECK(!sm_abbrev("plain_name", out, sizeof out, 60));
}

/* Operators that are no template: kept. */
static void operators(void)
{
    CHECK_STR(ab("operator<", 60), "operator<");
    CHECK_STR(ab("operator<<", 60), "operator<<");
    CHECK_STR(ab("operator<=(a, b)", 60), "operator<=(a, b)");
    CHECK_STR(ab("X<int>::operator<", 60), "X<...>::operator<");
}

/* The cap: max characters, the last three "..."; UTF-8 counted as
 * characters, never cut inside one. */
static void cap(void)
{
    char name[200];
    memset(name, 'a', 100);
    name[100] = '\0';
    CHECK(sm_abbrev(name, out, sizeof out, 60));
    CHECK_EQ_U(strlen(out), 60);
    CHECK(!strcmp(out + 57, "..."));
    CHECK_STR(ab("ééééééééééé", 8), "ééééé...");
    CHECK_STR(ab("éééééééé", 8), "éééééééé"); /* exactly 8: whole */
    char small[8];
    CHECK(sm_abbrev("abcdefghij", small, sizeof small, 60)); /* room, not the cap */
    CHECK_STR(small, "abcdefg");
}

int main(void)
{
    templates();
    operators();
    cap();
    return unit_failures ? 1 : 0;
}
