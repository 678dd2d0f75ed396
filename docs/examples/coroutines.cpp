// weft's coroutines: weft::Task awaiting futures, other Tasks, pool.schedule(), a TaskScope's jobs, a TaskGraph's
// runs, Events and WaitGroups; when_all over Tasks; sync_wait, spawn and pool.spawn; weft::Generator. Quoted by
// docs/guide.md (chapter 15) and docs/migrating.md.
//
// It checks its results and exits with 1 if one is wrong. Built and run by weft's test suite (suite 'examples').
#include <cstdio>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <variant>

#include <weft/errors.hpp>
#include <weft/event.hpp>
#include <weft/generator.hpp>
#include <weft/pool.hpp>
#include <weft/sync_wait.hpp>
#include <weft/task.hpp>
#include <weft/task_graph.hpp>
#include <weft/task_scope.hpp>
#include <weft/task_when.hpp>
#include <weft/wait_group.hpp>

namespace {

bool ok = true;

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "coroutines: wrong: %s\n", what);
    ok = false;
  }
}

// A Task awaits a Future: suspended meanwhile, it holds no worker and no fiber stack.
weft::Task<int> price_with_tax(weft::Pool& pool, int item) {
  int price = co_await pool.submit([item] { return 100 * item; });  // resumes on a worker once the value is set
  co_return price + price / 5;
}

// Tasks await Tasks: the callee runs at once on the same thread, and hands the thread back when it ends.
weft::Task<int> basket(weft::Pool& pool) {
  int total = 0;
  for (int item = 1; item <= 3; ++item) total += co_await price_with_tax(pool, item);
  co_return total;
}

// Fork-join: when_all runs its Tasks in parallel on the pool and gives their values as a tuple.
weft::Task<long> fib(int n) {
  if (n < 20) {  // a serial cutoff, as with any fork-join recursion
    long a = 0, b = 1;
    for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
    co_return a;
  }
  auto [x, y] = co_await weft::when_all(fib(n - 1), fib(n - 2));
  co_return x + y;
}
weft::Task<long> fib_on(weft::Pool& pool, int n) {
  co_await pool.schedule();  // onto a worker first: when_all queues its members on the pool it runs on
  co_return co_await fib(n);
}

// Exceptions travel through co_await as through calls.
weft::Task<int> parse(weft::Pool& pool, std::string text) {
  weft::Future<int> number = pool.submit([text] { return std::stoi(text); });  // std::stoi throws on "x"
  co_return co_await std::move(number);
}
weft::Task<int> parse_or_zero(weft::Pool& pool, std::string text) {
  try {
    co_return co_await parse(pool, text);
  } catch (const std::invalid_argument&) {
    co_return 0;
  }
}

// A lazy sequence, read as a range.
weft::Generator<int> squares(int count) {
  for (int i = 0; i < count; ++i) co_yield (i * i);
}

// Fire and forget: a spawned Task whose end is signalled by an Event.
weft::Task<void> report(weft::Pool& pool, weft::Event& finished, int& result) {
  result = co_await basket(pool);
  finished.signal();
}

void tasks(weft::Pool& pool) {
  // From a plain thread: sync_wait starts the Task here and blocks until it ends.
  int total = weft::sync_wait(basket(pool));  // 120 + 240 + 360
  check(total == 720, "basket");

  long f = weft::sync_wait(fib_on(pool, 30));
  check(f == 832040, "fib(30)");

  check(weft::sync_wait(parse_or_zero(pool, "42")) == 42, "parse 42");
  check(weft::sync_wait(parse_or_zero(pool, "x")) == 0, "parse x");

  weft::Event finished;
  int result = 0;
  weft::spawn(pool, report(pool, finished, result));  // its exception would go to PoolOptions::on_error
  finished.wait();
  check(result == 720, "spawned report");
}

// Awaiting a TaskScope's job: the coroutine holds no worker until the job has run; a job that never runs (its
// scope was cancelled) makes the co_await throw weft::job_cancelled.
weft::Task<int> scoped(weft::Pool& pool) {
  co_await pool.schedule();
  weft::TaskScope scope{pool};
  weft::Job<int> a = scope.submit([] { return 20; });
  weft::Job<int> b = scope.then(a, [](int x) { return x + 1; });
  scope.run();
  int twice = 2 * co_await b;  // 42, and no worker waited for it
  scope.wait();
  co_return twice;
}

