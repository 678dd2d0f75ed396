// Fiber (scheduler/fiber/fiber.hpp): switches, exceptions crossing them, unwinding a destroyed fiber, the
// save-then-publish hook, and migration between threads. Clean under ASan and TSan is part of the test: the
// sanitizer builds run these same cases.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "scheduler/fiber/fiber.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "tests/fiber/fiber_test_support.hpp"

namespace {

using weft::fiber::Fiber;
using weft::fiber::FiberStackOptions;
using weft::fiber::FiberStackPool;
using weft::fiber::ThisFiber;
using namespace weft::test;

FiberStackOptions small_stacks(std::size_t max_stacks = 8) {
  return FiberStackOptions{.stack_size = 64 * 1024, .max_stacks = max_stacks, .keep_free = max_stacks};
}

// Counts its own destruction.
struct Tally {
  std::atomic<int>* destroyed;
  explicit Tally(std::atomic<int>& counter) : destroyed(&counter) {}
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;
  ~Tally() { destroyed->fetch_add(1); }
};

TEST_CASE("a fiber runs on its own stack, suspends, and resumes where it left off") {
  FiberStackPool pool(small_stacks());
  weft::fiber::FiberStack stack = pool.acquire();
  REQUIRE(stack);
  const auto low = reinterpret_cast<std::uintptr_t>(stack.bottom());
  const auto high = reinterpret_cast<std::uintptr_t>(stack.top());
  std::vector<int> trace;
  bool on_own_stack = false;
  Fiber fiber(std::move(stack), [&](ThisFiber& self) {
    const std::uintptr_t sp = weft::fiber::stack_pointer();
    on_own_stack = sp > low && sp < high;
    for (int i = 0; i < 3; ++i) {
      trace.push_back(i);
      self.suspend();
    }
    trace.push_back(99);
  });
  CHECK(trace.empty());  // nothing runs before the first resume
  for (int i = 0; i < 3; ++i) {
    CHECK(fiber.resume() == Fiber::Resumed::suspended);
    CHECK(trace.size() == static_cast<std::size_t>(i + 1));
  }
  CHECK(fiber.resume() == Fiber::Resumed::finished);
  CHECK_FALSE(fiber);
  CHECK(on_own_stack);
  CHECK(trace == std::vector<int>{0, 1, 2, 99});
  CHECK(pool.stats().free == 1);  // the stack is back as soon as the body ends
  CHECK_THROWS_AS(static_cast<void>(fiber.resume()), std::logic_error);
}

TEST_CASE("one million switches between two fibers, strictly alternating") {
  const Watchdog watchdog("fiber ping-pong", patience(60));
  FiberStackPool pool(small_stacks());
  const std::uint64_t switches = switch_count(1'000'000);
  const std::uint64_t rounds = switches / 2;
  std::uint64_t ping = 0;
  std::uint64_t pong = 0;
  std::uint64_t out_of_turn = 0;
  Fiber outer(pool.acquire(), [&](ThisFiber&) {
    Fiber inner(pool.acquire(), [&](ThisFiber& self) {
      for (;;) {
        if (pong != ping - 1) ++out_of_turn;
        ++pong;
        self.suspend();
      }
    });
    for (std::uint64_t i = 0; i < rounds; ++i) {
      ++ping;
      if (inner.resume() != Fiber::Resumed::suspended) ++out_of_turn;
      if (pong != ping) ++out_of_turn;
    }
    // `inner` never ends by itself: its destructor unwinds it here, on `outer`'s stack.
  });
  CHECK(outer.resume() == Fiber::Resumed::finished);
  CHECK(ping == rounds);
  CHECK(pong == rounds);
  CHECK(out_of_turn == 0);
  CHECK(pool.stats().free == pool.stats().live);
}

TEST_CASE("a body's exception is rethrown by the resume that sees it end") {
  FiberStackPool pool(small_stacks());
  Fiber fiber(pool.acquire(), [](ThisFiber& self) {
    self.suspend();
    throw std::runtime_error("thrown on the fiber after a suspension");
  });
  CHECK(fiber.resume() == Fiber::Resumed::suspended);
  CHECK_THROWS_WITH_AS(static_cast<void>(fiber.resume()), "thrown on the fiber after a suspension", std::runtime_error);
  CHECK_FALSE(fiber);
  CHECK(pool.stats().free == 1);
}

TEST_CASE("exceptions inside a fiber and in its resumer do not cross each other's switches") {
  FiberStackPool pool(small_stacks());
  std::vector<std::string> caught;
  Fiber fiber(pool.acquire(), [&](ThisFiber& self) {
    try {
      self.suspend();  // a try block may span a suspension (a catch block may not)
      throw std::runtime_error("inner");
    } catch (const std::runtime_error& e) {
      caught.push_back(std::string("fiber caught ") + e.what());
    }
    self.suspend();
    caught.push_back("fiber ended");
  });
  CHECK(fiber.resume() == Fiber::Resumed::suspended);
  try {
    throw std::runtime_error("outer");
  } catch (const std::runtime_error& e) {
    caught.push_back(std::string("resumer caught ") + e.what());
  }
  CHECK(fiber.resume() == Fiber::Resumed::suspended);
  CHECK(fiber.resume() == Fiber::Resumed::finished);
  CHECK(caught == std::vector<std::string>{"resumer caught outer", "fiber caught inner", "fiber ended"});
}

TEST_CASE("a suspended fiber that is destroyed is unwound: the destructors on its stack run") {
  FiberStackPool pool(small_stacks());
  std::atomic<int> destroyed{0};
  std::atomic<int> rethrown{0};
  bool ran_past = false;
  {
    Fiber fiber(pool.acquire(), [&](ThisFiber& self) {
      const Tally outer(destroyed);
      try {
        const Tally inner(destroyed);
        self.suspend();
      } catch (...) {
        if (self.unwinding()) {  // the rule for catch (...) on a fiber
          rethrown.fetch_add(1);
          throw;
        }
      }
      ran_past = true;
    });
    CHECK(fiber.resume() == Fiber::Resumed::suspended);
    CHECK(destroyed.load() == 0);
  }
  CHECK(destroyed.load() == 2);
  CHECK(rethrown.load() == 1);
  CHECK_FALSE(ran_past);
  CHECK(pool.stats().free == 1);
}

TEST_CASE("a fiber never resumed is destroyed without running its body, and its captures are destroyed") {
  FiberStackPool pool(small_stacks());
  std::atomic<int> destroyed{0};
  bool ran = false;
  {
    auto capture = std::make_shared<Tally>(destroyed);
    Fiber fiber(pool.acquire(), [capture = std::move(capture), &ran](ThisFiber&) { ran = true; });
    CHECK(destroyed.load() == 0);
  }
  CHECK_FALSE(ran);
  CHECK(destroyed.load() == 1);
  CHECK(pool.stats().free == 1);
}

TEST_CASE("an empty stack or an oversized body is refused, naming the fiber") {
  FiberStackPool pool(FiberStackOptions{.stack_size = 16 * 1024, .max_stacks = 1, .keep_free = 1});
  weft::fiber::FiberStack held = pool.acquire();
  REQUIRE(held);
  // At the bound: acquire gives nothing, and building a fiber on nothing is refused with the fallback named.
  CHECK_THROWS_WITH_AS(Fiber(pool.acquire(), [](ThisFiber&) {}),
                       "weft::fiber::Fiber: no stack (FiberStackPool::acquire() returned none at its bound: fall "
                       "back to waiting without a fiber)",
                       std::invalid_argument);
  std::array<char, 4096> big{};
  CHECK_THROWS_WITH_AS(Fiber(std::move(held), [big](ThisFiber&) { static_cast<void>(big); }),
                       "weft::fiber::Fiber: a body of 4096 bytes is more than 1/8 of the 16384-byte stack it would "
                       "live on",
                       std::invalid_argument);
  CHECK(pool.stats().free == 1);  // the refused stack went back
}

// The hand-off between threads for the migration tests: one slot, guarded by a mutex.
class Handoff {
 public:
  void put(Fiber fiber) {
    {
      const std::lock_guard lock(mutex_);
      slot_ = std::move(fiber);
      full_ = true;
    }
    changed_.notify_all();
  }
  Fiber take() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return full_; });
    full_ = false;
    return std::move(slot_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  Fiber slot_;
  bool full_ = false;
};

