// Built with sysmeasure-c++: templates, namespaces, a class; planted counts:
// geo::Shape<double>::area() 30, geo::Shape<int>::area() 20,
// geo::detail::accumulate<double>(double) 30, tools::Counter::bump() 50,
// (anonymous namespace)::local_helper(int) 5.
#include <cstdio>

namespace geo {
namespace detail {
template <typename T>
__attribute__((noinline)) T accumulate(T x)
{
    static volatile T total;
    total = total + x;
    return total;
}
} // namespace detail

template <typename T>
class Shape {
  public:
    explicit Shape(T side) : side_(side) {}
    __attribute__((noinline)) T area() const
    {
        return side_ * side_;
    }

  private:
    T side_;
};
} // namespace geo

namespace tools {
class Counter {
  public:
    __attribute__((noinline)) void bump()
    {
        n_ = n_ + 1;
    }
    long n_ = 0;
};
} // namespace tools

namespace {
__attribute__((noinline)) int local_helper(int i)
{
    return i * 3;
}
} // namespace

int main()
{
    double sum = 0;
    for (int i = 0; i < 30; i++) {
        geo::Shape<double> s(i * 0.5);
        sum += geo::detail::accumulate<double>(s.area());
    }
    for (int i = 0; i < 20; i++) {
        geo::Shape<int> s(i);
        sum += s.area();
    }
    tools::Counter c;
    for (int i = 0; i < 50; i++)
        c.bump();
    for (int i = 0; i < 5; i++)
        sum += local_helper(i);
    std::printf("%g %ld\n", sum, c.n_);
    return 0;
}
