// The weft side of docs/migrating.md (coming from oneTBB, Taskflow or DagFlow), compiled and run: each function
// ports one common shape of code and checks what it did; main() exits with 1 if any check fails.
// docs/migrating.md quotes these lines verbatim (check_quotes.py, run by the suite, fails when a quoted block is
// no longer here).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <weft/weft.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "migrating: FAILED: %s\n", what);
    ++failures;
  }
}

long count_primes(long lo, long hi) {
  long count = 0;
  for (long n = std::max(lo, 2L); n < hi; ++n) {
    bool prime = true;
    for (long d = 2; d * d <= n && prime; ++d) prime = n % d != 0;
    count += prime ? 1 : 0;
  }
  return count;
}

// ---------------------------------------------------------------------------------------------------- oneTBB

void tbb_task_group(weft::Pool& pool) {
  long left = 0;
  long right = 0;
  weft::TaskGroup tg{pool};
  tg.run([&] { left = count_primes(0, 5000); });
  tg.run([&] { right = count_primes(5000, 10000); });
  tg.wait();  // rethrows a child's exception
  check(left + right == 1229, "task_group: two children, waited for");
}

// The recursive task_group pattern: one half run, the other run_and_wait, a group per call.
long tbb_fib(weft::Pool& pool, int n) {
  if (n < 2) return n;
  long x = 0;
  long y = 0;
  weft::TaskGroup g{pool};
  g.run([&] { x = tbb_fib(pool, n - 1); });
  g.run_and_wait([&] { y = tbb_fib(pool, n - 2); });
  return x + y;
}

void tbb_task_group_in_a_graph(weft::Pool& pool) {
  long left = 0;
  long right = 0;
  long total = 0;
  weft::TaskScope scope{pool};
  scope.submit([&](weft::Subflow& sf) {
    sf.spawn([&] { left = count_primes(0, 5000); });  // tg.run(...)
    sf.spawn([&] { right = count_primes(5000, 10000); });
    sf.join();  // tg.wait(): both children have finished
    total = left + right;
  });
  scope.run_and_wait();  // rethrows a child's exception, as tg.wait() does
  check(total == 1229, "task_group: two children, joined");
  check(tbb_fib(pool, 20) == 6765, "task_group: recursive fib");
}

void tbb_flow_graph(weft::Pool& pool) {
  std::vector<int> data;
  long total = 0;
  int largest = 0;
  std::string line;
  weft::TaskGraph graph;  // tbb::flow::graph g;
  weft::Node load = graph.add_node([&] { data.assign(1000, 2); }, {.name = "load"});
  weft::Node sum = graph.add_node([&] { total = std::accumulate(data.begin(), data.end(), 0L); }, {.name = "sum"});
  weft::Node max = graph.add_node([&] { largest = *std::max_element(data.begin(), data.end()); }, {.name = "max"});
  weft::Node report = graph.add_node([&] { line = std::to_string(total) + "/" + std::to_string(largest); },
                                     {.name = "report"});
  graph.add_edges(load, {sum, max});  // make_edge(load, sum); make_edge(load, max);
  graph.add_edge(sum, report);        // report starts when both have finished, as a
  graph.add_edge(max, report);        // continue_node counting its predecessors
  graph.run(pool).wait();             // load.try_put(continue_msg()); g.wait_for_all();
  graph.run(pool).wait();             // and again: no g.reset() between runs
  check(line == "2000/2", "flow graph of continue_nodes");
}

// A flow graph grown while it runs: each step after earlier steps, finished or not.
struct Step {
  int id;
  std::vector<int> preds;
};

void tbb_flow_graph_on_the_fly(weft::Pool& pool) {
  std::vector<Step> arriving;
  for (int i = 0; i < 50; ++i)
    arriving.push_back(Step{i, i == 0 ? std::vector<int>{} : std::vector<int>{i - 1, i / 2}});
  std::vector<int> results(arriving.size(), -1);
  std::vector<weft::AsyncTask> steps;  // one handle per task, in arrival order
  for (const Step& s : arriving) {     // e.g. read from a file while the first steps run
    std::vector<weft::AsyncTask> after;
    for (int p : s.preds) after.push_back(steps[p]);  // finished or not: a finished one costs one load
    steps.push_back(pool.submit_after(after, [&results, s] { results[s.id] = s.id; }));
  }
  for (const weft::AsyncTask& t : steps) t.get();  // g.wait_for_all(); rethrows a task's exception
  bool all = true;
  for (std::size_t i = 0; i < results.size(); ++i) all = all && results[i] == static_cast<int>(i);
  check(all, "a flow graph grown while it runs: every step ran");
}