thread_local int tls_thread_number = -1;
WEFT_FIBER_SAFE_TLS(thread_number_address, int, tls_thread_number)

TEST_CASE("a fiber resumed by one thread after another migrates, and sees each thread's thread_locals") {
  const Watchdog watchdog("fiber migration", patience(60));
  FiberStackPool pool(small_stacks());
  const std::uint64_t hops = switch_count(20'000);
  std::array<Handoff, 2> to_thread;
  std::atomic<std::uint64_t> wrong_thread{0};
  std::array<std::uint64_t, 2> seen{};
  std::uint64_t on_stack_total = 0;
  Fiber fiber(pool.acquire(), [&](ThisFiber& self) {
    std::uint64_t on_stack = 0;  // lives on the fiber's stack across every hop
    for (std::uint64_t hop = 0; hop < hops; ++hop) {
      const int expected = static_cast<int>(hop % 2);
      if (*thread_number_address() != expected) wrong_thread.fetch_add(1);
      ++seen[static_cast<std::size_t>(expected)];
      ++on_stack;
      self.suspend();
    }
    on_stack_total = on_stack;
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      tls_thread_number = t;
      for (;;) {
        Fiber mine = to_thread[static_cast<std::size_t>(t)].take();
        if (!mine) return;  // the end: an empty fiber
        if (mine.resume() == Fiber::Resumed::finished) {
          to_thread[static_cast<std::size_t>(1 - t)].put(Fiber());
          return;
        }
        to_thread[static_cast<std::size_t>(1 - t)].put(std::move(mine));
      }
    });
  }
  to_thread[0].put(std::move(fiber));
  for (auto& thread : threads) thread.join();
  CHECK(wrong_thread.load() == 0);
  CHECK(seen[0] + seen[1] == hops);
  CHECK(seen[0] >= hops / 2);
  CHECK(on_stack_total == hops);
  CHECK(pool.stats().free == pool.stats().live);
}

