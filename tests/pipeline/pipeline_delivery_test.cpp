// Pipelines deliver every item exactly once with Overflow::Block: no item lost, none delivered twice, whatever
// the chain's shape (serial and parallel stages, Order::Any and Order::Input, capacities down to 1, filters,
// fan-out stages, one fan-out after another), and items move through it without a copy (std::unique_ptr).
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// One middle stage of a chain: its options, and whether it filters (then it keeps the items whose mix with
// its index is not a multiple of 4).
struct Middle {
  StageOptions options;
  bool filter = false;
};

struct Shape {
  const char* name;
  std::vector<Middle> middle;
  StageOptions sink;
};

[[nodiscard]] bool kept_by(std::uint64_t stage, std::uint64_t item) noexcept { return mix(stage, item) % 4 != 0; }

std::vector<Shape> shapes() {
  return {
      {"source -> sink", {}, {}},
      {"parallel map -> serial sink, capacity 1", {{{.concurrency = 4, .capacity = 2}}}, {.capacity = 1}},
      {"unlimited map -> serial Input map -> parallel sink",
       {{{.concurrency = kUnlimited, .capacity = 1}}, {{.capacity = 3, .order = Order::Input}}},
       {.concurrency = 3}},
      {"serial chain of capacity 1", {{{.capacity = 1}}, {{.capacity = 1}}, {{.capacity = 1}}}, {.capacity = 1}},
      {"parallel Input stages -> parallel Input sink",
       {{{.concurrency = 4, .capacity = 1, .order = Order::Input}}, {{.concurrency = 2, .order = Order::Input}}},
       {.concurrency = 2, .order = Order::Input}},
      {"filters around a parallel map -> Input sink",
       {{{.concurrency = 1, .capacity = 2}, true},
        {{.concurrency = 8, .capacity = 1}},
        {{.concurrency = 2, .capacity = 4}, true},
        {{.capacity = 2, .order = Order::Input}, true}},
       {.capacity = 1, .order = Order::Input}},
      {"unlimited stages everywhere",
       {{{.concurrency = kUnlimited, .capacity = 1}, true}, {{.concurrency = kUnlimited, .capacity = 1}}},
       {.concurrency = kUnlimited, .capacity = 1}},
  };
}

void run_shape(const Shape& shape, unsigned workers, std::uint64_t seed, std::uint64_t items) {
  INFO("shape: " << std::string(shape.name));
  Pool pool(PoolOptions{.threads = workers});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  Stream<std::uint64_t> stream = scope.source([&]() -> std::optional<std::uint64_t> {
    if (next == items) return std::nullopt;
    return next++;
  });
  for (std::uint64_t j = 0; j < shape.middle.size(); ++j) {
    const Middle& m = shape.middle[j];
    if (m.filter) {
      stream = scope.stage(
          stream,
          [seed, j](std::uint64_t x) -> std::optional<std::uint64_t> {
            random_spin(seed + j, x, 64);
            if (kept_by(j, x)) return x;
            return std::nullopt;
          },
          m.options);
    } else {
      stream = scope.stage(
          stream,
          [seed, j](std::uint64_t x) {
            random_spin(seed + j, x, 64);
            return x;
          },
          m.options);
    }
  }
  RunCounts arrived(items);
  Job<void> done = scope.sink(
      stream, [&](std::uint64_t x) { arrived.ran(x); }, shape.sink);
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  CHECK_NOTHROW(done.get());
  CHECK(scope.stats().dropped == 0);
  // Every item the filters keep arrives once; every other never.
  std::uint64_t wrong = 0;
  std::uint64_t first_wrong = items;
  std::uint64_t delivered = 0;
  for (std::uint64_t x = 0; x < items; ++x) {
    bool kept = true;
    for (std::uint64_t j = 0; j < shape.middle.size(); ++j) {
      if (shape.middle[j].filter && !kept_by(j, x)) kept = false;
    }
    const unsigned expected = kept ? 1 : 0;
    delivered += arrived.count(x);
    if (arrived.count(x) != expected && wrong++ == 0) first_wrong = x;
  }
  INFO("items = " << items << ", delivered = " << delivered << ", wrong count = " << wrong << " (first #" << first_wrong
                  << ", arrived " << (first_wrong < items ? arrived.count(first_wrong) : 0) << ")");
  CHECK(wrong == 0);
}

