// How weft-demo times the waits workloads (bench/common/wait_workloads.hpp): tasks that wait on weft::Event and
// weft::WaitGroup, against the simplest equivalent a oneTBB user would write. The two sides of a row take their
// samples in turns (a few samples of one, then of the other, and again), so that both see the same load from
// other processes even when it changes during the row.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bench/common/wait_workloads.hpp"
#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_table.hpp"
#include "weft/pool.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/wait_workloads_tbb.hpp"
#endif

namespace weft::demo {

// The --workload names of the waits rows, in table order; "waits" selects them all.
inline constexpr std::string_view kWaitWorkloads[] = {"ping-pong", "fan-out", "wait-latency"};

// The ping-pong and the wait behind a long task run on pools of their own with this many workers: the
// ping-pong's two tasks need no more, and a wait behind a long task needs a second worker to resume on.
inline constexpr unsigned kWaitWorkers = 2;
// Samples per row: the fan-out (a few hundred microseconds a run) gets the small graphs' count, in rounds of
// kFanOutSamplesPerRound after an untimed run each; the ping-pong and the latency one sample per round.
inline constexpr int kFanOutSamplesPerRound = 5;
[[nodiscard]] inline int fan_out_rounds(const Settings& s) { return s.reps; }
// A latency sample is retried this often if the long task ran on another worker than the waiting task's.
inline constexpr int kLatencyTries = 5;

// What the waits rows measure, for the demo's header.
inline void print_waits_header(const Settings& s) {
  std::printf(
      "  waits (tasks that wait; weft suspends them on fibers): ping-pong of %lld rounds between two tasks\n"
      "  through two auto-reset Events (%u workers) against two threads on std::binary_semaphore; one task\n"
      "  fanning out %zu small tasks and waiting on a WaitGroup against oneTBB task_group run + wait; the\n"
      "  latency of a wait signalled while its worker runs a %lld ms task, fibers on against off. The two\n"
      "  sides take turns: %d rounds (fan-out: %d samples a round).\n",
      static_cast<long long>(kPingPongRounds), kWaitWorkers, kFanOutTasks, static_cast<long long>(kLongTask.count()),
      s.reps, kFanOutSamplesPerRound);
}

// One sample in the row's unit, or nothing if this try measured another situation than the row's (the caller
// tries again). An empty Sampler: that side is not measured.
using Sampler = std::function<std::optional<double>()>;

// `rounds` rounds; in each, for side a then side b: a pause for the other side's workers to fall asleep,
// `warm_ups` untimed samples, `per_round` timed ones. Returns both sides' medians.
inline std::pair<Value, Value> take_turns(const Settings& s, int rounds, int warm_ups, int per_round,
                                          const std::string& what_a, const Sampler& a, const std::string& what_b,
                                          const Sampler& b, const std::string& row) {
  std::vector<double> samples[2];
  const Sampler* sides[2] = {&a, &b};
  const auto sample = [&](const Sampler& side) {
    for (int attempt = 0; attempt < kLatencyTries; ++attempt)
      if (const auto value = side()) return *value;
    throw std::runtime_error(row + ": " + std::to_string(kLatencyTries) +
                             " tries in a row measured another situation than the row's");
  };
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      if (!*sides[k]) continue;
      std::this_thread::sleep_for(kIdleBeforeWake);
      for (int i = 0; i < warm_ups; ++i) (void)sample(*sides[k]);
      for (int i = 0; i < per_round; ++i) samples[k].push_back(sample(*sides[k]));
    }
  }
  Value out[2];
  out[0] = a ? summarise(s, what_a, std::move(samples[0])) : std::nullopt;
  out[1] = b ? summarise(s, what_b, std::move(samples[1])) : std::nullopt;
  return {out[0], out[1]};
}

// Seconds of one run of `run`, times `unit`.
template <class F>
Sampler timed(double unit, F run) {
  return [unit, run]() mutable -> std::optional<double> {
    const auto start = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * unit;
  };
}

