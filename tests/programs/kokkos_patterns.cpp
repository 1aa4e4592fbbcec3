// A Kokkos program with known counts for the Kokkos adapter's tests:
// labelled parallel_for/reduce/scan inside nested profile regions inside a
// user region, views allocated and deep-copied, a fence, a profile section,
// an event and declared metadata.  Views of 1 MiB each, so that the memory
// space's high-water mark is known within Kokkos' own small allocations.
// With KP_ENV_OUT set, it writes the KOKKOS_* variables it was given there
// (found by prefix: the names of the tool variables must not be among its
// strings, where sysmeasure looks for which one Kokkos reads).
#include <Kokkos_Core.hpp>
#include <sysmeasure.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

static void write_tool_variables(const char *path)
{
    FILE *f = std::fopen(path, "w");
    if (!f)
        return;
    for (char **e = environ; *e; e++)
        if (!std::strncmp(*e, "KOKKOS_", 7))
            std::fprintf(f, "%s\n", *e);
    std::fclose(f);
}

int main(int argc, char **argv)
{
    if (const char *env_out = std::getenv("KP_ENV_OUT"))
        write_tool_variables(env_out);
    Kokkos::initialize(argc, argv);
    {
        const int n = 131072; // doubles: 1 MiB per view
        Kokkos::Tools::declareMetadata("test_key", "test value");
        sysmeasure_push_region("user_outer");
        Kokkos::Profiling::pushRegion("phase_a");
        Kokkos::View<double *> a("view_a", n), b("view_b", n);
        Kokkos::Profiling::pushRegion("phase_a_inner");
        for (int it = 0; it < 3; it++)
            Kokkos::parallel_for("pf_label", n, KOKKOS_LAMBDA(int i) { a(i) = i + it; });
        double sum = 0, total = 0;
        for (int it = 0; it < 2; it++) {
            Kokkos::parallel_reduce("pr_label", n,
                                    KOKKOS_LAMBDA(int i, double &s) { s += a(i); }, sum);
            total += sum;
        }
        Kokkos::parallel_scan("ps_label", n, KOKKOS_LAMBDA(int i, double &u, bool last) {
            u += a(i);
            if (last)
                b(i) = u;
        });
        Kokkos::Profiling::popRegion();
        Kokkos::deep_copy(b, a);
        auto h = Kokkos::create_mirror(a); // a third 1 MiB view: view_a_mirror
        Kokkos::deep_copy(h, a);
#if KOKKOS_VERSION >= 30500
        Kokkos::fence("test_fence");
#else
        // Kokkos before 3.5 reports no fence to tools: report one as 3.5 would.
        uint64_t fence_id = 0;
        Kokkos::Tools::beginFence("test_fence", 0, &fence_id);
        Kokkos::fence();
        Kokkos::Tools::endFence(fence_id);
#endif
        Kokkos::Profiling::popRegion();

        uint32_t section = 0;
        Kokkos::Profiling::createProfileSection("section_s", &section);
        Kokkos::Profiling::startSection(section);
        Kokkos::parallel_for("in_section", 16, KOKKOS_LAMBDA(int i) { a(i) = 0; });
        Kokkos::Profiling::stopSection(section);
        Kokkos::Profiling::destroyProfileSection(section);
        Kokkos::Profiling::markEvent("marker");
        sysmeasure_pop_region("user_outer");
        std::printf("total %.0f\n", total);
    }
    Kokkos::finalize();
    return 0;
}