TEST_CASE("every item reaches the sink exactly once, whatever the chain's shape (Overflow::Block)") {
  const std::uint64_t seed = seed_for("pipeline delivery shapes");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 3'000 : 50'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const Shape& shape : shapes()) {
      const Watchdog watchdog(named(shape.name, workers), patience(60));
      run_shape(shape, workers, seed, items);
    }
  });
}

// The expected (input, index) pairs of a fan-out: input i emits i % 5 elements (so some emit none).
constexpr std::uint64_t kFanWidth = 5;
[[nodiscard]] std::uint64_t fan_size(std::uint64_t input) noexcept { return input % kFanWidth; }

std::vector<std::uint64_t> fan_of(std::uint64_t input) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t j = 0; j < fan_size(input); ++j) out.push_back(input * kFanWidth + j);
  return out;
}

void check_fan_pairs(const RunCounts& arrived, std::uint64_t inputs) {
  std::uint64_t wrong = 0;
  std::uint64_t first_wrong = 0;
  for (std::uint64_t i = 0; i < inputs; ++i) {
    for (std::uint64_t j = 0; j < kFanWidth; ++j) {
      const unsigned expected = j < fan_size(i) ? 1 : 0;
      if (arrived.count(i * kFanWidth + j) != expected && wrong++ == 0) first_wrong = i * kFanWidth + j;
    }
  }
  INFO("wrong (input, index) pairs = " << wrong << ", first: (" << first_wrong / kFanWidth << ", "
                                       << first_wrong % kFanWidth << ") arrived " << arrived.count(first_wrong));
  CHECK(wrong == 0);
}

TEST_CASE("a fan-out stage: every (input, index) pair arrives exactly once") {
  const std::uint64_t seed = seed_for("pipeline delivery fan-out");
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 1'000 : 25'000);
  struct FanShape {
    const char* name;
    StageOptions before;
    StageOptions fan;
    StageOptions after;
    StageOptions sink;
  };
  const FanShape fan_shapes[] = {
      {"serial fan-out", {}, {}, {}, {}},
      {"parallel fan-out, capacity 1",
       {.concurrency = 4, .capacity = 1},
       {.concurrency = 3, .capacity = 1},
       {.concurrency = 4, .capacity = 1},
       {.capacity = 1}},
      {"Input fan-out -> Input stage -> Input sink",
       {.concurrency = kUnlimited},
       {.capacity = 2, .order = Order::Input},
       {.concurrency = 2, .capacity = 1, .order = Order::Input},
       {.capacity = 1, .order = Order::Input}},
      {"unlimited fan-out -> unlimited sink",
       {.capacity = 1},
       {.concurrency = kUnlimited, .capacity = 1},
       {.concurrency = kUnlimited, .capacity = 1},
       {.concurrency = kUnlimited, .capacity = 1}},
  };
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const FanShape& shape : fan_shapes) {
      INFO("shape: " << std::string(shape.name));
      const Watchdog watchdog(named(shape.name, workers), patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(inputs));
      auto spun = scope.stage(
          numbers,
          [seed](std::uint64_t x) {
            random_spin(seed, x, 64);
            return x;
          },
          shape.before);
      auto elements = scope.fan_out(
          spun, [](std::uint64_t x) { return fan_of(x); }, shape.fan);
      auto after = scope.stage(
          elements,
          [seed](std::uint64_t e) {
            random_spin(seed + 1, e, 64);
            return e;
          },
          shape.after);
      RunCounts arrived(inputs * kFanWidth);
      Job<void> done = scope.sink(
          after, [&](std::uint64_t e) { arrived.ran(e); }, shape.sink);
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      check_fan_pairs(arrived, inputs);
    }
  });
}

