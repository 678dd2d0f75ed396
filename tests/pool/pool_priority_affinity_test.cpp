// Run-time priorities (High before Normal before Low), the order within a priority, and affinity: a task runs
// on its worker when that worker is free, and another worker takes it once the patience has run out.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// Records the order tasks ran in (only one worker runs them, but the log is read from the test thread).
class RunLog {
 public:
  void add(std::string entry) {
    const std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> entries() {
    const std::lock_guard lock(mutex_);
    return entries_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> entries_;
};

// "H3" etc. (written out: g++ 12 gives a false -Wrestrict for "H" + std::to_string(i) here).
std::string label(char priority, int i) {
  std::string out(1, priority);
  out += std::to_string(i);
  return out;
}

weft::TaskOptions with(weft::Priority priority) {
  weft::TaskOptions options;
  options.priority = priority;
  return options;
}

// Keeps all workers but one at a gate: the free one alone runs whatever is queued next, so order is defined.
// Returns once every held worker is inside; `free_worker_gate` is entered by the remaining one.
void leave_one_worker_free(weft::Pool& pool, Gate& held, Gate& free_worker_gate) {
  for (unsigned i = 0; i + 1 < pool.size(); ++i) pool.post([&held] { held.enter(); });
  held.await_entered(pool.size() - 1);
  pool.post([&free_worker_gate] { free_worker_gate.enter(); });
  free_worker_gate.await_entered(1);
}

TEST_CASE("a free worker takes every ready High task before Normal ones, and Normal before Low") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("priorities", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate held;
    Gate busy;
    leave_one_worker_free(pool, held, busy);  // the free worker is busy too, for now
    RunLog log;
    // Submitted interleaved, lowest priority first, from outside the pool.
    for (int i = 0; i < 5; ++i) {
      pool.post([&log, i] { log.add(label('L', i)); }, with(weft::Priority::Low));
      pool.post([&log, i] { log.add(label('N', i)); }, with(weft::Priority::Normal));
      pool.post([&log, i] { log.add(label('H', i)); }, with(weft::Priority::High));
    }
    busy.open();
    CHECK(eventually([&log] { return log.entries().size() == 15; }, patience(10)));
    const std::vector<std::string> expected = {"H0", "H1", "H2", "H3", "H4", "N0", "N1", "N2",
                                               "N3", "N4", "L0", "L1", "L2", "L3", "L4"};
    CHECK(log.entries() == expected);  // FIFO within a priority for outside submissions
    held.open();
    pool.wait_idle();
  });
}

TEST_CASE("on a worker: High from anywhere first, then its own Normal tasks newest first, Low last") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("priorities on a worker", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate held;
    Gate busy;
    leave_one_worker_free(pool, held, busy);
    RunLog log;
    pool.post([&pool, &log] {
      pool.post([&log] { log.add("N0"); });  // the worker's own deque
      pool.post([&log] { log.add("L0"); }, with(weft::Priority::Low));
      pool.post([&log] { log.add("N1"); });
      pool.post([&log] { log.add("H0"); }, with(weft::Priority::High));
    });
    busy.open();
    CHECK(eventually([&log] { return log.entries().size() == 4; }, patience(10)));
    CHECK(log.entries() == std::vector<std::string>{"H0", "N1", "N0", "L0"});
    held.open();
    pool.wait_idle();
  });
}

TEST_CASE("a task with an affinity runs on that worker when it is free") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("affinity", workers), patience(30));
    // A patience no test outlasts: only the target worker may run the task.
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    std::vector<std::atomic<int>> wrong(workers);
    for (int round = 0; round < 20; ++round) {
      for (unsigned k = 0; k < workers; ++k) {
        weft::TaskOptions options;
        options.affinity = k;
        pool.post([&pool, &wrong, k] { wrong[k].fetch_add(pool.current_worker() == k ? 0 : 1); }, options);
      }
    }
    pool.wait_idle();
    int misplaced = 0;
    for (auto& w : wrong) misplaced += w.load();
    CHECK(misplaced == 0);
  });
}

TEST_CASE("another worker takes an affinity task once its worker has been busy for affinity_patience") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("affinity patience", workers), patience(30));
    constexpr auto kPatience = 20ms;
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = kPatience}};
    Gate gate;
    weft::TaskOptions on_0;
    on_0.affinity = 0;
    const auto busy_since = std::chrono::steady_clock::now();
    pool.post([&gate] { gate.enter(); }, on_0);  // worker 0 is busy until the end
    gate.await_entered(1);
    auto f = pool.submit_with(on_0,
                              [&pool] { return std::pair(pool.current_worker(), std::chrono::steady_clock::now()); });
    if (workers == 1) {
      CHECK_FALSE(f.wait_for(3 * kPatience));  // nobody else may take it
      gate.open();
      CHECK(f.get().first == std::optional<unsigned>(0));
      return;
    }
    const auto [worker, started] = f.get();  // never inline: it has an affinity
    REQUIRE(worker.has_value());
    CHECK(*worker != 0);
    // Not before worker 0 had been busy for the patience. (The engine measures how long the worker has made no
    // progress, not how long this task waited: a task sent to a worker stuck for longer may go at once.)
    CHECK(started - busy_since >= kPatience);
    gate.open();
    pool.wait_idle();
  });
}

}  // namespace
