// Exceptions: from posted tasks (on_error, or kept and counted), from the error handler itself, from the task
// hooks, through futures; misuse of futures; calls from a task that would wait for itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/parallel_for.hpp"

namespace {

using namespace weft::test;

struct TaskFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "<not a std::exception>";
  }
}

TEST_CASE("an exception from a posted task reaches on_error") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("on_error", workers), patience(30));
    std::mutex mutex;
    std::vector<std::string> seen;
    weft::PoolOptions options{.threads = workers};
    options.on_error = [&](std::exception_ptr error) {
      const std::lock_guard lock(mutex);
      seen.push_back(message_of(error));
    };
    weft::Pool pool{std::move(options)};
    constexpr int kFailing = 100;
    for (int i = 0; i < kFailing; ++i) pool.post([i] { throw TaskFailure("task " + std::to_string(i)); });
    pool.post([] {});  // a task that succeeds reports nothing
    pool.wait_idle();
    const std::lock_guard lock(mutex);
    CHECK(seen.size() == kFailing);
    CHECK(std::count(seen.begin(), seen.end(), "task 7") == 1);
    CHECK(pool.stats().errors == kFailing);
    CHECK(pool.take_errors().empty());  // handed to on_error, not kept
  });
}

TEST_CASE("without on_error, exceptions are kept (the first 64) and all are counted") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("kept errors", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    pool.post([] { throw TaskFailure("lonely"); });
    pool.wait_idle();
    auto kept = pool.take_errors();
    REQUIRE(kept.size() == 1);
    CHECK_THROWS_AS(std::rethrow_exception(kept[0]), TaskFailure);
    CHECK(message_of(kept[0]) == "lonely");
    CHECK(pool.take_errors().empty());  // taken

    for (int i = 0; i < 100; ++i) pool.post([] { throw 42; });  // not even a std::exception
    pool.wait_idle();
    CHECK(pool.take_errors().size() == 64);
    CHECK(pool.stats().errors == 101);
  });
}

TEST_CASE("an on_error that throws is counted and kept, never lost") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("throwing on_error", workers), patience(30));
    std::atomic<int> calls{0};
    weft::PoolOptions options{.threads = workers};
    options.on_error = [&calls](std::exception_ptr) {
      calls.fetch_add(1);
      throw std::runtime_error("handler failed");
    };
    weft::Pool pool{std::move(options)};
    for (int i = 0; i < 10; ++i) pool.post([] { throw TaskFailure("task failed"); });
    pool.wait_idle();
    CHECK(calls.load() == 10);
    CHECK(pool.stats().errors == 20);  // each task's exception and its handler's
    const auto kept = pool.take_errors();
    REQUIRE(kept.size() == 10);
    for (const auto& e : kept) CHECK(message_of(e) == "handler failed");
  });
}

TEST_CASE("task hooks see every task, and their exceptions are reported like a task's") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("hooks", workers), patience(30));
    std::atomic<int> starts{0};
    std::atomic<int> ends{0};
    std::atomic<int> bad_events{0};
    std::atomic<int> handled{0};
    weft::PoolOptions options{.threads = workers};
    options.on_task_start = [&](const weft::TaskEvent& e) {
      if (e.worker >= workers) bad_events.fetch_add(1);
      if (starts.fetch_add(1) % 10 == 0) throw std::runtime_error("start hook");
    };
    options.on_task_end = [&](const weft::TaskEvent& e) {
      if (e.worker >= workers || e.priority != weft::Priority::Low) bad_events.fetch_add(1);
      if (ends.fetch_add(1) % 10 == 0) throw std::runtime_error("end hook");
    };
    options.on_error = [&](std::exception_ptr error) {
      const std::string m = message_of(error);
      if (m == "start hook" || m == "end hook") handled.fetch_add(1);
    };
    weft::Pool pool{std::move(options)};
    constexpr int kTasks = 100;
    std::atomic<int> ran{0};
    weft::TaskOptions low;
    low.priority = weft::Priority::Low;
    for (int i = 0; i < kTasks; ++i) pool.post([&ran] { ran.fetch_add(1); }, low);
    pool.wait_idle();
    CHECK(ran.load() == kTasks);  // a throwing start hook does not stop the task
    CHECK(starts.load() == kTasks);
    CHECK(ends.load() == kTasks);
    CHECK(bad_events.load() == 0);
    CHECK(handled.load() == 20);
    CHECK(pool.stats().errors == 20);
  });
}

