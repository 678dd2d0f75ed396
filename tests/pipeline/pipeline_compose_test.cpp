// Pipelines among other work: a pipeline inside a pipeline stage (its own TaskScope on the same pool, waited
// for with run_and_wait, even on one worker), several pipelines in one scope, a pipeline on a pool whose every
// worker is inside another pipeline's stage; a pipeline after jobs (source(weft::after(jobs...), f)), jobs after
// a pipeline (then, when_all on its sink's job), one pipeline after another; and the priorities of StageOptions
// (one worker, where the order the pool takes tasks in shows them).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// Runs a small pipeline on `pool` in a TaskScope of its own and returns the sum of (i * 3) for i in [0, n).
std::uint64_t inner_pipeline(Pool& pool, std::uint64_t n) {
  TaskScope scope{pool};
  auto numbers = scope.source(numbers_below(n));
  auto tripled = scope.stage(numbers, [](std::uint64_t x) { return x * 3; }, {.concurrency = 2, .capacity = 1});
  std::atomic<std::uint64_t> sum{0};
  Job<void> done = scope.sink(tripled, [&](std::uint64_t x) { sum.fetch_add(x, std::memory_order_relaxed); },
                              {.concurrency = 2});
  const RunStatus status = scope.run_and_wait();
  if (status != RunStatus::Completed) throw StageFailure("the inner pipeline did not complete");
  done.get();
  return sum.load(std::memory_order_relaxed);
}

[[nodiscard]] std::uint64_t inner_expected(std::uint64_t n) { return n == 0 ? 0 : 3 * n * (n - 1) / 2; }

TEST_CASE("a stage runs a pipeline of its own on the same pool and waits for it (one worker too)") {
  const std::uint64_t outer = stress_count(weft::test::reduced_runs() ? 40 : 300);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const unsigned concurrency : {1u, 4u, kUnlimited}) {
      INFO("outer stage concurrency " << concurrency);
      const Watchdog watchdog(named("nested pipeline", workers), patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(outer));
      auto sums = scope.stage(numbers,
                              [&pool](std::uint64_t x) {
                                return std::pair{x, inner_pipeline(pool, x % 64)};
                              },
                              {.concurrency = concurrency, .capacity = 2});
      std::uint64_t wrong = 0;
      std::uint64_t seen = 0;
      Job<void> done = scope.sink(sums,
                                  [&](std::pair<std::uint64_t, std::uint64_t> p) {
                                    if (p.second != inner_expected(p.first % 64)) ++wrong;
                                    ++seen;
                                  },
                                  {.order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      CHECK(seen == outer);
      CHECK(wrong == 0);
    }
  });
}

TEST_CASE("an exception inside a nested pipeline fails the outer one") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("nested exception", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(100));
    auto nested = scope.stage(numbers, [&pool](std::uint64_t x) {
      TaskScope inner{pool};
      bool given = false;
      auto one = inner.source([&]() -> std::optional<std::uint64_t> {
        if (std::exchange(given, true)) return std::nullopt;
        return x;
      });
      std::uint64_t out = 0;
      Job<void> done = inner.sink(one, [&](std::uint64_t y) {
        if (y == 37) throw StageFailure("inner failure at 37");
        out = y;
      });
      static_cast<void>(inner.run_and_wait());  // rethrows the inner failure, which fails this stage
      done.get();
      return out;
    });
    Job<void> done = scope.sink(nested, [](std::uint64_t) {});
    CHECK_THROWS_WITH_AS(scope.run_and_wait(), "inner failure at 37", StageFailure);
    CHECK_THROWS_WITH_AS(done.get(), "inner failure at 37", StageFailure);
  });
}

