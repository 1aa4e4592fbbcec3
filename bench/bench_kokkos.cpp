// The cost of an empty labelled parallel_for with and without the Kokkos
// tool, in one run: Kokkos loads the tool at initialize, and pause_tools /
// resume_tools switch its callbacks off and on (paused, Kokkos calls no tool,
// as when none is loaded).  Rounds alternate, the median of each side is
// reported.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double ns_per_kernel(int n)
{
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++)
        Kokkos::parallel_for("empty_kernel", 1, KOKKOS_LAMBDA(int) {});
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    Kokkos::initialize(argc, argv);
    {
        int n = argc > 1 ? std::atoi(argv[1]) : 100000;
        const int rounds = 7;
        bool tool = Kokkos::Tools::profileLibraryLoaded();
        std::vector<double> without, with;
        ns_per_kernel(n / 10); // warm-up: regions defined, buffers touched
        for (int r = 0; r < rounds; r++) {
            Kokkos::Tools::Experimental::pause_tools();
            without.push_back(ns_per_kernel(n));
            Kokkos::Tools::Experimental::resume_tools();
            with.push_back(ns_per_kernel(n));
        }
        double a = median(without), b = median(with);
        std::printf("empty labelled parallel_for, %d x %d calls: without the tool %.1f ns, "
                    "with %s %.1f ns: +%.1f ns per kernel\n",
                    rounds, n, a, tool ? "the tool" : "no tool loaded (!)", b, b - a);
    }
    Kokkos::finalize();
    return 0;
}
