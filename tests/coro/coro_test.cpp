// weft's coroutines (weft/task.hpp, weft/sync_wait.hpp, weft/generator.hpp): Task started lazily and run once,
// co_await on Tasks (a million deep in constant stack), Futures, AsyncTasks and pool.schedule(), exceptions at
// every level, when_all (parallel, first exception in argument order, every member awaited), sync_wait from a
// plain thread and from a worker, spawn (exceptions to on_error), frames freed when never started or suspended
// (ASan's leak check), and Generator as an input range. Pools of 1 and 8 workers, with fibers and without.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <ranges>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "scheduler/engine/future_alloc.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "tests/coro/coro_configs.hpp"
#include "tests/support/sanitizers.hpp"
#include "weft/weft.hpp"

namespace {

using weft::Task;

// 1,000,000 deep at full speed. Under a sanitizer 10,000: ThreadSanitizer instruments every function's entry and
// exit, and ASan's build (-Og) keeps frames, which turns the tail calls of symmetric transfer into real calls (and
// TSan's record of the call stack stops at 65,536 frames). The constant stack is checked by the release build.
// A million levels need the resumption's symmetric transfer to be a tail call, which GCC makes in an optimized
// build (the release and nofibers stages, -O3) but not under the sanitizers' instrumentation, nor at the -Og of the
// arm64 stage's tests (the one emulated stage): there each level takes stack, so the chain is 10,000 deep.
[[nodiscard]] int deep_chain() {
  return (weft::test::kThreadSanitizer || weft::test::kAddressSanitizer || weft::test::emulated()) ? 10'000 : 1'000'000;
}

using weft::test::coro::Config;
using weft::test::coro::kConfigs;
using weft::test::coro::on_each_pool;
using weft::test::coro::options_of;

struct coro_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Counts live instances: a frame freed with its locals brings the count back.
struct Tracked {
  static inline std::atomic<int> live{0};
  Tracked() noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  Tracked(const Tracked&) noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  ~Tracked() { live.fetch_sub(1, std::memory_order_relaxed); }
};

Task<int> value_of(int v) { co_return v; }
Task<void> nothing() { co_return; }
Task<int> throws_int(std::string what) {
  throw coro_error(what);
  co_return 0;  // unreachable, makes it a coroutine
}
Task<void> throws_void() {
  throw coro_error("void");
  co_return;
}

Task<int> add_awaited(int a, int b) {
  const int x = co_await value_of(a);
  const int y = co_await value_of(b);
  co_return x + y;
}

Task<int> chain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await chain(depth - 1);
}

Task<int> chain_on(weft::Pool& pool, int depth) {
  co_await pool.schedule();  // the chain then runs on a worker (with fibers: on a fiber's small stack)
  co_return co_await chain(depth);
}

Task<int> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await weft::when_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}
int serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }
Task<int> fib_from_pool(weft::Pool& pool, int n) {
  co_await pool.schedule();
  co_return co_await fib(n);
}
// Most blocks a thread's cache keeps in one list (scheduler/lockfree/node_pool.hpp).
constexpr std::uint64_t kFrameCacheBlocks = weft::lockfree::NodeCache<weft::atomics::StdMemoryModel>::kCapacity;

// Never resumes what awaits it: the coroutine stays suspended until its frame is destroyed.
struct Forever {
  static inline std::coroutine_handle<> last;
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) noexcept { last = h; }
  void await_resume() const noexcept {}
};

