// The Example blocks of the public headers (include/weft/*.hpp), copied verbatim, each in a function that
// declares what the example takes as given (a pool, a vector, n). Compiled by check_compile.py with -Wall -Wextra
// -Wpedantic -Werror, so that an example a user pastes compiles cleanly: no unused parameter in its lambdas. A variable
// an example leaves unused is used after it, as the code that follows it would. When a header's example changes, change
// it here too.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <istream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/algorithms.hpp"
#include "weft/async_task.hpp"
#include "weft/cell.hpp"
#include "weft/condition_variable.hpp"
#include "weft/event.hpp"
#include "weft/future.hpp"
#include "weft/generator.hpp"
#include "weft/node_options.hpp"
#include "weft/parallel_for.hpp"
#include "weft/per_worker.hpp"
#include "weft/pool.hpp"
#include "weft/pool_options.hpp"
#include "weft/range2d.hpp"
#include "weft/semaphore.hpp"
#include "weft/shared_function.hpp"
#include "weft/small_function.hpp"
#include "weft/stream.hpp"
#include "weft/stream_graph.hpp"
#include "weft/subflow.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_group.hpp"
#include "weft/task_scope.hpp"
#include "weft/task_when.hpp"
#include "weft/timer.hpp"
#include "weft/trace.hpp"
#include "weft/wait_group.hpp"
#include "weft/when.hpp"

namespace examples {

void log(const char* what) { (void)what; }

void load() {}
void parse() {}
void report() {}

void async_task_hpp(weft::Pool& pool) {
  weft::AsyncTask a = pool.submit_after({}, [] { load(); });
  weft::AsyncTask b = pool.submit_after({a}, [] { parse(); });
  weft::AsyncTask c = pool.submit_after({a, b}, [] { report(); });
  c.get();  // after a and b; rethrows the first failure of the chain
}

void pool_hpp_submit_after(weft::Pool& pool) {
  weft::AsyncTask a = pool.submit_after({}, [] { std::puts("a"); });
  weft::AsyncTask b = pool.submit_after({}, [] { std::puts("b"); });
  weft::AsyncTask c = pool.submit_after({a, b}, [] { std::puts("c, after a and b"); });
  c.get();
}

void pool_hpp_as_async_task(weft::Pool& pool) {
  weft::Future<int> parsed = pool.submit([] { return 42; });
  weft::AsyncTask loaded = pool.submit_after({}, [] { std::puts("loaded"); });
  weft::AsyncTask parsed_task = pool.as_async_task(std::move(parsed));  // the value 42 is discarded
  weft::AsyncTask report = pool.submit_after({loaded, parsed_task}, [] { std::puts("both done"); });
  report.get();  // rethrows the parse's or the load's exception, if either failed
}

void future_hpp() {
  weft::Pool pool;
  weft::Future<int> answer = pool.submit([](int a) { return a * 2; }, 21);
  int v = answer.get();  // 42
  (void)v;
}

void pool_submit_subflow(weft::Pool& pool) {
  std::vector<int> squares(4);
  weft::Future<void> f = pool.submit([&squares](weft::Subflow& sf) {
    for (int i = 0; i < 4; ++i) sf.spawn([&squares, i] { squares[i] = i * i; });
  });
  f.get();  // every child finished: squares == {0, 1, 4, 9}
}

void future_then(weft::Pool& pool) {
  weft::Future<int> a = pool.submit([] { return 20; });
  weft::Future<std::string> b = std::move(a).then([](int v) { return std::to_string(v + 1); });
  weft::Future<void> c = std::move(b).then([](std::string s) { std::puts(s.c_str()); });
  c.get();  // "21" printed; rethrows the first exception of the chain
}

void pool_hpp() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  pool.post([] { /* fire and forget */ });
  weft::Future<int> f = pool.submit([](int a) { return a * 2; }, 21);
  int v = f.get();   // 42; rethrows the task's exception
  pool.wait_idle();  // every accepted task has finished
  (void)v;
}

void pool_hpp_post_bulk(weft::Pool& pool) {
  std::vector<int> squares(10);
  std::vector<std::function<void()>> batch;
  for (int i = 0; i < 10; ++i) batch.emplace_back([&squares, i] { squares[i] = i * i; });
  pool.post_bulk(batch);  // ten tasks; batch keeps its callables (copied)
  pool.wait_idle();       // squares == {0, 1, 4, ..., 81}
}

