/* Fuzz harness: a filter file (--filter, src/util/filter.c), read from a
 * file as the launcher and the runtime read it.  What must hold: a filter,
 * whose rules then match names without harm, or one line saying why not. */
#include "fuzz_common.h"

#include "util/filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512], err[2048] = "";
    sm_fuzz_put("input", data, size, path, sizeof path);
    sm_filter_t *f = sm_filter_read(path, err, sizeof err);
    if (!f) {
        sm_fuzz_one_line(err);
        return 0;
    }
    static const char *const names[][4] = {
        {"main", "main", "/src/main.c", "user"},
        {"solve(int)", "_Z5solvei", "/src/solver.cpp", "compiler"},
        {"MPI_Send", NULL, NULL, "mpi"},
        {"", "", "", ""},
        {"*?[]\\#", NULL, "/a b/c", "openmp"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        (void)sm_filter_excludes(f, names[i][0], names[i][1], names[i][2], names[i][3]);
    (void)sm_filter_rule_count(f);
    sm_filter_free(f);
    return 0;
}
