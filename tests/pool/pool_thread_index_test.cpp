// Pool::current_thread_index: workers get their worker index; a thread running a task of the pool itself (a
// waiter, a graph's roots, a worker of another pool) gets size() + its slot's index, the same for every task it
// runs; nullopt outside the pool's tasks; never two threads with one index at once; a thread that can have no
// slot leaves its tasks to the workers.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/task_graph.hpp"

namespace {

using namespace weft::test;

constexpr unsigned kSlots = 64;  // outside threads with a slot in one pool (Engine::kMaxSlots)

struct Seen {
  std::optional<unsigned> index;
  std::optional<unsigned> worker;
  std::thread::id thread;
};

Seen look(const weft::Pool& pool) {
  return {pool.current_thread_index(), pool.current_worker(), std::this_thread::get_id()};
}

TEST_CASE("workers get their worker index; a thread not running one of the pool's tasks gets nullopt") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("worker indices", workers), patience(30));
    // A patience nobody outlasts: each task runs on the worker it is sent to, never taken over.
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = std::chrono::seconds(10)}};
    weft::Pool other{weft::PoolOptions{.threads = 1}};
    CHECK(pool.max_thread_index() == workers + kSlots);
    CHECK_FALSE(pool.current_thread_index().has_value());
    for (unsigned w = 0; w < workers; ++w) {
      weft::TaskOptions options;
      options.affinity = w;
      const Seen seen = pool.submit_with(options, [&pool] { return look(pool); }).get();
      CHECK(seen.index == std::optional<unsigned>(w));
      CHECK(seen.worker == std::optional<unsigned>(w));
    }
    // A worker of another pool that is not running a task of this one.
    CHECK_FALSE(other.submit([&pool] { return pool.current_thread_index(); }).get().has_value());
    CHECK_FALSE(pool.current_thread_index().has_value());
  });
}

TEST_CASE("an outside thread running a task itself while it waits gets size() + its slot, the same every time") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("outside waiter", workers), patience(30));
    std::atomic<int> hook_without_index{0};
    weft::PoolOptions options{.threads = workers};
    weft::Pool* pool_seen_by_hooks = nullptr;
    options.on_task_start = [&](const weft::TaskEvent&) {
      if (!pool_seen_by_hooks->current_thread_index()) hook_without_index.fetch_add(1);
    };
    weft::Pool pool{std::move(options)};
    pool_seen_by_hooks = &pool;
    Gate gate;
    occupy_all_workers(pool, gate);  // so this thread runs what it waits for
    const Seen first = pool.submit([&pool] { return look(pool); }).get();
    const Seen second = pool.submit([&pool] { return look(pool); }).get();
    CHECK(first.thread == std::this_thread::get_id());
    REQUIRE(first.index.has_value());
    CHECK(*first.index >= workers);
    CHECK(*first.index < pool.max_thread_index());
    CHECK_FALSE(first.worker.has_value());
    CHECK(second.index == first.index);                    // the slot is the thread's, not leased per wait
    CHECK_FALSE(pool.current_thread_index().has_value());  // between tasks
    // Another outside thread, alive at the same time as this one (which keeps its slot), gets another index.
    Seen theirs;
    std::thread([&] { theirs = pool.submit([&pool] { return look(pool); }).get(); }).join();
    REQUIRE(theirs.index.has_value());
    CHECK(*theirs.index >= workers);
    CHECK(*theirs.index < pool.max_thread_index());
    CHECK(theirs.index != first.index);
    gate.open();
    pool.wait_idle();
    CHECK(hook_without_index.load() == 0);
  });
}

TEST_CASE("a graph's node run by the thread waiting for the run sees that thread's index") {
  const Watchdog watchdog("graph node on the waiting thread", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  Gate gate;
  occupy_all_workers(pool, gate);  // the one worker waits until the root has run, so the waiter runs it
  weft::TaskGraph graph;
  Seen root;
  Seen leaf;
  auto a = graph.add_node([&] {
    root = look(pool);
    gate.open();
  });
  auto b = graph.add_node([&] { leaf = look(pool); });
  graph.add_edge(a, b);
  graph.run(pool).wait();
  CHECK(root.thread == std::this_thread::get_id());
  CHECK(root.index >= std::optional<unsigned>(1));  // past the one worker
  CHECK(root.index < std::optional<unsigned>(pool.max_thread_index()));
  CHECK_FALSE(root.worker.has_value());
  REQUIRE(leaf.index.has_value());  // whoever ran it
  CHECK((leaf.thread == std::this_thread::get_id() ? leaf.index == root.index : leaf.index == leaf.worker));
  CHECK_FALSE(pool.current_thread_index().has_value());
}

TEST_CASE("nested pools: each pool gives the index of the calling thread in that pool") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested pools", workers), patience(30));
    weft::Pool outer{weft::PoolOptions{.threads = workers}};
    weft::Pool inner{weft::PoolOptions{.threads = 1}};
    Gate gate;
    occupy_all_workers(inner, gate);  // so the outer worker runs the inner task itself while it waits
    struct Both {
      Seen outer_task;
      Seen inner_outer;  // outer's answer inside the inner task
      Seen inner_inner;
    };
    weft::TaskOptions on_a_worker;  // never run inline by this thread
    on_a_worker.affinity = workers - 1;
    const Both both = outer
                          .submit_with(on_a_worker,
                                       [&] {
                                         Both b;
                                         b.outer_task = look(outer);
                                         auto f = inner.submit([&] { return std::pair(look(outer), look(inner)); });
                                         std::tie(b.inner_outer, b.inner_inner) = f.get();
                                         return b;
                                       })
                          .get();
    gate.open();
    REQUIRE(both.outer_task.worker.has_value());
    CHECK(both.outer_task.index == both.outer_task.worker);
    CHECK(both.inner_inner.thread == both.outer_task.thread);  // run inline by the waiting outer worker
    CHECK(both.inner_outer.index == both.outer_task.index);    // still inside its outer task
    CHECK_FALSE(both.inner_inner.worker.has_value());
    REQUIRE(both.inner_inner.index.has_value());
    CHECK(*both.inner_inner.index >= inner.size());
    CHECK(*both.inner_inner.index < inner.max_thread_index());
  });
}

