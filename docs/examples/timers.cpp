// Timers, combinators and stop tokens on a weft::Pool: a delayed task, a periodic one cancelled after a few runs,
// a delayed future cancelled before its time, a coroutine that sleeps on the pool's timers, when_all / when_any /
// when_all_settled over futures, and a task cancelled through its std::stop_token. Exits with 1 if any result is wrong.
// Built and run by weft's test suite (suite 'examples').
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <weft/pool.hpp>
#include <weft/sync_wait.hpp>
#include <weft/task.hpp>
#include <weft/timer.hpp>
#include <weft/when.hpp>

using namespace std::chrono_literals;

// A coroutine that sleeps: no worker, thread or fiber is held while it waits; it resumes on one of pool's workers.
weft::Task<int> retry_later(weft::Pool& pool) {
  for (int attempt = 1;; ++attempt) {
    if (attempt == 3) co_return attempt;  // a third attempt succeeds
    co_await pool.sleep_for(2ms);         // back off, then try again on a worker
  }
}

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  bool ok = true;

  // A task handed to the pool once 5 ms have passed, and a periodic one.
  std::atomic<int> ticks{0};
  std::atomic<bool> reminded{false};
  weft::Timer reminder = pool.post_after(5ms, [&reminded] { reminded = true; });
  weft::Timer heartbeat = pool.post_every(1ms, [&ticks] { ++ticks; });
  while (ticks.load() < 3) std::this_thread::sleep_for(1ms);
  const bool stopped = heartbeat.cancel();  // true: no run starts after this returns

  // A delayed future, and one cancelled before its time.
  weft::DelayedFuture<int> answer = pool.submit_after_delay(2ms, [] { return 42; });
  weft::DelayedFuture<int> never = pool.submit_after_delay(1h, [] { return 0; });
  const bool cancelled = never.timer.cancel();  // true: the task will not run
  try {
    (void)never.future.get();
    ok = false;
  } catch (const weft::task_cancelled&) {
    // expected: the timer was cancelled before it was due
  }
  ok = ok && stopped && cancelled && answer.future.get() == 42;

  // A coroutine sleeping between attempts; a shutdown would resume it with weft::task_dropped instead.
  const int attempts = weft::sync_wait(retry_later(pool));
  ok = ok && attempts == 3;

  // Combinators: none of them blocks a worker; each returns a future.
  weft::Future<int> a = pool.submit([] { return 1; });
  weft::Future<std::string> b = pool.submit([] { return std::string("two"); });
  auto [one, two] = weft::when_all(std::move(a), std::move(b)).get();

  std::vector<weft::Future<int>> racers;
  for (int i = 0; i < 4; ++i) racers.push_back(pool.submit([i] { return i * 10; }));
  weft::WhenAnyResult<int> first = weft::when_any(std::move(racers)).get();  // the others keep running

  std::vector<weft::Future<int>> mixed;
  mixed.push_back(pool.submit([]() -> int { throw std::runtime_error("bad record"); }));
  mixed.push_back(pool.submit([] { return 3; }));
  std::vector<weft::Settled<int>> outcomes = weft::when_all_settled(std::move(mixed)).get();  // never throws
  ok = ok && one == 1 && two == "two" && first.value == static_cast<int>(first.index) * 10 &&
       !outcomes[0].has_value() && outcomes[1].value == 3;

  // Stop tokens: a task skipped because its token was stopped before it started, and one that polls its token.
  std::stop_source stop_early;
  stop_early.request_stop();
  weft::Future<int> skipped = pool.submit(stop_early.get_token(), [] { return 1; });
  try {
    (void)skipped.get();
    ok = false;
  } catch (const weft::task_cancelled&) {
    // expected: the token was stopped before the task started
  }
  std::stop_source stop_later;
  std::atomic<bool> started{false};
  weft::Future<int> polled = pool.submit(stop_later.get_token(), [&started](std::stop_token token) {
    started = true;
    int rounds = 0;
    while (!token.stop_requested()) {
      ++rounds;
      std::this_thread::sleep_for(100us);
    }
    return rounds;
  });
  while (!started) std::this_thread::sleep_for(100us);
  stop_later.request_stop();
  ok = ok && polled.get() >= 0;

  pool.wait_idle();
  ok = ok && reminded.load();
  std::printf("ticks >= 3: %d, answer: 42, when_any: #%zu = %d, settled: %s / %d\n", ticks.load() >= 3, first.index,
              first.value, outcomes[0].has_value() ? "value" : "exception", *outcomes[1].value);
  return ok ? 0 : 1;
}
