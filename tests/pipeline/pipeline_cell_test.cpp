// Cells a pipeline writes and any thread reads (weft::OverwriteCell, weft::WriteOnceCell, weft/cell.hpp): an
// in-order sink leaves the last item in an OverwriteCell, run after run of a StreamGraph too; of many writers at
// once a WriteOnceCell takes exactly one value, the same for every reader; readers that wait inside the pool (on
// one worker too, with and without fibers) all finish; readers never see a torn value; bad reads and a second
// value are refused with errors saying so.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "weft/cell.hpp"
#include "weft/future.hpp"
#include "weft/stream_graph.hpp"

namespace weft::test {
namespace {

constexpr unsigned kReaders = 6;

// A value whose halves must agree: a reader that saw halves of two writes would find them apart.
struct Pair {
  std::uint64_t value = 0;
  std::uint64_t check = ~std::uint64_t{0};
  [[nodiscard]] bool whole() const noexcept { return check == ~value; }
};

TEST_CASE("an OverwriteCell written by an in-order sink ends with the last item; readers waiting in the pool finish") {
  const std::uint64_t seed = seed_for("pipeline overwrite cell");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 5'000);
  for (const bool fibers : {true, false}) {
    INFO("fibers " << fibers);
    for_each_mode_and_worker_count([&](unsigned workers) {
      const Watchdog watchdog(named("overwrite cell", workers), patience(60));
      Pool pool(PoolOptions{.threads = workers, .fibers = fibers});
      OverwriteCell<Pair> cell;
      std::atomic<unsigned> torn{0};
      std::atomic<unsigned> backwards{0};
      std::vector<Future<std::uint64_t>> readers;
      for (unsigned r = 0; r < kReaders; ++r) {
        // Posted before the pipeline runs: each waits on a worker for the first value.
        readers.push_back(pool.submit([&cell, &torn, &backwards] {
          const Pair first = cell.get();
          std::uint64_t last = first.value;
          if (!first.whole()) torn.fetch_add(1);
          for (int i = 0; i < 200; ++i) {
            const Pair now = cell.value();
            if (!now.whole()) torn.fetch_add(1);
            if (now.value < last) backwards.fetch_add(1);  // the sink writes in order: never backwards
            last = now.value;
          }
          return first.value;
        }));
      }
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(items));
      auto shuffled = scope.stage(numbers,
                                  [seed](std::uint64_t x) {
                                    random_spin(seed, x, 500);
                                    return Pair{x, ~x};
                                  },
                                  {.concurrency = kUnlimited});
      scope.sink(shuffled, cell.writer(), {.order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      for (Future<std::uint64_t>& reader : readers) CHECK(reader.get() < items);
      CHECK(torn.load() == 0);
      CHECK(backwards.load() == 0);
      CHECK(cell.value().value == items - 1);
      CHECK(cell.get().value == items - 1);
    });
  }
}

TEST_CASE("an OverwriteCell of a StreamGraph holds each run's last item; clear() empties it between runs") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("overwrite cell reused", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    OverwriteCell<std::uint64_t> last;
    OverwriteCell<std::uint64_t> seen_by_stage;
    StreamGraph pipe;
    std::uint64_t n = 0;
    auto items = pipe.source([&n](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == n) return std::nullopt;
      return i;
    });
    auto tapped = pipe.stage(items, [&seen_by_stage](std::uint64_t x) {  // a serial stage writes it too
      seen_by_stage.put(x);
      return x * 2;
    });
    pipe.sink(tapped, last.writer());
    for (std::uint64_t round = 1; round <= 4; ++round) {
      INFO("round " << round);
      n = 50 * round;
      CHECK(pipe.run(pool).wait() == RunStatus::Completed);
      CHECK(last.value() == 2 * (n - 1));
      CHECK(seen_by_stage.value() == n - 1);
      last.clear();
      CHECK_FALSE(last.has_value());
      CHECK_FALSE(last.try_get().has_value());
    }
  });
}

