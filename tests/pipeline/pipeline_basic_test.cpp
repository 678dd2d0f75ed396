// weft::TaskScope pipelines: the basic shapes (map, filter, fan-out, order, move-only items, composition).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <chrono>
#include <ranges>

#include "graph/pipeline/pipeline_run.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"
#include "tests/scope/scope_test_support.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {
namespace {

// Runs the pipeline's shared mode (hand-offs, inboxes, rings) even where the solo mode would take cheap items.
class SharedMode {
 public:
  explicit SharedMode(bool on) noexcept
      : was_(detail::pipeline::test_mode.exchange(on ? detail::pipeline::TestMode::shared
                                                     : detail::pipeline::TestMode::automatic)) {}
  SharedMode(const SharedMode&) = delete;
  SharedMode& operator=(const SharedMode&) = delete;
  ~SharedMode() { detail::pipeline::test_mode.store(was_); }

 private:
  detail::pipeline::TestMode was_;
};

void spin_for(std::chrono::microseconds how_long) {
  const auto until = std::chrono::steady_clock::now() + how_long;
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST_CASE("a pipeline of a source, a parallel stage, a filter and an in-order sink") {
  for (const bool shared : {false, true}) {
    INFO("shared mode forced: " << shared);
    const SharedMode mode(shared);
    for_each_scope_worker_count([](unsigned workers) {
      const Watchdog watchdog("pipeline basic", patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      constexpr std::uint64_t kItems = 20'000;
      auto numbers = scope.source(numbers_below(kItems));
      auto squares = scope.stage(numbers, [](std::uint64_t x) { return x * x; }, {.concurrency = 4, .capacity = 8});
      auto even = scope.stage(squares, [](std::uint64_t x) -> std::optional<std::uint64_t> {
        if (x % 2 == 0) return x;
        return std::nullopt;
      });
      std::vector<std::uint64_t> seen;
      Job<void> done = scope.sink(even, [&](std::uint64_t x) { seen.push_back(x); }, {.order = Order::Input});
      bool after = false;
      scope.then(done, [&] { after = true; });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      REQUIRE(seen.size() == kItems / 2);
      for (std::uint64_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == (2 * i) * (2 * i));
      CHECK(after);
    });
  }
}

TEST_CASE("items that turn slow and then cheap again keep their order and arrive once") {
  // Cheap items run solo on one thread; slow ones are handed off between threads; the pipeline goes from one
  // mode to the other and back twice, with a filter before the in-order sink.
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog("pipeline modes", patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    constexpr std::uint64_t kItems = 5'000;
    const auto slow = [](std::uint64_t x) { return (x >= 1'000 && x < 2'000) || (x >= 3'000 && x < 4'000); };
    auto numbers = scope.source(numbers_below(kItems));
    auto worked = scope.stage(numbers,
                              [&](std::uint64_t x) {
                                if (slow(x)) spin_for(std::chrono::microseconds(5));
                                return x;
                              },
                              {.concurrency = 4, .capacity = 4});
    auto kept = scope.stage(worked,
                            [](std::uint64_t x) -> std::optional<std::uint64_t> {
                              if (x % 7 == 3) return std::nullopt;
                              return x;
                            },
                            {.concurrency = 2});
    std::vector<std::uint64_t> seen;
    (void)scope.sink(kept, [&](std::uint64_t x) { seen.push_back(x); }, {.order = Order::Input});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    std::vector<std::uint64_t> expected;
    for (std::uint64_t x = 0; x < kItems; ++x)
      if (x % 7 != 3) expected.push_back(x);
    CHECK(seen == expected);
  });
}

TEST_CASE("under Block, a full inbox holds its producer back: capacity bounds what waits at the stage") {
  // A slow serial stage of capacity 2 after a fast source: at most 2 items wait in its inbox and 1 more, parked
  // on it, holds the source's turn; the pipeline's budget (21 here) would let the source run much further.
  for (const bool shared : {false, true}) {
    INFO("shared mode forced: " << shared);
    const SharedMode mode(shared);
    for_each_scope_worker_count([](unsigned workers) {
      const Watchdog watchdog("pipeline Block capacity", patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      constexpr std::uint64_t kItems = 300;
      std::atomic<std::uint64_t> produced{0};
      std::atomic<std::uint64_t> started{0};
      std::atomic<std::uint64_t> widest{0};
      auto numbers = scope.source([&]() -> std::optional<std::uint64_t> {
        const std::uint64_t gap = produced.load() - started.load();
        if (gap > widest.load()) widest.store(gap);
        if (produced.load() == kItems) return std::nullopt;
        return produced.fetch_add(1);
      });
      auto slow = scope.stage(numbers,
                              [&](std::uint64_t x) {
                                started.fetch_add(1);
                                spin_for(std::chrono::microseconds(20));
                                return x;
                              },
                              {.capacity = 2});
      std::uint64_t sum = 0;
      (void)scope.sink(slow, [&](std::uint64_t x) { sum += x; });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK(sum == kItems * (kItems - 1) / 2);
      CHECK(widest.load() <= 3);
    });
  }
}

TEST_CASE("a fan_out stage's range may be a view of its item") {
  // The range refers to the item (taken as const std::string&): the item must live until the range is used up.
  for (const bool shared : {false, true}) {
    INFO("shared mode forced: " << shared);
    const SharedMode mode(shared);
    for_each_scope_worker_count([](unsigned workers) {
      const Watchdog watchdog("pipeline fan_out view", patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      constexpr int kLines = 2'000;
      int line = 0;
      auto lines = scope.source([&]() -> std::optional<std::string> {
        if (line == kLines) return std::nullopt;
        ++line;
        // Long enough words that a dangling view reads freed heap memory, not a short-string buffer.
        return "first-word-of-line-" + std::to_string(line) + " second-word-of-the-line third-word-of-it";
      });
      auto words = scope.fan_out(lines,
                                 [](const std::string& s) {
                                   return s | std::views::split(' ') | std::views::transform([](auto word) {
                                            return std::string(word.begin(), word.end());
                                          });
                                 },
                                 {.concurrency = 2});
      std::size_t count = 0;
      std::size_t letters = 0;
      (void)scope.sink(words, [&](std::string w) {
        ++count;
        letters += w.size();
      });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK(count == 3 * kLines);
      std::size_t expected = 0;
      for (int i = 1; i <= kLines; ++i) {
        expected += std::string("first-word-of-line-").size() + std::to_string(i).size();
        expected += std::string("second-word-of-the-line").size() + std::string("third-word-of-it").size();
      }
      CHECK(letters == expected);
    });
  }
}

}  // namespace
}  // namespace weft::test