void pool_hpp_post_bulk_count(weft::Pool& pool) {
  std::vector<double> out(1000);
  pool.post_bulk(out.size(), [&out](std::size_t i) { out[i] = std::sqrt(double(i)); });
  pool.wait_idle();  // out[i] == sqrt(i) for every i
}

void pool_hpp_thread_index() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  std::vector<long> partial(pool.max_thread_index(), 0);  // one accumulator per possible thread
  weft::parallel_for(pool, 0, 1000, [&](int i) { partial[*pool.current_thread_index()] += i; });
  long total = std::accumulate(partial.begin(), partial.end(), 0L);  // 499500
  (void)total;
}

void parallel_for_hpp_indices(std::size_t n) {
  weft::Pool pool;
  std::vector<double> y(n);
  weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { y[i] = std::sqrt(double(i)); });
}

void parallel_for_hpp_elements(weft::Pool& pool) {
  std::vector<int> v(1000, 1);
  weft::parallel_for(pool, v.begin(), v.end(), [](int& x) { x *= 2; });
}

void parallel_for_hpp_step(weft::Pool& pool, int n) {
  std::vector<int> even(static_cast<std::size_t>(n));
  weft::parallel_for(pool, 0, n, 2, [&](int i) { even[i / 2] = i; });  // 0, 2, 4, ... below n
}

void parallel_for_hpp_grid(weft::Pool& pool, int n, std::vector<std::vector<double>>& next,
                           const std::vector<std::vector<double>>& cur) {
  const weft::Range2d<int> grid(1, n - 1, 1, n - 1);  // the interior of an n x n grid
  weft::parallel_for(pool, grid, [&](const weft::Range2d<int>& t) {
    for (int i = t.rows().begin(); i != t.rows().end(); ++i)
      for (int j = t.cols().begin(); j != t.cols().end(); ++j) next[i][j] = (cur[i - 1][j] + cur[i + 1][j]) / 2;
  });
}

void range2d_hpp(weft::Pool& pool, std::size_t rows, std::size_t cols, const std::vector<double>& in,
                 std::vector<double>& out) {
  weft::parallel_for(pool, weft::Range2d<std::size_t>(0, rows, 0, cols), [&](const weft::Range2d<std::size_t>& t) {
    for (std::size_t i = t.rows().begin(); i != t.rows().end(); ++i)
      for (std::size_t j = t.cols().begin(); j != t.cols().end(); ++j) out[j * rows + i] = in[i * cols + j];
  });
}

std::size_t key(std::size_t i) { return i * 7; }

void per_worker_hpp(weft::Pool& pool, std::size_t n) {
  weft::PerWorker<std::vector<long>> bins(pool, [] { return std::vector<long>(16, 0); });
  weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { ++bins.local()[key(i) % 16]; });
  std::vector<long> total(16, 0);
  bins.combine_each([&](const std::vector<long>& b) {
    for (int k = 0; k < 16; ++k) total[k] += b[k];
  });
}

void small_function_hpp() {
  auto buffer = std::make_unique<std::vector<int>>(1000);
  weft::small_function<std::size_t(int)> task = [b = std::move(buffer)](int v) {
    b->push_back(v);
    return b->size();
  };                                                         // inline: a unique_ptr fits in 128 bytes
  auto queued = std::move(task);                             // noexcept, no allocation; task is now empty
  std::size_t n = queued(7);                                 // 1001
  weft::small_function_inline_only<void()> checked = [] {};  // a too-big capture here would not compile
  (void)n;
}

void pool_options_hpp() {
  std::atomic<int> errors{0};
  const weft::PoolOptions base{.threads = 2, .on_error = [&errors](std::exception_ptr) { ++errors; }};
  weft::PoolOptions io = base;  // shares on_error with base
  io.name = "io";
  weft::Pool compute{base};
  weft::Pool io_pool{io};  // an exception posted to either pool counts in `errors`
}

void shared_function_hpp() {
  std::atomic<int> calls{0};
  weft::shared_function<void(int)> count = [&calls](int n) { calls += n; };
  weft::shared_function<void(int)> same = count;  // no allocation: both call the one lambda
  count(1);
  same(2);  // calls == 3
  auto owner = std::make_unique<int>(5);
  weft::shared_function<int()> read = [p = std::move(owner)] { return *p; };  // move-only: still copyable
  auto copy = read;                                                           // copy() == 5
  (void)copy;
}

long sum(long lo, long hi) { return (lo + hi) * (hi - lo + 1) / 2; }

