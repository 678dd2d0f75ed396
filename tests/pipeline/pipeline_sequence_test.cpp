// Sequences (TaskScope::sequence, StreamGraph::sequence): every item goes on exactly once, in the order of its key,
// after parallel stages that reorder items, with keys that do not follow the source's order, after a fan_out stage,
// and run after run of a StreamGraph; the items alive stay within the documented bound. A key that comes twice,
// never comes, is negative or would need more room than the bound leaves fails the run with an error naming the
// stage and the key, never a hang; bad options are refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "weft/stream_graph.hpp"

namespace weft::test {
namespace {

// Compares the values that arrived with 0, 1, ..., n - 1; one check, naming the first difference.
void check_in_order(const std::vector<std::uint64_t>& seen, std::uint64_t n) {
  std::size_t first_diff = 0;
  while (first_diff < seen.size() && seen[first_diff] == first_diff) ++first_diff;
  INFO("arrived " << seen.size() << " items, expected " << n << "; first out of place at position " << first_diff);
  CHECK(seen.size() == n);
  CHECK(first_diff == seen.size());
}

const StageOptions kReorder[] = {
    {.concurrency = kUnlimited, .capacity = 1},
    {.concurrency = 4, .capacity = 8},
};

TEST_CASE("a sequence hands every item on once, in key order, after a parallel stage that reorders them") {
  const std::uint64_t seed = seed_for("pipeline sequence reorder");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 500 : 10'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const StageOptions& parallel : kReorder) {
      for (const std::size_t capacity : {std::size_t{1}, kDefaultStageCapacity}) {
        INFO("parallel concurrency " << parallel.concurrency << ", sequence capacity " << capacity);
        const Watchdog watchdog(named("sequence after a parallel stage", workers), patience(60));
        Census census;
        std::vector<std::uint64_t> seen;
        {
          Pool pool(PoolOptions{.threads = workers});
          TaskScope scope{pool};
          auto numbers = scope.source(counted_below(census, items));
          auto shuffled = scope.stage(
              numbers,
              [seed](Counted c) {
                random_spin(seed, c.value(), 2'000);
                return c;
              },
              parallel);
          const StageOptions sequence_options{.name = "reorder", .capacity = capacity};
          auto ordered = scope.sequence(
              shuffled, [](const Counted& c) { return c.value(); }, sequence_options);
          Job<void> done = scope.sink(ordered, [&](Counted c) { seen.push_back(c.value()); });
          CHECK(scope.run_and_wait() == RunStatus::Completed);
          CHECK_NOTHROW(done.get());
          const std::int64_t bound = segment_bound({parallel, sequence_options, StageOptions{}}, workers, true);
          INFO("peak " << census.peak() << ", bound " << bound);
          CHECK(census.peak() <= bound);
        }
        check_in_order(seen, items);
        check_balanced(census);
      }
    }
  });
}

TEST_CASE("keys that do not follow the source's order come out in key order; Order::Input stages after follow them") {
  const std::uint64_t seed = seed_for("pipeline sequence keys");
  const std::uint64_t blocks = stress_count(weft::test::reduced_runs() ? 100 : 2'500);
  const std::uint64_t items = blocks * 4;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sequence by keys", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    // Item i carries key i ^ 3: each block of four comes backwards (3, 2, 1, 0, 7, 6, 5, 4, ...).
    auto keyed = scope.source([next = std::uint64_t{0}, items]() mutable -> std::optional<std::uint64_t> {
      if (next == items) return std::nullopt;
      return next++ ^ 3U;
    });
    auto shuffled = scope.stage(keyed,
                                [seed](std::uint64_t x) {
                                  random_spin(seed, x, 1'000);
                                  return x;
                                },
                                {.concurrency = 3});
    auto ordered = scope.sequence(shuffled, [](std::uint64_t x) { return x; }, {.capacity = 8});
    auto again = scope.stage(ordered,
                             [seed](std::uint64_t x) {
                               random_spin(seed + 1, x, 1'000);
                               return x;
                             },
                             {.concurrency = kUnlimited});
    std::vector<std::uint64_t> seen;
    Job<void> done = scope.sink(again, [&](std::uint64_t x) { seen.push_back(x); }, {.order = Order::Input});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    check_in_order(seen, items);
  });
}

TEST_CASE("a sequence after a serial fan_out stage and a parallel stage orders the elements by their keys") {
  const std::uint64_t seed = seed_for("pipeline sequence fan_out");
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 200 : 3'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sequence after fan_out", workers), patience(60));
    Census census;
    std::vector<std::uint64_t> seen;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto numbers = scope.source(numbers_below(inputs));
      auto elements = scope.fan_out(numbers, [&census](std::uint64_t x) {
        std::vector<Counted> out;
        for (std::uint64_t j = 0; j < 3; ++j) out.emplace_back(census, x * 3 + j);
        return out;
      });  // serial: its elements are made in key order, so the key a sequence waits for is always alive
           // or the next one made (a concurrent fan_out could fall behind by more than the bound)
      auto shuffled = scope.stage(elements,
                                  [seed](Counted c) {
                                    random_spin(seed, c.value(), 1'000);
                                    return c;
                                  },
                                  {.concurrency = kUnlimited});
      auto ordered = scope.sequence(shuffled, [](const Counted& c) { return c.value(); });
      scope.sink(ordered, [&](const Counted& c) { seen.push_back(c.value()); });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    check_in_order(seen, inputs * 3);
    check_balanced(census);
  });
}