TEST_CASE("suspend_then publishes the fiber only once it is saved: another thread may resume it at once") {
  const Watchdog watchdog("save then publish", patience(60));
  FiberStackPool pool(small_stacks());
  const std::uint64_t rounds = switch_count(20'000);
  // The fiber publishes itself into `ready` from its hook; a second thread takes it from there and resumes it
  // without any other hand-off, racing with the first thread's return from resume().
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<Fiber> ready;
  bool done = false;
  std::uint64_t resumes = 0;
  std::atomic<std::uint64_t> hook_saw_unsaved{0};
  auto publish = [&](Fiber& suspended) noexcept {
    if (!suspended) hook_saw_unsaved.fetch_add(1);
    {
      const std::lock_guard lock(mutex);
      ready.emplace(std::move(suspended));
    }
    changed.notify_all();
  };
  auto resumer = [&] {
    for (;;) {
      std::optional<Fiber> fiber;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return ready.has_value() || done; });
        if (!ready) return;
        fiber.emplace(std::move(*ready));
        ready.reset();
      }
      if (fiber->resume() == Fiber::Resumed::finished) {
        {
          const std::lock_guard lock(mutex);
          done = true;
        }
        changed.notify_all();
        return;
      }
      // Suspended: the hook has published it (the hook emptied `*fiber`); touch nothing.
    }
  };
  Fiber fiber(pool.acquire(), [&](ThisFiber& self) {
    for (std::uint64_t i = 0; i < rounds; ++i) {
      ++resumes;
      self.suspend_then(publish);
    }
  });
  {
    const std::lock_guard lock(mutex);
    ready.emplace(std::move(fiber));
  }
  std::thread a(resumer);
  std::thread b(resumer);
  a.join();
  b.join();
  CHECK(resumes == rounds);
  CHECK(hook_saw_unsaved.load() == 0);
  CHECK(pool.stats().free == pool.stats().live);
}

}  // namespace

namespace {

// Keeps `p` alive for the optimiser: the pointee must really be in memory (under ASan with
// detect_stack_use_after_return, in the frame's fake stack).
[[gnu::noinline]] void escape(volatile int* p) { static_cast<void>(*p); }

[[gnu::noinline]] int resumer_frame_with_a_local(int seed) {
  volatile int local = seed;
  escape(&local);
  return local;
}

TEST_CASE("a fiber's locals stay valid while its resumer throws and makes new frames") {
  // Under ASan with detect_stack_use_after_return, locals whose address is taken live in fake stacks, which the
  // switch annotations keep per fiber; the resumer's throw makes ASan collect fake frames below its stack pointer,
  // which must not take the suspended fiber's.
  FiberStackPool pool(small_stacks());
  int sum = 0;
  Fiber fiber(pool.acquire(), [&sum](ThisFiber& self) {
    volatile int local = 7;
    escape(&local);
    for (int i = 0; i < 4; ++i) {
      self.suspend();
      sum += local;
    }
  });
  while (fiber) {
    try {
      throw std::runtime_error("resumer");
    } catch (const std::runtime_error&) {
    }
    for (int i = 0; i < 64; ++i) sum += resumer_frame_with_a_local(i) * 0;
    static_cast<void>(fiber.resume());
  }
  CHECK(sum == 28);
}

}  // namespace