TEST_CASE("several independent pipelines in one scope, beside plain jobs") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 20'000);
  constexpr int kPipelines = 6;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("several pipelines", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::vector<std::uint64_t> next(kPipelines, 0);
    std::vector<std::uint64_t> sums(kPipelines, 0);
    std::vector<std::uint64_t> last(kPipelines, 0);
    std::vector<bool> ordered(kPipelines, true);
    std::vector<Job<void>> dones;
    for (int p = 0; p < kPipelines; ++p) {
      const auto k = static_cast<std::size_t>(p);
      auto numbers = scope.source(
          [&next, k, items]() -> std::optional<std::uint64_t> {
            if (next[k] == items) return std::nullopt;
            return next[k]++;
          },
          {.name = "pipeline #" + std::to_string(p)});
      auto scaled = scope.stage(numbers, [p](std::uint64_t x) { return x * static_cast<std::uint64_t>(p + 1); },
                                {.concurrency = static_cast<unsigned>(p + 1),
                                 .capacity = static_cast<std::size_t>(p + 1)});
      dones.push_back(scope.sink(scaled,
                                 [&sums, &last, &ordered, k](std::uint64_t x) {
                                   if (sums[k] != 0 && x <= last[k]) ordered[k] = false;
                                   last[k] = x;
                                   sums[k] += x;
                                 },
                                 {.order = Order::Input}));
      scope.submit([] { busy_work(1'000); });
    }
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    for (int p = 0; p < kPipelines; ++p) {
      INFO("pipeline #" << p);
      const auto k = static_cast<std::size_t>(p);
      CHECK_NOTHROW(dones[k].get());
      CHECK(sums[k] == static_cast<std::uint64_t>(p + 1) * items * (items - 1) / 2);
      CHECK(ordered[k]);
    }
  });
}

TEST_CASE("a pipeline on a pool whose every worker is inside another pipeline's stage") {
  // An outer pipeline's stage holds each worker (a barrier: each waits until every worker is inside one), then
  // each runs an inner pipeline on the same pool and waits for it: only those waiting workers can run it.
  // The shared mode is forced: in the automatic mode a cheap item's carrier keeps the source's turn until the
  // item has gone through, so the first item at the barrier would hold the source, and no other item came.
  const ForcedMode shared(TestMode::shared);
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 3 : 20);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("busy pool", workers), patience(120));
    // Both ways: without fibers only the waiting workers can run the inner pipelines, on their stacks; with
    // fibers the waits suspend, and a woken worker that resumes one must still hand over its search (this case
    // hung on that once: every worker asleep, one spinning at the barrier).
    for (const bool fibers : {true, false}) {
      INFO("fibers = " << fibers);
      Pool pool(PoolOptions{.threads = workers, .fibers = fibers});
      for (std::uint64_t round = 0; round < rounds; ++round) {
        TaskScope scope{pool};
        const std::uint64_t items = 3 * workers;
        auto numbers = scope.source(numbers_below(items));
        std::atomic<unsigned> inside{0};
        auto sums = scope.stage(numbers,
                                [&](std::uint64_t x) {
                                  // Only workers count: the test thread, waiting from outside, may run the first item
                                  // itself.
                                  if (pool.current_worker().has_value() && inside.fetch_add(1) < workers) {
                                    while (inside.load() < workers) std::this_thread::yield();
                                  }
                                  return std::pair{x, inner_pipeline(pool, 50 + x)};
                                },
                                {.concurrency = kUnlimited, .capacity = 1});
        std::uint64_t wrong = 0;
        std::uint64_t seen = 0;
        Job<void> done = scope.sink(sums, [&](std::pair<std::uint64_t, std::uint64_t> p) {
          if (p.second != inner_expected(50 + p.first)) ++wrong;
          ++seen;
        });
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        CHECK_NOTHROW(done.get());
        CHECK(seen == items);
        CHECK(wrong == 0);
      }
    }
  });
}

