// Forms of TaskScope (pipelines included) and parallel_for calls that must not compile, each refused by a
// static_assert that says what to write instead (WEFT_CASE 1 and up; a bare braced list of dependencies, case
// 22, by overload resolution, whose error names the weft::After every builder's first parameter wants), and the
// accepted forms beside them (WEFT_CASE 0), which must compile cleanly: so a refusal is the one form's, not the
// file's. Compiled by check_compile.py, never linked.
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "weft/algorithms.hpp"
#include "weft/parallel_for.hpp"
#include "weft/stream_graph.hpp"
#include "weft/task_scope.hpp"

#ifndef WEFT_CASE
#error "compile with -DWEFT_CASE=<n> (see tests/compile/meson.build)"
#endif

// A fan_out element that cannot be moved.
struct Pinned {
  Pinned() = default;
  Pinned(const Pinned&) = delete;
  Pinned(Pinned&&) = delete;
};

void build(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  weft::StreamGraph pipe;
  auto a = scope.submit([] { return 1; });
  auto b = scope.submit([] { return 2; });
  auto s = scope.submit([] { return std::string("s"); });
  std::vector<int> v(4, 0);
  std::vector<std::size_t> sizes(4, 0);
#if WEFT_CASE == 0
  // Accepted: values as a vector, or none, from a braced list or vector of one type; one argument per job from
  // a tuple, of any types; nothing from jobs of different types; elements over iterators, indices over integers.
  scope.when_all({a, b}, [](std::vector<int> values) { return values[0] + values[1]; });
  scope.when_all(std::vector<weft::Job<int>>{a, b}, [](const std::vector<int>& values) { return values.size(); });
  scope.when_all({a, b}, [] {});
  scope.when_all(std::tuple{a, b}, [](int x, int y) { return x + y; });
  scope.when_all(std::tuple{a, s}, [](int x, const std::string& y) { return x + static_cast<int>(y.size()); });
  scope.when_all({a, s}, [] {});
  scope.then(a, [](int x) { return x; });
  scope.then(s, [] {});
  scope.submit([](weft::Subflow&) {});
  scope.parallel_for(v.begin(), v.end(), [](int& x) { x = 1; });
  scope.parallel_for(v.begin(), v.end(), [](auto& x) { x = 2; });
  scope.parallel_for(weft::after(a), sizes.begin(), sizes.end(), [](std::size_t x) { return x; });
  weft::parallel_for(pool, v.begin(), v.end(), [](int x) { return x; });
  weft::parallel_for(pool, v.begin(), v.end(), std::function<void(const int&)>([](const int&) {}));
  weft::parallel_for(pool, std::size_t{0}, v.size(), [&](std::size_t i) { v[i] = 1; });
  // The parallel algorithms: an op taking (T, element), a transform, a comparator, callables taking nothing.
  int r = weft::parallel_reduce(pool, v.begin(), v.end(), 0, [](int x, int y) { return x + y; });
  r += weft::parallel_transform_reduce(pool, v.begin(), v.end(), 0, std::plus<>(), [](int x) { return x * 2; });
  weft::parallel_inclusive_scan(pool, v.begin(), v.end(), v.begin());
  weft::parallel_exclusive_scan(pool, v.begin(), v.end(), sizes.begin(), std::size_t{0});
  weft::parallel_sort(pool, v.begin(), v.end(), [](const int& x, const int& y) { return x > y; });
  weft::parallel_invoke(
      pool, [&] { r += 1; }, [] {});
  scope.parallel_reduce(v.begin(), v.end(), 0L, [](long x, long y) { return x + y; }, {.name = "sum"});
  scope.parallel_invoke(
      {.name = "pair"}, [] {}, [] {});
  // Dependencies: a leading weft::after of jobs, of a vector or of a span; a loop's grain in LoopOptions.
  const std::vector<weft::AnyJob> deps{a, s};
  scope.parallel_for(weft::after(deps), 0, 4, [](int) {}, {.name = "loop", .grain = 2});
  scope.parallel_reduce(weft::after(std::span<const weft::AnyJob>(deps)), v.begin(), v.end(), 0, std::plus<>(),
                        {.concurrency = 2, .grain = 1});
  scope.parallel_sort(weft::after(a, b), v.begin(), v.end());
  scope.parallel_invoke(
      weft::after(a), [] {}, [] {});
  scope.parallel_invoke(weft::after(a), {.name = "after a"}, [] {});
  // Pipelines: a source of std::optional<T>; stages taking the item by value, T&& or const T&, returning the
  // next item or a std::optional of it; a fan-out stage returning a range; a sink returning nothing.
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  auto named = scope.stage(numbers, [](int x) { return std::to_string(x); });
  auto kept = scope.stage(named, [](std::string&& x) -> std::optional<std::string> { return x; });
  auto lengths = scope.fan_out(kept, [](const std::string& x) { return std::vector<std::size_t>{x.size()}; });
  scope.sink(lengths, [](std::size_t) {});
  // The same calls of a StreamGraph (one building code for both).
  auto items = pipe.source([](std::size_t i) -> std::optional<int> {
    if (i == 2) return std::nullopt;
    return static_cast<int>(i);
  });
  auto texts = pipe.stage(items, [](int x) { return std::to_string(x); });
  auto in_order = pipe.sequence(texts, [](const std::string& x) { return x.size() - 1; });
  pipe.sink(in_order, [](const std::string&) {});
#elif WEFT_CASE == 1
  scope.when_all({a, b}, [](int x, int y) { return x + y; });  // one argument per job: needs a tuple
#elif WEFT_CASE == 2
  const std::vector<weft::Job<int>> jobs{a, b};
  scope.when_all(jobs, [](int x) { return x; });
#elif WEFT_CASE == 3
  scope.when_all({a, s}, [](int x, const std::string& y) { return x + static_cast<int>(y.size()); });
#elif WEFT_CASE == 4
  scope.when_all(std::tuple{a, s}, [](const std::string& y, int x) { return x + static_cast<int>(y.size()); });
#elif WEFT_CASE == 5
  scope.then(a, [](const std::string& y) { return y; });
#elif WEFT_CASE == 6
  scope.submit([](int x) { return x; });
#elif WEFT_CASE == 7
  weft::parallel_for(pool, v.begin(), v.end(), [&](std::size_t i) { v[i] = 1; });  // meant indices
#elif WEFT_CASE == 8
  scope.parallel_for(v.begin(), v.end(), [&](std::size_t i) { v[i] = 1; });
#elif WEFT_CASE == 9
  scope.parallel_for(weft::after(a), v.data(), v.data() + v.size(), [](long x) { return x; });
#elif WEFT_CASE == 10
  weft::parallel_for(pool, v.begin(), v.end(), std::function<void(std::size_t)>([](std::size_t) {}));
#elif WEFT_CASE == 11
  // op cannot take (T, element): a std::string init over ints with an int-only op.
  const auto add = [](int x, int y) { return x + y; };
  static_cast<void>(weft::parallel_reduce(pool, v.begin(), v.end(), std::string(), add));
#elif WEFT_CASE == 12
  static_cast<void>(weft::parallel_transform_reduce(pool, v.begin(), v.end(), 0, std::plus<>(),
                                                    [](const std::string& x) { return x.size(); }));
#elif WEFT_CASE == 13
  weft::parallel_sort(pool, v.begin(), v.end(), [](int x) { return x > 0; });
#elif WEFT_CASE == 14
  weft::parallel_invoke(
      pool, [] {}, [](int x) { return x; });
#elif WEFT_CASE == 15
  scope.parallel_invoke([] {}, [](int x) { return x; });
#elif WEFT_CASE == 16
  scope.parallel_inclusive_scan(v.begin(), v.end(), v.begin(), [](const std::string& x) { return x; });
#elif WEFT_CASE == 17
  scope.source([] { return 1; });  // not a std::optional: the stream could never end
#elif WEFT_CASE == 18
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  scope.stage(numbers, [](int) {});  // consumes the item: that is a sink
#elif WEFT_CASE == 19
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  scope.sink(numbers, [](int x) { return x; });  // returns a value nobody receives
#elif WEFT_CASE == 20
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  scope.fan_out(numbers, [](int x) { return x; });  // not a range
#elif WEFT_CASE == 21
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  scope.stage(numbers, [](const std::string& x) { return x; });  // takes another type than the stream's items
#elif WEFT_CASE == 22
  scope.parallel_for({a}, v.begin(), v.end(), [](int& x) { x = 1; });  // dependencies are spelled weft::after(a)
#elif WEFT_CASE == 23
  // The range form of reduce: a body without the running value.
  static_cast<void>(weft::parallel_reduce(
      pool, 0, 10, 0, [](int lo, int hi) { return lo + hi; }, std::plus<>()));
#elif WEFT_CASE == 24
  // The range form of reduce: a join that takes one value.
  static_cast<void>(weft::parallel_reduce(
      pool, 0, 10, 0, [](int, int, int acc) { return acc; }, [](int x) { return x; }));
#elif WEFT_CASE == 25
  // Over a Range2d: a body written for indices.
  static_cast<void>(weft::parallel_reduce(
      pool, weft::Range2d<int>(0, 4, 0, 4), 0, [](int, int, int acc) { return acc; }, std::plus<>()));
#elif WEFT_CASE == 26
  pipe.source([] { return 1; });  // a StreamGraph's source: not a std::optional either
#elif WEFT_CASE == 27
  auto items = pipe.source([]() -> std::optional<int> { return std::nullopt; });
  pipe.sink(items, [](int x) { return x; });  // a StreamGraph's sink returning a value
#elif WEFT_CASE == 28
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  scope.fan_out(numbers, [](int) { return std::vector<Pinned>(1); });  // elements that cannot move on
#elif WEFT_CASE == 29
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  (void)scope.sequence(numbers, [](int x) { return std::to_string(x); });  // a key that is not a number
#elif WEFT_CASE == 30
  auto numbers = scope.source([]() -> std::optional<int> { return std::nullopt; });
  (void)scope.priority_buffer(numbers, [](int x) { return x > 0; });  // one item, not two
#else
#error "no such WEFT_CASE"
#endif
  scope.run_and_wait();
}