TEST_CASE("two fan-out stages in a row: every (input, index, index) triple arrives exactly once") {
  const std::uint64_t seed = seed_for("pipeline delivery double fan-out");
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 500 : 12'000);
  constexpr std::uint64_t kOuter = 4;
  constexpr std::uint64_t kInner = 3;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("double fan-out", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(inputs));
    auto outer = scope.fan_out(numbers,
                               [](std::uint64_t x) {
                                 std::vector<std::uint64_t> out;
                                 for (std::uint64_t j = 0; j < x % (kOuter + 1); ++j) out.push_back(x * kOuter + j);
                                 return out;
                               },
                               {.concurrency = 2, .capacity = 1});
    auto inner = scope.fan_out(outer,
                               [seed](std::uint64_t y) {
                                 random_spin(seed, y, 64);
                                 std::vector<std::uint64_t> out;
                                 for (std::uint64_t l = 0; l < kInner; ++l) out.push_back(y * kInner + l);
                                 return out;
                               },
                               {.concurrency = 3, .capacity = 2});
    RunCounts arrived(inputs * kOuter * kInner);
    Job<void> done = scope.sink(inner, [&](std::uint64_t z) { arrived.ran(z); }, {.concurrency = 2, .capacity = 1});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    std::uint64_t wrong = 0;
    for (std::uint64_t x = 0; x < inputs; ++x) {
      for (std::uint64_t j = 0; j < kOuter; ++j) {
        for (std::uint64_t l = 0; l < kInner; ++l) {
          const unsigned expected = j < x % (kOuter + 1) ? 1 : 0;
          if (arrived.count((x * kOuter + j) * kInner + l) != expected) ++wrong;
        }
      }
    }
    CHECK(wrong == 0);
  });
}

TEST_CASE("move-only items: std::unique_ptr from the source through a stage and a fan-out to the sink") {
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 1'000 : 25'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("unique_ptr items", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::uint64_t next = 0;
    auto boxes = scope.source([&]() -> std::optional<std::unique_ptr<std::uint64_t>> {
      if (next == inputs) return std::nullopt;
      return std::make_unique<std::uint64_t>(next++);
    });
    // By value, by rvalue reference and by const reference: each form takes the item without a copy.
    auto labelled = scope.stage(boxes,
                                [](std::unique_ptr<std::uint64_t> box) {
                                  return std::make_unique<std::pair<std::uint64_t, std::string>>(*box,
                                                                                                 std::to_string(*box));
                                },
                                {.concurrency = 4, .capacity = 2});
    auto kept = scope.stage(labelled,
                            [](std::unique_ptr<std::pair<std::uint64_t, std::string>>&& p)
                                -> std::optional<std::unique_ptr<std::pair<std::uint64_t, std::string>>> {
                              if (p->first % 3 == 2) return std::nullopt;
                              return std::move(p);
                            },
                            {.concurrency = 2, .order = Order::Input});
    auto pieces = scope.fan_out(kept,
                                [](std::unique_ptr<std::pair<std::uint64_t, std::string>> p) {
                                  std::vector<std::unique_ptr<std::uint64_t>> out;
                                  for (std::uint64_t j = 0; j < p->second.size(); ++j) {
                                    out.push_back(std::make_unique<std::uint64_t>(p->first));
                                  }
                                  return out;
                                },
                                {.concurrency = 2, .capacity = 1});
    std::uint64_t sum = 0;
    std::uint64_t count = 0;
    Job<void> done = scope.sink(pieces,
                                [&](const std::unique_ptr<std::uint64_t>& box) {
                                  sum += *box;
                                  ++count;
                                },
                                {.capacity = 1});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    std::uint64_t expected_sum = 0;
    std::uint64_t expected_count = 0;
    for (std::uint64_t x = 0; x < inputs; ++x) {
      if (x % 3 == 2) continue;
      const std::uint64_t digits = std::to_string(x).size();
      expected_sum += x * digits;
      expected_count += digits;
    }
    CHECK(count == expected_count);
    CHECK(sum == expected_sum);
  });
}

TEST_CASE("counted items: every item made in the pipeline is destroyed exactly once") {
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 1'000 : 25'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("counted items", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto items = scope.source(counted_below(census, inputs));
      auto odd = scope.stage(items,
                             [](Counted c) -> std::optional<Counted> {
                               if (c.value() % 2 == 0) return std::nullopt;
                               return c;
                             },
                             {.concurrency = 3, .capacity = 1});
      auto split = scope.fan_out(odd,
                                 [&census](const Counted& c) {
                                   std::vector<Counted> out;
                                   for (std::uint64_t j = 0; j < c.value() % 4; ++j)
                                     out.emplace_back(census, c.value() * 4 + j);
                                   return out;
                                 },
                                 {.concurrency = 2, .capacity = 1, .order = Order::Input});
      std::uint64_t arrived = 0;
      Job<void> done = scope.sink(split, [&](Counted&& c) { arrived += c.holds() ? 1 : 0; }, {.capacity = 1});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      std::uint64_t expected = 0;
      for (std::uint64_t x = 1; x < inputs; x += 2) expected += x % 4;
      CHECK(arrived == expected);
    }
    check_balanced(census);
  });
}

}  // namespace
}  // namespace weft::test
