// Waiting inside tasks: recursive fib by submit + get, a chain of nested submit + get thousands deep, and the
// bound on how deep unrelated work may pile up on a waiting worker's stack (Engine::kMaxWaitDepth).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "src/os_thread.hpp"

#include "scheduler/engine/engine.hpp"
#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// Per worker thread: how many fib/outer frames are on this thread's stack now, and the most ever.
thread_local unsigned tls_nesting = 0;
std::atomic<unsigned> max_nesting{0};

struct NestingScope {
  NestingScope() {
    const unsigned now = ++tls_nesting;
    unsigned seen = max_nesting.load(std::memory_order_relaxed);
    while (now > seen && !max_nesting.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  ~NestingScope() { --tls_nesting; }
  NestingScope(const NestingScope&) = delete;
  NestingScope& operator=(const NestingScope&) = delete;
};

struct Fib {
  weft::Pool* pool;
  std::uint64_t operator()(unsigned n) const {
    const NestingScope scope;
    if (n < 2) return n;
    auto a = pool->submit(*this, n - 1);
    auto b = pool->submit(*this, n - 2);
    return a.get() + b.get();
  }
};

constexpr std::uint64_t fib_reference(unsigned n) {
  std::uint64_t a = 0;
  std::uint64_t b = 1;
  for (unsigned i = 0; i < n; ++i) b = std::exchange(a, b) + b;
  return a;
}

TEST_CASE("recursive fib by submit + get on the workers") {
  // fib(27) is ~630,000 tasks, each waited for by its parent on a worker. Reduced runs: fib(23), ~93,000 tasks.
  static const unsigned n = reduced_runs() ? 23 : 27;
  for_each_worker_count([](unsigned workers) {
    for (const bool fibers : {false, true}) {
      const Watchdog watchdog(named("fib", workers), patience(60));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      max_nesting.store(0);
      std::atomic<std::uint64_t> result{0};
      pool.post([&] { result.store(Fib{&pool}(n)); });  // root on a worker, so every wait is a worker's
      pool.wait_idle();
      CHECK(result.load() == fib_reference(n));
      // Without fibers, inline runs nest at most n frames; each of at most kMaxWaitDepth + 1 nested waits may
      // add another n. With fibers a waiting task suspends instead, and moves: a thread's count means nothing.
      if (!fibers) {
        MESSAGE("fib frames nested on one worker: at most " << max_nesting.load());
        CHECK(max_nesting.load() <= (weft::engine::Engine::kMaxWaitDepth + 1) * (n + 1));
      }
    }
  });
}

// depth -> depth - 1 -> ... -> 0, each level submitting the next and waiting for it from a worker. The
// outermost and innermost levels note their stack address, to report the stack one level costs.
struct Chain {
  weft::Pool* pool;
  unsigned top;
  std::atomic<std::uintptr_t>* outer_sp;
  std::atomic<std::uintptr_t>* inner_sp;
  unsigned operator()(unsigned depth) const {
    // The frame address, not a local's: ASan may move locals to a heap-allocated fake stack.
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (depth == top) outer_sp->store(frame);
    if (depth == 0) {
      inner_sp->store(frame);
      return 0;
    }
    return pool->submit(*this, depth - 1).get() + 1;
  }
};

std::size_t worker_stack_size(weft::Pool& pool) {
  std::atomic<std::size_t> size{0};
  pool.post([&size] { size.store(weft::os::current_stack_bounds().size); });
  pool.wait_idle();
  return size.load();
}

TEST_CASE("a chain of nested submit + get thousands deep completes on default worker stacks") {
  // Each level needs a few stack frames wherever it runs (a sequential recursion of this depth needs them
  // too); the chain must neither deadlock when levels hop between workers nor pile unrelated work on top.
  // Default 8 MiB stacks: 5000 levels (a few hundred bytes each, plain and under TSan: the test prints it).
  // ASan's redzones make a level some KB: 1000 levels there, still far beyond kMaxWaitDepth; more came too close
  // to the stack's end, and a spawn-path change that added a few bytes per level overflowed it inside ASan's
  // unwinder (frame sizes: docs/perf-log.md).
  static constexpr unsigned kDepth = kAddressSanitizer ? 1000 : 5000;
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("deep chain", workers), patience(60));
    // Without fibers: every level nests on the workers' own stacks (with fibers, levels past the fiber stack's
    // reserve suspend; tests/fiber covers that).
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = false}};
    REQUIRE(worker_stack_size(pool) >= 8u << 20);
    for (int round = 0; round < 3; ++round) {
      std::atomic<unsigned> result{0};
      std::atomic<std::uintptr_t> outer_sp{0};
      std::atomic<std::uintptr_t> inner_sp{0};
      pool.post([&] { result.store(Chain{&pool, kDepth, &outer_sp, &inner_sp}(kDepth)); });
      pool.wait_idle();
      CHECK(result.load() == kDepth);
      if (workers == 1 && round == 0) {  // one thread ran every level: the addresses are comparable
        MESSAGE("stack per chain level: " << (outer_sp.load() - inner_sp.load()) / kDepth << " bytes");
      }
    }
  });
}

TEST_CASE("a waiting worker stops taking unrelated work beyond Engine::kMaxWaitDepth nested waits") {
  // Outer tasks come from outside; each waits for a child bound to worker 0, which is held at a gate, so the
  // child can neither run inline nor soon. A helper that ran any task while waiting would start outer task
  // after outer task on the same stack (20,000 deep: a stack overflow); the engine must stop at the bound.
  static constexpr std::uint64_t kOuter = 20000;
  static constexpr unsigned kBound = weft::engine::Engine::kMaxWaitDepth + 1;  // waits nest kMaxWaitDepth deep
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("bounded nested waits", workers), patience(60));
    // Without fibers: the bound is about waits that run other tasks on their stack (with fibers the outer tasks
    // suspend instead, and a thread-local nesting count means nothing; tests/fiber covers that case).
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s, .fibers = false}};
    RunCounts runs(kOuter);
    std::atomic<std::uint64_t> wrong{0};
    max_nesting.store(0);
    Gate gate;
    weft::TaskOptions on_worker_0;
    on_worker_0.affinity = 0;
    pool.post([&gate] { gate.enter(); }, on_worker_0);
    gate.await_entered(1);
    for (std::uint64_t i = 0; i < kOuter; ++i) {
      pool.post([&pool, &runs, &wrong, on_worker_0, i] {
        const NestingScope scope;
        if (pool.submit_with(on_worker_0, [i] { return i; }).get() != i) wrong.fetch_add(1);
        runs.ran(i);
      });
    }
    // The other workers nest outer tasks until they reach the bound (none exist with one worker).
    if (workers > 1) CHECK(eventually([] { return max_nesting.load() >= kBound; }, patience(10)));
    std::this_thread::sleep_for(20ms);  // a helper without the bound would go on nesting meanwhile
    const unsigned nested_before_release = max_nesting.load();
    gate.open();
    pool.wait_idle();
    check_exactly_once(runs);
    CHECK(wrong.load() == 0);
    MESSAGE("outer tasks nested on one worker: " << nested_before_release << " before release, " << max_nesting.load()
                                                 << " in all");
    CHECK(max_nesting.load() <= kBound);
  });
}

}  // namespace
