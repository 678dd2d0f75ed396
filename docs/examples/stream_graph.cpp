// oneTBB's flow-graph example (a broadcast into function nodes, a join of their results, a serial node summing
// them) as a weft pipeline whose stream forks and joins:
//
//   source     "numbers"   serial            1, 2, ..., 10                       -> int
//   broadcast  "each"      every item to the three branches (a copy each)
//   stage      "square"    parallel          x * x                               -> long long
//   stage      "cube"      parallel          x * x * x                           -> long long
//   stage      "double"    parallel          2 * x                               -> long long
//   join       "results"   the three results of one number, by position        -> std::tuple<long long, ...>
//   sink       "sum"       serial            adds the three results to the total
//
// Then the same numbers through a split (even and odd numbers to two branches) merged back into one stream.
// The program prints the sums and exits with 1 if one is wrong. Built and run by weft's test suite (suite
// 'examples'); docs/pipelines.md quotes it.
#include <cstdio>
#include <optional>
#include <tuple>

#include <weft/pool.hpp>
#include <weft/task_scope.hpp>

namespace {

long long flow_graph_sum(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  int next = 1;
  auto numbers = scope.source(
      [&next]() -> std::optional<int> {
        if (next > 10) return std::nullopt;
        return next++;
      },
      {.name = "numbers"});
  // Each branch gets its own copy of every number (the last branch gets the number itself).
  auto [to_square, to_cube, to_double] = scope.broadcast<3>(numbers, {.name = "each"});
  const weft::StageOptions parallel{.concurrency = weft::kUnlimited};
  auto squares = scope.stage(
      to_square, [](int x) { return 1LL * x * x; }, parallel);
  auto cubes = scope.stage(
      to_cube, [](int x) { return 1LL * x * x * x; }, parallel);
  auto doubles = scope.stage(
      to_double, [](int x) { return 2LL * x; }, parallel);
  // The n-th result of each branch, whichever finished first: the three results of the n-th number.
  auto results = scope.join(std::tuple{squares, cubes, doubles}, {.name = "results"});
  long long sum = 0;
  scope.sink(results,
             [&sum](const std::tuple<long long, long long, long long>& r) {
               const auto& [square, cube, twice] = r;
               sum += square + cube + twice;
             },
             {.name = "sum"});  // serial: concurrency 1, the default, so `sum` needs no lock
  scope.run_and_wait();
  return sum;
}

long long split_merge_sum(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  int next = 1;
  auto numbers = scope.source([&next]() -> std::optional<int> {
    if (next > 10) return std::nullopt;
    return next++;
  });
  // Each number to one branch: route(x) is the branch's index.
  auto [even, odd] = scope.split<2>(numbers, [](const int& x) { return x % 2; });
  auto tens = scope.stage(even, [](int x) { return 10 * x; });
  auto hundreds = scope.stage(odd, [](int x) { return 100 * x; });
  auto all = scope.merge({tens, hundreds});  // in the order they arrive
  long long sum = 0;
  scope.sink(all, [&sum](int x) { sum += x; });
  scope.run_and_wait();
  return sum;
}

}  // namespace

int main() {
  weft::Pool pool;
  const long long flow = flow_graph_sum(pool);
  const long long split = split_merge_sum(pool);
  std::printf("sum of squares, cubes and doubles of 1..10: %lld\n", flow);
  std::printf("even numbers times 10 plus odd numbers times 100: %lld\n", split);
  // 385 + 3025 + 110; 10 * (2 + 4 + 6 + 8 + 10) + 100 * (1 + 3 + 5 + 7 + 9)
  const bool right = flow == 3520 && split == 300 + 2500;
  if (!right) std::printf("wrong: expected 3520 and 2800\n");
  return right ? 0 : 1;
}