TEST_CASE("a StreamGraph's sequence starts from key 0 in every run, a failed run included") {
  const std::uint64_t seed = seed_for("pipeline sequence reuse");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sequence reused", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    StreamGraph pipe;
    std::vector<std::uint64_t> batch;
    auto items = pipe.source([&batch](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == batch.size()) return std::nullopt;
      return batch[i];
    });
    auto shuffled = pipe.stage(items,
                               [seed](std::uint64_t x) {
                                 random_spin(seed, x, 1'000);
                                 return x;
                               },
                               {.concurrency = kUnlimited});
    auto ordered = pipe.sequence(shuffled, [](std::uint64_t x) { return x; }, {.name = "reorder"});
    std::vector<std::uint64_t> seen;
    pipe.sink(ordered, [&](std::uint64_t x) { seen.push_back(x); });
    for (int round = 0; round < 4; ++round) {
      INFO("round " << round);
      const std::uint64_t n = 200 + static_cast<std::uint64_t>(round) * 50;
      batch.clear();
      for (std::uint64_t x = 0; x < n; ++x) batch.push_back(x);
      if (round == 1) batch[7] = 3;  // key 3 twice, key 7 never: the run fails, the next starts afresh
      seen.clear();
      if (round == 1) {
        check_throws_naming<std::out_of_range>([&] { pipe.run(pool).wait(); },
                                               {"weft::StreamGraph", "sequence 'reorder'", "key 3 came twice"});
      } else {
        CHECK(pipe.run(pool).wait() == RunStatus::Completed);
        check_in_order(seen, n);
      }
    }
  });
}

// source (values from `keys`) -> sequence by the value -> sink: the run must fail with E, its message naming
// `parts`, and every item must be destroyed.
template <class E>
void check_keys_fail(const std::vector<std::int64_t>& keys, StageOptions options,
                     std::initializer_list<std::string> parts) {
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sequence bad keys", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto items = scope.source(
          [&census, &keys, i = std::size_t{0}]() mutable -> std::optional<Counted> {
            if (i == keys.size()) return std::nullopt;
            return Counted(census, static_cast<std::uint64_t>(keys[i++]));
          },
          {.name = "keys"});
      auto ordered = scope.sequence(
          items, [](const Counted& c) { return static_cast<std::int64_t>(c.value()); }, options);
      scope.sink(ordered, [](const Counted&) {});
      check_throws_naming<E>([&] { scope.run_and_wait(); }, parts);
    }
    check_balanced(census);
  });
}

TEST_CASE("a key that comes twice, or after its turn, fails the run naming the stage and the key") {
  const StageOptions options{.name = "reorder"};
  check_keys_fail<std::out_of_range>({0, 1, 2, 2, 3}, options,
                                     {"weft::TaskScope", "sequence 'reorder'", "pipeline 'keys'", "key 2 came twice"});
  check_keys_fail<std::out_of_range>({1, 0, 5, 1, 2, 3, 4}, options, {"sequence 'reorder'", "key 1 came twice"});
  // Two of one key waiting together: found when the first of them is handed on.
  check_keys_fail<std::out_of_range>({4, 4, 3, 2, 1, 0}, options, {"sequence 'reorder'", "key 4 came twice"});
}

TEST_CASE("a key that never comes fails the run once the source ended, naming the stage and the key") {
  check_keys_fail<unmatched_items>({0, 1, 2, 4, 5, 6}, {.name = "reorder"},
                                   {"sequence 'reorder'", "waits for key 3, which never came", "holds 3 item(s)",
                                    "keys 4 .. 6"});
  check_keys_fail<unmatched_items>({1}, {.name = "reorder"}, {"waits for key 0, which never came"});
}