TEST_CASE("hooks and on_error given an empty std::function are unset: no bad_function_call per task") {
  const std::function<void(const weft::TaskEvent&)> no_hook;
  const std::function<void(std::exception_ptr)> no_handler;
  weft::PoolOptions options{.threads = 2};
  options.on_task_start = no_hook;
  options.on_task_end = no_hook;
  options.on_error = no_handler;
  CHECK_FALSE(options.on_task_start);
  CHECK_FALSE(options.on_error);
  weft::Pool pool{std::move(options)};
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) pool.post([&ran] { ran.fetch_add(1); });
  pool.post([] { throw std::runtime_error("kept, since on_error is unset"); });
  pool.wait_idle();
  CHECK(ran.load() == 50);
  CHECK(pool.stats().errors == 1);  // the task's own; the hooks threw nothing
  const auto kept = pool.take_errors();
  REQUIRE(kept.size() == 1);
  CHECK(message_of(kept[0]) == "kept, since on_error is unset");
}

TEST_CASE("Future::get rethrows the task's own exception, which does not reach on_error") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("future exceptions", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    auto failing = pool.submit([](int v) -> int { throw TaskFailure("value " + std::to_string(v)); }, 5);
    try {
      (void)failing.get();
      FAIL("get() did not throw");
    } catch (const TaskFailure& e) {
      CHECK(std::string(e.what()) == "value 5");
    }
    auto failing_void = pool.submit([] { throw std::out_of_range("void task"); });
    CHECK_THROWS_AS(failing_void.get(), std::out_of_range);
    pool.wait_idle();
    CHECK(pool.stats().errors == 0);
    CHECK(pool.take_errors().empty());
  });
}

TEST_CASE("invalid Future use throws std::logic_error") {
  const Watchdog watchdog("invalid Future use", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Future<int> empty;
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_AS((void)empty.get(), std::logic_error);
  CHECK_THROWS_AS(empty.wait(), std::logic_error);
  CHECK_THROWS_AS((void)empty.ready(), std::logic_error);
  CHECK_THROWS_AS((void)empty.wait_for(std::chrono::milliseconds(1)), std::logic_error);

  auto f = pool.submit([] { return 1; });
  auto moved = std::move(f);
  CHECK_THROWS_AS((void)f.get(), std::logic_error);  // NOLINT(bugprone-use-after-move): that is the point
  CHECK(moved.get() == 1);
  try {
    (void)moved.get();
    FAIL("second get() did not throw");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()).find("get() already called") != std::string::npos);
  }
}

