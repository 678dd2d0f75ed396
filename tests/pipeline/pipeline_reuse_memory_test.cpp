// weft::StreamGraph's memory stays flat over many runs: a warm run allocates the same small number of blocks as
// the one before it (its weft::Run's state and what the pool's tasks need), never the pipeline's layout or item
// slots again, so 10,000 runs allocate no more per run than the first hundred warm ones. Counted through the
// replaced operator new (tests/support/counting_new.cpp), process-wide.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "tests/support/counting_new.hpp"
#include "tests/support/sanitizers.hpp"
#include "weft/pool.hpp"
#include "weft/stream_graph.hpp"

namespace weft::test {
namespace {

TEST_CASE("a StreamGraph run 10,000 times allocates no more per run than when warm: memory stays flat") {
  for_each_scope_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    std::vector<std::uint64_t> batch(16);
    std::uint64_t sum = 0;
    StreamGraph pipe;
    auto items = pipe.source([&](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == batch.size()) return std::nullopt;
      return batch[i];
    });
    auto a = pipe.stage(items, [](std::uint64_t x) { return 3 * x + 1; }, {.concurrency = kUnlimited});
    auto b = pipe.stage(a, [](std::uint64_t x) { return 2 * x; }, {.concurrency = kUnlimited});
    pipe.sink(b, [&](std::uint64_t x) { sum += x; }, {.order = Order::Input});
    const auto runs = [&](int n) {
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::uint64_t>(r) + i;
        sum = 0;
        REQUIRE(pipe.run(pool).wait() == RunStatus::Completed);
        std::uint64_t expected = 0;
        for (const std::uint64_t x : batch) expected += 2 * (3 * x + 1);
        REQUIRE(sum == expected);
      }
    };
    runs(200);  // warm: the layout made, the slots allocated
    reset_allocation_count();
    count_allocations(true);
    runs(100);
    const std::uint64_t warm = allocations_counted();
    reset_allocation_count();
    // 10,000 natively; a tenth where each run costs many times more (ThreadSanitizer, emulation).
    const int many_runs = weft::test::reduced_runs() ? 1'000 : 10'000;
    runs(many_runs);
    const std::uint64_t many = allocations_counted();
    count_allocations(false);
    const double warm_per_run = static_cast<double>(warm) / 100.0;
    const double per_run = static_cast<double>(many) / static_cast<double>(many_runs);
    MESSAGE("workers " << workers << ": " << warm_per_run << " allocations per warm run, " << per_run << " over "
                       << many_runs << " runs");
    // The Run's state and little else; the pipeline's own layout and slots (dozens of blocks) never again.
    CHECK(per_run <= 2.0);
    CHECK(per_run <= warm_per_run + 0.5);
  });
}

}  // namespace
}  // namespace weft::test