void subflow_hpp(weft::TaskGraph& graph, long lo, long mid, long hi) {
  long left = 0;
  long right = 0;
  long total = 0;
  graph.add_node([&](weft::Subflow& sf) {
    sf.spawn([&] { left = sum(lo, mid); });
    right = sum(mid, hi);
    sf.join();
    total = left + right;
  });
}

int load_x() { return 1; }
int load_y() { return 2; }

void subflow_edges_hpp(weft::Subflow& sf) {
  int x = 0;
  int y = 0;
  int z = 0;
  weft::SubflowChild b1 = sf.spawn_after({}, [&] { x = load_x(); });
  weft::SubflowChild b2 = sf.spawn_after({}, [&] { y = load_y(); });
  (void)sf.spawn_after({b1, b2}, [&] { z = x + y; });
  sf.join();
  (void)z;
}

void node_options_hpp() {
  const auto options = weft::NodeOptions{.concurrency = 2, .capacity = 64, .overflow = weft::Overflow::Block};
  (void)options;
}

void semaphore_hpp(weft::Pool& pool) {
  weft::Semaphore db{1};  // one connection: at most one query at a time
  weft::TaskGraph g;
  for (int q = 0; q < 8; ++q) g.add_node([] { /* query */ }, weft::NodeOptions{.semaphores = {&db}});
  g.run(pool).wait();  // never two queries at once; db.available() == 1 again
}

void trace_hpp() {
  auto trace = std::make_shared<weft::Trace>();
  weft::Pool pool{weft::PoolOptions{.threads = 2, .trace = trace}};
  weft::TaskGraph g;
  const weft::Node load = g.add_node([] { /* read the input */ }, {.name = "load"});
  g.add_edge(load, g.add_node([] { /* parse it */ }, {.name = "parse"}));
  g.run(pool).wait();
  trace->save("weft-trace.json");  // open it in https://ui.perfetto.dev or chrome://tracing
}

void task_graph_hpp_run(weft::TaskGraph& graph, weft::Pool& pool) {
  weft::Run run = graph.run(pool);
  if (run.wait() == weft::RunStatus::Cancelled) { /* ... */
  }
}

void task_graph_hpp_run_options(weft::TaskGraph& graph, weft::Pool& pool, weft::Node link) {
  weft::Run run = graph.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing});
  try {
    run.wait();
  } catch (const std::exception&) { /* the first failure, after the whole run */
  }
  if (run.outcome(link).state == weft::NodeState::Skipped) { /* link descends from a failed node */
  }
}

void task_graph_hpp_outcomes(weft::TaskGraph& graph, weft::Pool& pool, weft::Node n) {
  weft::Run run = graph.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
  (void)run.wait();
  if (run.outcome(n).state == weft::NodeState::Failed) std::rethrow_exception(run.outcome(n).error);
  std::size_t failed = 0;
  for (const weft::NodeOutcome& o : run.outcomes()) failed += o.state == weft::NodeState::Failed;
  (void)failed;
}

void task_scope_hpp_run_options(weft::TaskScope& scope) {
  scope.run_and_wait({.on_error = weft::ErrorPolicy::KeepGoing});
}

void task_graph_hpp() {
  weft::Pool pool;
  weft::TaskGraph g;
  auto n1 = g.add_node([] { /* ... */ });
  auto n2 = g.add_node([] { /* ... */ },
                       weft::NodeOptions{.concurrency = 2, .capacity = 64, .overflow = weft::Overflow::Block});
  g.add_edge(n1, n2);
  g.run(pool).wait();  // and again: g.run(pool).wait();
}

void task_graph_hpp_add_edges(weft::TaskGraph& g) {
  auto load = g.add_node([] {});
  auto parse = g.add_node([] {});
  auto index = g.add_node([] {});
  g.add_edges(load, {parse, index});
}

void task_graph_hpp_run_n(weft::Pool& pool, weft::TaskGraph& g) {
  std::atomic<int> count{0};
  g.add_node([&] { ++count; });
  g.run_n(pool, 5).wait();  // count == 5
}

void task_graph_hpp_queued_runs(weft::Pool& pool, weft::TaskGraph& g) {
  weft::Run first = g.run(pool);
  weft::Run second = g.run(pool);  // queued: starts when `first` has ended
  second.wait();                   // both are over
}

void task_graph_hpp_run_n_on_done(weft::Pool& pool, weft::TaskGraph& g) {
  weft::Event done;
  weft::Run r = g.run_n(pool, 3, {.on_done = [&] { done.signal(); }});  // done: a weft::Event
  done.wait();
}

