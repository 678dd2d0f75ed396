// Future::then: a chain of continuations without a TaskScope. Reads "records" in parallel, then parses,
// validates and sums them in continuations, each a task on the pool queued when its antecedent's value is
// set; a failing record's exception skips the rest of its chain and comes out of get(). Exits with 1 if any
// result is wrong. Built and run by weft's test suite (suite 'examples').
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <weft/future.hpp>
#include <weft/pool.hpp>

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  constexpr int kRecords = 100;
  std::vector<weft::Future<int>> totals;
  for (int i = 0; i < kRecords; ++i) {
    // Record 13 is malformed: its parse throws, and its later steps never run.
    weft::Future<std::string> raw = pool.submit([i] { return i == 13 ? std::string("x13") : std::to_string(i); });
    weft::Future<int> parsed = std::move(raw).then([](std::string text) {
      if (text.empty() || text[0] == 'x') throw std::invalid_argument("malformed record: " + text);
      return std::stoi(text);
    });
    totals.push_back(std::move(parsed).then([](int value) { return value * 2; }));
  }
  long sum = 0;
  int failed = 0;
  std::string message;
  for (auto& total : totals) {
    try {
      sum += total.get();
    } catch (const std::invalid_argument& e) {
      ++failed;
      message = e.what();
    }
  }
  // A void step at the end of a chain, and a chain started on a future that is already ready.
  weft::Future<int> ready = pool.submit([] { return 20; });
  ready.wait();
  int seen = 0;
  weft::Future<void> done = std::move(ready).then([](int v) { return v + 1; }).then([&seen](int v) { seen = v; });
  done.get();  // after get(), the continuation's write is visible

  const long expected = 2L * (kRecords * (kRecords - 1) / 2 - 13);
  std::printf("sum of valid records x2 = %ld (expected %ld), failed = %d (%s), chained = %d\n", sum, expected, failed,
              message.c_str(), seen);
  return sum == expected && failed == 1 && message == "malformed record: x13" && seen == 21 ? 0 : 1;
}
