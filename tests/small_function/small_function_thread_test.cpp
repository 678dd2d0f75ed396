// weft::small_function across threads: handed from a producer to a consumer through a locked queue (as tasks
// are), each callable is called once and destroyed once on the consumer; and concurrent calls on one object
// are as safe as the callable (a call writes nothing in the small_function). Meant to run under TSan and ASan.
#include <weft/small_function.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/stress.hpp"

namespace {

using weft::small_function;

// Per-item counters; each is touched by one thread at a time per item but by both threads overall, so atomics.
// Every access is relaxed: the checks happen after join(), which orders all of them before the reads.
struct item_counters {
  std::atomic<int> calls{0};
  std::atomic<int> destructions{0};
};

// Counts its own destruction; a moved-from probe holds a null pointer and counts nothing.
struct destruction_probe {
  item_counters* counters;
  explicit destruction_probe(item_counters& c) noexcept : counters(&c) {}
  destruction_probe(destruction_probe&& other) noexcept : counters(std::exchange(other.counters, nullptr)) {}
  destruction_probe(const destruction_probe&) = delete;
  ~destruction_probe() {
    if (counters != nullptr) counters->destructions.fetch_add(1, std::memory_order_relaxed);  // see struct
  }
};

TEST_CASE("small_functions handed from a producer thread to a consumer are called and destroyed exactly once") {
  const auto items = static_cast<std::size_t>(weft::test::stress_count(20'000));
  std::vector<item_counters> counters(items);
  std::mutex lock;
  std::condition_variable ready;
  std::deque<small_function<void()>> queue;  // guarded by lock
  bool done = false;                         // guarded by lock

  std::thread consumer([&] {
    for (;;) {
      small_function<void()> task;
      {
        std::unique_lock guard(lock);
        ready.wait(guard, [&] { return !queue.empty() || done; });
        if (queue.empty()) return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }  // task destroyed here, on the consumer
  });
  for (std::size_t i = 0; i < items; ++i) {
    item_counters& c = counters[i];
    small_function<void()> task;
    if (i % 2 == 0) {  // inline
      task = [probe = destruction_probe(c)] {
        probe.counters->calls.fetch_add(1, std::memory_order_relaxed);  // relaxed: read after join()
      };
    } else {  // heap: too big for the inline storage
      task = [probe = destruction_probe(c), padding = std::array<std::byte, 200>{}] {
        probe.counters->calls.fetch_add(1, std::memory_order_relaxed);  // relaxed: read after join()
      };
    }
    {
      const std::lock_guard guard(lock);
      queue.push_back(std::move(task));
    }
    ready.notify_one();
  }
  {
    const std::lock_guard guard(lock);
    done = true;
  }
  ready.notify_one();
  consumer.join();
  for (std::size_t i = 0; i < items; ++i) {
    REQUIRE(counters[i].calls.load(std::memory_order_relaxed) == 1);         // relaxed: after join()
    REQUIRE(counters[i].destructions.load(std::memory_order_relaxed) == 1);  // relaxed: after join()
  }
}

TEST_CASE("concurrent calls on one small_function are safe when the callable's call is") {
  std::atomic<std::uint64_t> total{0};
  const std::uint64_t calls_per_thread = weft::test::stress_count(50'000);
  small_function<void(std::uint64_t)> add = [&total](std::uint64_t v) {
    total.fetch_add(v, std::memory_order_relaxed);  // relaxed: only the sum matters, read after join()
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&add, calls_per_thread] {
      for (std::uint64_t i = 0; i < calls_per_thread; ++i) add(1);
    });
  }
  for (auto& caller : callers) caller.join();
  CHECK(total.load(std::memory_order_relaxed) == 2 * calls_per_thread);  // relaxed: after join()
}

}  // namespace
