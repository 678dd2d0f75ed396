// co_await weft::notified(cv, lock): a coroutine's ConditionVariable wait. Every item of a queue consumed exactly
// once by coroutines woken by notify_one and notify_all from workers and plain threads; the mutex held again after
// each wait; a lock without its mutex refused; the plain-thread form blocks; a shutdown's refusal reported.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/coro/coro_configs.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "weft/condition_variable.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/task_when.hpp"

namespace coro_notified_test {

using weft::Task;
using namespace weft::test::coro;

// A queue of items guarded by a mutex; -1 is the end, left in place for every consumer to see.
struct Channel {
  std::mutex m;
  weft::ConditionVariable cv;
  std::deque<int> items;
  bool held_after_wait = true;  // every wait returned with the mutex held
};

Task<long> consume(weft::Pool& pool, Channel& channel, std::vector<std::atomic<int>>& seen) {
  co_await pool.schedule();
  long taken = 0;
  for (;;) {
    std::unique_lock lock(channel.m);
    while (channel.items.empty()) {
      co_await weft::notified(channel.cv, lock);
      if (!lock.owns_lock()) channel.held_after_wait = false;
    }
    const int item = channel.items.front();
    if (item < 0) co_return taken;
    channel.items.pop_front();
    lock.unlock();
    seen[static_cast<std::size_t>(item)].fetch_add(1);
    ++taken;
  }
}

TEST_CASE("coroutines woken by notify_one and notify_all consume every item exactly once") {
  on_each_pool([&](weft::Pool& pool) {
    const int n = static_cast<int>(weft::test::stress_count(weft::test::reduced_runs() ? 2000 : 20000));
    constexpr int consumers = 6;
    Channel channel;
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));

    // Two producers: a plain thread notifying one at a time under the mutex, and a pool task notifying all
    // outside it; the end marker after both.
    auto produce = [&](int from, int step, bool all) {
      for (int i = from; i < n; i += step) {
        std::unique_lock lock(channel.m);
        channel.items.push_back(i);
        if (all) {
          lock.unlock();
          channel.cv.notify_all();
        } else {
          channel.cv.notify_one();
        }
      }
    };
    auto run = [&]() -> Task<long> {
      co_await pool.schedule();
      std::vector<Task<long>> members;
      for (int c = 0; c < consumers; ++c) members.push_back(consume(pool, channel, seen));
      long total = 0;
      for (long taken : co_await weft::when_all(std::move(members))) total += taken;
      co_return total;
    };
    weft::Event finished;
    std::atomic<long> total{-1};
    std::thread driver([&] {
      total.store(weft::sync_wait(run()));
      finished.signal();
    });
    std::thread plain([&] { produce(0, 2, false); });
    auto posted = pool.submit([&] { produce(1, 2, true); });
    plain.join();
    posted.get();
    {
      const std::scoped_lock lock(channel.m);
      channel.items.push_back(-1);
    }
    channel.cv.notify_all();
    finished.wait();
    driver.join();
    CHECK(total.load() == n);
    int wrong = 0;
    for (auto& s : seen) wrong += s.load() == 1 ? 0 : 1;
    CHECK(wrong == 0);
    CHECK(channel.held_after_wait);
  });
}

TEST_CASE("notified refuses a lock without its mutex, blocks on a plain thread, and reports a stopped pool") {
  weft::Pool pool(weft::PoolOptions{.threads = 2});
  std::mutex m;
  weft::ConditionVariable cv;

  // A lock that does not hold its mutex.
  auto unlocked = [&]() -> Task<void> {
    co_await pool.schedule();
    std::unique_lock lock(m, std::defer_lock);
    co_await weft::notified(cv, lock);
  };
  CHECK_THROWS_WITH_AS(weft::sync_wait(unlocked()),
                       "co_await weft::notified: the lock does not hold its mutex (lock it before the wait)",
                       std::logic_error);

  // Before its first suspension a sync_wait coroutine runs on this plain thread: the wait blocks it, and a
  // notify from another thread (under the mutex) ends it with the mutex held.
  bool ready = false;
  std::atomic<bool> waiting{false};
  auto on_plain_thread = [&]() -> Task<bool> {
    std::unique_lock lock(m);
    waiting.store(true);
    while (!ready) co_await weft::notified(cv, lock);
    co_return lock.owns_lock();
  };
  std::thread notifier([&] {
    while (!waiting.load()) std::this_thread::yield();
    const std::scoped_lock lock(m);
    ready = true;
    cv.notify_all();
  });
  CHECK(weft::sync_wait(on_plain_thread()));
  notifier.join();

  // Suspended, then its pool shut down: the shutdown resumes it with task_dropped, without the mutex; a notify
  // after that (here under the mutex) finds nothing to resume.
  auto small = std::make_unique<weft::Pool>(weft::PoolOptions{.threads = 1});
  std::atomic<int> outcome{0};
  auto dropped = [&]() -> Task<void> {
    co_await small->schedule();
    std::unique_lock lock(m);
    try {
      co_await weft::notified(cv, lock);
      outcome.store(1);
    } catch (const weft::task_dropped& e) {
      outcome.store(!lock.owns_lock() && std::string(e.what()).find("weft::notified") != std::string::npos ? 2 : 3);
    }
  };
  weft::spawn(*small, dropped());
  small->wait_idle();  // the coroutine's task has returned: it is parked on the generation
  small->shutdown();
  {
    const std::scoped_lock lock(m);
    cv.notify_all();
  }
  CHECK(outcome.load() == 2);
  small.reset();
}

}  // namespace coro_notified_test
