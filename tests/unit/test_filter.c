/* Region filters: the filter-file grammar (Score-P's, plus paradigms), the
 * rule order, MANGLED, file rules, every parse error; the definitions'
 * filtered bit; MPI group lists. */
#include "core/definitions.h"
#include "util/filter.h"
#include "util/mpi_groups.h"
#include "unit.h"

#include <stdlib.h>

static sm_filter_t *parse(const char *text)
{
    char err[512] = "";
    sm_filter_t *f = sm_filter_parse(text, "t.filter", err, sizeof err);
    if (!f)
        fprintf(stderr, "unexpected parse error: %s\n", err);
    return f;
}

/* The error message of text, which must not parse. */
static const char *error_of(const char *text)
{
    static char err[512];
    err[0] = '\0';
    sm_filter_t *f = sm_filter_parse(text, "t.filter", err, sizeof err);
    if (f) {
        sm_filter_free(f);
        return "(parsed)";
    }
    return err;
}

static int excl(const sm_filter_t *f, const char *name, const char *file)
{
    return sm_filter_excludes(f, name, NULL, file, "compiler");
}

int main(void)
{
    /* Rule order: the last matching rule decides; continuation lines. */
    sm_filter_t *f = parse("# comment\n"
                           "SCOREP_REGION_NAMES_BEGIN\n"
                           "  EXCLUDE *\n"
                           "  INCLUDE main solve*   # trailing comment\n"
                           "          setup\n"
                           "  EXCLUDE solve_tiny\n"
                           "SCOREP_REGION_NAMES_END\n");
    CHECK(f != NULL);
    CHECK(!excl(f, "main", NULL));
    CHECK(!excl(f, "solve_big", NULL));
    CHECK(!excl(f, "setup", NULL));
    CHECK(excl(f, "solve_tiny", NULL));
    CHECK(excl(f, "helper", NULL));
    CHECK_EQ_U(sm_filter_rule_count(f), 5);
    sm_filter_free(f);

    /* MANGLED matches the mangled name; without one, the name. */
    f = parse("SCOREP_REGION_NAMES_BEGIN\n EXCLUDE MANGLED _ZN3geo*\nSCOREP_REGION_NAMES_END\n");
    CHECK(f && sm_filter_excludes(f, "geo::f(int)", "_ZN3geo1fEi", NULL, "compiler"));
    CHECK(f && !sm_filter_excludes(f, "geo::f(int)", "_ZN5other1fEi", NULL, "compiler"));
    CHECK(f && sm_filter_excludes(f, "_ZN3geo_plain", NULL, NULL, "compiler"));
    sm_filter_free(f);

    /* Escaped spaces and wildcards: names with blanks, literal '*'. */
    char pattern[256];
    sm_filter_escape("ns::f(int, double*)", pattern, sizeof pattern);
    CHECK_STR(pattern, "ns::f(int,\\ double\\*)");
    char text[512];
    snprintf(text, sizeof text, "SCOREP_REGION_NAMES_BEGIN\nEXCLUDE %s\nSCOREP_REGION_NAMES_END\n",
             pattern);
    f = parse(text);
    CHECK(f && excl(f, "ns::f(int, double*)", NULL));
    CHECK(f && !excl(f, "ns::f(int, double)", NULL));
    sm_filter_free(f);

    /* File rules: a region without a file is not touched; paradigms. */
    f = parse("SCOREP_FILE_NAMES_BEGIN\n EXCLUDE */vendor/*\n INCLUDE */vendor/keep.c\n"
              "SCOREP_FILE_NAMES_END\n"
              "SYSMEASURE_PARADIGMS_BEGIN\n EXCLUDE openmp kokkos\nSYSMEASURE_PARADIGMS_END\n");
    CHECK(f && excl(f, "g", "/src/vendor/lib.c"));
    CHECK(f && !excl(f, "g", "/src/vendor/keep.c"));
    CHECK(f && !excl(f, "g", NULL));
    CHECK(f && sm_filter_excludes(f, "parallel", NULL, NULL, "openmp"));
    CHECK(f && !sm_filter_excludes(f, "MPI_Send", NULL, NULL, "mpi"));
    sm_filter_free(f);

    /* Every paradigm name the core has is one a filter may name. */
    for (int p = 0; p < SM_PARADIGM_COUNT; p++) {
        snprintf(text, sizeof text,
                 "SYSMEASURE_PARADIGMS_BEGIN\nEXCLUDE %s\nSYSMEASURE_PARADIGMS_END\n",
                 sm_paradigm_name((sm_paradigm_t)p));
        f = parse(text);
        CHECK(f != NULL);
        sm_filter_free(f);
    }

    /* Errors: one line, with the line number. */
    CHECK_STR(error_of("EXCLUDE foo\n"), "t.filter:1: EXCLUDE outside a block (begin one with "
                                         "SCOREP_REGION_NAMES_BEGIN or SCOREP_FILE_NAMES_BEGIN)");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE foo\n"),
              "t.filter:1: SCOREP_REGION_NAMES_BEGIN without its SCOREP_REGION_NAMES_END");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\n  foo\nSCOREP_REGION_NAMES_END\n"),
              "t.filter:2: 'foo': a pattern must follow INCLUDE or EXCLUDE");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\n\n  INCLUDE\nSCOREP_REGION_NAMES_END\n"),
              "t.filter:3: INCLUDE without a pattern");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\nSCOREP_FILE_NAMES_END\n"),
              "t.filter:2: SCOREP_FILE_NAMES_END without its SCOREP_FILE_NAMES_BEGIN");
    CHECK_STR(error_of("SCOREP_FILE_NAMES_BEGIN\n EXCLUDE MANGLED x\nSCOREP_FILE_NAMES_END\n"),
              "t.filter:2: MANGLED is for region names, not in this block");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\nSCOREP_FILE_NAMES_BEGIN\n"),
              "t.filter:2: SCOREP_FILE_NAMES_BEGIN inside a block begun on line 1 (missing its "
              "_END?)");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\n EXCLUDE SCOREP_FOO\nSCOREP_REGION_NAMES_END\n"),
              "t.filter:2: unknown keyword 'SCOREP_FOO'");
    CHECK_STR(error_of("SYSMEASURE_PARADIGMS_BEGIN\n EXCLUDE fortran\nSYSMEASURE_PARADIGMS_END\n"),
              "t.filter:2: unknown paradigm 'fortran' (user, pthread, mpi, openmp, kokkos, "
              "cuda, hip, compiler, sampling, python, nccl, rccl)");
    char err[512];
    CHECK(sm_filter_read("/nonexistent/x.filter", err, sizeof err) == NULL);
    CHECK_STR(err, "filter file /nonexistent/x.filter: No such file or directory");

    /* The definitions hand out the filtered bit, once per region, and
     * never for sysmeasure's own regions. */
    f = parse("SCOREP_REGION_NAMES_BEGIN\n EXCLUDE tiny*\nSCOREP_REGION_NAMES_END\n");
    sm_definitions_set_filter(f);
    sm_region_id_t a = sm_region_define("tiny_add", "/x.c", 3, SM_PARADIGM_COMPILER,
                                        SM_ROLE_FUNCTION);
    sm_region_id_t b = sm_region_define("big", "/x.c", 9, SM_PARADIGM_COMPILER, SM_ROLE_FUNCTION);
    sm_region_id_t m = sm_region_define("tiny_flush", NULL, 0, SM_PARADIGM_MEASUREMENT,
                                        SM_ROLE_ARTIFICIAL);
    CHECK(sm_region_filtered(a) && a != SM_INVALID_ID);
    CHECK(!sm_region_filtered(b));
    CHECK(!sm_region_filtered(m));
    CHECK_EQ_U(sm_region_define("tiny_add", "/x.c", 3, SM_PARADIGM_COMPILER, SM_ROLE_FUNCTION), a);
    CHECK_STR(sm_region_name(a), "tiny_add");
    CHECK(sm_region_get(a) && sm_region_get(a)->filtered);
    sm_definitions_set_filter(NULL);
    sm_filter_free(f);

    /* MPI groups. */
    uint32_t mask;
    CHECK(sm_mpi_groups_parse("all,~p2p", &mask, err, sizeof err) == 0);
    CHECK_EQ_U(mask, SM_MPI_GROUPS_ALL & ~(1u << SM_MPI_GROUP_P2P));
    CHECK(sm_mpi_groups_parse("~P2P,~io", &mask, err, sizeof err) == 0);
    CHECK_EQ_U(mask, SM_MPI_GROUPS_ALL & ~(1u << SM_MPI_GROUP_P2P) & ~(1u << SM_MPI_GROUP_IO));
    CHECK(sm_mpi_groups_parse("coll,env", &mask, err, sizeof err) == 0);
    CHECK_EQ_U(mask, (1u << SM_MPI_GROUP_COLL) | (1u << SM_MPI_GROUP_ENV));
    char off[256];
    sm_mpi_groups_format_off((1u << SM_MPI_GROUP_COLL) | (1u << SM_MPI_GROUP_ENV), off,
                             sizeof off);
    CHECK_STR(off, "cg,err,ext,io,misc,p2p,perf,rma,spawn,topo,type");
    CHECK(sm_mpi_groups_parse("p2p,bogus", &mask, err, sizeof err) == -1);
    CHECK(strncmp(err, "unknown MPI group 'bogus'", 25) == 0);
    return unit_failures;
}