// A minimal owner that starts an awaitable and can destroy the whole stack of suspended frames.
struct Driver {
  struct promise_type {
    Driver get_return_object() noexcept { return Driver{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

Task<int> suspended_forever(Tracked) {
  Tracked local;
  co_await Forever{};
  co_return 1;
}
Task<int> awaits_suspended() {
  Tracked local;
  co_return co_await suspended_forever(Tracked{});
}
Driver drive(Task<int> task) { (void)co_await std::move(task); }

TEST_CASE("a Task is lazy, runs once, and gives its value or exception") {
  bool ran = false;
  auto body = [&ran]() -> Task<int> {
    ran = true;
    co_return 7;
  };
  Task<int> task = body();
  CHECK_FALSE(ran);
  CHECK(task.valid());
  CHECK(weft::sync_wait(std::move(task)) == 7);
  CHECK(ran);
  CHECK_FALSE(task.valid());  // moved into sync_wait

  CHECK(weft::sync_wait(add_awaited(2, 3)) == 5);
  weft::sync_wait(nothing());
  CHECK_THROWS_WITH_AS(weft::sync_wait(throws_int("deep")), "deep", coro_error);
  CHECK_THROWS_AS(weft::sync_wait(throws_void()), coro_error);

  // Through several levels: the innermost exception reaches the outermost co_await.
  auto outer = []() -> Task<int> {
    auto middle = []() -> Task<int> { co_return 1 + co_await throws_int("inner"); };
    co_return 1 + co_await middle();
  };
  CHECK_THROWS_WITH_AS(weft::sync_wait(outer()), "inner", coro_error);

  // Awaiting twice, or an empty Task, is refused.
  auto twice = []() -> Task<int> {
    Task<int> t = value_of(1);
    int a = co_await t;
    int b = co_await t;  // throws std::logic_error
    co_return a + b;
  };
  CHECK_THROWS_AS(weft::sync_wait(twice()), std::logic_error);
  CHECK_THROWS_AS(weft::sync_wait(Task<int>()), std::logic_error);
  CHECK_THROWS_AS((void)weft::when_all(Task<int>(), value_of(1)).await_ready(), std::logic_error);
}

TEST_CASE("destroying a never-started or a suspended Task frees its frame") {
  Tracked::live.store(0);
  {
    Task<int> never = suspended_forever(Tracked{});
    CHECK(Tracked::live.load() == 1);  // the parameter's copy in the frame
  }
  CHECK(Tracked::live.load() == 0);
  {
    Driver driver = drive(awaits_suspended());  // starts: two frames suspended on Forever
    CHECK(Forever::last);
    CHECK(Tracked::live.load() == 4);  // two locals, the parameter, and the argument (its full expression waits)
    driver.handle.destroy();           // frees the driver's frame, the Tasks it held, and their locals
  }
  CHECK(Tracked::live.load() == 0);
  // A when_all never awaited frees its Tasks.
  { auto all = weft::when_all(suspended_forever(Tracked{}), value_of(2)); }
  CHECK(Tracked::live.load() == 0);
}

// A Task's frame comes from the block cache of the thread that makes it and goes back to the list of the thread
// that frees it (weft/task.hpp): frames made on one worker and freed on another must still come back round, not
// pile up on the freeing threads' lists. Under AddressSanitizer frames come from the heap and hold no block.
TEST_CASE("Task frames made and freed on different threads: the blocks held stay bounded") {
  on_each_pool([](weft::Pool& pool) {
    constexpr int kRounds = 20;
    const std::uint64_t before = weft::detail::future_state_blocks_held();
    std::uint64_t first = 0;
    for (int round = 0; round < kRounds; ++round) {
      CHECK(weft::sync_wait(fib_from_pool(pool, 16)) == 987);
      const std::uint64_t grown = weft::detail::future_state_blocks_held() - before;
      if (round == 0) first = grown;
      // After the first round, each thread's cache may hold up to two lists of each size class more (freed and
      // taken, NodeCache::kCapacity each) than the round left behind, but never a round's frames again.
      const std::uint64_t caches = (pool.size() + 1) * 2 * kFrameCacheBlocks * weft::detail::kBlockClasses;
      INFO("round " << round << ": " << grown << " blocks more than before (after the first round: " << first << ")");
      REQUIRE(grown <= first + caches);
    }
  });
}

TEST_CASE("a co_await chain a million deep (10,000 under sanitizers and emulation) runs in constant stack") {
  const int kDeep = deep_chain();
  CHECK(weft::sync_wait(chain(kDeep)) == kDeep);
  on_each_pool([&](weft::Pool& pool) { CHECK(weft::sync_wait(chain_on(pool, kDeep / 10)) == kDeep / 10); });
}

TEST_CASE("co_await on Futures, AsyncTasks and pool.schedule() resumes on the pool") {
  on_each_pool([&](weft::Pool& pool) {
    auto on_worker = [&pool]() -> Task<bool> {
      co_await pool.schedule();
      co_return pool.current_worker().has_value();
    };
    CHECK(weft::sync_wait(on_worker()));

    // A future not ready when awaited, then a ready one, then one that threw; values move through.
    auto futures = [&pool]() -> Task<std::string> {
      weft::Event go;
      weft::Future<std::string> slow = pool.submit([&go] {
        go.wait();
        return std::string("slow");
      });
      pool.post([&go] { go.signal(); });
      std::string a = co_await std::move(slow);
      weft::Future<int> ready = pool.submit([] { return 5; });
      ready.wait();
      const int b = co_await std::move(ready);
      co_await pool.submit([] {});  // Future<void>
      try {
        co_await pool.submit([]() -> int { throw coro_error("future"); });
      } catch (const coro_error& e) {
        a += e.what();
      }
      co_return a + std::to_string(b);
    };
    CHECK(weft::sync_wait(futures()) == "slowfuture5");

    auto asyncs = [&pool]() -> Task<int> {
      std::atomic<int> order{0};
      weft::AsyncTask a = pool.submit_after({}, [&order] { order.fetch_add(1); });
      weft::AsyncTask b = pool.submit_after({a}, [&order] { order.fetch_add(10); });
      co_await b;
      co_await b;  // the handle is copied, not consumed: awaiting it again finds it done
      weft::AsyncTask bad = pool.submit_after({}, [] { throw coro_error("async"); });
      weft::AsyncTask skipped = pool.submit_after({bad}, [] {});
      try {
        co_await skipped;  // skipped: carries bad's exception
      } catch (const coro_error&) {
        order.fetch_add(100);
      }
      co_return order.load();
    };
    CHECK(weft::sync_wait(asyncs()) == 111);

    // Coroutines suspended on futures hold no worker: the member that opens the gate still gets to run.
    weft::Event gate;
    auto waiter = [&pool, &gate]() -> Task<int> {
      co_await pool.schedule();
      co_return co_await pool.submit([&gate] {
        gate.wait();
        return 1;
      });
    };
    auto opener = [&pool, &gate]() -> Task<int> {
      co_await pool.schedule();
      gate.signal();
      co_return 0;
    };
    auto many = [&]() -> Task<int> {
      auto [a, b, c, d] = co_await weft::when_all(waiter(), waiter(), waiter(), opener());
      co_return a + b + c + d;
    };
    CHECK(weft::sync_wait(many()) == 3);
  });
}

TEST_CASE("when_all runs Tasks in parallel, gives a tuple, and rethrows the first failure after all ended") {
  on_each_pool([&](weft::Pool& pool) {
    auto tuple = [&pool]() -> Task<int> {
      co_await pool.schedule();
      auto [a, unit, s] = co_await weft::when_all(value_of(1), nothing(),
                                                  []() -> Task<std::string> { co_return "x"; }());
      static_assert(std::is_same_v<decltype(unit), std::monostate>);
      co_return a + static_cast<int>(s.size());
    };
    CHECK(weft::sync_wait(tuple()) == 2);

    const int n = weft::test::reduced_runs() ? 14 : 18;
    auto fib_on = [&pool](int k) -> Task<int> {
      co_await pool.schedule();
      co_return co_await fib(k);
    };
    CHECK(weft::sync_wait(fib_on(n)) == serial_fib(n));

    // Two members throw; the first in argument order wins, and the slow member still ended before the rethrow.
    std::atomic<bool> slow_done{false};
    auto slow = [&pool, &slow_done]() -> Task<int> {
      co_await pool.schedule();
      std::this_thread::yield();
      slow_done.store(true);
      co_return 3;
    };
    auto failing = [&]() -> Task<int> {
      co_await pool.schedule();
      auto [a, b, c] = co_await weft::when_all(slow(), throws_int("first"), throws_int("second"));
      co_return a + b + c;
    };
    CHECK_THROWS_WITH_AS(weft::sync_wait(failing()), "first", coro_error);
    CHECK(slow_done.load());

    // sync_wait over when_all directly, from a plain thread: the members start one after another here.
    auto [x, y] = weft::sync_wait(weft::when_all(value_of(4), add_awaited(1, 1)));
    CHECK(x + y == 6);
  });
}

TEST_CASE("sync_wait from a worker, spawn, and a blocking get() inside a coroutine") {
  for (const Config& config : kConfigs) {
    CAPTURE(config.threads);
    CAPTURE(config.fibers);
    std::atomic<int> errors{0};
    weft::PoolOptions options = options_of(config);
    options.on_error = [&errors](std::exception_ptr e) {
      try {
        std::rethrow_exception(e);
      } catch (const coro_error&) {
        errors.fetch_add(1);
      }
    };
    weft::Pool pool(options);

    // sync_wait inside a task: waits as Event::wait does (fiber or running other tasks), never deadlocks.
    auto inner = [&pool]() -> Task<int> {
      co_await pool.schedule();
      co_return 9;
    };
    CHECK(pool.submit([&] { return weft::sync_wait(inner()); }).get() == 9);

    // A blocking Future::get() inside the body: on a fiber it suspends the fiber (and the coroutine with it).
    auto blocking = [&pool]() -> Task<int> {
      co_await pool.schedule();
      weft::Future<int> f = pool.submit([] { return 4; });
      co_return f.get() + 1;
    };
    CHECK(weft::sync_wait(blocking()) == 5);

    // spawn: runs on a worker, nobody waits; an exception goes to on_error.
    weft::WaitGroup done;
    std::atomic<int> ran{0};
    done.add(2);
    auto ok = [&]() -> Task<void> {
      ran.fetch_add(1);
      done.done();
      co_return;
    };
    auto bad = [&]() -> Task<int> {
      co_await pool.submit([] {});
      done.done();
      throw coro_error("spawned");
      co_return 0;
    };
    weft::spawn(pool, ok());
    weft::spawn(pool, bad());
    done.wait();
    pool.wait_idle();
    pool.shutdown();
    CHECK(ran.load() == 1);
    CHECK(errors.load() == 1);
    CHECK_THROWS_AS(weft::spawn(pool, ok()), weft::pool_closed);
  }
}

TEST_CASE("a pool shut down before it resumes a coroutine: co_await throws task_dropped") {
  weft::Pool pool(weft::PoolOptions{.threads = 1});
  pool.shutdown();
  auto hop = [&pool]() -> Task<int> {
    co_await pool.schedule();
    co_return 1;
  };
  CHECK_THROWS_AS(weft::sync_wait(hop()), weft::task_dropped);
  CHECK_THROWS_AS((void)pool.schedule(weft::TaskOptions{.affinity = 5}), weft::invalid_option);
}

weft::Generator<int> iota(int from, int to) {
  for (int i = from; i < to; ++i) co_yield i;
}
weft::Generator<std::string> words(Tracked) {
  Tracked local;
  co_yield "one";
  std::string two = "two";
  co_yield two;
  throw coro_error("three");
}

static_assert(std::ranges::input_range<weft::Generator<int>>);
static_assert(std::input_iterator<weft::Generator<int>::iterator>);

TEST_CASE("Generator is a lazy input range; its exception reaches the reader; an unfinished one is freed") {
  int sum = 0;
  for (int i : iota(0, 5)) sum += i;
  CHECK(sum == 10);

  auto even = iota(0, 100) | std::views::filter([](int i) { return i % 2 == 0; }) | std::views::take(3);
  std::vector<int> got;
  std::ranges::copy(even, std::back_inserter(got));
  CHECK(got == std::vector<int>{0, 2, 4});
  auto seq = iota(3, 9);
  CHECK(*std::ranges::find(seq, 6) == 6);

  Tracked::live.store(0);
  {
    std::vector<std::string> read;
    auto gen = words(Tracked{});
    CHECK_THROWS_WITH_AS(
        [&] {
          for (const std::string& w : gen) read.push_back(w);
        }(),
        "three", coro_error);
    CHECK(read == std::vector<std::string>{"one", "two"});
    CHECK_THROWS_AS((void)gen.begin(), std::logic_error);
  }
  {
    auto gen = words(Tracked{});
    auto it = gen.begin();
    CHECK(*it == "one");
    CHECK(Tracked::live.load() == 2);
  }  // destroyed while suspended at its first co_yield
  CHECK(Tracked::live.load() == 0);
  weft::Generator<int> empty;
  CHECK(empty.begin() == empty.end());
}

}  // namespace
