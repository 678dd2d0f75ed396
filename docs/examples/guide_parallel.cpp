// The examples of docs/guide.md's chapters on parallel loops and algorithms, and on tuning (threads, pinning,
// priorities, affinity, grain), compiled and run: each function shows one thing and checks what it did; main()
// exits with 1 if any check fails. docs/guide.md quotes these lines verbatim (check_quotes.py).
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <weft/weft.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "guide_parallel: FAILED: %s\n", what);
    ++failures;
  }
}

void loops(weft::Pool& pool) {
  const std::size_t n = 100000;
  std::vector<double> roots(n);
  weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { roots[i] = std::sqrt(double(i)); });
  std::vector<int> values(n, 1);
  weft::parallel_for(pool, values.begin(), values.end(), [](int& x) { x *= 2; });
  weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t lo, std::size_t hi) {  // a chunk at a time
    for (std::size_t i = lo; i != hi; ++i) values[i] += 1;
  });
  check(roots[49] == 7.0 && std::all_of(values.begin(), values.end(), [](int x) { return x == 3; }), "loops");
}

void algorithms(weft::Pool& pool) {
  std::vector<int> v(100000);
  std::mt19937 random(7);
  for (int& x : v) x = static_cast<int>(random() % 1000);
  long sum = weft::parallel_reduce(pool, v.begin(), v.end(), 0L);
  std::vector<std::string> words = {"a", "bb", "ccc"};
  std::size_t letters = weft::parallel_transform_reduce(pool, words.begin(), words.end(), std::size_t{0}, std::plus<>(),
                                                        [](const std::string& w) { return w.size(); });
  std::vector<long> prefix(v.size());
  weft::parallel_inclusive_scan(pool, v.begin(), v.end(), prefix.begin());
  weft::parallel_sort(pool, v.begin(), v.end());
  int left = 0;
  int right = 0;
  weft::parallel_invoke(
      pool, [&] { left = 1; }, [&] { right = 2; });
  check(sum == prefix.back() && letters == 6 && std::is_sorted(v.begin(), v.end()) && left + right == 3, "algorithms");
}

void range_forms(weft::Pool& pool) {
  std::vector<double> data(100000, 0.5);
  double squares = weft::parallel_reduce(
      pool, std::size_t{0}, data.size(), 0.0,
      [&](std::size_t lo, std::size_t hi, double acc) {  // folds a chunk into the running value
        for (std::size_t i = lo; i != hi; ++i) acc += data[i] * data[i];
        return acc;
      },
      std::plus<>());  // joins two chunks' values
  std::vector<int> tens(10), countdown(10);
  weft::parallel_for(pool, 0, 100, 10, [&](int i) { tens[i / 10] = i; });     // 0, 10, ..., 90
  weft::parallel_for(pool, 9, -1, -1, [&](int i) { countdown[9 - i] = i; });  // 9, 8, ..., 0
  check(squares == 25000.0 && tens[9] == 90 && countdown[0] == 9, "range reduce and stepped loops");

  const std::size_t side = 512;
  std::vector<float> matrix(side * side, 1.0f), transposed(side * side);
  weft::parallel_for(pool, weft::Range2d<std::size_t>(0, side, 0, side), [&](const weft::Range2d<std::size_t>& t) {
    for (std::size_t i = t.rows().begin(); i != t.rows().end(); ++i) {
      for (std::size_t j = t.cols().begin(); j != t.cols().end(); ++j) transposed[j * side + i] = matrix[i * side + j];
    }
  });
  check(transposed == matrix, "a tiled transpose");

  using Bins = std::array<long, 16>;
  weft::PerWorker<Bins> bins(pool);  // one Bins per thread that runs the loop, each on its own cache lines
  weft::parallel_for(pool, std::size_t{0}, data.size(), [&](std::size_t i) { ++bins.local()[i % 16]; });
  Bins histogram = bins.combine([](Bins a, const Bins& b) {
    for (std::size_t k = 0; k < a.size(); ++k) a[k] += b[k];
    return a;
  });
  check(histogram[3] == 6250, "a histogram in per-worker bins");
}

// A group per call: fork-join in any function, on any thread or inside a task.
long fib(weft::Pool& pool, int n) {
  if (n < 25) return n < 2 ? n : fib(pool, n - 1) + fib(pool, n - 2);  // small: plain recursion
  long left = 0;
  long right = 0;
  weft::TaskGroup group{pool};
  group.run([&] { left = fib(pool, n - 1); });            // a child on the pool
  group.run_and_wait([&] { right = fib(pool, n - 2); });  // on this thread, then waits for the child
  return left + right;
}

