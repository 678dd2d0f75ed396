// co_await on what weft owns besides futures (weft/task.hpp): a TaskScope's Job, a TaskGraph's Run, an Event (both
// modes) and a WaitGroup. Each suspends without a worker (a pool of one worker still gets the signalling task run),
// resumes as a pool task, passes values and exceptions on, and reports cancellation (job_cancelled,
// task_cancelled); bad input is refused with a message naming it. Also pool.spawn. Pools of 1 and 8 workers,
// fibers on and off.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "tests/coro/coro_configs.hpp"
#include "weft/weft.hpp"

namespace coro_await_test {
namespace {

using weft::Task;

using weft::test::coro::on_each_pool;

struct await_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool message_has(const std::exception& e, const char* part) {
  return std::string(e.what()).find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("co_await on an Event and a WaitGroup holds no worker and resumes on the pool") {
  on_each_pool([&](weft::Pool& pool) {
    // Manual: signalled by a task posted after the coroutine suspended. With one worker, the coroutine must not
    // hold it, or the signalling task never runs.
    auto manual = [&pool]() -> Task<int> {
      co_await pool.schedule();
      weft::Event ready;
      int seen = 0;
      pool.post([&] {
        seen = 7;
        ready.signal();
      });
      co_await ready;
      const bool on_worker = pool.current_worker().has_value();
      co_await ready;  // set: does not suspend
      co_return on_worker ? seen : -1;
    };
    CHECK(weft::sync_wait(manual()) == 7);

    // WaitGroup: zero at once, then three done() from tasks.
    auto group = [&pool]() -> Task<int> {
      co_await pool.schedule();
      weft::WaitGroup pending;
      co_await pending;  // zero: no suspension
      std::atomic<int> sum{0};
      pending.add(3);
      for (int i = 1; i <= 3; ++i) {
        pool.post([&sum, &pending, i] {
          sum.fetch_add(i, std::memory_order_relaxed);
          pending.done();
        });
      }
      co_await pending;
      co_return sum.load(std::memory_order_relaxed);
    };
    CHECK(weft::sync_wait(group()) == 6);

    // Auto: each signal releases one awaiting coroutine; two coroutines, two signals.
    auto autos = [&pool]() -> Task<int> {
      co_await pool.schedule();
      weft::Event turn(weft::Event::Mode::Auto);
      std::atomic<int> woken{0};
      auto one = [&]() -> Task<void> {
        co_await pool.schedule();
        co_await turn;
        woken.fetch_add(1, std::memory_order_relaxed);
      };
      auto signals = [&]() -> Task<void> {
        co_await pool.schedule();
        turn.signal();
        turn.signal();
        co_return;
      };
      co_await weft::when_all(one(), one(), signals());
      co_return woken.load(std::memory_order_relaxed) + (turn.is_signaled() ? 100 : 0);
    };
    CHECK(weft::sync_wait(autos()) == 2);
  });
}

TEST_CASE("co_await on a Run: completes, rethrows a node's exception, throws task_cancelled when cancelled") {
  on_each_pool([&](weft::Pool& pool) {
    weft::TaskGraph graph;
    std::atomic<int> ran{0};
    weft::Node a = graph.add_node([&ran] { ran.fetch_add(1); });
    weft::Node b = graph.add_node([&ran] { ran.fetch_add(10); });
    graph.add_edge(a, b);
    auto once = [&]() -> Task<int> {
      co_await pool.schedule();
      weft::Run run = graph.run(pool);
      co_await run;
      co_await run;  // over: no suspension
      co_return ran.load();
    };
    CHECK(weft::sync_wait(once()) == 11);

    // Awaited from a plain thread (sync_wait runs the body here until it suspends): if it suspended (the run was
    // not over yet), it resumes on the run's pool; else it goes on here.
    auto plain = [&]() -> Task<bool> {
      const std::thread::id here = std::this_thread::get_id();
      co_await graph.run(pool);
      co_return std::this_thread::get_id() == here || pool.current_worker().has_value();
    };
    CHECK(weft::sync_wait(plain()));

    weft::TaskGraph failing;
    failing.add_node([] { throw await_error("node"); });
    auto fails = [&]() -> Task<void> {
      co_await pool.schedule();
      co_await failing.run(pool);
    };
    CHECK_THROWS_AS(weft::sync_wait(fails()), await_error);

    // Cancelled while a coroutine awaits it: the first node waits for the cancel, the second is skipped.
    weft::TaskGraph gated;
    weft::Event cancelled;
    weft::Node first = gated.add_node([&cancelled] { cancelled.wait(); });
    weft::Node second = gated.add_node([] {});
    gated.add_edge(first, second);
    auto cancels = [&]() -> Task<std::string> {
      co_await pool.schedule();
      weft::Run run = gated.run(pool);
      pool.post([&] {
        run.cancel();
        cancelled.signal();
      });
      try {
        co_await run;
      } catch (const weft::task_cancelled& e) {
        co_return e.what();
      }
      co_return "not cancelled";
    };
    const std::string what = weft::sync_wait(cancels());
    CHECK(what.find("co_await weft::Run: the run was cancelled") != std::string::npos);

    auto empty = []() -> Task<void> {
      weft::Run none;
      co_await none;
    };
    try {
      weft::sync_wait(empty());
      FAIL("an empty Run was awaited");
    } catch (const std::logic_error& e) {
      CHECK(message_has(e, "co_await weft::Run: the Run is empty"));
    }
  });
}

TEST_CASE("co_await on a Job: its value or exception; a cancelled scope's job throws job_cancelled") {
  on_each_pool([&](weft::Pool& pool) {
    // Awaited while the job has not run yet: the job waits for an event a task signals after the suspension.
    auto values = [&]() -> Task<int> {
      co_await pool.schedule();
      weft::TaskScope scope{pool};
      weft::Event go;
      weft::Job<int> slow = scope.submit([&go] {
        go.wait();
        return 20;
      });
      weft::Job<std::string> fast = scope.submit([] { return std::string("22"); });
      weft::Job<void> nothing = scope.submit([] {});
      scope.run();
      pool.post([&go] { go.signal(); });
      const int a = co_await slow;
      const std::string b = co_await fast;
      co_await nothing;
      co_await slow;  // again: the Job is copied, not consumed
      scope.wait();
      co_return a + std::stoi(b);
    };
    CHECK(weft::sync_wait(values()) == 42);

    auto throws = [&]() -> Task<std::string> {
      co_await pool.schedule();
      weft::TaskScope scope{pool};
      weft::Job<int> bad = scope.submit([]() -> int { throw await_error("job"); });
      scope.run();
      std::string result;
      try {
        (void)co_await bad;
      } catch (const await_error& e) {
        result = e.what();
      }
      try {
        scope.wait();
      } catch (const await_error&) {
        result += "+wait";
      }
      co_return result;
    };
    CHECK(weft::sync_wait(throws()) == "job+wait");

    // A job skipped by the scope's cancel: the co_await throws job_cancelled once the run is over, before
    // anybody waits for the scope.
    auto skipped = [&]() -> Task<std::string> {
      co_await pool.schedule();
      weft::TaskScope scope{pool};
      weft::Event release;
      weft::Job<int> first = scope.submit([&release] {
        release.wait();
        return 1;
      });
      weft::Job<int> second = scope.then(first, [](int x) { return x + 1; });
      scope.run();
      pool.post([&] {
        scope.cancel();
        release.signal();
      });
      std::string result;
      try {
        (void)co_await second;
      } catch (const weft::job_cancelled& e) {
        result = e.what();
      }
      (void)scope.wait();
      co_return result;
    };
    const std::string what = weft::sync_wait(skipped());
    CHECK(what.find("did not run") != std::string::npos);

    auto unrun = [&]() -> Task<void> {
      weft::TaskScope scope{pool};
      weft::Job<int> job = scope.submit([] { return 1; });
      (void)co_await job;
    };
    try {
      weft::sync_wait(unrun());
      FAIL("a job of a scope not run was awaited");
    } catch (const std::logic_error& e) {
      CHECK(message_has(e, "its scope was not run yet"));
    }
    auto empty = []() -> Task<void> {
      weft::Job<int> none;
      (void)co_await none;
    };
    try {
      weft::sync_wait(empty());
      FAIL("an empty Job was awaited");
    } catch (const std::logic_error& e) {
      CHECK(message_has(e, "co_await weft::Job: the Job is empty"));
    }
  });
}

TEST_CASE("pool.spawn runs a Task on the pool; its exception goes to the error handler") {
  on_each_pool([&](weft::Pool& pool) {
    weft::Event done;
    std::atomic<bool> on_worker{false};
    auto body = [&]() -> Task<void> {
      on_worker.store(pool.current_worker().has_value());
      done.signal();
      co_return;
    };
    pool.spawn(body());
    done.wait();
    CHECK(on_worker.load());
    auto fails = []() -> Task<int> {
      throw await_error("spawned");
      co_return 0;
    };
    pool.spawn(fails());
    pool.wait_idle();
    const std::vector<std::exception_ptr> errors = pool.take_errors();
    REQUIRE(errors.size() == 1);
    CHECK_THROWS_AS(std::rethrow_exception(errors[0]), await_error);
    Task<void> empty;
    CHECK_THROWS_AS(pool.spawn(std::move(empty)), std::logic_error);
  });
}

// A plain loop, not on_each_pool: g++ 12 at -Og reports a std::stop_source constructed inside a lambda as maybe
// used uninitialized (its constructor passes *this to a member's), a false positive that -Werror makes fatal.
TEST_CASE("a Task reads its stop token, given by with_stop_token and inherited by the Tasks it starts") {
  for (const weft::test::coro::Config& config : weft::test::coro::kConfigs) {
    CAPTURE(config.threads);
    CAPTURE(config.fibers);
    weft::Pool pool(weft::test::coro::options_of(config));
    auto read = []() -> Task<bool> {
      const std::stop_token token = co_await weft::this_coro::stop_token;
      co_return token.stop_requested();
    };
    auto own = []() -> Task<bool> {
      std::stop_token token = co_await weft::this_coro::stop_token;
      co_return token.stop_possible();
    };
    std::stop_source stopped;
    stopped.request_stop();
    std::stop_source running;
    auto tree = [&]() -> Task<int> {
      co_await pool.schedule();
      const bool direct = co_await read();  // inherited: stopped
      auto [a, b] = co_await weft::when_all(read(), weft::with_stop_token(read(), running.get_token()));
      co_return (direct ? 1 : 0) + (a ? 10 : 0) + (b ? 100 : 0);  // b has a token of its own, not stopped
    };
    CHECK(weft::sync_wait(weft::with_stop_token(tree(), stopped.get_token())) == 11);
    CHECK_FALSE(weft::sync_wait(own()));  // no token anywhere: empty
    Task<bool> started;
    CHECK_THROWS_AS((void)weft::with_stop_token(std::move(started), running.get_token()), std::logic_error);
  }
}

}  // namespace coro_await_test

namespace coro_await_test {

TEST_CASE("when_any over Tasks gives the first to end; losers run to their end; when_all_settled never throws") {
  on_each_pool([&](weft::Pool& pool) {
    // The loser waits for an event the test signals after the winner was taken, then throws: its exception goes
    // nowhere, and its frame is freed at its end (ASan's leak check).
    weft::Event release;
    std::atomic<int> losers_ended{0};
    auto fast = []() -> Task<int> { co_return 7; };
    auto slow = [&]() -> Task<std::string> {
      co_await release;
      losers_ended.fetch_add(1);
      throw await_error("late");
      co_return std::string("never");
    };
    auto race = [&]() -> Task<std::size_t> {
      co_await pool.schedule();
      auto first = co_await weft::when_any(fast(), slow());
      CHECK(std::get<0>(first.value) == 7);
      co_return first.index;
    };
    CHECK(weft::sync_wait(race()) == 0);
    const auto direct = weft::sync_wait(weft::when_any(slow(), fast()));  // from this thread: slow waits for release
    CHECK(direct.index == 1);
    release.signal();
    pool.wait_idle();
    CHECK(losers_ended.load() == 2);

    // The first to end threw: rethrown. The loser waits on an event that outlives it (here, not in the frame that
    // ends first).
    weft::Event later;
    auto late = [&]() -> Task<int> {
      co_await later;
      co_return 1;
    };
    auto failing_first = [&]() -> Task<int> {
      co_await pool.schedule();
      auto bad = []() -> Task<void> {
        throw await_error("first");
        co_return;
      };
      try {
        (void)co_await weft::when_any(bad(), late());
      } catch (const await_error&) {
        co_return 1;
      }
      co_return 0;
    };
    CHECK(weft::sync_wait(failing_first()) == 1);
    later.signal();
    pool.wait_idle();  // the loser's resumption is a task of the pool: it has ended

    auto settled = [&]() -> Task<int> {
      co_await pool.schedule();
      auto bad = []() -> Task<int> {
        throw await_error("settled");
        co_return 0;
      };
      auto good = []() -> Task<void> { co_return; };
      auto [a, b, c] = co_await weft::when_all_settled(bad(), good(), fast());
      int score = 0;
      if (!a.has_value() && a.error) score += 1;
      if (b.has_value()) score += 10;
      if (c.has_value() && *c.value == 7) score += 100;
      co_return score;
    };
    CHECK(weft::sync_wait(settled()) == 111);

    Task<int> empty;
    CHECK_THROWS_AS((void)weft::when_all_settled(std::move(empty), fast()), std::logic_error);
    auto awaits_empty = [&]() -> Task<void> {
      Task<int> none;
      (void)co_await weft::when_any(std::move(none), fast());
    };
    try {
      weft::sync_wait(awaits_empty());
      FAIL("when_any over an empty Task");
    } catch (const std::logic_error& e) {
      CHECK(message_has(e, "weft::when_any: the weft::Task is empty"));
    }
  });
}

}  // namespace coro_await_test