TEST_CASE("each invalid Future call names itself: get, wait, wait_for, ready") {
  const Watchdog watchdog("invalid Future calls named", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  auto f = pool.submit([] { return 1; });
  CHECK(f.get() == 1);
  // get() waits first, but the call the user made is get: the message must not say wait.
  CHECK_THROWS_WITH_AS((void)f.get(), doctest::Contains("weft::Future::get: the future has no state"),
                       std::logic_error);
  CHECK_THROWS_WITH_AS(f.wait(), doctest::Contains("weft::Future::wait: "), std::logic_error);
  CHECK_THROWS_WITH_AS((void)f.wait_for(std::chrono::milliseconds(1)), doctest::Contains("weft::Future::wait_for: "),
                       std::logic_error);
  CHECK_THROWS_WITH_AS((void)f.ready(), doctest::Contains("weft::Future::ready: "), std::logic_error);
  weft::Future<void> empty;
  CHECK_THROWS_WITH_AS(empty.get(), doctest::Contains("weft::Future::get: "), std::logic_error);
}

TEST_CASE("wait_idle and shutdown from inside a task throw would_deadlock") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("would_deadlock", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    auto messages = pool.submit([&pool] {
      std::vector<std::string> out;
      try {
        pool.wait_idle();
      } catch (const weft::would_deadlock& e) {
        out.emplace_back(e.what());
      }
      try {
        (void)pool.shutdown();
      } catch (const weft::would_deadlock& e) {
        out.emplace_back(e.what());
      }
      try {
        (void)pool.shutdown_for(std::chrono::seconds(1));
      } catch (const weft::would_deadlock& e) {
        out.emplace_back(e.what());
      }
      return out;
    });
    std::vector<std::string> got;
    pool.post([&] { got = messages.get(); });  // get() on a worker: the task runs on a worker either way
    pool.wait_idle();
    REQUIRE(got.size() == 3);
    CHECK(got[0].find("wait_idle") != std::string::npos);
    CHECK(got[1].find("shutdown") != std::string::npos);
    CHECK(got[2].find("shutdown_for") != std::string::npos);
    // The pool still works afterwards.
    CHECK(pool.submit([] { return 9; }).get() == 9);
  });
}

TEST_CASE("timeouts past the clock's range wait as long as it takes; zero, negative and NaN ones do not wait") {
  const Watchdog watchdog("huge timeouts", patience(60));
  const std::chrono::duration<double> infinite(std::numeric_limits<double>::infinity());
  const std::chrono::duration<double> not_a_number(std::numeric_limits<double>::quiet_NaN());
  weft::Pool pool{weft::PoolOptions{.threads = 1, .max_queued = 1}};
  std::atomic<bool> release{false};
  const auto slow = [&release] {
    while (!release.load()) std::this_thread::yield();
    return 5;
  };
  // Future::wait_for: a not-ready future; the short and odd timeouts return false at once.
  auto blocker = pool.submit(slow);
  CHECK_FALSE(blocker.wait_for(std::chrono::nanoseconds::min()));
  CHECK_FALSE(blocker.wait_for(std::chrono::hours(-1)));
  CHECK_FALSE(blocker.wait_for(not_a_number));
  CHECK_FALSE(blocker.wait_for(std::chrono::seconds(0)));
  // submit_for with the queue full (the blocker runs, one task waits): a huge timeout waits for room instead of
  // reporting full at once (now() + hours::max() overflowed into the past).
  auto queued = pool.submit([] { return 6; });
  std::jthread releaser([&release] {  // joined on every way out, a failed REQUIRE included
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release.store(true);
  });
  auto late = pool.submit_for(std::chrono::hours::max(), [] { return 7; });
  CHECK(late.status == weft::SubmitStatus::Accepted);
  CHECK(blocker.wait_for(std::chrono::hours::max()));
  CHECK(queued.wait_for(infinite));
  REQUIRE(late.future.valid());
  CHECK(late.future.wait_for(std::chrono::nanoseconds::max()));
  releaser.join();
  CHECK(blocker.get() == 5);
  CHECK(queued.get() == 6);
  CHECK(late.future.get() == 7);
  // The conversion itself, at the edges. A float number of seconds just under 2^63 ns: duration_cast multiplies
  // in float, rounds up to 2^63 and overflows to a negative count; converted through long double it is exact.
  using weft::detail::clamp_to_nanoseconds;
  CHECK(clamp_to_nanoseconds(std::chrono::duration<float>(9223371776.F)) ==
        std::chrono::nanoseconds(9'223'371'776'000'000'000));
  CHECK(clamp_to_nanoseconds(std::chrono::duration<float>(9223372800.F)) == std::chrono::nanoseconds::max());
  CHECK(clamp_to_nanoseconds(std::chrono::duration<unsigned long long, std::nano>::max()) ==
        std::chrono::nanoseconds::max());
  CHECK(clamp_to_nanoseconds(std::chrono::duration<double>(1.5)) == std::chrono::milliseconds(1500));
  CHECK(clamp_to_nanoseconds(std::chrono::hours(2)) == std::chrono::hours(2));
  CHECK(clamp_to_nanoseconds(std::chrono::nanoseconds(-1)) == std::chrono::nanoseconds::zero());
}