// Ping-pong, fibers only: without them a task waiting for its partner may pick the partner up on its own stack
// and wait there for a signal only the partner, now beneath it, can send.
inline void add_ping_pong_row(const Settings& s, bool weft_side, std::vector<Row>& rows) {
  if (!weft_side) return;
  if (!fibers_available()) {
    std::printf("  ping-pong: no row, this weft was built without fibers (a waiting task cannot suspend)\n");
    return;
  }
  Pool pool{PoolOptions{.threads = kWaitWorkers}};
  const auto [weft, threads] = take_turns(s, s.reps, 0, 1, "weft ping-pong ms",
                                          timed(1e3, [&] { weft_ping_pong(pool, kPingPongRounds); }),
                                          "threads ping-pong ms",
                                          timed(1e3, [] { threads_ping_pong(kPingPongRounds); }), "ping-pong");
  Row row{"ping-pong 20k rounds, 2 Events", "ms", weft, threads, Goal{0.5, false, "<= 0.5x"}};
  row.peer = "2 threads, binary_semaphore";
  row.items = static_cast<double>(kPingPongRounds);
  row.note =
      "oneTBB has no task-level blocking primitive: a oneTBB user who needs a task to wait for another "
      "blocks a thread, and two threads handing a turn over through std::binary_semaphore are the "
      "cheapest such wait. weft: two tasks on 2 workers, each wait suspending the task.";
  rows.push_back(std::move(row));
}

inline void add_fan_out_row(const Settings& s, Sides& sides, std::vector<Row>& rows) {
  const auto check = [](std::uint64_t sum, const char* library) {
    if (sum != fan_out_sum(kFanOutTasks)) throw std::runtime_error(std::string(library) + " fan-out lost a task");
  };
  Sampler weft;
  Sampler tbb;
  if (sides.weft) weft = timed(1e6, [&] { check(weft_fan_out(sides.weft->pool(), kFanOutTasks), "weft"); });
#if WEFT_BENCH_HAVE_TBB
  if (sides.tbb) tbb = timed(1e6, [&] { check(tbb_fan_out(*sides.tbb, kFanOutTasks), "oneTBB"); });
#endif
  const auto [w, t] = take_turns(s, fan_out_rounds(s), 1, kFanOutSamplesPerRound, "weft fan-out us", weft,
                                 "oneTBB fan-out us", tbb, "fan-out");
  Row row{"fan-out 1000 + WaitGroup wait", "us", w, t, Goal{1.0, false, "<= 1.0x"}};
  row.items = static_cast<double>(kFanOutTasks);
  row.note =
      "weft: a task posted from the demo's thread posts the tasks to its worker's deque and waits on a "
      "WaitGroup (suspending until the last done()); the demo's thread waits for the pool to be idle. "
      "oneTBB: the demo's thread enters the arena, task_group run of each task, then wait (running tasks "
      "meanwhile). weft's figure includes handing the first task to a worker, which oneTBB's caller, "
      "running in the arena itself, does not pay (a post + wait_idle: a few microseconds).";
  rows.push_back(std::move(row));
}

// The latency of a short wait behind a long task: fibers on (sides' default) against PoolOptions::fibers off.
inline void add_wait_latency_row(const Settings& s, bool weft_side, std::vector<Row>& rows) {
  if (!weft_side) return;
  const bool fibers = fibers_available();
  std::optional<Pool> with;
  if (fibers) with.emplace(PoolOptions{.threads = kWaitWorkers});
  Pool without{PoolOptions{.threads = kWaitWorkers, .fibers = false}};
  const auto sampler = [](Pool& pool, bool on) -> Sampler {
    return [&pool, on]() -> std::optional<double> {
      const auto latency = wait_behind_long_task(pool, on, kLongTask);
      if (!latency) return std::nullopt;
      return std::chrono::duration<double, std::micro>(*latency).count();
    };
  };
  const Sampler with_fibers = fibers ? sampler(*with, true) : Sampler{};
  const auto [on, off] = take_turns(s, s.reps, 0, 1, "weft fibers latency us", with_fibers,
                                    "weft fibers-off latency us", sampler(without, false), "wait-latency");
  Row row{"short wait behind a 20 ms task", "us", on, off, Goal{1000, true, "< 1 ms", true, true}};
  row.peer = "weft with PoolOptions{.fibers = false}";
  row.note =
      "the time from signalling an Event to its waiting task running again, while the worker the task "
      "waited on runs a 20 ms task. With fibers the task resumes on the other worker; without, the long "
      "task runs nested on the waiting task's stack and the wait ends when it returns (the signal comes "
      "shortly after the long task starts). Goal on weft's figure alone; report-only.";
  if (!fibers) row.note += " This weft has no fibers: no weft figure.";
  rows.push_back(std::move(row));
}

}  // namespace weft::demo
