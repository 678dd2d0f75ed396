// Eight "queries" share one database connection, guarded by a weft::Semaphore of one unit: they are
// independent nodes of a TaskGraph, so the pool could run them all at once, but never runs two together. A
// report node after them sums their results. Beside them, four "exports" each take one unit of the connection
// and one of a second semaphore (two disk slots); a big export takes both disk slots.
//
// No worker is held while a query waits for the connection: a node that cannot take its units is parked and
// re-posted by the node that gives them back. The program checks that the connection was never used twice at
// once, that every node ran exactly once, that the report saw every result, and that both semaphores have all
// their units back; it exits with 1 otherwise. Built and run by weft's test suite (suite 'examples').
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include <weft/pool.hpp>
#include <weft/semaphore.hpp>
#include <weft/task_graph.hpp>

namespace {

// The shared resource: using it while someone else does is the bug the semaphore prevents.
class Connection {
 public:
  int query(int id) {
    if (in_use_.exchange(true)) overlapped_.store(true);
    int result = 0;
    for (int i = 0; i <= id * 1000; ++i) result += i % 7;  // the query's "work"
    in_use_.store(false);
    return result;
  }
  [[nodiscard]] bool overlapped() const { return overlapped_.load(); }

 private:
  std::atomic<bool> in_use_{false};
  std::atomic<bool> overlapped_{false};
};

int expected_result(int id) {
  int result = 0;
  for (int i = 0; i <= id * 1000; ++i) result += i % 7;
  return result;
}

}  // namespace

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  Connection connection;
  weft::Semaphore db{1};    // one connection
  weft::Semaphore disk{2};  // two disk slots

  constexpr int kQueries = 8;
  std::vector<int> results(kQueries, 0);
  std::atomic<int> ran{0};
  int total = 0;

  weft::TaskGraph graph;
  const weft::Node report = graph.add_node(
      [&] {
        for (const int r : results) total += r;
        ran.fetch_add(1);
      },
      weft::NodeOptions{.name = "report"});
  for (int q = 0; q < kQueries; ++q) {
    const weft::Node query = graph.add_node(
        [&, q] {
          results[static_cast<std::size_t>(q)] = connection.query(q);
          ran.fetch_add(1);
        },
        weft::NodeOptions{.name = "query " + std::to_string(q), .semaphores = {&db}});
    graph.add_edge(query, report);  // the report runs after every query; the queries are independent
  }
  for (int e = 0; e < 4; ++e) {
    weft::NodeOptions options{.name = "export " + std::to_string(e), .semaphores = {&db, &disk}};
    if (e == 0) options.semaphores.push_back(&disk);  // a big export: both disk slots
    (void)graph.add_node(
        [&, e] {
          (void)connection.query(e);
          ran.fetch_add(1);
        },
        std::move(options));
  }

  const weft::RunStatus status = graph.run(pool).wait();

  bool ok = status == weft::RunStatus::Completed;
  int expected_total = 0;
  for (int q = 0; q < kQueries; ++q) expected_total += expected_result(q);
  ok = ok && !connection.overlapped() && ran.load() == kQueries + 1 + 4 && total == expected_total;
  ok = ok && db.available() == db.count() && disk.available() == disk.count();
  std::printf("%d queries and 4 exports, one connection: total %d, overlapped: %s -> %s\n", kQueries, total,
              connection.overlapped() ? "yes" : "no", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