TEST_CASE("enum values out of range (a static_cast away) are refused with invalid_option naming them") {
  const Watchdog watchdog("bad enums", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  std::atomic<int> ran{0};
  const weft::TaskOptions bad{.priority = static_cast<weft::Priority>(9)};
  CHECK_THROWS_WITH_AS(pool.post([&ran] { ran.fetch_add(1); }, bad), doctest::Contains("priority = 9"),
                       weft::invalid_option);
  CHECK_THROWS_WITH_AS((void)pool.submit_with(bad, [&ran] { ran.fetch_add(1); }), doctest::Contains("priority = 9"),
                       weft::invalid_option);
  CHECK_THROWS_WITH_AS((void)pool.shutdown(static_cast<weft::Shutdown>(5)), doctest::Contains("policy = 5"),
                       weft::invalid_option);
  // Nothing was accepted, and the pool still works and shuts down normally.
  CHECK(pool.submit([] { return 3; }).get() == 3);
  CHECK(pool.shutdown() == 0);
  CHECK(ran.load() == 0);
}

std::atomic<int> plain_function_runs{0};
void plain_function() { plain_function_runs.fetch_add(1); }
int plain_int_function() { return 8; }

TEST_CASE("an empty task is refused with std::invalid_argument naming the call") {
  const Watchdog watchdog("empty task", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  void (*null_function)() = nullptr;
  int (*null_int_function)(int) = nullptr;
  const std::function<void()> empty_function;
  const auto refused = [](auto&& submit_it, const char* call) {
    try {
      submit_it();
      FAIL("accepted an empty callable: " << call);
    } catch (const std::invalid_argument& e) {
      CHECK_MESSAGE(std::string(e.what()).find(call) != std::string::npos, e.what());
      CHECK_MESSAGE(std::string(e.what()).find("empty") != std::string::npos, e.what());
    }
  };
  refused([&] { pool.post(null_function); }, "weft::Pool::post");
  refused([&] { pool.post(empty_function); }, "weft::Pool::post");
  refused([&] { (void)pool.try_post(null_function); }, "weft::Pool::try_post");
  refused([&] { (void)pool.try_post(empty_function); }, "weft::Pool::try_post");
  refused([&] { (void)pool.submit(null_function); }, "weft::Pool::submit");
  refused([&] { (void)pool.submit(null_int_function, 3); }, "weft::Pool::submit");
  refused([&] { (void)pool.submit(empty_function); }, "weft::Pool::submit");
  refused([&] { (void)pool.submit_with(weft::TaskOptions{}, empty_function); }, "weft::Pool::submit");
  refused([&] { (void)pool.try_submit(null_function); }, "weft::Pool::try_submit");
  refused([&] { (void)pool.submit_for(std::chrono::milliseconds(1), empty_function); }, "weft::Pool::submit_for");
  refused([&] { weft::parallel_for(pool, 0, 10, static_cast<void (*)(int)>(nullptr)); }, "weft::parallel_for");
  std::vector<int> v(10);
  refused([&] { weft::parallel_for(pool, v.begin(), v.end(), std::function<void(int&)>{}); }, "weft::parallel_for");
  pool.wait_idle();
  CHECK(pool.stats().in_flight == 0);
  // A non-empty std::function, a function named directly and a pointer to one still go through.
  CHECK(pool.submit(std::function<int()>([] { return 4; })).get() == 4);
  pool.post(plain_function);
  CHECK(pool.submit(plain_int_function).get() == 8);
  CHECK(pool.submit(&plain_int_function).get() == 8);
  weft::parallel_for(pool, 0, 4, [](int) { plain_function(); });
  pool.wait_idle();
  CHECK(plain_function_runs.load() == 5);
}

}  // namespace
