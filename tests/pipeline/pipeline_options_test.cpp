// Bad input to a pipeline, each refused with a message naming the call, the stage (by its StageOptions::name, or
// its default name) and the value: every StageOptions refusal (weft::invalid_option), a stream that is empty,
// of another scope or already consumed (weft::invalid_graph), a pipeline without a sink at run(), stages added
// after run() (weft::graph_busy). A refused call changes nothing. Names given in StageOptions (or the defaults,
// "pipeline <n>" and "stage <index>") are the ones errors and statistics show.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// A source of 0 .. 9.
auto ten(std::uint64_t& next) {
  return [&next]() -> std::optional<std::uint64_t> {
    if (next == 10) return std::nullopt;
    return next++;
  };
}

auto identity = [](std::uint64_t x) { return x; };
auto widen = [](std::uint64_t x) { return std::vector<std::uint64_t>{x, x}; };
auto consume = [](std::uint64_t) {};

// Every refused StageOptions of a stage, fan-out stage and sink: the bad options, and what the message must say.
struct Refusal {
  StageOptions options;
  std::string says;
};

std::vector<Refusal> refusals(const std::string& name) {
  // One push_back at a time: a braced list of them makes g++ 12 -O3 with a sanitizer warn of an uninitialized
  // std::string in it (-Wmaybe-uninitialized, a false positive).
  std::vector<Refusal> out;
  const auto add = [&](StageOptions options, const char* says) {
    options.name = name;
    out.push_back(Refusal{std::move(options), says});
  };
  add({.concurrency = 0}, "StageOptions::concurrency = 0");
  add({.concurrency = static_cast<unsigned>(kMaxStageBound + 1)}, "StageOptions::concurrency = 1048577");
  add({.capacity = 0}, "StageOptions::capacity = 0");
  add({.capacity = kUnbounded}, "StageOptions::capacity = weft::kUnbounded");
  add({.capacity = kMaxStageBound + 1}, "StageOptions::capacity = 1048577");
  add({.overflow = static_cast<Overflow>(7)}, "StageOptions::overflow = 7");
  add({.order = static_cast<Order>(5)}, "StageOptions::order = 5");
  add({.priority = static_cast<Priority>(9)}, "StageOptions::priority = 9");
  return out;
}

TEST_CASE("every bad StageOptions of stage, fan_out and sink throws invalid_option naming call, stage and value") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  auto numbers = scope.source(ten(next), {.name = "numbers"});
  for (const Refusal& r : refusals("bad one")) {
    INFO("expected: " << r.says);
    const std::size_t jobs = scope.size();
    const std::string where = "stage 'bad one' of pipeline 'numbers'";
    check_throws_naming<invalid_option>([&] { static_cast<void>(scope.stage(numbers, identity, r.options)); },
                                        {"weft::TaskScope::stage", where, r.says});
    check_throws_naming<invalid_option>([&] { static_cast<void>(scope.fan_out(numbers, widen, r.options)); },
                                        {"weft::TaskScope::fan_out", where, r.says});
    check_throws_naming<invalid_option>([&] { static_cast<void>(scope.sink(numbers, consume, r.options)); },
                                        {"weft::TaskScope::sink", where, r.says});
    CHECK(scope.size() == jobs);
  }
  // Nothing was added: the stream is still open, and the pipeline runs.
  auto doubled = scope.stage(numbers, [](std::uint64_t x) { return 2 * x; }, {.name = "double"});
  std::uint64_t sum = 0;
  Job<void> done = scope.sink(doubled, [&](std::uint64_t x) { sum += x; });
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  CHECK(sum == 90);
}

TEST_CASE("the limits themselves are accepted: concurrency and capacity kMaxStageBound, concurrency kUnlimited") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  auto numbers = scope.source(ten(next));
  auto a = scope.stage(numbers, identity,
                       {.concurrency = static_cast<unsigned>(kMaxStageBound), .capacity = kMaxStageBound});
  auto b = scope.stage(a, identity, {.concurrency = kUnlimited, .capacity = 1});
  std::uint64_t sum = 0;
  Job<void> done = scope.sink(b, [&](std::uint64_t x) { sum += x; }, {.concurrency = 1, .capacity = 1});
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  CHECK(sum == 45);
}