void task_graph_hpp_run_until(weft::Pool& pool, weft::TaskGraph& g) {
  int passes = 0;
  g.run_until(pool, [&] { return passes++ == 3; }).wait();  // the graph ran 3 times
}

void task_graph_hpp_add_graph(weft::Pool& pool) {
  weft::TaskGraph inner;
  inner.add_node([] { /* ... */ });
  weft::TaskGraph outer;
  auto before = outer.add_node([] { /* ... */ });
  auto module = outer.add_graph(inner, weft::NodeOptions{.name = "inner"});
  outer.add_edge(before, module);
  outer.run(pool).wait();
}

void task_graph_hpp_add_condition(weft::Pool& pool, weft::TaskGraph& g) {
  int i = 0;
  auto init = g.add_node([&] { i = 0; });
  auto body = g.add_node([&] { ++i; });
  auto again = g.add_condition([&] { return i < 10 ? 0 : 1; });
  auto done = g.add_node([] { /* ... */ });
  g.add_edge(init, body);
  g.add_edge(body, again);
  g.add_edges(again, {body, done});  // 0: loop back to body, 1: on to done
  g.run(pool).wait();                // body ran 10 times
}

void task_graph_hpp_placeholder(weft::Pool& pool, weft::TaskGraph& g, std::size_t n, std::vector<std::size_t>& value) {
  std::vector<weft::Node> cell(n * n);
  for (weft::Node& c : cell) c = g.placeholder();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (j + 1 < n) g.add_edge(cell[i * n + j], cell[i * n + j + 1]);
      if (i + 1 < n) g.add_edge(cell[i * n + j], cell[(i + 1) * n + j]);
    }
  for (std::size_t k = 0; k < n * n; ++k) g.set_work(cell[k], [k, &value] { value[k] = k; });
  g.run(pool).wait();
}

void task_scope_hpp(std::vector<int>& v, std::vector<int>& out) {
  weft::Pool pool;
  weft::TaskScope scope{pool};
  auto a = scope.submit([] { return 21; });
  auto b = scope.then(a, [](int x) { return x * 2; });
  auto d = scope.parallel_for(v.begin(), v.end(), [](int& x) { x *= 2; });
  scope.when_all({a, b}, [](std::vector<int> values) {
    return values[0] + values[1]; /* 21 + 42 */
  });
  scope.run_and_wait();  // rethrows the first exception
  int r = b.get();       // 42
  (void)r;
  (void)out;
}

void task_scope_hpp_dump(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  auto load = scope.submit([] { return 1; }, weft::NodeOptions{.name = "load"});
  auto parse = scope.then(
      load, [](int x) { return x + 1; }, weft::NodeOptions{.name = "parse"});
  std::ostringstream dot;
  scope.dump(dot);  // digraph weft { n0 [label="load"]; n1 [label="parse"]; n0 -> n1; }
  (void)parse;
}

void task_scope_hpp_members(weft::TaskScope& scope, std::vector<int>& v, std::vector<int>& out) {
  auto a = scope.submit([] { return 21; });
  auto b = scope.then(a, [](int x) { return x * 2; });
  scope.then(b, [] { log("b done"); });
  scope.when_all({a, b}, [](std::vector<int> values) { return values[0] + values[1]; });
  auto s = scope.submit([] { return std::string("s"); });
  auto fill = scope.submit([] {});
  auto d = scope.parallel_for(weft::after(fill), v.begin(), v.end(), [](int& x) { x *= 2; });
  scope.when_all({a, s, d}, [] { /* all three finished */ });
  scope.when_all(std::tuple{a, s}, [](int x, const std::string& y) { return x + static_cast<int>(y.size()); });
  auto e = scope.parallel_for(0, 1000, [&](int i) { out[i] = i * i; }, {.grain = 100});
  (void)e;
  const auto next = [] { return std::optional<long>(); };
  auto values = scope.source(weft::after(fill), [&]() -> std::optional<long> { return next(); });
  scope.sink(values, [](long) {});
}

std::optional<std::string> next_line(std::istream& in) {
  std::string line;
  if (std::getline(in, line)) return line;
  return std::nullopt;
}
std::optional<std::string> next(std::istream& in) { return next_line(in); }
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream words_in(line);
  for (std::string w; words_in >> w;) words.push_back(w);
  return words;
}

