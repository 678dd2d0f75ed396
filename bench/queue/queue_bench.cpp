// Push/pop throughput of the external-submission queue: weft's MSQueue with hazard pointers and with QSBR,
// boost::lockfree::queue, and std::deque behind a std::mutex. Each benchmark thread pushes one item and
// pops one item per iteration (so the queue stays short and every thread is both producer and consumer).
#include <benchmark/benchmark.h>

#include <boost/lockfree/queue.hpp>
#include <deque>
#include <mutex>
#include <optional>

#include "scheduler/lockfree/hazard_pointers.hpp"
#include "scheduler/lockfree/ms_queue.hpp"
#include "scheduler/lockfree/qsbr.hpp"

namespace {

using Item = void*;

template <class Domain>
struct WeftQueue {
  Domain domain;
  weft::lockfree::MSQueue<Item, Domain> queue{domain};
};

template <class Domain>
void weft_push_pop(benchmark::State& state) {
  static WeftQueue<Domain> shared;  // one queue for every thread and run (thread-safe static initialisation)
  auto handle = shared.domain.register_thread();  // a worker-style registration
  const auto t = handle.ref();
  int dummy = 0;
  std::uint64_t n = 0;
  for (auto _ : state) {
    shared.queue.push(t, &dummy);
    benchmark::DoNotOptimize(shared.queue.try_pop(t));
    if constexpr (requires { t.quiescent(); }) {
      if ((++n & 63) == 0) t.quiescent();  // as a worker would between tasks
    }
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

void boost_push_pop(benchmark::State& state) {
  static boost::lockfree::queue<Item> shared(1024);
  int dummy = 0;
  for (auto _ : state) {
    while (!shared.push(&dummy)) {
    }
    Item out = nullptr;
    benchmark::DoNotOptimize(shared.pop(out));
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

class MutexQueue {
 public:
  void push(Item v) {
    std::lock_guard lock(mutex_);
    items_.push_back(v);
  }
  std::optional<Item> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    Item v = items_.front();
    items_.pop_front();
    return v;
  }

 private:
  std::mutex mutex_;
  std::deque<Item> items_;
};

void mutex_push_pop(benchmark::State& state) {
  static MutexQueue shared;
  int dummy = 0;
  for (auto _ : state) {
    shared.push(&dummy);
    benchmark::DoNotOptimize(shared.try_pop());
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

}  // namespace

BENCHMARK(weft_push_pop<weft::lockfree::HazardPointerDomain<>>)
    ->Name("msqueue_hp")
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(weft_push_pop<weft::lockfree::QsbrDomain<>>)->Name("msqueue_qsbr")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(boost_push_pop)->Name("boost_lockfree_queue")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(mutex_push_pop)->Name("mutex_deque")->Threads(1)->Threads(2)->UseRealTime();

BENCHMARK_MAIN();