// Per index, which thread holds it (0: none) and how deep (a task nested in another on the same thread, such as
// a child run by its waiting parent, holds the same index again).
class Holders {
 public:
  explicit Holders(unsigned size) : owner_(std::make_unique<std::atomic<std::uintptr_t>[]>(size)), size_(size) {}

  void enter(const weft::Pool& pool) noexcept {
    const std::optional<unsigned> index = pool.current_thread_index();
    if (!index || *index >= size_) {
      bad_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::uintptr_t me = reinterpret_cast<std::uintptr_t>(&tls_token);
    std::uintptr_t expected = 0;
    if (owner_[*index].compare_exchange_strong(expected, me, std::memory_order_acq_rel)) {
      tls_depth = 1;
    } else if (expected == me) {
      ++tls_depth;
    } else {
      clashes_.fetch_add(1, std::memory_order_relaxed);
      tls_depth = 0;  // not ours: leave() must not clear it
      return;
    }
  }
  void leave(const weft::Pool& pool) noexcept {
    const std::optional<unsigned> index = pool.current_thread_index();
    if (!index || *index >= size_ || tls_depth == 0) return;
    if (--tls_depth == 0) owner_[*index].store(0, std::memory_order_release);
  }
  [[nodiscard]] std::uint64_t clashes() const noexcept { return clashes_.load(); }
  [[nodiscard]] std::uint64_t bad() const noexcept { return bad_.load(); }

 private:
  static thread_local char tls_token;
  static thread_local unsigned tls_depth;
  std::unique_ptr<std::atomic<std::uintptr_t>[]> owner_;
  unsigned size_;
  std::atomic<std::uint64_t> clashes_{0};
  std::atomic<std::uint64_t> bad_{0};
};
thread_local char Holders::tls_token = 0;
thread_local unsigned Holders::tls_depth = 0;

TEST_CASE("no two threads hold one index at once: workers, outside waiters and nested waits together") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("unique indices", workers), patience(120));
    // Without fibers: a body holds its thread's index across a child's get(), which with fibers may suspend the
    // body and resume it on another thread, with another index (the index belongs to the thread, not the task).
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = false}};
    Holders holders(pool.max_thread_index());
    const std::uint64_t rounds = stress_count(200);
    std::atomic<std::uint64_t> ran{0};
    auto body = [&](auto&& self, int depth) -> void {
      holders.enter(pool);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (depth > 0) {
        // A child waited for here: run by this thread (same index, nested) or by another (its own index).
        auto child = pool.submit([&self, depth] { self(self, depth - 1); });
        child.get();
      }
      ran.fetch_add(1, std::memory_order_relaxed);
      holders.leave(pool);
    };
    std::vector<std::thread> outside;
    for (int t = 0; t < 3; ++t) {
      outside.emplace_back([&] {
        for (std::uint64_t r = 0; r < rounds; ++r) {
          std::vector<weft::Future<void>> futures;
          for (int i = 0; i < 4; ++i) futures.push_back(pool.submit([&body, i] { body(body, i % 3); }));
          // Newest first: the waiter runs from its own slot what the workers have not taken.
          for (auto it = futures.rbegin(); it != futures.rend(); ++it) it->get();
        }
      });
    }
    for (auto& thread : outside) thread.join();
    pool.wait_idle();
    CHECK(holders.bad() == 0);
    CHECK(holders.clashes() == 0);
    // 3 threads x rounds x (depth 0 + 1 + 2 + 0 -> 1 + 2 + 3 + 1 tasks)
    CHECK(ran.load() == 3 * rounds * 7);
  });
}

TEST_CASE("a thread that can have no slot does not run the pool's tasks itself; its index is never out of range") {
  const Watchdog watchdog("more outside threads than slots", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  Gate gate;
  occupy_all_workers(pool, gate);
  // kSlots threads take every slot (each submits) and stay alive, so their slots stay theirs.
  std::atomic<unsigned> holding{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> holders;
  std::vector<weft::Future<void>> parked(kSlots);
  for (unsigned t = 0; t < kSlots; ++t) {
    holders.emplace_back([&, t] {
      parked[t] = pool.submit([] {});
      holding.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (holding.load() < kSlots) std::this_thread::yield();
  // This thread has no slot left to take: it cannot run the task inline, a worker runs it once free.
  Seen seen;
  std::thread::id late_id;
  std::thread late([&] {
    late_id = std::this_thread::get_id();
    seen = pool.submit([&pool] { return look(pool); }).get();
  });
  while (pool.stats().queued < kSlots + 1) std::this_thread::yield();  // submitted; the worker is still held
  gate.open();
  late.join();
  CHECK(seen.thread != late_id);
  CHECK(seen.worker == std::optional<unsigned>(0));
  CHECK(seen.index == std::optional<unsigned>(0));
  release.store(true);
  for (auto& thread : holders) thread.join();
  for (auto& f : parked) f.get();
  pool.wait_idle();
}

}  // namespace
