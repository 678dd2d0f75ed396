// What a wait costs once tasks suspend on fibers: a ping-pong between two tasks through two auto-reset
// weft::Events (each round: two signals, two suspensions, two resumptions), on one worker and on two; against the same
// ping-pong between two threads through std::binary_semaphore (a futex each way: the OS's floor for a blocking
// hand-over). Reported per 20,000 rounds. Without fibers there is no row: a waiting task that picks up its partner
// on its own stack waits for a signal only the task beneath it can send (tests/fiber/fiber_wait_test.cpp).
//
// Run: wait_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <semaphore>
#include <thread>

#include "weft/event.hpp"
#include "weft/pool.hpp"

namespace {

constexpr std::int64_t kRounds = 20'000;

void weft_ping_pong(benchmark::State& state, unsigned workers) {
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  for (auto _ : state) {
    weft::Event ping{weft::Event::Mode::Auto};
    weft::Event pong{weft::Event::Mode::Auto};
    pool.post([&] {
      for (std::int64_t i = 0; i < kRounds; ++i) {
        ping.signal();
        pong.wait();
      }
    });
    pool.post([&] {
      for (std::int64_t i = 0; i < kRounds; ++i) {
        ping.wait();
        pong.signal();
      }
    });
    pool.wait_idle();
  }
  state.SetItemsProcessed(state.iterations() * kRounds);
}

void threads_ping_pong(benchmark::State& state) {
  for (auto _ : state) {
    std::binary_semaphore ping{0};
    std::binary_semaphore pong{0};
    std::thread other([&] {
      for (std::int64_t i = 0; i < kRounds; ++i) {
        ping.acquire();
        pong.release();
      }
    });
    for (std::int64_t i = 0; i < kRounds; ++i) {
      ping.release();
      pong.acquire();
    }
    other.join();
  }
  state.SetItemsProcessed(state.iterations() * kRounds);
}

}  // namespace

BENCHMARK_CAPTURE(weft_ping_pong, fibers_1_worker, 1u)->Name("ping_pong_20k/weft_fibers_1_worker")
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(weft_ping_pong, fibers_2_workers, 2u)->Name("ping_pong_20k/weft_fibers_2_workers")
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(threads_ping_pong)->Name("ping_pong_20k/two_threads_binary_semaphore")
    ->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