void tbb_function_node(weft::Pool& pool) {
  std::vector<int> inputs(100);
  std::iota(inputs.begin(), inputs.end(), 0);
  std::vector<int> squares(inputs.size());
  weft::TaskGraph graph;
  graph.add_node([&](std::size_t i) { squares[i] = inputs[i] * inputs[i]; },  // one execution per message
                 {.name = "square", .concurrency = 4, .tokens = inputs.size()});
  graph.run(pool).wait();
  check(squares[9] == 81 && squares[99] == 9801, "function_node of concurrency 4 as a node of 100 tokens");
}

void tbb_parallel_for(weft::Pool& pool) {
  const std::size_t n = 100000;
  std::vector<double> x(n, 1.0);
  std::vector<double> y(n, 0.5);
  weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t lo, std::size_t hi) {  // a blocked_range body
    for (std::size_t i = lo; i != hi; ++i) y[i] = 2.0 * x[i] + y[i];
  });
  weft::parallel_for(
      pool, std::size_t{0}, n, [&](std::size_t i) { y[i] += 1.0; }, /* grain */ 1024);
  check(std::all_of(y.begin(), y.end(), [](double v) { return v == 3.5; }), "parallel_for, chunks and grain");
}

void tbb_algorithms(weft::Pool& pool) {
  std::vector<double> v(10000, 0.5);
  double total = weft::parallel_reduce(pool, v.begin(), v.end(), 0.0);
  double squares = weft::parallel_transform_reduce(pool, v.begin(), v.end(), 0.0, std::plus<>(),
                                                   [](double e) { return e * e; });
  std::vector<int> keys = {5, 3, 9, 1, 7};
  weft::parallel_sort(pool, keys.begin(), keys.end());
  std::vector<int> counts = {3, 1, 2};
  std::vector<int> offsets(counts.size());
  weft::parallel_exclusive_scan(pool, counts.begin(), counts.end(), offsets.begin(), 0);
  long a = 0;
  long b = 0;
  weft::parallel_invoke(
      pool, [&] { a = count_primes(0, 100); }, [&] { b = count_primes(100, 200); });
  check(total == 5000.0 && squares == 2500.0, "parallel_reduce and parallel_transform_reduce");
  check(keys == std::vector<int>{1, 3, 5, 7, 9}, "parallel_sort");
  check(offsets == std::vector<int>{0, 3, 4}, "parallel_exclusive_scan");
  check(a == 25 && b == 21, "parallel_invoke");
}

void tbb_range_forms(weft::Pool& pool) {
  const int n = 3000;
  const int rows = 40;
  const int cols = 50;
  std::vector<int> hits(n, 0);
  std::vector<double> v(1000, 0.25);
  std::vector<std::vector<int>> grid(rows, std::vector<int>(cols, 0));
  weft::parallel_for(pool, 0, n, 3, [&](int i) { hits[i] = 1; });
  double sum = weft::parallel_reduce(
      pool, std::size_t{0}, v.size(), 0.0,
      [&](std::size_t lo, std::size_t hi, double acc) {
        for (std::size_t i = lo; i != hi; ++i) acc += v[i];
        return acc;
      },
      std::plus<>());
  weft::parallel_for(pool, weft::Range2d<int>(0, rows, 0, cols), [&](const weft::Range2d<int>& t) {
    for (int i = t.rows().begin(); i != t.rows().end(); ++i) {
      for (int j = t.cols().begin(); j != t.cols().end(); ++j) grid[i][j] = i * j;
    }
  });
  weft::PerWorker<long> count(pool);
  weft::parallel_for(pool, 0, n, [&](int i) { count.local() += i % 2; });
  long odd = count.combine(std::plus<>());
  check(std::count(hits.begin(), hits.end(), 1) == n / 3 && hits[3] == 1 && hits[4] == 0, "parallel_for with a step");
  check(sum == 250.0, "the range form of parallel_reduce");
  check(grid[39][49] == 39 * 49 && grid[7][0] == 0, "a Range2d loop");
  check(odd == n / 2, "PerWorker as combinable");
}