// task_scope.hpp: forks and joins (compiled only; each stream would be consumed once in a real pipeline)
struct File {
  std::size_t size = 0;
};
struct Part {
  int id = 0;
};
struct Result {
  std::size_t index = 0;
};
struct Request {
  int rank = 0;
};
void task_scope_hpp_forks(weft::TaskScope& scope, const weft::Stream<long>& values, const weft::Stream<int>& jobs,
                          const weft::Stream<File>& files, const weft::Stream<long>& squares,
                          const weft::Stream<long>& cubes, const weft::Stream<Part>& heads,
                          const weft::Stream<Part>& bodies, const weft::Stream<Result>& results,
                          const weft::Stream<Request>& requests) {
  auto [left, right] = scope.broadcast<2>(values, {.name = "tee"});
  auto [even, odd] = scope.split<2>(jobs);
  auto [small, large] = scope.split<2>(files, [](const File& f) { return f.size > 1 << 20 ? 1 : 0; });
  auto pairs = scope.join(std::tuple{squares, cubes}, {.name = "pair"});
  auto orders = scope.join_by_key(std::tuple{heads, bodies}, [](const auto& part) { return part.id; });
  auto all = scope.merge({left, right}, {.name = "both"});
  auto ordered = scope.sequence(results, [](const Result& r) { return r.index; }, {.name = "reorder"});
  auto by_rank = [](const Request& a, const Request& b) { return a.rank < b.rank; };
  auto urgent_first = scope.priority_buffer(requests, by_rank, {.capacity = 64});
  (void)even, (void)odd, (void)small, (void)large, (void)pairs, (void)orders, (void)all, (void)ordered;
  (void)urgent_first;
}

void task_scope_hpp_pipeline(weft::TaskScope& scope, std::istream& in, std::ostream& out) {
  auto lines = scope.source([&]() -> std::optional<std::string> { return next_line(in); });
  auto words = scope.fan_out(lines, [](std::string s) { return split(s); }, {.concurrency = 2});
  auto longs = scope.stage(words, [](std::string w) -> std::optional<std::string> {
    if (w.size() > 8) return w;
    return std::nullopt;
  });
  auto done = scope.sink(longs, [&](const std::string& w) { out << w << '\n'; }, {.order = weft::Order::Input});
  scope.then(done, [&] { out.flush(); });
}

void stream_hpp(weft::TaskScope& scope, std::istream& in) {
  std::size_t total = 0;
  weft::Stream<std::string> lines = scope.source([&]() -> std::optional<std::string> { return next(in); });
  weft::Stream<std::size_t> sizes = scope.stage(lines, [](std::string s) { return s.size(); });
  weft::Job<void> done = scope.sink(sizes, [&](std::size_t n) { total += n; });
  (void)done;
}

void stream_graph_hpp(weft::Pool& pool) {
  weft::StreamGraph pipe;
  std::vector<int> batch;
  auto items = pipe.source([&](std::size_t i) -> std::optional<int> {
    if (i == batch.size()) return std::nullopt;
    return batch[i];
  });
  auto squares = pipe.stage(items, [](int x) { return x * x; }, {.concurrency = weft::kUnlimited});
  long long sum = 0;
  pipe.sink(squares, [&](int s) { sum += s; });
  for (int round = 0; round < 3; ++round) {
    batch = {1, 2, 3};
    sum = 0;
    pipe.run(pool).wait();  // sum == 14, every round
  }
  weft::TaskGraph outer;
  weft::Node load = outer.add_node([] {});
  weft::Node stream = pipe.compose_into(outer, {.name = "pipeline"});
  outer.add_edge(load, stream);
}

void job_hpp(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  weft::Job<int> a = scope.submit([] { return 21; });
  scope.run_and_wait();
  int v = a.get();  // 21
  (void)v;
}

void after_hpp(weft::TaskScope& scope, std::vector<long>& v) {
  auto fill = scope.submit([&] { std::iota(v.begin(), v.end(), 0L); });
  auto doubled = scope.parallel_for(weft::after(fill), v.begin(), v.end(), [](long& x) { x *= 2; });
  std::vector<weft::AnyJob> deps{fill, doubled};
  weft::Job<long> total = scope.parallel_reduce(weft::after(deps), v.begin(), v.end(), 0L);
  (void)total;
}

void any_job_hpp(weft::TaskScope& scope, int n) {
  const auto body = [](int) {};
  std::vector<weft::AnyJob> deps{scope.submit([] { return 1; }), scope.parallel_for(0, n, body)};
  scope.when_all(deps, [] { /* after both */ });
}

int build(int x) { return x; }

