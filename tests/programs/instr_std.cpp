// Built with sysmeasure-c++ (clang++ and g++): an application whose own
// functions use std:: containers and algorithms.  Only the application's
// functions may become regions (none of the std:: ones, which come from the
// system headers), with exact counts: fill 4, tally 4, by_length 1,
// record 40, main 1.
#include <algorithm>
#include <map>
#include <string>
#include <vector>
#include <cstdio>

namespace app {

static std::map<std::string, int> counts;

__attribute__((noinline)) void record(const std::string &word)
{
    counts[word]++;
}

__attribute__((noinline)) std::vector<std::string> fill(int n)
{
    std::vector<std::string> v;
    for (int i = 0; i < n; i++)
        v.push_back(std::string(1 + i % 5, 'a' + (char)(i % 3)));
    return v;
}

__attribute__((noinline)) void tally(const std::vector<std::string> &v)
{
    for (const std::string &w : v)
        record(w);
}

__attribute__((noinline)) bool by_length(const std::vector<std::string> &v)
{
    std::vector<std::string> s(v);
    std::sort(s.begin(), s.end(),
              [](const std::string &a, const std::string &b) { return a.size() < b.size(); });
    return std::is_sorted(s.begin(), s.end(), [](const std::string &a, const std::string &b) {
        return a.size() < b.size();
    });
}

} // namespace app

int main()
{
    std::vector<std::string> all;
    for (int k = 0; k < 4; k++) {
        std::vector<std::string> v = app::fill(10);
        app::tally(v);
        all.insert(all.end(), v.begin(), v.end());
    }
    bool sorted = app::by_length(all);
    std::printf("words %zu distinct %zu sorted %d\n", all.size(), app::counts.size(), (int)sorted);
    return sorted ? 0 : 1;
}
