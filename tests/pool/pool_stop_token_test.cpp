// Pool::post and Pool::submit with a std::stop_token: a token stopped before the start skips the task (the future
// throws task_cancelled), a running task polls the token it is handed, a token never stopped changes nothing.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

TEST_CASE("a token stopped before the start: submit's future throws task_cancelled, post's task is skipped") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("stopped before start", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::stop_source stop;
    stop.request_stop();
    std::atomic<int> calls{0};
    auto f = pool.submit(
        stop.get_token(),
        [&](int a) {
          calls.fetch_add(1);
          return a;
        },
        1);
    pool.post(stop.get_token(), [&] { calls.fetch_add(1); });
    CHECK_THROWS_AS(f.get(), weft::task_cancelled);
    pool.wait_idle();
    CHECK(calls.load() == 0);
    CHECK(pool.stats().errors == 0);  // a skipped post is not an error
  });
}

TEST_CASE("a running task polls the token it is handed; a token never stopped changes nothing") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("stopped while running", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::stop_source stop;
    std::atomic<bool> started{false};
    auto f = pool.submit(
        stop.get_token(),
        [&](std::stop_token token, std::string tag) {
          started.store(true);
          long spins = 0;
          while (!token.stop_requested()) {
            ++spins;
            std::this_thread::sleep_for(50us);
          }
          return tag + " stopped";
        },
        std::string("task"));
    while (!started.load()) std::this_thread::sleep_for(50us);
    stop.request_stop();
    CHECK(f.get() == "task stopped");

    std::stop_source never;
    std::atomic<int> seen{0};
    pool.post(never.get_token(), [&](std::stop_token token) { seen.fetch_add(token.stop_possible() ? 1 : 100); });
    CHECK(pool.submit(never.get_token(), [] { return 3; }).get() == 3);
    CHECK(pool.submit(
                  std::stop_token{}, [](int a, int b) { return a + b; }, 2, 3)
              .get() == 5);
    pool.wait_idle();
    CHECK(seen.load() == 1);
  });
}

}  // namespace