TEST_CASE("an item filtered out before a sequence leaves its key missing: the run fails, it does not hang") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sequence after a filter", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(100), {.name = "numbers"});
    auto kept = scope.stage(numbers, [](std::uint64_t x) -> std::optional<std::uint64_t> {
      if (x == 40) return std::nullopt;
      return x;
    });
    auto ordered = scope.sequence(kept, [](std::uint64_t x) { return x; }, {.name = "reorder"});
    std::vector<std::uint64_t> seen;
    scope.sink(ordered, [&](std::uint64_t x) { seen.push_back(x); });
    // The items after 40 wait for it until they fill the bound (would_deadlock), or, with room for all of them,
    // until the source ended (unmatched_items): either way the error names the stage and key 40.
    std::string message;
    try {
      scope.run_and_wait();
    } catch (const unmatched_items& e) {
      message = e.what();
    } catch (const would_deadlock& e) {
      message = e.what();
    }
    INFO(message);
    CHECK(message.find("sequence 'reorder'") != std::string::npos);
    CHECK(message.find("waits for key 40") != std::string::npos);
    check_in_order(seen, 40);
  });
}

TEST_CASE("keys further from the source's order than the bound leaves room for fail the run with would_deadlock") {
  std::vector<std::int64_t> backwards;
  for (std::int64_t k = 199; k >= 0; --k) backwards.push_back(k);
  check_keys_fail<would_deadlock>(backwards, {.name = "reorder", .capacity = 2},
                                  {"pipeline 'keys' cannot go on", "sequence 'reorder'", "waits for key 0",
                                   "raise the sequence's capacity"});
}

TEST_CASE("Overflow::Fail on a sequence fails the run once more than its capacity wait") {
  check_keys_fail<inbox_full>({5, 4, 3, 2, 1, 0}, {.name = "reorder", .capacity = 2, .overflow = Overflow::Fail},
                              {"sequence 'reorder'", "holds 2 item(s) waiting for key 0", "capacity 2"});
}

TEST_CASE("a negative key, or the key function's exception, fails the run") {
  check_keys_fail<std::out_of_range>({0, 1, -4, 2}, {.name = "reorder"},
                                     {"weft::TaskScope::sequence", "stage 'reorder'", "its key returned -4"});
  for_each_scope_worker_count([&](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(50));
    auto ordered = scope.sequence(numbers, [](std::uint64_t x) -> std::uint64_t {
      if (x == 20) throw StageFailure("no key for 20");
      return x;
    });
    scope.sink(ordered, [](std::uint64_t) {});
    check_throws_naming<StageFailure>([&] { scope.run_and_wait(); }, {"no key for 20"});
  });
}

TEST_CASE("bad options and streams given to sequence are refused, naming the call, the stage and the option") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  auto numbers = scope.source(numbers_below(4), {.name = "numbers"});
  const auto key = [](std::uint64_t x) { return x; };
  check_throws_naming<invalid_option>([&] { (void)scope.sequence(numbers, key, {.name = "s", .concurrency = 2}); },
                                      {"weft::TaskScope::sequence", "stage 's'", "StageOptions::concurrency = 2",
                                       "one at a time"});
  check_throws_naming<invalid_option>(
      [&] { (void)scope.sequence(numbers, key, {.name = "s", .concurrency = kUnlimited}); },
      {"StageOptions::concurrency = weft::kUnlimited"});
  check_throws_naming<invalid_option>(
      [&] { (void)scope.sequence(numbers, key, {.name = "s", .overflow = Overflow::Drop}); },
      {"weft::TaskScope::sequence", "StageOptions::overflow = Overflow::Drop", "missing"});
  check_throws_naming<invalid_option>([&] { (void)scope.sequence(numbers, key, {.name = "s", .order = Order::Input}); },
                                      {"weft::TaskScope::sequence", "StageOptions::order = Order::Input"});
  check_throws_naming<invalid_option>([&] { (void)scope.sequence(numbers, key, {.name = "s", .capacity = 0}); },
                                      {"weft::TaskScope::sequence", "capacity = 0"});
  check_throws_naming<invalid_graph>([&] { (void)scope.sequence(Stream<std::uint64_t>{}, key, {.name = "s"}); },
                                     {"weft::TaskScope::sequence", "empty", "'s'"});
  auto fine = scope.sequence(numbers, key);
  check_throws_naming<invalid_graph>([&] { (void)scope.sequence(numbers, key); },
                                     {"weft::TaskScope::sequence", "already feeds"});
  scope.sink(fine, [](std::uint64_t) {});
  CHECK(scope.run_and_wait() == RunStatus::Completed);

  StreamGraph pipe;
  auto items = pipe.source(numbers_below(4));
  check_throws_naming<invalid_option>([&] { (void)pipe.sequence(items, key, {.name = "g", .concurrency = 3}); },
                                      {"weft::StreamGraph::sequence", "stage 'g'", "concurrency = 3"});
  TaskScope other{pool};
  auto theirs = other.source(numbers_below(4), {.name = "theirs"});
  check_throws_naming<invalid_graph>([&] { (void)pipe.sequence(theirs, key); },
                                     {"weft::StreamGraph::sequence", "another StreamGraph"});
  other.sink(theirs, [](std::uint64_t) {});
  other.run_and_wait();
}

}  // namespace
}  // namespace weft::test