void algorithms_hpp_reduce(weft::Pool& pool, std::size_t n, const std::vector<std::string>& words) {
  std::vector<double> v(n, 0.5);
  double sum = weft::parallel_reduce(pool, v.begin(), v.end(), 0.0);
  std::string s = weft::parallel_reduce(pool, words.begin(), words.end(), std::string(), std::plus<>());
  (void)sum;
}

void algorithms_hpp_range_reduce(weft::Pool& pool, std::size_t n) {
  std::vector<double> v(n, 0.5);
  double sum = weft::parallel_reduce(
      pool, std::size_t{0}, v.size(), 0.0,
      [&](std::size_t lo, std::size_t hi, double acc) { return std::accumulate(&v[lo], &v[0] + hi, acc); },
      std::plus<>());
  (void)sum;
}

void algorithms_hpp_range_reduce_2d(weft::Pool& pool, std::size_t height, std::size_t width,
                                    const std::vector<unsigned char>& pixels) {
  const weft::Range2d<std::size_t> image(0, height, 0, width);
  std::size_t lit = weft::parallel_reduce(
      pool, image, std::size_t{0},
      [&](const weft::Range2d<std::size_t>& t, std::size_t acc) {
        for (std::size_t y = t.rows().begin(); y != t.rows().end(); ++y)
          for (std::size_t x = t.cols().begin(); x != t.cols().end(); ++x) acc += pixels[y * width + x] > 128;
        return acc;
      },
      std::plus<>());
  (void)lit;
}

void algorithms_hpp_transform_reduce(weft::Pool& pool) {
  std::vector<std::string> words = {"a", "bb", "ccc"};
  auto size = [](const std::string& w) { return w.size(); };
  std::size_t letters = weft::parallel_transform_reduce(pool, words.begin(), words.end(), std::size_t{0}, std::plus<>(),
                                                        size);  // 6
  (void)letters;
}

void algorithms_hpp_scans(weft::Pool& pool, std::size_t n) {
  std::vector<int> v(n, 1), prefix(n);
  weft::parallel_inclusive_scan(pool, v.begin(), v.end(), prefix.begin());  // 1, 2, 3, ...
  std::vector<std::size_t> sizes = {3, 1, 2}, offsets(3);
  weft::parallel_exclusive_scan(pool, sizes.begin(), sizes.end(), offsets.begin(), std::size_t{0});  // 0, 3, 4
}

void algorithms_hpp_sort(weft::Pool& pool) {
  std::vector<int> v = {3, 1, 2};
  weft::parallel_sort(pool, v.begin(), v.end());                    // 1, 2, 3
  weft::parallel_sort(pool, v.begin(), v.end(), std::greater<>());  // 3, 2, 1
}

void algorithms_hpp_invoke(weft::Pool& pool, int l, int r) {
  int left = 0;
  int right = 0;
  weft::parallel_invoke(
      pool, [&] { left = build(l); }, [&] { right = build(r); }, [&] { log("building"); });
}

int left() { return 1; }
int right() { return 2; }

void task_scope_hpp_algorithms(weft::TaskScope& scope, const std::vector<long>& v, std::vector<int>& w, long n) {
  int a = 0;
  int b = 0;
  weft::Job<long> sum = scope.parallel_reduce(v.begin(), v.end(), 0L);
  weft::Job<double> mean = scope.then(sum, [n](long s) { return double(s) / double(n); });
  scope.parallel_sort(w.begin(), w.end(), std::greater<>(), {.name = "sort w"});
  scope.parallel_invoke([&] { a = left(); }, [&] { b = right(); });
  scope.parallel_sort(weft::after(sum), w.begin(), w.end());
  scope.parallel_reduce(v.begin(), v.end(), 0L, std::plus<>(), {.name = "sum", .grain = 4096});
  (void)mean;
}

void load_config() {}
void use_config() {}
void process(int& item) { ++item; }
void use(int value) { (void)value; }

void event_hpp(weft::Pool& pool) {
  weft::Event ready;  // manual reset
  pool.post([&] {
    load_config();
    ready.signal();
  });
  pool.post([&] {
    ready.wait();
    use_config();
  });  // suspends until the first task signals
  pool.wait_idle();
}

long fib(weft::Pool& pool, int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  weft::TaskGroup g{pool};
  g.run([&] { a = fib(pool, n - 1); });
  g.run_and_wait([&] { b = fib(pool, n - 2); });  // b on this thread, then waits for a
  return a + b;
}