void task_groups(weft::Pool& pool) {
  check(fib(pool, 30) == 832040, "fib by task groups");
  std::atomic<int> done{0};
  weft::TaskGroup group{pool, weft::Priority::High};  // children at High; nested groups inherit it
  for (int i = 0; i < 8; ++i) {
    group.run([&done] {
      weft::TaskGroup inner;  // inside a task: the pool of the task
      inner.run([&done] { done.fetch_add(1); });
      inner.wait();
    });
  }
  weft::TaskGroupStatus status = group.wait();  // rethrows the first exception of a child
  group.run([&] { group.cancel(); });           // cancel(): from any thread, a child included
  weft::TaskGroupStatus cancelled = group.wait();
  check(status == weft::TaskGroupStatus::complete && done == 8 && cancelled == weft::TaskGroupStatus::cancelled,
        "task group status");
}

// Tasks with dependencies on the fly: submitted after tasks that may be running or finished.
void on_the_fly(weft::Pool& pool) {
  std::vector<int> rows;
  long parsed = 0;
  long indexed = 0;
  std::string line;
  weft::AsyncTask load = pool.submit_after({}, [&] { rows.assign(1000, 3); });
  weft::AsyncTask parse = pool.submit_after({load}, [&] { parsed = std::accumulate(rows.begin(), rows.end(), 0L); });
  weft::AsyncTask index = pool.submit_after({load}, [&] { indexed = static_cast<long>(rows.size()); });
  weft::AsyncTask report = pool.submit_after({parse, index}, [&] { line = std::to_string(parsed / indexed); });
  report.get();  // after parse and index; rethrows a failure of the chain
  check(line == "3", "on-the-fly tasks: a diamond");

  // Any number of predecessors, from a container (a std::span of handles); handles are copied freely.
  std::vector<weft::AsyncTask> steps;
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) {
    std::vector<weft::AsyncTask> after;
    if (i > 0) after.push_back(steps[i - 1]);
    if (i > 1) after.push_back(steps[i / 2]);
    steps.push_back(pool.submit_after(after, [&done] { done.fetch_add(1); }));
  }
  steps.back().wait();
  check(done.load() == 100, "on-the-fly tasks: a chain with extra edges");

  bool ran = false;
  weft::AsyncTask bad = pool.submit_after({}, [] { throw std::runtime_error("no input"); });
  weft::AsyncTask skipped = pool.submit_after({bad, report}, [&ran] { ran = true; });  // never called
  std::string message;
  try {
    skipped.get();
  } catch (const std::runtime_error& e) {
    message = e.what();  // "no input": the failed predecessor's exception
  }
  check(!ran && message == "no input", "on-the-fly tasks: a failed predecessor skips its successors");
}

void scope_loops(weft::Pool& pool) {
  std::vector<float> samples(4096, 2.0f);
  weft::TaskScope scope{pool};
  weft::Job<void> load = scope.submit([&] { std::fill(samples.begin(), samples.end(), 3.0f); });
  weft::Job<void> scale = scope.parallel_for(weft::after(load), samples.begin(), samples.end(),
                                             [](float& x) { x *= 2.0f; }, {.name = "scale", .grain = 512});
  weft::Job<double> total = scope.parallel_reduce(weft::after(scale), samples.begin(), samples.end(), 0.0);
  scope.run_and_wait();
  check(total.get() == 6.0 * 4096, "a loop and a reduction as jobs of a scope");
}

void tuning() {
  weft::Pool pool{weft::PoolOptions{
      .threads = 2,                                       // 0 (the default): one per CPU this process may use
      .pinning = weft::Pinning::OnePerCpu,                // worker i on the i-th CPU the process may use
      .name = "render",                                   // threads named render-0, render-1 (top -H, gdb)
      .spin_before_park = std::chrono::microseconds(20),  // idle workers look for work this long, then sleep
      .max_queued = 10000,                                // post/submit block past this; try_post does not
  }};
  weft::Future<int> urgent = pool.submit_with({.priority = weft::Priority::High}, [] { return 1; });
  weft::Future<int> local = pool.submit_with({.affinity = 0}, [&pool] {
    return pool.current_worker().value_or(0) == 0 ? 1 : 0;  // worker 0 unless it was stuck: see affinity_patience
  });
  std::vector<int> items(1 << 16, 1);
  weft::parallel_for(
      pool, items.begin(), items.end(), [](int& x) { x += 1; }, /* grain */ 1024);
  static_cast<void>(local.get());
  check(urgent.get() == 1 && items.back() == 2, "tuning options");
}

}  // namespace

int main() {
  weft::Pool pool;
  loops(pool);
  algorithms(pool);
  range_forms(pool);
  task_groups(pool);
  on_the_fly(pool);
  scope_loops(pool);
  tuning();
  if (failures != 0) return 1;
  std::printf("guide_parallel: ok\n");
  return 0;
}
