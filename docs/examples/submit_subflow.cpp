// Pool::submit of a callable taking weft::Subflow&: recursive Fibonacci with spawn inside a plain pool task.
// The future is ready only once the body and every child it spawned (and theirs) finished, and a child's
// exception comes out of get(). Exits with 1 if a result is wrong. Built and run by weft's test suite (suite
// 'examples').
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <weft/pool.hpp>
#include <weft/task_scope.hpp>  // the graph layer: defines submit of a Subflow& callable

namespace {

std::uint64_t fib(weft::Subflow& sf, unsigned n) {
  if (n < 16) {  // small cases serially
    std::uint64_t a = 0;
    std::uint64_t b = 1;
    for (unsigned i = 0; i < n; ++i) {
      const std::uint64_t next = a + b;
      a = b;
      b = next;
    }
    return a;
  }
  std::uint64_t left = 0;
  sf.spawn([&left, n](weft::Subflow& child) { left = fib(child, n - 1); });
  const std::uint64_t right = fib(sf, n - 2);
  sf.join();  // `left` is read below: join before (the end of the body would join too, but too late for it)
  return left + right;
}

}  // namespace

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  weft::Future<std::uint64_t> f = pool.submit([](weft::Subflow& sf) { return fib(sf, 30); });
  const std::uint64_t value = f.get();

  // A child's exception reaches the future, after every other child finished.
  weft::Future<void> failing = pool.submit([](weft::Subflow& sf) {
    for (int i = 0; i < 4; ++i) {
      sf.spawn([i] {
        if (i == 2) throw std::runtime_error("child " + std::to_string(i) + " failed");
      });
    }
  });
  std::string error;
  try {
    failing.get();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  std::printf("fib(30) = %llu, error = \"%s\"\n", static_cast<unsigned long long>(value), error.c_str());
  return value == 832040 && error == "child 2 failed" ? 0 : 1;
}
