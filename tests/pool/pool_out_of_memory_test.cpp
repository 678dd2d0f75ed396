// Out of memory while submitting: every allocation a post or submit makes (the task block, a queue node, the
// growth of a deque, a future's state) is failed in turn, with a replaced global operator new
// (counting_new.cpp). A submission that fails throws std::bad_alloc, its closure is destroyed at once and
// never runs, and the pool goes on: every accepted task runs exactly once and wait_idle returns.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/counting_new.hpp"

namespace {

using namespace weft::test;

// Carried by every closure: each copy counts itself alive until destroyed, so a test sees a refused closure go.
class Tracked {
 public:
  explicit Tracked(std::atomic<std::int64_t>& alive) noexcept : alive_(&alive) { alive_->fetch_add(1); }
  Tracked(const Tracked& other) noexcept : alive_(other.alive_) { alive_->fetch_add(1); }
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { alive_->fetch_sub(1); }

 private:
  std::atomic<std::int64_t>* alive_;
};

// What submitting under failing allocations saw.
struct FailureCounts {
  std::uint64_t refused = 0;        // submissions that threw std::bad_alloc (each then retried)
  std::uint64_t refused_alive = 0;  // of those, how many left a copy of their closure alive (must be 0)
};

// Submits with `submit()` (which must construct its closure afresh on each call) until a try makes no
// allocation fail: the first try fails the first allocation the submission makes, the next the second, and so
// on. `queued` is how many closures must be alive when no submission is under way (those accepted and not yet
// run; the caller knows it only when nothing runs meanwhile, else it passes std::nullopt).
template <class Submit>
void submit_failing_each_allocation(Submit&& submit, std::atomic<std::int64_t>& alive,
                                    std::optional<std::int64_t> queued, FailureCounts& counts) {
  for (std::size_t skip = 0;; ++skip) {
    fail_allocation_after_on_this_thread(skip);
    try {
      submit();
    } catch (const std::bad_alloc&) {
      ++counts.refused;
      if (queued && alive.load() != *queued) ++counts.refused_alive;
      continue;
    }
    if (cancel_allocation_failure_on_this_thread()) return;  // made fewer than skip + 1 allocations: done
    // An allocation failed inside the submission and it still succeeded: the pool absorbed the failure
    // (nothing lost, as the run counts check). Try the next allocation.
  }
}

const std::size_t kTasks = reduced_runs() ? 600 : 3000;  // past several doublings of each deque

// What one pool's worth of posts under failing allocations left behind, checked once the pool is gone.
struct PostTally {
  std::atomic<std::int64_t> alive{0};
  RunCounts runs{kTasks};
  FailureCounts counts;

  // Posts task i with `options` on `pool`, failing each of its allocations in turn; `queued` as above.
  void post(weft::Pool& pool, std::size_t i, weft::TaskOptions options, std::optional<std::int64_t> queued) {
    submit_failing_each_allocation([&] { pool.post([this, i, tracked = Tracked(alive)] { runs.ran(i); }, options); },
                                   alive, queued, counts);
  }

  void check(const char* refused_what) {
    check_exactly_once(runs);
    CHECK(alive.load() == 0);
    CHECK(counts.refused_alive == 0);
    // Some allocation on the way was failed (task blocks, queue nodes, deque growth): the test tested something.
    CHECK(counts.refused >= 1);
    MESSAGE(refused_what << " refused for lack of memory: " << counts.refused);
  }
};

void check_outside_submissions(unsigned workers, weft::TaskOptions options) {
  INFO("workers = " << workers);
  const Watchdog watchdog(named("out of memory, outside", workers), patience(60));
  PostTally tally;
  {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    occupy_all_workers(pool, gate);  // nothing runs: the queues and deques fill and grow
    for (std::size_t i = 0; i < kTasks; ++i) tally.post(pool, i, options, static_cast<std::int64_t>(i));
    CHECK(tally.alive.load() == static_cast<std::int64_t>(kTasks));
    gate.open();
    pool.wait_idle();
    CHECK(pool.stats().queued == 0);
  }
  tally.check("posts");
}

constexpr unsigned kPoolSizes[] = {1, 2, 4};

TEST_CASE("an outside post whose allocation fails throws bad_alloc, drops its closure and loses no other task") {
  SUBCASE("Normal priority: the thread's own slot") {
    for (const unsigned workers : kPoolSizes) check_outside_submissions(workers, {});
  }
  SUBCASE("High priority: the shared queue") {
    for (const unsigned workers : kPoolSizes)
      check_outside_submissions(workers, weft::TaskOptions{.priority = weft::Priority::High});
  }
  SUBCASE("affinity: a worker's mailbox") {
    for (const unsigned workers : kPoolSizes)
      check_outside_submissions(workers, weft::TaskOptions{.affinity = workers - 1});
  }
}

TEST_CASE("a post on a worker whose allocation fails throws bad_alloc there and loses no other task") {
  for (const unsigned workers : kPoolSizes) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("out of memory, on a worker", workers), patience(60));
    PostTally tally;
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      Gate gate;
      // Every other worker waits at the gate, so the spawner's children stay in its deque until it returns.
      for (unsigned i = 0; i + 1 < workers; ++i) pool.post([&gate] { gate.enter(); });
      gate.await_entered(workers - 1);
      std::atomic<bool> spawned{false};
      pool.post([&] {
        for (std::size_t i = 0; i < kTasks; ++i) tally.post(pool, i, {}, static_cast<std::int64_t>(i));
        spawned.store(true);
      });
      while (!spawned.load()) std::this_thread::yield();  // not wait_idle: the gated workers are not idle
      gate.open();
      pool.wait_idle();
      CHECK(pool.stats().queued == 0);
    }
    tally.check("spawns");
  }
}

TEST_CASE("a submit whose allocation fails throws bad_alloc and gives no future; the others deliver") {
  for (const unsigned workers : kPoolSizes) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("out of memory, submit", workers), patience(60));
    std::atomic<std::int64_t> alive{0};
    FailureCounts counts;
    std::uint64_t sum = 0;
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      Gate gate;
      occupy_all_workers(pool, gate);
      std::vector<weft::Future<std::uint64_t>> futures;
      futures.reserve(kTasks);
      for (std::size_t i = 0; i < kTasks; ++i) {
        submit_failing_each_allocation(
            [&] { futures.push_back(pool.submit([i, tracked = Tracked(alive)] { return std::uint64_t{i}; })); }, alive,
            static_cast<std::int64_t>(i), counts);
      }
      CHECK(futures.size() == kTasks);
      gate.open();
      for (auto& future : futures) sum += future.get();
    }
    CHECK(sum == std::uint64_t{kTasks} * (kTasks - 1) / 2);
    CHECK(alive.load() == 0);
    CHECK(counts.refused_alive == 0);
    CHECK(counts.refused >= 1);
    MESSAGE("submits refused for lack of memory: " << counts.refused);
  }
}

}  // namespace
