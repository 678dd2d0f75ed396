// weft::StreamGraph's memory stays flat over many runs: a warm run allocates its weft::Run's state, never the
// pipeline's layout or item slots again, and what the pool's task nodes take stays within the node caches' fixed
// bound however many runs there are. Counted through the replaced operator new
// (tests/support/counting_new.cpp), process-wide.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "tests/support/counting_new.hpp"
#include "tests/support/sanitizers.hpp"
#include "weft/detail/block_cache.hpp"
#include "weft/pool.hpp"
#include "weft/stream_graph.hpp"

namespace weft::test {
namespace {

TEST_CASE(
    "a StreamGraph run 10,000 times allocates its Run's state and what the node caches bound: memory stays flat") {
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
    // 10,000 natively; a tenth where each run costs many times more (reduced_runs(): sanitizers, emulation).
    const int many_runs = weft::test::reduced_runs() ? 1'000 : 10'000;
    runs(many_runs);
    const std::uint64_t many = allocations_counted();
    count_allocations(false);
    MESSAGE("workers " << workers << ": " << static_cast<double>(many) / many_runs << " allocations per run over "
                       << many_runs << " runs");
    // Each run allocates its Run's state: one block. The pool's task nodes come from its node caches, which only
    // reach their steady size over many runs, and how soon depends on which threads happened to free which
    // nodes: the submitting thread takes a batch from the shared pool when its cache is empty, the workers give
    // a batch back only when theirs are full. What the pool may hold is bounded by its design, per thread: fewer
    // than kFreeListCapacity freed blocks and one taken batch in its cache, and the nodes it has retired and not
    // yet reclaimed (fewer than 2·K·n hazard-pointer retirements, under a batch at these thread counts). So the
    // blocks beyond one per run stay under that constant however many runs there are; the pipeline's layout and
    // slots (dozens of blocks per run) never come back.
    const std::uint64_t threads = workers + 1;  // the workers and this thread, the only submitter
    const std::uint64_t pool_bound = threads * 3 * weft::detail::kFreeListCapacity;
    CHECK(many >= static_cast<std::uint64_t>(many_runs));
    CHECK(many - static_cast<std::uint64_t>(many_runs) <= pool_bound);
  });
}

}  // namespace
}  // namespace weft::test
