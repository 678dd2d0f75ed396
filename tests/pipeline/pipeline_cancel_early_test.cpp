// cancel() from a pipeline stage at the very first item, while run() is still starting the scope's other jobs.
// TaskScope::cancel() must stop the run whenever a job calls it: the pipeline contract says a cancelled run
// stops the pipeline, and a stage is where a pipeline learns it should stop.
//
// Many independent jobs after the pipeline keep run() busy starting them after the pipeline's job has begun, so
// the stage's cancel() comes before run() returns. A cancel() lost there lets the pipeline run to its end (an
// endless source would never stop): wait() then says completed.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

TEST_CASE("cancel() from a stage before run() returned stops the run") {
  constexpr int kRounds = 10;
  constexpr std::uint64_t kItems = 20'000;
  const int other_jobs = reduced_runs() ? 2'000 : 20'000;
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("early cancel", workers), patience(60));
    int early = 0;
    int lost = 0;
    for (int round = 0; round < kRounds; ++round) {
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::atomic<bool> run_returned{false};
        bool before_run_returned = false;
        auto source = scope.source(counted_below(census, kItems));
        auto staged = scope.stage(source, [&](Counted c) {
          if (c.value() == 0) {
            before_run_returned = !run_returned.load(std::memory_order_acquire);
            scope.cancel();
          }
          return c;
        });
        Job<void> done = scope.sink(staged, [](Counted) {});
        for (int i = 0; i < other_jobs; ++i) scope.submit([] {});
        scope.run();
        run_returned.store(true, std::memory_order_release);
        const RunStatus status = scope.wait();
        early += before_run_returned ? 1 : 0;
        if (status != RunStatus::Cancelled) ++lost;
        CHECK_THROWS_AS(done.get(), job_cancelled);
      }
      check_balanced(census);
    }
    INFO("rounds whose cancel() came before run() returned: " << early << " of " << kRounds);
    CHECK(lost == 0);
  });
}

}  // namespace
}  // namespace weft::test
