// Push/pop cost of the inbox queue: weft::graph::BoundedQueue against boost::lockfree::queue with
// fixed_sized<true> (its bounded, allocation-free mode) at the same capacity.
//  - push_pop: each thread pushes one item then pops one, so the queue stays nearly empty and every thread
//    is both producer and consumer (the contention on head and tail, not the ring, is measured).
//  - half_full: as push_pop, but the queue starts half full, so pushes and pops touch different slots.
// Both report ns per push+pop pair per thread (real time; the machine has 2 vCPUs, so 4 threads oversubscribe).
#include <benchmark/benchmark.h>

#include <boost/lockfree/policies.hpp>
#include <boost/lockfree/queue.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "graph/inbox/bounded_queue.hpp"

namespace {

using Item = std::uint64_t;
constexpr std::size_t kCapacity = 1024;

using WeftQueue = weft::inbox::BoundedQueue<Item>;
using BoostQueue = boost::lockfree::queue<Item, boost::lockfree::fixed_sized<true>>;

bool push(WeftQueue& q, Item v) { return q.try_push(v); }
bool push(BoostQueue& q, Item v) { return q.bounded_push(v); }
std::optional<Item> pop(WeftQueue& q) { return q.try_pop(); }
std::optional<Item> pop(BoostQueue& q) {
  Item v = 0;
  if (q.pop(v)) return v;
  return std::nullopt;
}

// One queue per benchmark instance, shared by its threads; thread 0 (re)fills it before the others start
// (Google Benchmark's threads begin the timed loop together).
template <class Q>
Q& shared_queue() {
  static Q q(kCapacity);
  return q;
}

template <class Q>
void prefill(Q& q, std::size_t items) {
  while (pop(q)) {
  }
  for (std::size_t i = 0; i < items; ++i) (void)push(q, i);
}

template <class Q>
void push_pop(benchmark::State& state) {
  Q& q = shared_queue<Q>();
  if (state.thread_index() == 0) prefill(q, static_cast<std::size_t>(state.range(0)));
  Item v = static_cast<Item>(state.thread_index());
  for (auto _ : state) {
    while (!push(q, v)) {
    }
    auto out = pop(q);
    benchmark::DoNotOptimize(out);
    ++v;
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

}  // namespace

// Arg: items placed in the queue before the run (0 = push_pop, kCapacity / 2 = half_full).
BENCHMARK(push_pop<WeftQueue>)
    ->Name("weft_bounded_queue")
    ->Arg(0)
    ->Arg(512)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();
BENCHMARK(push_pop<BoostQueue>)
    ->Name("boost_lockfree_fixed")
    ->Arg(0)
    ->Arg(512)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

BENCHMARK_MAIN();
