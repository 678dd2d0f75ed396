// ChaseLevDeque (production fences, and the fence-free variant used under TSan) against two reference
// points: a mutex-protected std::deque (what a simple work queue would be) and boost::lockfree::stack (a
// lock-free LIFO; it has no FIFO end, so its "steal" pops too).
// Each benchmark reports `op`: seconds per single push, pop or steal (the iteration time divided by the
// operations in it). Run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include <benchmark/benchmark.h>
#include <boost/lockfree/stack.hpp>

#include "scheduler/lockfree/chase_lev_deque.hpp"

namespace {

using Item = std::uintptr_t;
constexpr int batch = 32;  // items pushed, then taken, per iteration: the deque stays small, as a scheduler's does

// The variant the deque compiles to under TSan (no standalone fences), measured for comparison.
struct FenceFreeModel : weft::atomics::StdMemoryModel {
  static constexpr bool fences_invisible = true;
};

template <class Model>
struct WeftDequeOf {
  weft::lockfree::ChaseLevDeque<Item, Model> deque{1024};
  void push(Item item) { deque.push(item); }
  bool pop(Item& item) {
    const auto got = deque.pop();
    if (got) item = *got;
    return got.has_value();
  }
  bool steal(Item& item) {
    const auto got = deque.steal();
    item = got.item;
    return got.stolen();
  }
};
using WeftDeque = WeftDequeOf<weft::atomics::StdMemoryModel>;
using WeftDequeFenceFree = WeftDequeOf<FenceFreeModel>;

struct MutexDeque {
  std::mutex mutex;
  std::deque<Item> items;
  void push(Item item) {
    const std::lock_guard lock(mutex);
    items.push_back(item);
  }
  bool pop(Item& item) {
    const std::lock_guard lock(mutex);
    if (items.empty()) return false;
    item = items.back();
    items.pop_back();
    return true;
  }
  bool steal(Item& item) {
    const std::lock_guard lock(mutex);
    if (items.empty()) return false;
    item = items.front();
    items.pop_front();
    return true;
  }
};

struct BoostStack {
  boost::lockfree::stack<Item> stack{1024};
  void push(Item item) { stack.push(item); }
  bool pop(Item& item) { return stack.pop(item); }
  bool steal(Item& item) { return stack.pop(item); }
};

void per_op(benchmark::State& state, double ops_per_iteration) {
  state.counters["op"] = benchmark::Counter(static_cast<double>(state.iterations()) * ops_per_iteration,
                                            benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Owner only: push a batch, pop it back (newest first).
template <class Queue>
void push_pop(benchmark::State& state) {
  Queue queue;
  Item sink = 0;
  for (auto _ : state) {
    for (Item i = 1; i <= batch; ++i) queue.push(i);
    for (int i = 0; i != batch; ++i) queue.pop(sink);
    benchmark::DoNotOptimize(sink);
  }
  per_op(state, 2.0 * batch);
}

// One thread, uncontended: push a batch, steal it (oldest first).
template <class Queue>
void push_steal(benchmark::State& state) {
  Queue queue;
  Item sink = 0;
  for (auto _ : state) {
    for (Item i = 1; i <= batch; ++i) queue.push(i);
    for (int i = 0; i != batch; ++i) queue.steal(sink);
    benchmark::DoNotOptimize(sink);
  }
  per_op(state, 2.0 * batch);
}

// The owner pushes a batch and pops what is left while one thief steals non-stop on another thread. Time is
// the owner's wall time per push or pop; `stolen` is the share of items the thief got.
template <class Queue>
void owner_with_thief(benchmark::State& state) {
  Queue queue;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> stolen{0};
  std::thread thief([&] {
    std::uint64_t mine = 0;
    Item item = 0;
    while (!stop.load(std::memory_order_relaxed)) mine += queue.steal(item) ? 1 : 0;
    stolen.store(mine, std::memory_order_relaxed);
  });
  Item sink = 0;
  std::uint64_t pushed = 0;
  for (auto _ : state) {
    for (Item i = 1; i <= batch; ++i) queue.push(i);
    while (queue.pop(sink)) {
    }
    pushed += batch;
    benchmark::DoNotOptimize(sink);
  }
  stop.store(true, std::memory_order_relaxed);
  thief.join();
  per_op(state, 2.0 * batch);
  state.counters["stolen"] = static_cast<double>(stolen.load()) / static_cast<double>(pushed);
}

BENCHMARK(push_pop<WeftDeque>);
BENCHMARK(push_pop<WeftDequeFenceFree>);
BENCHMARK(push_pop<MutexDeque>);
BENCHMARK(push_pop<BoostStack>);
BENCHMARK(push_steal<WeftDeque>);
BENCHMARK(push_steal<WeftDequeFenceFree>);
BENCHMARK(push_steal<MutexDeque>);
BENCHMARK(push_steal<BoostStack>);
BENCHMARK(owner_with_thief<WeftDeque>)->UseRealTime();
BENCHMARK(owner_with_thief<WeftDequeFenceFree>)->UseRealTime();
BENCHMARK(owner_with_thief<MutexDeque>)->UseRealTime();
BENCHMARK(owner_with_thief<BoostStack>)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