TEST_CASE("of many writers at once, a WriteOnceCell takes exactly one value, the same for every reader") {
  const std::uint64_t seed = seed_for("pipeline write-once cell");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 5'000);
  for (const bool fibers : {true, false}) {
    INFO("fibers " << fibers);
    for_each_mode_and_worker_count([&](unsigned workers) {
      const Watchdog watchdog(named("write-once cell", workers), patience(60));
      Pool pool(PoolOptions{.threads = workers, .fibers = fibers});
      WriteOnceCell<Pair> cell;
      std::vector<Future<const Pair*>> readers;
      for (unsigned r = 0; r < kReaders; ++r) {
        readers.push_back(pool.submit([&cell] { return &cell.get(); }));
      }
      std::atomic<std::uint64_t> won{0};
      std::atomic<std::uint64_t> winner{0};
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(items));
      scope.sink(numbers,
                 [&, seed](std::uint64_t x) {
                   random_spin(seed, x, 200);
                   if (cell.try_put(Pair{x, ~x})) {
                     won.fetch_add(1);
                     winner.store(x);
                   }
                 },
                 {.concurrency = kUnlimited});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK(won.load() == 1);
      REQUIRE(cell.has_value());
      CHECK(cell.value().value == winner.load());
      CHECK(cell.value().whole());
      for (Future<const Pair*>& reader : readers) CHECK(reader.get() == &cell.value());  // the one value
      CHECK(cell.try_get() == &cell.value());
      CHECK_FALSE(cell.try_put(Pair{items, ~items}));  // late: refused, the value unchanged
      CHECK(cell.value().value == winner.load());
    });
  }
}

TEST_CASE("a reader waiting inside the pipeline's own stage for a value its sink writes finishes") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("cell read in a stage", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    WriteOnceCell<std::uint64_t> first;
    std::atomic<std::uint64_t> read{~std::uint64_t{0}};
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(40));
    auto waited = scope.stage(numbers,
                              [&](std::uint64_t x) {
                                if (x == 30) read.store(first.get());  // items 0 .. 29 reach the sink meanwhile
                                return x;
                              },
                              {.concurrency = 2});
    scope.sink(waited, first.writer());
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK(read.load() == first.value());
  });
}

TEST_CASE("bad reads and a second value are refused, saying what was wrong; timed waits return empty") {
  OverwriteCell<int> latest;
  check_throws_naming<std::logic_error>([&] { (void)latest.value(); },
                                        {"weft::OverwriteCell::value", "holds no value", "get()"});
  CHECK_FALSE(latest.get_for(std::chrono::milliseconds(5)).has_value());
  latest.put(1);
  latest.put(2);
  CHECK(latest.value() == 2);
  CHECK(latest.get_for(std::chrono::milliseconds(5)) == std::optional<int>(2));
  CHECK(*latest.get_shared() == 2);
  latest.clear();
  check_throws_naming<std::logic_error>([&] { (void)latest.value(); },
                                        {"weft::OverwriteCell::value", "clear() came after the last put"});

  WriteOnceCell<std::string> once;
  check_throws_naming<std::logic_error>([&] { (void)once.value(); },
                                        {"weft::WriteOnceCell::value", "holds no value yet"});
  CHECK(once.get_for(std::chrono::milliseconds(5)) == nullptr);
  CHECK(once.try_get() == nullptr);
  once.put("first");
  check_throws_naming<std::logic_error>([&] { once.put("second"); },
                                        {"weft::WriteOnceCell::put", "holds a value already", "try_put()"});
  CHECK_FALSE(once.try_put("third"));
  CHECK(once.value() == "first");
  CHECK(once.get() == "first");
  CHECK(*once.get_for(std::chrono::milliseconds(5)) == "first");
}

}  // namespace
}  // namespace weft::test
