// Per-thread accumulators with Pool::current_thread_index, and one PoolOptions as the base of two pools.
//
// 1. A histogram of 2,000,000 pseudo-random values: every thread that runs a piece of the loop adds into its own
//    row, picked by pool.current_thread_index(), in an array sized once by pool.max_thread_index() (the workers
//    plus the threads that may run the pool's tasks themselves while they wait, such as this one). No atomics
//    and no locks in the loop: two threads never hold one index at the same time. The rows are summed at the
//    end and checked against a plain loop.
// 2. Two pools made from copies of one PoolOptions: the copies share its hooks (one callable, called by both
//    pools), and a copy's own hook replaces the shared one for that copy only.
//
// Exits with 1 if a result is wrong. Built and run by weft's test suite (suite 'examples').
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <vector>

#include <weft/parallel_for.hpp>
#include <weft/pool.hpp>

namespace {

constexpr std::size_t kValues = 2'000'000;
constexpr std::size_t kBins = 16;

// A fixed pseudo-random value per index (splitmix64), so the expected histogram is known.
std::uint64_t value_at(std::uint64_t i) {
  std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One row per thread index, on its own cache line so that neighbours do not share a line.
struct alignas(64) Row {
  std::array<std::uint64_t, kBins> bins{};
};

bool histogram() {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  std::vector<Row> rows(pool.max_thread_index());  // sized once: every index is below max_thread_index()
  std::atomic<int> outside_the_pool{0};
  weft::parallel_for(pool, std::size_t{0}, kValues, [&](std::size_t lo, std::size_t hi) {
    const std::optional<unsigned> me = pool.current_thread_index();
    if (!me) {  // cannot happen: each chunk runs as a task of the pool
      outside_the_pool.fetch_add(1);
      return;
    }
    Row& row = rows[*me];
    for (std::size_t i = lo; i < hi; ++i) ++row.bins[value_at(i) % kBins];
  });
  std::array<std::uint64_t, kBins> total{};
  for (const Row& row : rows) {
    for (std::size_t b = 0; b < kBins; ++b) total[b] += row.bins[b];
  }
  std::array<std::uint64_t, kBins> expected{};
  for (std::size_t i = 0; i < kValues; ++i) ++expected[value_at(i) % kBins];
  std::size_t rows_used = 0;
  for (const Row& row : rows) {
    std::uint64_t sum = 0;
    for (const std::uint64_t n : row.bins) sum += n;
    if (sum != 0) ++rows_used;
  }
  std::printf("histogram of %zu values over %zu bins: %zu of %u per-thread rows used\n", kValues, kBins, rows_used,
              pool.max_thread_index());
  if (outside_the_pool.load() != 0 || total != expected) {
    std::printf("wrong: the per-thread rows do not add up to the plain loop's histogram\n");
    return false;
  }
  return true;
}

bool shared_options() {
  std::atomic<int> started{0};      // on_task_start, shared by both pools
  std::atomic<int> errors{0};       // on_error, shared by both pools
  std::atomic<int> io_finished{0};  // on_task_end of the io pool's copy only
  const weft::PoolOptions base{
      .threads = 2,
      .name = "compute",
      .on_error = [&errors](std::exception_ptr) { errors.fetch_add(1); },
      .on_task_start = [&started](const weft::TaskEvent&) { started.fetch_add(1); },
  };
  weft::PoolOptions io = base;  // a copy: shares base's hooks
  io.name = "io";
  io.threads = 1;
  io.on_task_end = [&io_finished](const weft::TaskEvent&) { io_finished.fetch_add(1); };  // this copy only
  {
    weft::Pool compute{base};
    weft::Pool io_pool{io};
    for (int i = 0; i < 10; ++i) compute.post([] {});
    for (int i = 0; i < 5; ++i) io_pool.post([] {});
    compute.post([] { throw std::runtime_error("compute failed"); });
    io_pool.post([] { throw std::runtime_error("io failed"); });
  }  // both drain here
  std::printf("two pools from one PoolOptions: %d tasks started, %d errors, %d finished on io\n", started.load(),
              errors.load(), io_finished.load());
  if (started.load() != 17 || errors.load() != 2 || io_finished.load() != 6) {
    std::printf("wrong: expected 17 started, 2 errors, 6 finished on io\n");
    return false;
  }
  return true;
}

}  // namespace

int main() {
  const bool histogram_ok = histogram();
  const bool options_ok = shared_options();
  return histogram_ok && options_ok ? 0 : 1;
}
