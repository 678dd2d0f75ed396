// A pipeline stopped by an exception thrown at a random item in a random place (the source, a stage, a fan-out
// stage's callable, its range while it hands out elements, the sink): run_and_wait() rethrows the first
// exception, the sink's job throws it too, jobs after it are cancelled, every item made is destroyed, and
// nothing hangs.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <ranges>
#include <string>
#include <thread>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// Where an exception is thrown.
enum class Site : int { source, stage, fan, range, after_fan, sink, count };

const char* site_name(Site site) {
  switch (site) {
    case Site::source:
      return "source";
    case Site::stage:
      return "stage";
    case Site::fan:
      return "fan";
    case Site::range:
      return "range";
    case Site::after_fan:
      return "after_fan";
    case Site::sink:
      return "sink";
    case Site::count:
      break;
  }
  return "?";
}

constexpr std::uint64_t kErrorFanWidth = 3;

// The throws of one round: at most one per site, at the given item (an element for range, after_fan and sink:
// input * kErrorFanWidth + index).
struct Throws {
  std::optional<std::uint64_t> at[static_cast<int>(Site::count)];
  void maybe_throw(Site site, std::uint64_t item) const {
    const auto& when = at[static_cast<int>(site)];
    if (when && *when == item) {
      throw StageFailure(std::string("thrown by ") + site_name(site) + " at item " + std::to_string(item));
    }
  }
  [[nodiscard]] bool is_one_of(const std::string& message) const {
    for (int s = 0; s < static_cast<int>(Site::count); ++s) {
      if (at[s] && message == std::string("thrown by ") + site_name(static_cast<Site>(s)) + " at item " +
                                  std::to_string(*at[s])) {
        return true;
      }
    }
    return false;
  }
};

// source (counted inputs) -> parallel stage -> fan-out (a lazy range of counted elements) -> Input stage ->
// parallel sink, with the throws of `throws`; checks how the run ends.
void run_throwing(unsigned workers, std::uint64_t inputs, const Throws& throws, StageOptions fan_options) {
  Census input_census;
  Census element_census;
  {
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::uint64_t next = 0;
    auto source = scope.source([&]() -> std::optional<Counted> {
      if (next == inputs) return std::nullopt;
      throws.maybe_throw(Site::source, next);
      return Counted(input_census, next++);
    });
    auto staged = scope.stage(source,
                              [&throws](Counted c) {
                                throws.maybe_throw(Site::stage, c.value());
                                return c;
                              },
                              {.concurrency = 3, .capacity = 2});
    auto elements = scope.fan_out(
        staged,
        [&throws, &element_census](Counted c) {
          throws.maybe_throw(Site::fan, c.value());
          const std::uint64_t base = c.value() * kErrorFanWidth;
          return std::views::iota(std::uint64_t{0}, kErrorFanWidth) |
                 std::views::transform([&throws, &element_census, base](std::uint64_t j) {
                   throws.maybe_throw(Site::range, base + j);
                   return Counted(element_census, base + j);
                 });
        },
        fan_options);
    auto ordered = scope.stage(elements,
                               [&throws](Counted c) {
                                 throws.maybe_throw(Site::after_fan, c.value());
                                 return c;
                               },
                               {.capacity = 2, .order = Order::Input});
    std::atomic<std::uint64_t> received{0};
    Job<void> done = scope.sink(ordered,
                                [&](Counted c) {
                                  throws.maybe_throw(Site::sink, c.value());
                                  received.fetch_add(1, std::memory_order_relaxed);
                                },
                                {.concurrency = 2});
    Job<void> after = scope.then(done, [] {});
    Job<int> other = scope.submit([] { return 1; });
    Job<int> both = scope.when_all({done, AnyJob(other)}, [] { return 2; });

    std::string message;
    try {
      static_cast<void>(scope.run_and_wait());
      FAIL_CHECK("run_and_wait() did not throw");
    } catch (const StageFailure& e) {
      message = e.what();
    }
    INFO("rethrown: " << message);
    CHECK(throws.is_one_of(message));
    CHECK(check_throws_naming<StageFailure>([&] { done.get(); }, {}) == message);
    CHECK(check_throws_naming<StageFailure>([&] { static_cast<void>(scope.wait()); }, {}) == message);
    CHECK_THROWS_AS(after.get(), job_cancelled);
    CHECK_THROWS_AS(both.get(), job_cancelled);
    CHECK(received.load() < inputs * kErrorFanWidth);
  }
  check_balanced(input_census);
  check_balanced(element_census);
}

