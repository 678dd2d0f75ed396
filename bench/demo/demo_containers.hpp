// The building blocks' rows of weft-demo: weft::small_function against std::function (one task's closure:
// made, moved as into a queue, called, destroyed), and the Michael–Scott queue behind the pool's shared queues
// against boost::lockfree::queue (two threads pushing and popping). The same workloads as the Google Benchmark
// binaries bench/small_function and bench/queue, timed here in turns with their peer (demo_waits.hpp).
#pragma once

#include <array>
#include <atomic>
#include <boost/lockfree/queue.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_table.hpp"
#include "bench/demo/demo_waits.hpp"
#include "scheduler/lockfree/hazard_pointers.hpp"
#include "scheduler/lockfree/ms_queue.hpp"
#include "weft/small_function.hpp"

namespace weft::demo {

inline constexpr std::size_t kClosureOps = 2'000'000;  // closures made, moved, called and destroyed per sample
inline constexpr std::size_t kQueuePairs = 500'000;    // push + pop pairs per thread per sample
inline constexpr unsigned kQueueThreads = 2;

// Makes the compiler forget what `value` holds (as benchmark::DoNotOptimize does): each call then goes through
// the type-erased dispatch as it would after a real queue.
template <class T>
inline void opaque(T& value) {
  asm volatile("" : : "r,m"(&value) : "memory");
}

// One task's closure, kClosureOps times: made from a lambda with a `Bytes`-byte capture, moved (as into a
// queue), called, destroyed. Returns the sum of the calls, checked by the caller.
template <class Function, std::size_t Bytes>
std::uint64_t closure_lifecycles(std::size_t ops) {
  std::array<std::uint64_t, Bytes / sizeof(std::uint64_t)> capture{};
  capture.fill(1);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    opaque(capture);
    Function made([capture](std::uint64_t x) { return x + capture.front() + capture.back() - 1; });
    opaque(made);
    Function queued(std::move(made));
    opaque(queued);
    sum = queued(sum);
  }
  return sum;
}

// The small_function row for one capture size; std::function in the peer's column.
template <std::size_t Bytes>
void add_closure_row(const Settings& s, bool weft_side, std::vector<Row>& rows) {
  if (!weft_side) return;
  using WeftFunction = small_function<std::uint64_t(std::uint64_t)>;
  using StdFunction = std::function<std::uint64_t(std::uint64_t)>;
  const double ns_per_op = 1e9 / static_cast<double>(kClosureOps);
  const auto check = [](std::uint64_t sum, const char* which) {
    if (sum != kClosureOps) throw std::runtime_error(std::string(which) + " closures summed wrong");
  };
  const auto [weft, peer] = take_turns(
      s, s.reps, 1, 1, "small_function ns",
      timed(ns_per_op, [&] { check(closure_lifecycles<WeftFunction, Bytes>(kClosureOps), "small_function"); }),
      "std::function ns",
      timed(ns_per_op, [&] { check(closure_lifecycles<StdFunction, Bytes>(kClosureOps), "std::function"); }),
      "small-function");
  Row row{"closure make+move+call, " + std::to_string(Bytes) + " B", "ns", weft, peer, Goal{.report_only = true}};
  row.peer = "std::function";
  row.items = 1;
  row.note = "weft::small_function<R(A)> (every task's closure) against std::function<R(A)>: a lambda with a " +
             std::to_string(Bytes) +
             "-byte capture made into one, moved into a second (as into a queue), called "
             "through the type-erased call, both destroyed; ns per closure. " +
             (Bytes > 16 ? std::string("small_function keeps it inline (128 bytes); std::function allocates it.")
                         : std::string("Both keep it inline."));
  rows.push_back(std::move(row));
}

// kQueueThreads threads, each pushing one item then popping one, kQueuePairs times; returns the items popped.
template <class Setup, class PushPop>
std::size_t queue_round(Setup setup, PushPop push_pop) {
  std::atomic<std::size_t> popped{0};
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kQueueThreads; ++t) {
    threads.emplace_back([&] {
      auto local = setup();
      ready.fetch_add(1);
      while (ready.load() < kQueueThreads) std::this_thread::yield();  // start together
      std::size_t mine = 0;
      for (std::size_t i = 0; i < kQueuePairs; ++i) mine += push_pop(local) ? 1 : 0;
      popped.fetch_add(mine);
    });
  }
  for (auto& thread : threads) thread.join();
  return popped.load();
}

// The MPMC row: weft's MSQueue with hazard pointers (the shared priority queues, mailboxes) against
// boost::lockfree::queue, two threads both pushing and popping. ns per operation (a push or a pop).
inline void add_mpmc_row(const Settings& s, bool weft_side, std::vector<Row>& rows) {
  if (!weft_side) return;
  using Item = void*;
  static int dummy = 0;
  lockfree::HazardPointerDomain<> domain;
  lockfree::MSQueue<Item, lockfree::HazardPointerDomain<>> weft_queue{domain};
  boost::lockfree::queue<Item> boost_queue(1024);
  const double ns_per_op = 1e9 / static_cast<double>(2 * kQueuePairs * kQueueThreads);
  const auto check = [](std::size_t popped, const char* which) {
    // A pop may miss an item pushed by the other thread that is not linked yet; none may come from nowhere.
    if (popped > kQueuePairs * kQueueThreads) throw std::runtime_error(std::string(which) + " popped too many");
  };
  const auto drain_weft = [&] {
    auto handle = domain.register_thread();
    while (weft_queue.try_pop(handle.ref())) {
    }
  };
  const auto drain_boost = [&] {
    Item out = nullptr;
    while (boost_queue.pop(out)) {
    }
  };
  const auto [weft, peer] = take_turns(s, s.reps, 1, 1, "MSQueue ns",
                                       timed(ns_per_op,
                                             [&] {
                                               check(queue_round([&] { return domain.register_thread(); },
                                                                 [&](auto& handle) {
                                                                   weft_queue.push(handle.ref(), &dummy);
                                                                   return weft_queue.try_pop(handle.ref()).has_value();
                                                                 }),
                                                     "MSQueue");
                                               drain_weft();
                                             }),
                                       "boost::lockfree::queue ns",
                                       timed(ns_per_op,
                                             [&] {
                                               check(queue_round([] { return 0; },
                                                                 [&](int&) {
                                                                   while (!boost_queue.push(&dummy)) {
                                                                   }
                                                                   Item out = nullptr;
                                                                   return boost_queue.pop(out);
                                                                 }),
                                                     "boost::lockfree::queue");
                                               drain_boost();
                                             }),
                                       "mpmc");
  Row row{"MPMC queue push/pop, 2 threads", "ns", weft, peer, Goal{.report_only = true}};
  row.peer = "boost::lockfree::queue";
  row.items = 1;
  row.note =
      "weft's Michael-Scott queue with hazard pointers (the pool's shared priority queues and mailboxes) "
      "against boost::lockfree::queue<void*>(1024): two threads, each pushing an item and popping one, "
      "500k times; ns per push or pop, thread start-up included (a fraction of a percent).";
  rows.push_back(std::move(row));
}

}  // namespace weft::demo