void wait_group_hpp(weft::Pool& pool, std::vector<int>& items) {
  weft::WaitGroup pending;
  for (auto& item : items) {
    pending.add();
    pool.post([&] {
      process(item);
      pending.done();
    });
  }
  pending.wait();  // every item processed
}

void condition_variable_hpp(weft::Pool& pool) {
  std::mutex m;
  weft::ConditionVariable cv;
  std::deque<int> queue;
  pool.post([&] {  // consumer
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return !queue.empty(); });
    use(queue.front());
  });
  {
    std::lock_guard lock(m);
    queue.push_back(42);
  }
  cv.notify_one();
  pool.wait_idle();
}

void pool_hpp_timers(weft::Pool& pool) {
  std::atomic<int> ticks{0};
  weft::Timer once = pool.post_after(std::chrono::milliseconds(10), [] { std::puts("10 ms later"); });
  weft::Timer every = pool.post_every(std::chrono::milliseconds(5), [&ticks] { ++ticks; });
  weft::DelayedFuture<int> later = pool.submit_after_delay(std::chrono::milliseconds(1), [] { return 7; });
  int seven = later.future.get();  // 7, once the delay passed and a worker ran it
  (void)every.cancel();            // no run starts after this returns
  (void)once, (void)seven;
}

void pool_hpp_stop_token(weft::Pool& pool) {
  std::stop_source stop;
  weft::Future<int> f = pool.submit(
      stop.get_token(),
      [](std::stop_token token, int limit) {
        int i = 0;
        while (i < limit && !token.stop_requested()) ++i;  // polls the token while it runs
        return i;
      },
      1000);
  stop.request_stop();  // before the start: f.get() throws weft::task_cancelled; during the run: i < 1000
  try {
    (void)f.get();
  } catch (const weft::task_cancelled&) {
  }
}

void timer_hpp(weft::Pool& pool) {
  weft::Timer t = pool.post_after(std::chrono::seconds(5), [] { std::puts("five seconds later"); });
  bool stopped = t.cancel();  // true: it had not fired; the lambda never runs
  (void)stopped;
}

void when_hpp(weft::Pool& pool) {
  weft::Future<int> a = pool.submit([] { return 1; });
  weft::Future<std::string> b = pool.submit([] { return std::string("two"); });
  auto [one, two] = weft::when_all(std::move(a), std::move(b)).get();  // 1, "two"
  std::vector<weft::Future<int>> racers;
  for (int i = 0; i < 3; ++i) racers.push_back(pool.submit([i] { return i * 10; }));
  weft::WhenAnyResult<int> first = weft::when_any(std::move(racers)).get();  // first.value == first.index * 10
  weft::Future<int> bad = pool.submit([]() -> int { throw std::runtime_error("no"); });
  std::vector<weft::Future<int>> mixed;
  mixed.push_back(std::move(bad));
  mixed.push_back(pool.submit([] { return 3; }));
  std::vector<weft::Settled<int>> all = weft::when_all_settled(std::move(mixed)).get();  // never throws
  bool failed = !all[0].has_value();                                                     // true; all[1].value == 3
  (void)one, (void)two, (void)failed;
  (void)first;
}

// pool.hpp (Pool::schedule)
weft::Task<void> hop(weft::Pool& pool) {
  co_await pool.schedule();  // from here on, on one of pool's workers
  std::puts("on a worker");
}

// pool.hpp (Pool::sleep_for)
weft::Task<int> later(weft::Pool& pool) {
  co_await pool.sleep_for(std::chrono::milliseconds(10));  // no worker held for these 10 ms
  co_return 7;                                             // on one of pool's workers
}

// task.hpp
weft::Task<int> answer(weft::Pool& pool) {
  int half = co_await pool.submit([] { return 21; });  // suspends; resumes on a worker
  co_return half * 2;
}
int ask(weft::Pool& pool) { return weft::sync_wait(answer(pool)); }  // 42

weft::Task<int> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await weft::when_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}
weft::Task<int> fib_on(weft::Pool& pool, int n) {
  co_await pool.schedule();  // on a worker: when_all's members then run in parallel on the pool
  co_return co_await fib(n);
}

// sync_wait.hpp
weft::Task<int> twice(weft::Pool& pool, int x) {
  co_await pool.schedule();
  co_return 2 * x;
}
int forty_two(weft::Pool& pool) { return weft::sync_wait(twice(pool, 21)); }  // computed on a worker