// Awaiting a TaskGraph's run: a node's exception is rethrown, a cancelled run throws weft::task_cancelled.
weft::Task<bool> graph_then_more(weft::Pool& pool, weft::TaskGraph& graph) {
  co_await pool.schedule();
  try {
    co_await graph.run(pool);
  } catch (const weft::task_cancelled&) {
    co_return false;
  }
  co_return true;
}

// Awaiting an Event and a WaitGroup: parked by the primitive's address, as a waiting fiber is, but on no stack.
weft::Task<int> gathered(weft::Pool& pool) {
  co_await pool.schedule();
  weft::Event go;
  weft::WaitGroup pending(3);
  int parts[3] = {};
  for (int i = 0; i < 3; ++i) {
    pool.post([&, i] {
      go.wait();
      parts[i] = i + 1;
      pending.done();
    });
  }
  go.signal();
  co_await pending;  // every done() called: parts are all written
  co_return parts[0] + parts[1] + parts[2];
}

// The first of several Tasks to end, and every outcome of several: the Task forms of weft/when.hpp's combinators.
weft::Task<int> first_and_all(weft::Pool& pool) {
  co_await pool.schedule();
  auto [index, value] = co_await weft::when_any(price_with_tax(pool, 1), price_with_tax(pool, 2));
  int first = index == 0 ? std::get<0>(value) : std::get<1>(value);  // the variant holds alternative `index`
  auto [a, b] = co_await weft::when_all_settled(parse(pool, "7"), parse(pool, "x"));  // never throws
  co_return first + (a.has_value() ? *a.value : 0) + (b.has_value() ? 1000 : 0);
}

// A stop token, polled: given to the root Task, read by every Task it starts.
weft::Task<int> count_until_stopped(weft::Pool& pool) {
  co_await pool.schedule();
  std::stop_token stop = co_await weft::this_coro::stop_token;
  int n = 0;
  while (!stop.stop_requested() && n < 1000) ++n;
  co_return n;
}

void awaiting_weft(weft::Pool& pool) {
  int first = weft::sync_wait(first_and_all(pool));
  check(first == 127 || first == 247, "first_and_all");
  std::stop_source source;
  source.request_stop();
  int counted = weft::sync_wait(weft::with_stop_token(count_until_stopped(pool), source.get_token()));  // 0
  check(counted == 0, "stopped before counting");
  check(weft::sync_wait(count_until_stopped(pool)) == 1000, "no token: counts to the end");

  check(weft::sync_wait(scoped(pool)) == 42, "scoped");
  weft::TaskGraph graph;
  int ran = 0;
  graph.add_node([&ran] { ++ran; });
  check(weft::sync_wait(graph_then_more(pool, graph)) && ran == 1, "graph_then_more");
  check(weft::sync_wait(gathered(pool)) == 6, "gathered");

  weft::Event spawned;
  int result = 0;
  pool.spawn(report(pool, spawned, result));  // the member: the same as weft::spawn(pool, ...)
  spawned.wait();
  check(result == 720, "pool.spawn");
}

void generator() {
  int sum = 0;
  for (int s : squares(4)) sum += s;  // 0 + 1 + 4 + 9
  check(sum == 14, "squares");
}

// What a cppcoro user writes, in weft (docs/migrating.md).
weft::Task<int> get_value(weft::Pool& pool) {
  co_return co_await pool.submit([] { return 7; });
}
weft::Task<int> get_sum(weft::Pool& pool) {
  auto [a, b] = co_await weft::when_all(get_value(pool), get_value(pool));
  co_return a + b;
}

void from_cppcoro(weft::Pool& pool) {
  int sum = weft::sync_wait(get_sum(pool));
  check(sum == 14, "get_sum");
}

}  // namespace

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  tasks(pool);
  awaiting_weft(pool);
  generator();
  from_cppcoro(pool);
  if (ok) std::puts("coroutines: ok");
  return ok ? 0 : 1;
}