TEST_CASE("source(weft::after(...)): a pipeline starts after jobs, and reads what they made") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("source after", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::vector<std::uint64_t> input;
    std::vector<std::uint64_t> doubled(1'000, 0);
    auto fill = scope.submit([&] {
      input.resize(1'000);
      std::iota(input.begin(), input.end(), std::uint64_t{0});
    });
    auto scale = scope.parallel_for(weft::after(fill), std::size_t{0}, doubled.size(),
                                    [&](std::size_t i) { doubled[i] = 2 * i; });
    std::size_t at = 0;
    auto numbers = scope.source(weft::after(fill, scale), [&]() -> std::optional<std::uint64_t> {
      if (at == input.size()) return std::nullopt;
      const std::size_t i = at++;
      return input[i] + doubled[i];
    });
    std::uint64_t sum = 0;
    Job<void> done = scope.sink(numbers, [&](std::uint64_t x) { sum += x; });
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    CHECK(sum == 3 * 999 * 1'000 / 2);
  });
}

TEST_CASE("jobs after a pipeline: then, when_all with its sink's job, and another pipeline after it") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("after a pipeline", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(500));
    auto squares = scope.stage(numbers, [](std::uint64_t x) { return x * x; }, {.concurrency = 4});
    std::vector<std::uint64_t> collected;
    Job<void> first = scope.sink(squares, [&](std::uint64_t x) { collected.push_back(x); }, {.order = Order::Input});

    // then: the sink's job has finished, so everything it collected is there.
    auto count = scope.then(first, [&] { return collected.size(); });
    auto other = scope.submit([] { return std::uint64_t{7}; });
    // when_all over jobs of different types, and over a tuple taking the values of those that have one.
    auto both = scope.when_all({first, AnyJob(other)}, [&] { return collected.back(); });
    auto tupled = scope.when_all(std::tuple{first, other}, [&](std::uint64_t seven) { return collected[2] + seven; });

    // A second pipeline reads what the first one collected.
    std::size_t at = 0;
    auto again = scope.source(weft::after(first), [&]() -> std::optional<std::uint64_t> {
      if (at == collected.size()) return std::nullopt;
      return collected[at++];
    });
    std::uint64_t sum = 0;
    Job<void> second = scope.sink(again, [&](std::uint64_t x) { sum += x; });
    auto end = scope.then(second, [&] { return sum; });

    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK(count.get() == 500);
    CHECK(both.get() == 499 * 499);
    CHECK(tupled.get() == 4 + 7);
    std::uint64_t expected = 0;
    for (std::uint64_t x = 0; x < 500; ++x) expected += x * x;
    CHECK(end.get() == expected);
  });
}

TEST_CASE("a failed job before source(weft::after(...)): the pipeline never starts, its sink's job is cancelled") {
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("source after a failure", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto bad = scope.submit([]() -> int { throw StageFailure("before the pipeline"); });
    std::atomic<bool> called{false};
    auto numbers = scope.source(weft::after(bad), [&]() -> std::optional<int> {
      called.store(true);
      return std::nullopt;
    });
    Job<void> done = scope.sink(numbers, [](int) {});
    auto after = scope.then(done, [] {});
    CHECK_THROWS_WITH_AS(scope.run_and_wait(), "before the pipeline", StageFailure);
    CHECK_FALSE(called.load());
    CHECK_THROWS_AS(done.get(), job_cancelled);
    CHECK_THROWS_AS(after.get(), job_cancelled);
  });
}