TEST_CASE("a source with a concurrency other than 1 throws invalid_option naming the call, pipeline and value") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  for (const unsigned concurrency : {0u, 2u, kUnlimited}) {
    check_throws_naming<invalid_option>(
        [&] { static_cast<void>(scope.source(ten(next), {.name = "lines", .concurrency = concurrency})); },
        {"weft::TaskScope::source", "'lines'", "StageOptions::concurrency = " + std::to_string(concurrency)});
  }
  check_throws_naming<invalid_option>(
      [&] { static_cast<void>(scope.source(ten(next), {.priority = static_cast<Priority>(9)})); },
      {"weft::TaskScope::source", "StageOptions::priority = 9"});
  CHECK(scope.size() == 0);
  scope.run_and_wait();  // nothing was added: an empty scope runs
}

TEST_CASE("a source's capacity, overflow and order are checked like a stage's, then ignored") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  for (const Refusal& r : refusals("lines")) {
    if (r.says.find("concurrency") != std::string::npos) continue;  // a source's is always 1: above
    INFO("expected: " << r.says);
    check_throws_naming<invalid_option>([&] { static_cast<void>(scope.source(ten(next), r.options)); },
                                        {"weft::TaskScope::source", "stage 'lines' of pipeline 'lines'", r.says});
  }
  CHECK(scope.size() == 0);
  // In range, they change nothing: a source does not drop, fail, or wait for an order.
  auto numbers = scope.source(ten(next),
                              {.name = "lines", .capacity = 1, .overflow = Overflow::Fail, .order = Order::Input});
  std::uint64_t sum = 0;
  Job<void> done = scope.sink(numbers, [&](std::uint64_t x) { sum += x; });
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  CHECK(sum == 45);
  CHECK(scope.stats().dropped == 0);
}

TEST_CASE("default names: the pipeline is \"pipeline <jobs before it>\", its stages \"source\", \"stage <index>\"") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  scope.submit([] {});
  scope.submit([] {});
  std::uint64_t next = 0;
  auto numbers = scope.source(ten(next));
  auto a = scope.stage(numbers, identity);
  check_throws_naming<invalid_option>([&] { static_cast<void>(scope.stage(a, identity, {.capacity = 0})); },
                                      {"stage 'stage 2' of pipeline 'pipeline 2'"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.stage(numbers, identity)); },
                                     {"the stream of stage 'source' of pipeline 'pipeline 2' already feeds stage "
                                      "'stage 1'"});
  Job<void> done = scope.sink(a, consume);
  CHECK(scope.run_and_wait() == RunStatus::Completed);
}

TEST_CASE("a default-constructed Stream throws invalid_graph naming the call and the stage") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  const Stream<std::uint64_t> empty;
  CHECK_FALSE(empty.valid());
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.stage(empty, identity, {.name = "parse"})); },
                                     {"weft::TaskScope::stage", "empty", "'parse'"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.fan_out(empty, widen, {.name = "split"})); },
                                     {"weft::TaskScope::fan_out", "empty", "'split'"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.sink(empty, consume, {.name = "print"})); },
                                     {"weft::TaskScope::sink", "empty", "'print'"});
  CHECK(scope.size() == 0);
}

TEST_CASE("a Stream of another scope throws invalid_graph naming its stage and pipeline") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope mine{pool};
  TaskScope other{pool};
  std::uint64_t next = 0;
  auto theirs = other.source(ten(next), {.name = "theirs"});
  auto parsed = other.stage(theirs, identity, {.name = "parse"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(mine.stage(parsed, identity)); },
                                     {"weft::TaskScope::stage", "'parse'", "'theirs'", "another TaskScope"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(mine.fan_out(theirs, widen)); },
                                     {"weft::TaskScope::fan_out", "'theirs'", "another TaskScope"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(mine.sink(parsed, consume)); },
                                     {"weft::TaskScope::sink", "'parse'", "'theirs'", "another TaskScope"});
  CHECK(mine.size() == 0);
  Job<void> done = other.sink(parsed, consume);  // the other scope's stream is still open
  CHECK(other.run_and_wait() == RunStatus::Completed);
}

