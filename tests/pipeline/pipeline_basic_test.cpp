// weft::TaskScope pipelines: the basic shapes (map, filter, fan-out, order, move-only items, composition).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {
namespace {

TEST_CASE("a pipeline of a source, a parallel stage, a filter and an in-order sink") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog("pipeline basic", patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    constexpr std::uint64_t kItems = 20'000;
    std::uint64_t next = 0;
    auto numbers = scope.source([&]() -> std::optional<std::uint64_t> {
      if (next == kItems) return std::nullopt;
      return next++;
    });
    auto squares = scope.stage(numbers, [](std::uint64_t x) { return x * x; }, {.concurrency = 4, .capacity = 8});
    auto even = scope.stage(squares, [](std::uint64_t x) -> std::optional<std::uint64_t> {
      if (x % 2 == 0) return x;
      return std::nullopt;
    });
    std::vector<std::uint64_t> seen;
    Job<void> done = scope.sink(even, [&](std::uint64_t x) { seen.push_back(x); }, {.order = Order::Input});
    bool after = false;
    scope.then(done, [&] { after = true; });
    CHECK(scope.run_and_wait() == RunStatus::completed);
    REQUIRE(seen.size() == kItems / 2);
    for (std::uint64_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == (2 * i) * (2 * i));
    CHECK(after);
  });
}

}  // namespace
}  // namespace weft::test