weft::Task<void> greet() {
  std::puts("hello from a worker");
  co_return;
}
void start(weft::Pool& pool) { weft::spawn(pool, greet()); }  // or pool.spawn(greet())
void start_member(weft::Pool& pool) {
  pool.spawn(greet());  // greet() returns a weft::Task<void>
}

// task.hpp: co_await on a Job, a Run, an Event, a WaitGroup and a ConditionVariable; when_any and when_all_settled;
// stop tokens
weft::Task<int> use(weft::TaskScope& scope, weft::Job<int> job) {
  co_await scope.pool().schedule();
  co_return co_await job * 2;
}
weft::Task<void> after_graph(weft::TaskGraph& graph, weft::Pool& pool) {
  co_await pool.schedule();
  co_await graph.run(pool);  // rethrows a node's exception
}
weft::Task<void> consumer(weft::Event& ready, weft::WaitGroup& pending) {
  co_await ready;    // no worker waits meanwhile
  co_await pending;  // every done() called
}
weft::Task<int> take(weft::Pool& pool, std::mutex& m, weft::ConditionVariable& cv, std::deque<int>& queue) {
  co_await pool.schedule();
  std::unique_lock lock(m);
  while (queue.empty()) co_await weft::notified(cv, lock);  // no worker waits meanwhile
  int item = queue.front();
  queue.pop_front();
  co_return item;
}
weft::Task<int> fetch(int where) { co_return where; }
weft::Task<std::size_t> first_of(int primary, int mirror) {
  auto [index, value] = co_await weft::when_any(fetch(primary), fetch(mirror));  // the faster one
  (void)value;
  co_return index;
}
weft::Task<int> may_fail() { co_return 1; }
weft::Task<void> other() { co_return; }
void log(const std::exception_ptr& error) { (void)error; }
weft::Task<void> settle_both() {
  auto [a, b] = co_await weft::when_all_settled(may_fail(), other());
  if (!a.has_value()) log(a.error);  // b is independent of a's failure
  (void)b;
}
// task_when.hpp: the forms over a vector
weft::Task<int> square(int i) { co_return i* i; }
weft::Task<int> sum_of_squares(int n) {
  std::vector<weft::Task<int>> parts;
  for (int i = 1; i <= n; ++i) parts.push_back(square(i));
  int sum = 0;
  for (int v : co_await weft::when_all(std::move(parts))) sum += v;
  co_return sum;
}
weft::Task<std::string> fetch(std::string url) { co_return url; }
weft::Task<std::size_t> first_mirror(const std::vector<std::string>& urls) {
  std::vector<weft::Task<std::string>> mirrors;
  for (const auto& url : urls) mirrors.push_back(fetch(url));
  weft::WhenAnyResult<std::string> first = co_await weft::when_any(std::move(mirrors));
  co_return first.index;
}
weft::Task<int> may_fail(int i) {
  if (i == 2) throw std::runtime_error("two");
  co_return i;
}
weft::Task<std::size_t> count_outcomes() {
  std::vector<weft::Task<int>> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(may_fail(i));
  std::vector<weft::Settled<int>> outcomes = co_await weft::when_all_settled(std::move(jobs));
  co_return outcomes.size();
}
weft::Task<int> count_until_stopped(weft::Pool& pool) {
  co_await pool.schedule();
  std::stop_token stop = co_await weft::this_coro::stop_token;
  int n = 0;
  while (!stop.stop_requested() && n < 1000) ++n;
  co_return n;
}
int count_with(weft::Pool& pool) {
  std::stop_source source;
  int n = weft::sync_wait(weft::with_stop_token(count_until_stopped(pool), source.get_token()));
  return n;
}

// generator.hpp
weft::Generator<int> iota(int from, int to) {
  for (int i = from; i < to; ++i) co_yield i;
}
int sum_to_five() {
  int sum = 0;
  for (int i : iota(0, 5)) sum += i;
  return sum;  // 10
}

}  // namespace examples

// cell.hpp
void show(double) {}
void log(const std::string&) {}
void cell_hpp(weft::Pool& pool, weft::TaskScope& scope, const weft::Stream<double>& readings,
              const weft::Stream<std::string>& errors) {
  weft::OverwriteCell<double> latest;
  scope.sink(readings, latest.writer());   // each reading replaces the one before
  pool.post([&] { show(latest.get()); });  // waits for the first reading, then shows the latest
  weft::WriteOnceCell<std::string> first_error;
  scope.sink(errors, [&](std::string e) { (void)first_error.try_put(std::move(e)); });
  pool.post([&] { log(first_error.get()); });  // waits for the first error
}
