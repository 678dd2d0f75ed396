// A pipeline meets a DropPending shutdown of its pool: it stops at its next item, in either mode, and the run
// fails with task_dropped; every item's destructor runs.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "graph/pipeline/pipeline_run.hpp"
#include "tests/scope/scope_test_support.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {
namespace {

// Counts the items alive (a moved-from one is not).
struct Counted {
  static inline std::atomic<std::int64_t> alive{0};
  bool live = true;
  std::uint64_t value = 0;
  explicit Counted(std::uint64_t v) : value(v) { alive.fetch_add(1); }
  Counted(Counted&& other) noexcept : live(other.live), value(other.value) { other.live = false; }
  Counted& operator=(Counted&&) = delete;
  ~Counted() {
    if (live) alive.fetch_sub(1);
  }
};

TEST_CASE("a DropPending shutdown stops a never-ending pipeline at its next item") {
  using detail::pipeline::TestMode;
  for (const TestMode mode : {TestMode::solo, TestMode::shared}) {
    INFO("mode forced: " << (mode == TestMode::solo ? "solo" : "shared"));
    const TestMode was = detail::pipeline::test_mode.exchange(mode);
    for_each_scope_worker_count([](unsigned workers) {
      const Watchdog watchdog("pipeline DropPending", patience(60));
      {
        Pool pool(PoolOptions{.threads = workers});
        std::atomic<std::uint64_t> consumed{0};
        std::uint64_t next = 0;
        {
          TaskScope scope{pool};
          // Cheap stages and a source that never ends: only the shutdown can stop the pipeline.
          auto items = scope.source([&]() -> std::optional<Counted> { return Counted(next++); });
          auto passed = scope.stage(items, [](Counted c) { return c; }, {.concurrency = 2});
          (void)scope.sink(passed, [&](Counted) { consumed.fetch_add(1); });
          scope.run();
          while (consumed.load() < 100) std::this_thread::yield();
          (void)pool.shutdown(Shutdown::DropPending);
          try {
            (void)scope.wait();
            FAIL("the run should have failed with task_dropped");
          } catch (const task_dropped& e) {
            CHECK(std::string(e.what()).find("DropPending") != std::string::npos);
          }
        }
      }
      CHECK(Counted::alive.load() == 0);
    });
    // shutdown_for's deadline drops as DropPending does; the error names the deadline, never DropPending.
    for_each_scope_worker_count([](unsigned workers) {
      const Watchdog watchdog("pipeline shutdown_for deadline", patience(60));
      {
        Pool pool(PoolOptions{.threads = workers});
        std::atomic<std::uint64_t> consumed{0};
        std::uint64_t next = 0;
        {
          TaskScope scope{pool};
          auto items = scope.source([&]() -> std::optional<Counted> { return Counted(next++); });
          auto passed = scope.stage(items, [](Counted c) { return c; }, {.concurrency = 2});
          (void)scope.sink(passed, [&](Counted) { consumed.fetch_add(1); });
          scope.run();
          while (consumed.load() < 100) std::this_thread::yield();
          CHECK_FALSE(pool.shutdown_for(std::chrono::milliseconds(1)).drained);
          try {
            (void)scope.wait();
            FAIL("the run should have failed with task_dropped");
          } catch (const task_dropped& e) {
            const std::string message = e.what();
            INFO("error: " << message);
            CHECK(message.find("shutdown_for's deadline") != std::string::npos);
            CHECK(message.find("DropPending") == std::string::npos);
          }
        }
      }
      CHECK(Counted::alive.load() == 0);
    });
    detail::pipeline::test_mode.store(was);
  }
}

}  // namespace
}  // namespace weft::test