void tbb_pipeline(weft::Pool& pool) {
  const std::vector<std::string> input = {"alpha", "be", "gamma", "delta", "pi"};
  std::vector<std::size_t> out;
  weft::TaskScope scope{pool};
  std::size_t next = 0;
  weft::Stream<std::string> lines = scope.source(
      [&]() -> std::optional<std::string> {             // serial_in_order
        if (next == input.size()) return std::nullopt;  // fc.stop()
        return input[next++];
      },
      {.live_tokens = 8});  // parallel_pipeline(8, ...)
  weft::Stream<std::size_t> lengths = scope.stage(lines, [](const std::string& s) { return s.size(); },
                                                  {.concurrency = weft::kUnlimited});  // filter_mode::parallel
  scope.sink(lengths, [&out](std::size_t n) { out.push_back(n); }, {.order = weft::Order::Input});  // serial_in_order
  scope.run_and_wait();  // parallel_pipeline(...) returns here
  check(out == std::vector<std::size_t>{5, 2, 5, 5, 2}, "parallel_pipeline: in order");
}

void tbb_arena() {
  weft::Pool arena{weft::PoolOptions{.threads = 2, .name = "arena"}};  // tbb::task_arena arena(2);
  weft::Future<int> index = arena.submit([&arena] {                    // arena.execute(...)
    std::optional<unsigned> worker = arena.current_worker();           // this_task_arena::current_thread_index()
    return worker ? static_cast<int>(*worker) : -1;                    // -1: run by the waiting thread itself
  });
  const int i = index.get();
  check(i >= -1 && i < static_cast<int>(arena.size()), "task_arena: a worker index, or the waiter");
}

// -------------------------------------------------------------------------------------------------- Taskflow

void tf_graph(weft::Pool& pool) {
  int x = 0;
  int y = 0;
  int z = 0;
  int w = 0;
  weft::TaskGraph taskflow;                                         // tf::Taskflow taskflow;
  weft::Node a = taskflow.add_node([&] { x = 1; }, {.name = "A"});  // taskflow.emplace(...).name("A")
  weft::Node b = taskflow.add_node([&] { y = x + 1; }, {.name = "B"});
  weft::Node c = taskflow.add_node([&] { z = x + 2; }, {.name = "C"});
  weft::Node d = taskflow.add_node([&] { w = y + z; }, {.name = "D"});
  taskflow.add_edges(a, {b, c});  // A.precede(B, C);
  taskflow.add_edge(b, d);        // D.succeed(B, C);
  taskflow.add_edge(c, d);
  weft::Run run = taskflow.run(pool);  // executor.run(taskflow)
  run.wait();                          // .get(): rethrows the first exception
  std::ostringstream dot;
  taskflow.dump(dot);  // taskflow.dump(std::cout): Graphviz DOT
  check(w == 5, "A precedes B and C, which precede D");
  check(dot.str().find("label=\"D\"") != std::string::npos, "dump names the nodes");
}

void tf_subflow(weft::Pool& pool) {
  std::vector<std::vector<int>> parts = {{3, 1, 2}, {9, 8}, {5, 7, 6, 4}};
  bool all_sorted = false;
  weft::TaskGraph taskflow;
  weft::Node sort = taskflow.add_node([&](weft::Subflow& sf) {  // taskflow.emplace([&](tf::Subflow& sf) {...})
    for (std::vector<int>& part : parts) {
      sf.spawn([&part] { std::sort(part.begin(), part.end()); });  // sf.emplace(...)
    }
  });  // joined at the end of the body, as sf.join()
  weft::Node verify = taskflow.add_node([&] {
    all_sorted = std::all_of(parts.begin(), parts.end(),
                             [](const std::vector<int>& p) { return std::is_sorted(p.begin(), p.end()); });
  });
  taskflow.add_edge(sort, verify);  // verify sees every child's work
  taskflow.run(pool).wait();
  check(all_sorted, "a subflow's children finish before the node's successors start");
}

void tf_algorithms_in_a_graph(weft::Pool& pool) {
  std::vector<int> values(1000, 1);
  long sum = 0;
  weft::TaskGraph taskflow;
  weft::Node scale = taskflow.add_node([&](weft::Subflow& sf) {  // taskflow.for_each_index(0, n, 1, f)
    weft::parallel_for(sf.pool(), std::size_t{0}, values.size(), [&](std::size_t i) { values[i] *= 3; });
  });
  weft::Node total = taskflow.add_node([&](weft::Subflow& sf) {  // taskflow.reduce(first, last, sum, plus)
    sum = weft::parallel_reduce(sf.pool(), values.begin(), values.end(), 0L);
  });
  taskflow.add_edge(scale, total);
  taskflow.run(pool).wait();
  check(sum == 3000, "parallel algorithms inside graph nodes");
}