TEST_CASE("a stream consumed twice throws invalid_graph naming its stage and the one it already feeds") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  auto lines = scope.source(ten(next), {.name = "lines"});
  auto parsed = scope.stage(lines, identity, {.name = "parse"});
  const std::string fed = "the stream of stage 'lines' of pipeline 'lines' already feeds stage 'parse'";
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.stage(lines, identity, {.name = "again"})); },
                                     {"weft::TaskScope::stage", fed});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.fan_out(lines, widen)); },
                                     {"weft::TaskScope::fan_out", fed});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.sink(lines, consume)); },
                                     {"weft::TaskScope::sink", fed});
  // A stream consumed by a sink: the sink ends the chain.
  Job<void> done = scope.sink(parsed, consume, {.name = "print"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.sink(parsed, consume)); },
                                     {"weft::TaskScope::sink", "stage 'parse'", "already feeds stage 'print'"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.stage(parsed, identity)); },
                                     {"weft::TaskScope::stage", "stage 'parse'", "already feeds stage 'print'"});
  CHECK(scope.run_and_wait() == RunStatus::Completed);
}

TEST_CASE("run() with a pipeline that has no sink throws invalid_graph naming the pipeline and its open stage") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  std::uint64_t other = 0;
  auto complete = scope.source(ten(next), {.name = "complete"});
  Job<void> done = scope.sink(complete, consume);
  auto open = scope.source(ten(other), {.name = "open"});
  auto parsed = scope.stage(open, identity, {.name = "parse"});
  check_throws_naming<invalid_graph>([&] { scope.run(); },
                                     {"weft::TaskScope::run", "pipeline 'open' has no sink", "'parse'"});
  check_throws_naming<invalid_graph>([&] { static_cast<void>(scope.run_and_wait()); }, {"pipeline 'open' has no sink"});
}

TEST_CASE("source, stage, fan_out and sink after run() throw graph_busy naming the call") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  std::uint64_t next = 0;
  auto numbers = scope.source(ten(next));
  auto kept = scope.stage(numbers, identity);
  Job<void> done = scope.sink(kept, consume);
  std::uint64_t other_next = 0;  // its own: the two pipelines run at once
  auto other = scope.source(ten(other_next));
  auto other_kept = scope.stage(other, identity);
  Job<void> other_done = scope.sink(other_kept, consume);
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  const Stream<std::uint64_t> unused;
  check_throws_naming<graph_busy>([&] { static_cast<void>(scope.source(ten(next))); },
                                  {"weft::TaskScope::source", "already been run"});
  check_throws_naming<graph_busy>([&] { static_cast<void>(scope.source(weft::after(done), ten(next))); },
                                  {"weft::TaskScope::source", "already been run"});
  check_throws_naming<graph_busy>([&] { static_cast<void>(scope.stage(unused, identity)); },
                                  {"weft::TaskScope::stage", "already been run"});
  check_throws_naming<graph_busy>([&] { static_cast<void>(scope.fan_out(unused, widen)); },
                                  {"weft::TaskScope::fan_out", "already been run"});
  check_throws_naming<graph_busy>([&] { static_cast<void>(scope.sink(unused, consume)); },
                                  {"weft::TaskScope::sink", "already been run"});
}

TEST_CASE("stage names appear in errors and statistics: inbox_full, dropped_by_stage, with defaults too") {
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("names", workers), patience(60));
    for (const Overflow overflow : {Overflow::Drop, Overflow::Fail}) {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      scope.submit([] {});
      // One input fanned out to 50 elements for a serial stage of capacity 1: 48 overflow (see
      // pipeline_overflow_test.cpp).
      bool given = false;
      auto one = scope.source([&]() -> std::optional<std::uint64_t> {
        if (std::exchange(given, true)) return std::nullopt;
        return 50;
      });
      auto elements = scope.fan_out(one, [](std::uint64_t n) { return std::vector<std::uint64_t>(n, 1); });
      auto narrow = scope.stage(elements, identity, {.capacity = 1, .overflow = overflow});
      Job<void> done = scope.sink(narrow, consume);
      if (overflow == Overflow::Drop) {
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        const RunStats stats = scope.stats();
        REQUIRE(stats.dropped_by_stage.size() == 1);
        CHECK(stats.dropped_by_stage[0].first == "pipeline 1/stage 2");
        CHECK(stats.dropped_by_stage[0].second == 48);
      } else {
        check_throws_naming<inbox_full>([&] { static_cast<void>(scope.run_and_wait()); },
                                        {"stage 'stage 2'", "pipeline 'pipeline 1'", "capacity 1"});
      }
    }
  });
}

}  // namespace
}  // namespace weft::test
