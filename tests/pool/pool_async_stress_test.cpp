// Pool::submit_after under load: random DAGs built on the fly by four threads at once while their tasks run. Each
// task depends on up to three random earlier tasks (of any thread, published so far) and checks, as it starts,
// that every one of them had finished; every task runs exactly once. On 1, 2, 4 and 8 workers, with and without
// fibers; built under ThreadSanitizer as well: a predecessor's plain writes must be visible to its successors.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "scheduler/engine/future_alloc.hpp"
#include "tests/pool/pool_test_support.hpp"
#include "tests/support/stress.hpp"
#include "weft/async_task.hpp"
#include "weft/pool.hpp"

namespace {

using weft::test::check_exactly_once;
using weft::test::kAddressSanitizer;
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
  const std::size_t tasks = stress_count(weft::test::reduced_runs() ? 2'000 : 10'000);
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

namespace {

// The resident set of this process in bytes (/proc/self/statm's second field, in pages), or 0 if unreadable.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * 4096;  // the page size of every Linux target weft builds for but a few arm64 kernels (larger)
}

}  // namespace

TEST_CASE("submit_after stress: memory stays flat over 10^7 tasks submitted on the fly") {
  // Each task after the one before and, every other task, one of the last 16: a stream with no end in sight, as a
  // long-running program submits. What it keeps must not grow with the count: the future-state blocks the
  // allocator holds and the resident set, at a tenth of the count and at the end. Sized to the build: 10^7 at -O3
  // (about 3 s with 2 workers on a loaded 2-core machine), far fewer under the sanitizers.
  const std::uint64_t tasks = stress_count(weft::test::reduced_runs() ? 200'000
                                           : kAddressSanitizer        ? 1'000'000
                                                                      : 10'000'000);
  const unsigned workers = 2;
  const Watchdog watchdog(named("submit_after flat memory", workers), patience(120));
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  std::array<weft::AsyncTask, 16> recent;
  weft::AsyncTask last = pool.submit_after({}, [] {});
  weft::AsyncTask checkpoint;
  std::atomic<std::uint64_t> ran{0};
  std::uint64_t blocks_at_tenth = 0;
  std::uint64_t most_blocks = 0;
  std::uint64_t rss_at_tenth = 0;
  std::uint64_t most_rss = 0;
  bool tenth_taken = false;
  const std::uint64_t sample_every = std::max<std::uint64_t>(8192, tasks / 40 / 8192 * 8192);  // ~40 samples
  for (std::uint64_t i = 0; i < tasks; ++i) {
    const weft::AsyncTask& other = recent[(i * 7) % recent.size()];
    auto body = [&ran] { ran.fetch_add(1, std::memory_order_relaxed); };
    last = (i % 2 == 1 && other.valid()) ? pool.submit_after({last, other}, body) : pool.submit_after({last}, body);
    recent[i % recent.size()] = last;
    if (i % 8192 == 8191) {
      // The submitter stays at most 16384 tasks ahead, which bounds what is alive; waiting for the task of the
      // step before, not for `last`, keeps the workers fed instead of sleeping at each step (on a loaded machine
      // a wake-up costs milliseconds, which at every 4096 tasks doubled the run's time).
      if (checkpoint.valid()) checkpoint.wait();
      checkpoint = last;
      if ((i + 1) % sample_every == 0) {
        const std::uint64_t blocks = weft::detail::future_state_blocks_held();
        const std::uint64_t rss = resident_bytes();
        if (!tenth_taken && i + 1 >= tasks / 10) {  // the baseline: the first sample past a tenth of the tasks
          tenth_taken = true;
          blocks_at_tenth = blocks;
          rss_at_tenth = rss;
        }
        most_blocks = std::max(most_blocks, blocks);
        most_rss = std::max(most_rss, rss);
      }
    }
  }
  last.wait();
  pool.wait_idle();
  const std::uint64_t blocks_at_end = weft::detail::future_state_blocks_held();
  const std::uint64_t rss_at_end = resident_bytes();
  most_blocks = std::max(most_blocks, blocks_at_end);
  most_rss = std::max(most_rss, rss_at_end);
  CHECK(ran.load() == tasks);
  MESSAGE("tasks " << tasks << ": future-state blocks " << blocks_at_tenth << " at a tenth, " << blocks_at_end
                   << " at the end, at most " << most_blocks << "; resident " << rss_at_tenth / 1024
                   << " KiB at a tenth, " << rss_at_end / 1024 << " KiB at the end, at most " << most_rss / 1024
                   << " KiB");
  // A block kept per task would be millions more; the slack covers the per-thread caches and the tasks in flight.
  CHECK(most_blocks <= blocks_at_tenth + 16384);
  REQUIRE(tenth_taken);
  // 16 MiB: one 64-byte block leaked per task would be 640 MB over 10^7. Not under the sanitizers, whose own
  // memory (ASan's quarantine of freed blocks, TSan's shadow) grows with the work done.
  if (rss_at_tenth != 0 && !kAddressSanitizer && !kThreadSanitizer) CHECK(most_rss <= rss_at_tenth + 16 * 1024 * 1024);
}
