// Coroutines suspended on an Event, a WaitGroup or a ConditionVariable when their pool stops: the shutdown (or the
// destructor) resumes each with weft::task_dropped after its workers joined, their frames are freed, and a signal
// that comes after the pool is gone touches nothing of it (ASan).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "weft/condition_variable.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/wait_group.hpp"

#include "tests/support/sanitizers.hpp"

namespace coro_shutdown_test {

using weft::Task;

// Counts the frames freed: one lives in each coroutine's frame.
struct FrameGuard {
  std::atomic<int>* freed;
  ~FrameGuard() { freed->fetch_add(1); }
};

struct Primitives {
  weft::Event manual{weft::Event::Mode::Manual};
  weft::Event automatic{weft::Event::Mode::Auto};
  weft::WaitGroup group{1};
  std::mutex m;
  weft::ConditionVariable cv;
};

struct Counts {
  std::atomic<int> dropped{0};
  std::atomic<int> freed{0};
  std::atomic<int> resumed{0};  // returned normally: must stay 0
};

// The coroutines below are functions, not lambdas: their frames outlive the call that spawned them, and a
// lambda's captures would not.
Task<void> on_event(weft::Event& event, Counts& counts) {
  const FrameGuard guard{&counts.freed};
  try {
    co_await event;
    counts.resumed.fetch_add(1);
  } catch (const weft::task_dropped&) {
    counts.dropped.fetch_add(1);
  }
}

Task<void> on_group(weft::WaitGroup& group, Counts& counts) {
  const FrameGuard guard{&counts.freed};
  try {
    co_await group;
    counts.resumed.fetch_add(1);
  } catch (const weft::task_dropped&) {
    counts.dropped.fetch_add(1);
  }
}

Task<void> on_cv(Primitives& p, Counts& counts) {
  const FrameGuard guard{&counts.freed};
  std::unique_lock lock(p.m);
  try {
    co_await weft::notified(p.cv, lock);
    counts.resumed.fetch_add(1);
  } catch (const weft::task_dropped& e) {
    if (!lock.owns_lock() && std::string(e.what()).find("weft::notified") != std::string::npos)
      counts.dropped.fetch_add(1);
  }
}

// One coroutine per primitive, spawned on `pool`, each suspended on its primitive when this returns.
void park_four(weft::Pool& pool, Primitives& p, Counts& counts) {
  pool.spawn(on_event(p.manual, counts));
  pool.spawn(on_event(p.automatic, counts));
  pool.spawn(on_group(p.group, counts));
  pool.spawn(on_cv(p, counts));
  pool.wait_idle();  // every spawned task has returned: each coroutine is parked on its primitive
}

TEST_CASE("a pool's destructor resumes the coroutines parked for it with task_dropped and frees their frames") {
  Primitives p;
  Counts counts;
  {
    weft::Pool pool(weft::PoolOptions{.threads = 2});
    park_four(pool, p, counts);
    CHECK(counts.dropped.load() == 0);
    CHECK(counts.freed.load() == 0);
  }
  CHECK(counts.dropped.load() == 4);
  CHECK(counts.freed.load() == 4);
  CHECK(counts.resumed.load() == 0);
  // Signals after the pool is gone find no coroutine, and the Auto event's count was left: a plain wait takes
  // the signal.
  p.manual.signal();
  p.automatic.signal();
  p.group.done();
  p.cv.notify_all();
  CHECK(p.automatic.wait_for(std::chrono::seconds(0)));
  CHECK(counts.resumed.load() == 0);
}

TEST_CASE("shutdown resumes a parked coroutine with task_dropped, which reaches a sync_wait on another thread") {
  for (const bool fibers : {true, false}) {
    CAPTURE(fibers);
    Primitives p;
    Counts counts;
    weft::Pool pool(weft::PoolOptions{.threads = 2, .fibers = fibers});
    park_four(pool, p, counts);

    // A Task chain under sync_wait: the inner Task parks on the pool's worker; the outer awaits it.
    std::atomic<bool> parked{false};
    auto inner = [&]() -> Task<int> {
      co_await pool.schedule();
      parked.store(true);
      co_await p.manual;
      co_return 1;
    };
    auto outer = [&]() -> Task<int> { co_return co_await inner() + 1; };
    std::atomic<int> outcome{0};
    std::thread waiter([&] {
      try {
        outcome.store(weft::sync_wait(outer()));
      } catch (const weft::task_dropped&) {
        outcome.store(-1);
      }
    });
    while (!parked.load()) std::this_thread::yield();
    pool.wait_idle();
    (void)pool.shutdown();
    waiter.join();
    CHECK(outcome.load() == -1);
    CHECK(counts.dropped.load() == 4);
    CHECK(counts.freed.load() == 4);
    // A second shutdown, and the destructor, drop nothing more.
    CHECK(pool.shutdown() == 0);
  }
}

// Shuts `pool` down again from inside the shutdown that dropped it: that shutdown has finished its work and
// released its lock, so this one finds the pool joined and returns at once.
Task<void> shuts_down_on_drop(weft::Event& event, weft::Pool& pool, std::atomic<int>& again) {
  try {
    co_await event;
  } catch (const weft::task_dropped&) {
    again.store(static_cast<int>(pool.shutdown()) + 1);  // 1: shutdown returned 0
  }
}

TEST_CASE("a coroutine dropped by a shutdown may shut the same pool down again") {
  weft::Event event{weft::Event::Mode::Manual};
  std::atomic<int> again{0};
  weft::Pool pool(weft::PoolOptions{.threads = 2});
  pool.spawn(shuts_down_on_drop(event, pool, again));
  pool.wait_idle();
  CHECK(pool.shutdown() == 0);  // the coroutine was parked, not pending: nothing counted as dropped
  CHECK(again.load() == 1);
}

// Exactly once against a shutdown: each coroutine parked on its own event either resumes by its signal or is
// dropped by the shutdown, never both, never neither, and every frame is freed, while another thread signals the
// events as the pool stops.
TEST_CASE("signals racing a shutdown: each parked coroutine resumes or is dropped, exactly once") {
  constexpr int kCoroutines = 64;
  const int rounds = weft::test::kThreadSanitizer || weft::test::emulated() ? 20 : 100;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    std::vector<std::unique_ptr<weft::Event>> events;
    for (int i = 0; i < kCoroutines; ++i) events.push_back(std::make_unique<weft::Event>(weft::Event::Mode::Manual));
    Counts counts;
    {
      weft::Pool pool(weft::PoolOptions{.threads = 2, .fibers = round % 2 == 0});
      for (auto& event : events) pool.spawn(on_event(*event, counts));
      pool.wait_idle();
      std::thread signaller([&] {
        for (int i = 0; i < kCoroutines; ++i) events[static_cast<std::size_t>((i * 37) % kCoroutines)]->signal();
      });
      (void)pool.shutdown(round % 3 == 0 ? weft::Shutdown::DropPending : weft::Shutdown::Drain);
      signaller.join();
    }
    CHECK(counts.resumed.load() + counts.dropped.load() == kCoroutines);
    CHECK(counts.freed.load() == kCoroutines);
  }
}

}  // namespace coro_shutdown_test