TEST_CASE("an exception at a random item in a random place stops the pipeline and is rethrown") {
  const std::uint64_t seed = seed_for("pipeline random exception");
  std::mt19937_64 random(seed);
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 20 : 300);
  constexpr std::uint64_t kInputs = 400;
  const StageOptions fans[] = {{}, {.concurrency = 3, .capacity = 1}, {.capacity = 1, .order = Order::Input}};
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("random exceptions", workers), patience(120));
    for (std::uint64_t round = 0; round < rounds; ++round) {
      Throws throws;
      const auto site = static_cast<int>(random() % static_cast<int>(Site::count));
      const bool element = site >= static_cast<int>(Site::range);
      throws.at[site] = random() % (element ? kInputs * kErrorFanWidth : kInputs);
      // One round in three adds a second throw elsewhere: either may be the one rethrown.
      if (round % 3 == 2) {
        const auto other = static_cast<int>(random() % static_cast<int>(Site::count));
        if (!throws.at[other]) {
          throws.at[other] = random() % (other >= static_cast<int>(Site::range) ? kInputs * kErrorFanWidth : kInputs);
        }
      }
      INFO("round " << round << ", site " << std::string(site_name(static_cast<Site>(site))) << " at item "
                    << *throws.at[site]);
      run_throwing(workers, kInputs, throws, fans[round % 3]);
    }
  });
}

TEST_CASE("an exception at the first and at the last item of each place") {
  constexpr std::uint64_t kInputs = 50;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("edge exceptions", workers), patience(60));
    for (int site = 0; site < static_cast<int>(Site::count); ++site) {
      const bool element = site >= static_cast<int>(Site::range);
      for (const std::uint64_t item : {std::uint64_t{0}, (element ? kInputs * kErrorFanWidth : kInputs) - 1}) {
        INFO("site " << std::string(site_name(static_cast<Site>(site))) << " at item " << item);
        Throws throws;
        throws.at[site] = item;
        run_throwing(workers, kInputs, throws, {.concurrency = 2, .capacity = 1});
      }
    }
  });
}

TEST_CASE("exceptions at once in one pipeline: the sink's job and wait() report the same one") {
  // The first `workers` items meet in a stage and throw together, so that their exceptions race to be the
  // pipeline's first. Whichever wins, the sink's job must fail with the one wait() rethrows. Needs a second
  // worker (the first item waits in the stage for the others); the shared mode is forced, as in the automatic
  // mode the first item's carrier keeps the source's turn and the others would never come.
  const ForcedMode shared(TestMode::shared);
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 300 : 5'000);
  for (const unsigned workers : {2u, 4u, 8u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("exceptions at once", workers), patience(120));
    Pool pool(PoolOptions{.threads = workers});
    std::uint64_t mismatched = 0;
    std::string example;
    for (std::uint64_t round = 0; round < rounds; ++round) {
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(100));
      std::atomic<unsigned> met{0};
      auto staged = scope.stage(numbers,
                                [&](std::uint64_t x) {
                                  if (x < workers) {
                                    met.fetch_add(1);
                                    while (met.load() < workers) std::this_thread::yield();
                                    throw StageFailure("item " + std::to_string(x));
                                  }
                                  return x;
                                },
                                {.concurrency = kUnlimited});
      Job<void> done = scope.sink(staged, [](std::uint64_t) {});
      std::string rethrown;
      try {
        static_cast<void>(scope.run_and_wait());
      } catch (const StageFailure& e) {
        rethrown = e.what();
      }
      std::string from_job;
      try {
        done.get();
      } catch (const StageFailure& e) {
        from_job = e.what();
      }
      if (rethrown != from_job && mismatched++ == 0) example = "wait(): " + rethrown + ", job: " + from_job;
    }
    INFO("rounds where they differ: " << mismatched << " of " << rounds << ", e.g. " << example);
    CHECK(mismatched == 0);
  }
}

TEST_CASE("a stage that calls its own scope's wait() gets would_deadlock; catching it, the run still completes") {
  // The refused wait must leave the run as it found it: every item still reaches the sink, exactly once.
  constexpr std::uint64_t kItems = 100;
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 20 : 100);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("a stage waiting for its own scope", workers), patience(120));
    Pool pool(PoolOptions{.threads = workers});
    for (std::uint64_t round = 0; round < rounds; ++round) {
      INFO("round " << round);
      TaskScope scope{pool};
      std::atomic<std::uint64_t> refused{0};
      std::atomic<std::uint64_t> other_errors{0};
      // The scope counts as running once run() returned (before, wait() says it was not run): the source
      // starts then.
      std::atomic<bool> run_returned{false};
      auto numbers = scope.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
        while (!run_returned.load()) std::this_thread::yield();
        if (next == kItems) return std::nullopt;
        return next++;
      });
      auto staged = scope.stage(numbers, [&](std::uint64_t x) {
        try {
          (void)scope.wait();
        } catch (const would_deadlock&) {
          refused.fetch_add(1, std::memory_order_relaxed);
        } catch (...) {
          other_errors.fetch_add(1, std::memory_order_relaxed);
        }
        return x;
      });
      std::vector<std::atomic<std::uint8_t>> seen(kItems);
      (void)scope.sink(staged, [&](std::uint64_t x) { seen[x].fetch_add(1, std::memory_order_relaxed); });
      scope.run();
      run_returned.store(true);
      CHECK(scope.wait() == RunStatus::Completed);
      CHECK(refused.load() == kItems);
      CHECK(other_errors.load() == 0);
      std::uint64_t once = 0;
      for (const auto& count : seen) once += count.load() == 1 ? 1 : 0;
      CHECK(once == kItems);
    }
  });
}

}  // namespace
}  // namespace weft::test
