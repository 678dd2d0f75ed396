// The examples of docs/guide.md's first chapters (the pool, tasks and futures, graphs, scopes, options and
// back-pressure, errors and cancellation, subflows), compiled and run: each function shows one thing and checks
// what it did; main() exits with 1 if any check fails. docs/guide.md quotes these lines verbatim (check_quotes.py,
// run by the suite, fails when a quoted block is no longer here).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <weft/weft.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "guide_basics: FAILED: %s\n", what);
    ++failures;
  }
}

void pool_and_futures() {
  weft::Pool pool;  // one worker per CPU this process may use
  std::atomic<int> posted{0};
  pool.post([&] { posted.fetch_add(1); });  // fire and forget
  weft::Future<int> answer = pool.submit([](int a, int b) { return a * b; }, 6, 7);
  int value = answer.get();  // 42; get() rethrows the task's exception
  pool.wait_idle();          // every task posted so far has finished
  check(value == 42 && posted.load() == 1, "submit and post");

  weft::Future<void> failing = pool.submit([] { throw std::runtime_error("disk full"); });
  try {
    failing.get();
  } catch (const std::runtime_error& error) {
    check(std::string(error.what()) == "disk full", "the task's exception reaches get()");
  }
}

void futures_inside_tasks() {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Future<long> total = pool.submit([&pool] {
    weft::Future<long> left = pool.submit([] { return 20L; });
    long right = 22;
    return left.get() + right;  // meanwhile the worker runs other tasks
  });
  check(total.get() == 42, "a future waited for inside a task");
}

void first_graph() {
  weft::Pool pool;
  weft::TaskGraph graph;
  std::vector<int> data;
  long sum = 0;
  weft::Node load = graph.add_node([&] { data.assign(1000, 1); }, {.name = "load"});
  weft::Node total = graph.add_node([&] { sum = std::accumulate(data.begin(), data.end(), 0L); }, {.name = "sum"});
  graph.add_edge(load, total);  // sum runs after load
  graph.run(pool).wait();       // compiled on the first run
  graph.run(pool).wait();       // and run again, without recompiling
  check(sum == 1000, "a graph of two nodes, run twice");
}

void queued_runs() {
  weft::Pool pool;
  weft::TaskGraph graph;
  std::atomic<int> ran{0};
  std::atomic<int> finished{0};
  graph.add_node([&] { ran.fetch_add(1); });
  weft::Run first = graph.run(pool);  // starts (or is queued, if the graph were running)
  weft::Run second = graph.run_n(pool, 3, {.on_done = [&] { finished.fetch_add(1); }});  // queued behind first
  weft::Run third = graph.run(pool);                                                     // and behind second
  third.wait();  // the runs end in the order submitted: all three are over
  check(first.done() && second.done(), "queued runs end in order");
  check(ran.load() == 5 && finished.load() == 1, "three queued runs, five passes, one callback");
}

void tokens_and_back_pressure() {
  weft::Pool pool;
  weft::TaskGraph graph;
  std::atomic<std::size_t> done{0};
  std::atomic<unsigned> running{0};
  std::atomic<unsigned> widest{0};
  weft::Node work = graph.add_node(
      [&](std::size_t token) {  // token: 0 .. tokens-1
        const unsigned now = running.fetch_add(1) + 1;
        if (now > widest.load()) widest.store(now);
        done.fetch_add(token < 1000 ? 1 : 0);
        running.fetch_sub(1);
      },
      {.name = "work", .concurrency = 2, .capacity = 64, .overflow = weft::Overflow::Block, .tokens = 1000});
  static_cast<void>(work);
  graph.run(pool).wait();
  check(done.load() == 1000 && widest.load() <= 2, "1000 tokens, at most two at once");
}

void scope_jobs() {
  weft::Pool pool;
  weft::TaskScope scope{pool};
  weft::Job<int> a = scope.submit([] { return 21; }, {.name = "a"});
  weft::Job<int> b = scope.then(a, [](int x) { return x * 2; }, {.name = "b"});
  weft::Job<std::string> c = scope.submit([] { return std::string("answer"); });
  weft::Job<std::string> both = scope.when_all(std::tuple{b, c}, [](int x, const std::string& name) {
    return name + " = " + std::to_string(x);
  });
  scope.run_and_wait();  // rethrows the first exception of any job
  check(both.get() == "answer = 42", "jobs with typed results");
}

void scope_errors() {
  weft::Pool pool;
  weft::TaskScope scope{pool};
  weft::Job<int> parse = scope.submit([]() -> int { throw std::invalid_argument("bad header"); });
  weft::Job<int> use = scope.then(parse, [](int x) { return x + 1; });
  bool failed = false;
  bool skipped = false;
  try {
    scope.run_and_wait();
  } catch (const std::invalid_argument& error) {  // the first exception cancelled the run
    std::printf("run failed: %s\n", error.what());
    failed = true;
  }
  try {
    static_cast<void>(use.get());
  } catch (const weft::job_cancelled&) {  // a job the failure kept from starting
    skipped = true;
  }
  check(failed && skipped, "the first exception fails the run; its dependant is skipped");
}

void cancelling_a_run() {
  weft::Pool pool;
  weft::TaskGraph graph;
  std::atomic<int> ran{0};
  std::atomic<bool> go{false};
  weft::Node first = graph.add_node([&] {
    while (!go.load()) std::this_thread::yield();  // still running when the run is cancelled
    ran.fetch_add(1);
  });
  weft::Node second = graph.add_node([&] { ran.fetch_add(1); });
  graph.add_edge(first, second);
  weft::Run run = graph.run(pool);
  run.cancel();  // nodes not started yet are skipped
  go.store(true);
  weft::RunStatus status = run.wait();  // RunStatus::Cancelled
  check(status == weft::RunStatus::Cancelled, "a cancelled run says so");
  check(run.stats().skipped + static_cast<unsigned>(ran.load()) == 2, "every node ran or was counted skipped");
}

long fib(weft::Subflow& sf, int n) {
  if (n < 20) return n < 2 ? n : fib(sf, n - 1) + fib(sf, n - 2);
  long left = 0;
  sf.spawn([&left, n](weft::Subflow& child) { left = fib(child, n - 1); });
  long right = fib(sf, n - 2);
  sf.join();  // waits for the spawned child (and its children)
  return left + right;
}

void subflows() {
  weft::Pool pool;
  weft::TaskGraph graph;
  long result = 0;
  graph.add_node([&](weft::Subflow& sf) { result = fib(sf, 27); });
  graph.run(pool).wait();
  check(result == 196418, "fib(27) by subflows");
}

void subflow_edges() {
  weft::Pool pool;
  weft::TaskGraph graph;
  int x = 0, y = 0, z = 0;
  graph.add_node([&](weft::Subflow& sf) {
    weft::SubflowChild b1 = sf.spawn_after({}, [&] { x = 1; });
    weft::SubflowChild b2 = sf.spawn_after({}, [&] { y = 2; });
    weft::SubflowChild b3 = sf.spawn_after({b1, b2}, [&] { z = x + y; });  // after b1 and b2
    sf.join();                                                             // waits for b3 too
  });
  graph.run(pool).wait();
  check(z == 3, "edges between a subflow's children");
}

}  // namespace

int main() {
  pool_and_futures();
  futures_inside_tasks();
  first_graph();
  queued_runs();
  tokens_and_back_pressure();
  scope_jobs();
  scope_errors();
  cancelling_a_run();
  subflows();
  subflow_edges();
  if (failures != 0) return 1;
  std::printf("guide_basics: ok\n");
  return 0;
}