// What ran, in order, on a one-worker pool.
class Log {
 public:
  void add(std::string event) {
    const std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  [[nodiscard]] std::vector<std::string> events() {
    const std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> events_;
};

[[nodiscard]] std::string joined(const std::vector<std::string>& events) {
  std::string out;
  for (const std::string& e : events) out += e + " ";
  return out;
}

// Runs the scope without the test thread's help (wait() on an outside thread may run the roots itself), so the
// one worker takes every task in the pool's order. The shared mode is forced, so that the source's turn and the
// items go to tasks of their stages' priorities (the solo mode would run them all on one task).
void run_on_the_worker(TaskScope& scope, const Job<void>& last) {
  const ForcedMode shared(TestMode::shared);
  scope.run();
  while (!last.ready()) std::this_thread::yield();
  CHECK(scope.wait() == RunStatus::Completed);
}

TEST_CASE("priorities, one worker: a High pipeline's job and tasks all go before a Low one's") {
  const Watchdog watchdog("pipeline priorities", patience(60));
  Pool pool(PoolOptions{.threads = 1});
  TaskScope scope{pool};
  Log log;
  std::vector<Job<void>> dones;
  for (const Priority priority : {Priority::Low, Priority::High}) {  // the Low one first: FIFO would favour it
    const std::string letter = priority == Priority::High ? "H" : "L";
    auto next = std::make_shared<int>(0);
    auto numbers = scope.source(
        [next]() -> std::optional<int> {
          if (*next == 20) return std::nullopt;
          return (*next)++;
        },
        {.name = letter, .priority = priority});
    auto staged = scope.stage(numbers,
                              [&log, letter](int x) {
                                log.add(letter + "s" + std::to_string(x));
                                return x;
                              },
                              {.concurrency = 2, .capacity = 1, .priority = priority});
    dones.push_back(scope.sink(staged, [&log, letter](int x) { log.add(letter + "k" + std::to_string(x)); },
                               {.capacity = 1, .priority = priority}));
  }
  auto last = scope.when_all({AnyJob(dones[0]), AnyJob(dones[1])}, [] {});
  run_on_the_worker(scope, last);
  const std::vector<std::string> events = log.events();
  INFO("events: " << joined(events));
  REQUIRE(events.size() == 80);
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i][0] == (i < 40 ? 'H' : 'L'));
}

// One input, fanned out to 8 elements for a serial stage X; the source is called a second time (and ends) by a
// task spawned when the first input left it. On one worker, the order of that second call ("S2") and of X's
// elements after the first ("X1" ...) shows which of their tasks the pool took first.
// "<prefix><n>", appended rather than prefix + std::to_string(n): g++ 12 at -O3 without LTO warns falsely on the
// latter (-Wrestrict, GCC bug 105329), which -Werror turns into an error.
std::string event(const char* prefix, int n) {
  std::string text = prefix;
  text += std::to_string(n);
  return text;
}

std::vector<std::string> fan_priority_events(Priority source, Priority x_priority) {
  Pool pool(PoolOptions{.threads = 1});
  TaskScope scope{pool};
  Log log;
  int calls = 0;
  auto one = scope.source(
      [&]() -> std::optional<int> {
        log.add(event("S", ++calls));
        if (calls > 1) return std::nullopt;
        return 8;
      },
      {.priority = source});
  auto elements = scope.fan_out(one, [](int n) {
    std::vector<int> out(static_cast<std::size_t>(n));
    std::iota(out.begin(), out.end(), 0);
    return out;
  });
  auto x = scope.stage(elements,
                       [&](int e) {
                         log.add(event("X", e));
                         return e;
                       },
                       {.capacity = 64, .priority = x_priority});
  Job<void> done = scope.sink(x, [](int) {});
  run_on_the_worker(scope, done);
  return log.events();
}

[[nodiscard]] std::size_t position(const std::vector<std::string>& events, const std::string& event) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i] == event) return i;
  }
  return events.size();
}

TEST_CASE("priorities, one worker: a stage's tasks and the source's go in the order of their priorities") {
  const Watchdog watchdog("stage priorities", patience(60));
  {
    // The source (Normal) before X's tasks (Low).
    const auto events = fan_priority_events(Priority::Normal, Priority::Low);
    INFO("source Normal, X Low: " << joined(events));
    CHECK(position(events, "S2") < position(events, "X1"));
  }
  {
    // The source (High) before X's tasks (Normal).
    const auto events = fan_priority_events(Priority::High, Priority::Normal);
    INFO("source High, X Normal: " << joined(events));
    CHECK(position(events, "S2") < position(events, "X1"));
  }
  {
    // X's tasks (High) before the source (Low): every element before the source's second call.
    const auto events = fan_priority_events(Priority::Low, Priority::High);
    INFO("source Low, X High: " << joined(events));
    CHECK(position(events, "S2") > position(events, "X7"));
  }
}

}  // namespace
}  // namespace weft::test