void tf_async(weft::Pool& pool) {
  std::atomic<int> done{0};
  weft::Future<int> answer = pool.submit([] { return 6 * 7; });  // executor.async(...): a std::future
  pool.post([&done] { done.fetch_add(1); });                     // executor.silent_async(...)
  const int value = answer.get();
  pool.wait_idle();  // executor.wait_for_all()
  check(value == 42 && done.load() == 1, "async and silent_async");
}

void tf_pipeline(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  int token = 0;
  weft::Stream<int> numbers = scope.source([&]() -> std::optional<int> {  // the first pipe, SERIAL
    if (token == 100) return std::nullopt;                                // pf.stop()
    return token++;                                                       // buffer[pf.line()] = pf.token()
  });
  weft::Stream<long> squares = scope.stage(numbers, [](int v) { return long{v} * v; },
                                           {.concurrency = weft::kUnlimited, .capacity = 4});  // PARALLEL
  long sum = 0;
  scope.sink(squares, [&sum](long s) { sum += s; }, {.order = weft::Order::Input});  // SERIAL
  scope.run_and_wait();  // executor.run(taskflow.composed_of(pl)).wait()
  check(sum == 328350, "tf::Pipeline: serial, parallel, serial");
}

// --------------------------------------------------------------------------------------------------- DagFlow

void dagflow_pool() {
  weft::Pool pool{weft::PoolOptions{.threads = 2, .pinning = weft::Pinning::None}};  // Config{threads, pin_threads}
  weft::Future<int> answer = pool.submit_with({.priority = weft::Priority::High}, [] { return 6 * 7; });
  const int value = answer.get();  // pool.wait(h); h.rethrow_if_failed(); and the value
  std::atomic<int> detached{0};
  pool.post([&detached] { detached.fetch_add(1); });  // submit_detached: exceptions go to on_error
  pool.wait_idle();
  pool.shutdown();  // close(), then shutdown()
  check(value == 42 && detached.load() == 1, "Pool, submit, submit_detached, shutdown");
}

void dagflow_graph(weft::Pool& pool) {
  std::atomic<int> ran{0};
  weft::TaskGraph graph;  // TaskGraph graph(pool): weft's takes the pool at run()
  graph.add_node([&ran](std::size_t /* token */) { ran.fetch_add(1); }, {.name = "sample",
                                                                         .concurrency = 2,
                                                                         .capacity = 8,
                                                                         .overflow = weft::Overflow::Drop,
                                                                         .tokens = 100});  // set_tokens(node, 100)
  weft::Run run = graph.run(pool);           // seal() and run(): compiled on the first run
  run.wait();                                // pool.wait(h), then last_error(): wait() rethrows
  const weft::RunStats stats = run.stats();  // what Drop dropped is counted, per node too
  check(static_cast<std::uint64_t>(ran.load()) + stats.dropped == 100, "tokens run or dropped, none lost");
}

void dagflow_scope(weft::Pool& pool) {
  std::vector<int> v(100, 1);
  weft::TaskScope scope{pool};
  weft::Job<int> a = scope.submit([] { return 21; });             // JobHandle a = scope.submit(f)
  weft::Job<int> b = scope.then(a, [](int x) { return x * 2; });  // f gets a's value
  weft::Job<void> p = scope.parallel_for(v.begin(), v.end(), [](int& e) { e += 1; });
  weft::Job<int> total = scope.when_all(std::tuple{b, p}, [&v](int x) {  // when_all({b, p}, f)
    return x + std::accumulate(v.begin(), v.end(), 0);
  });
  scope.run_and_wait();  // one-shot: a second run() throws weft::graph_busy
  check(total.get() == 242, "submit, then, parallel_for, when_all");
}

}  // namespace

int main() {
  weft::Pool pool;
  tbb_task_group(pool);
  tbb_task_group_in_a_graph(pool);
  tbb_flow_graph(pool);
  tbb_flow_graph_on_the_fly(pool);
  tbb_function_node(pool);
  tbb_parallel_for(pool);
  tbb_algorithms(pool);
  tbb_range_forms(pool);
  tbb_pipeline(pool);
  tbb_arena();
  tf_graph(pool);
  tf_subflow(pool);
  tf_algorithms_in_a_graph(pool);
  tf_async(pool);
  tf_pipeline(pool);
  dagflow_pool();
  dagflow_graph(pool);
  dagflow_scope(pool);
  if (failures != 0) return 1;
  std::printf("migrating: ok\n");
  return 0;
}
