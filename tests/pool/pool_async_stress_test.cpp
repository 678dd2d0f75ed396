// Pool::submit_after under load: random DAGs built on the fly by four threads at once while their tasks run. Each
// task depends on up to three random earlier tasks (of any thread, published so far) and checks, as it starts,
// that every one of them had finished; every task runs exactly once. On 1, 2, 4 and 8 workers, with and without
// fibers; built under ThreadSanitizer as well: a predecessor's plain writes must be visible to its successors.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/stress.hpp"
#include "weft/async_task.hpp"
#include "weft/pool.hpp"

namespace {

using weft::test::check_exactly_once;
using weft::test::kThreadSanitizer;
using weft::test::named;
using weft::test::patience;
using weft::test::RunCounts;
using weft::test::stress_count;
using weft::test::Watchdog;

constexpr unsigned kBuilders = 4;
constexpr unsigned kMostPredecessors = 3;

struct Dag {
  explicit Dag(std::size_t tasks)
      : runs(tasks),
        handles(tasks),
        published(std::make_unique<std::atomic<bool>[]>(tasks)),
        finished(tasks, 0),
        preds(tasks) {}
  RunCounts runs;
  std::vector<weft::AsyncTask> handles;            // handles[i] written once, before published[i]
  std::unique_ptr<std::atomic<bool>[]> published;  // release/acquire: handles[i] and preds[i] are written
  std::vector<std::uint8_t> finished;              // plain: the edges must order it before a successor reads
  std::vector<std::array<std::size_t, kMostPredecessors>> preds;  // the task's predecessors (SIZE_MAX: none)
  std::atomic<std::size_t> out_of_order{0};
};

// Builder `builder` submits tasks builder, builder + kBuilders, ...; each after up to three random earlier tasks
// that some builder has published already.
void build(Dag& dag, weft::Pool& pool, unsigned builder, std::uint64_t seed) {
  std::mt19937_64 random(seed + builder);
  const std::size_t n = dag.handles.size();
  std::vector<weft::AsyncTask> after;
  for (std::size_t id = builder; id < n; id += kBuilders) {
    after.clear();
    auto& preds = dag.preds[id];
    preds.fill(SIZE_MAX);
    for (unsigned k = 0; k < kMostPredecessors && id > 0; ++k) {
      const std::size_t p = random() % id;
      if (!dag.published[p].load(std::memory_order_acquire)) continue;  // not submitted yet by its builder
      preds[k] = p;
      after.push_back(dag.handles[p]);
    }
    dag.handles[id] = pool.submit_after(after, [&dag, id] {
      for (const std::size_t p : dag.preds[id]) {
        if (p != SIZE_MAX && dag.finished[p] == 0) dag.out_of_order.fetch_add(1, std::memory_order_relaxed);
      }
      dag.runs.ran(id);
      dag.finished[id] = 1;
    });
    dag.published[id].store(true, std::memory_order_release);
  }
}

}  // namespace

TEST_CASE("submit_after stress: random DAGs built by four threads while they run, each task after its predecessors") {
  const std::size_t tasks = stress_count(kThreadSanitizer ? 2'000 : 10'000);
  const std::uint64_t seed = weft::test::seed_for("submit_after stress");
  const std::vector<bool> fiber_modes = weft::fibers_available() ? std::vector<bool>{true, false}
                                                                 : std::vector<bool>{false};
  for (const bool fibers : fiber_modes) {
    for (const unsigned workers : std::array<unsigned, 4>{1, 2, 4, 8}) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("submit_after stress", workers), patience(300));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      Dag dag(tasks);
      std::vector<std::thread> builders;
      for (unsigned b = 0; b < kBuilders; ++b)
        builders.emplace_back([&dag, &pool, b, seed] { build(dag, pool, b, seed); });
      for (std::thread& t : builders) t.join();
      for (const weft::AsyncTask& handle : dag.handles) handle.get();
      check_exactly_once(dag.runs);
      CHECK(dag.out_of_order.load() == 0);
    }
  }
}
