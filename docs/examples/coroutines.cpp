// weft's coroutines: weft::Task awaiting futures, other Tasks and pool.schedule(); when_all over Tasks; sync_wait
// and spawn; weft::Generator. Quoted by docs/guide.md (chapter 14) and docs/migrating.md.
//
// It checks its results and exits with 1 if one is wrong. Built and run by weft's test suite (suite 'examples').
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include <weft/event.hpp>
#include <weft/generator.hpp>
#include <weft/pool.hpp>
#include <weft/sync_wait.hpp>
#include <weft/task.hpp>

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
  generator();
  from_cppcoro(pool);
  if (ok) std::puts("coroutines: ok");
  return ok ? 0 : 1;
}
