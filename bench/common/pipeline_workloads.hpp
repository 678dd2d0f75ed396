// The pipeline workloads, shared by bench/pipeline/pipeline_bench (Google Benchmark) and bench/demo/weft-demo:
// the cases (shape, items, token limit, work per stage, goal), the items and the work each stage does, with the
// check. Each library's side (pipeline_workloads_weft.hpp, pipeline_workloads_tbb.hpp) only lays out the stages
// and calls the PipelineData members below from them, so both libraries run exactly the same stage bodies.
//
// Shapes:
//   parallel4: a serial source, two parallel stages, a serial in-order sink (oneTBB: serial_in_order, parallel,
//              parallel, serial_in_order filters).
//   linear8:   eight serial in-order stages (a source, six stages, a sink), the shape of Taskflow's
//              linear_pipeline benchmark (oneTBB: eight serial_in_order filters).
// Each item carries its number and a value; every stage in between advances the value by `steps` steps of a
// 64-bit LCG (one step: "tiny" work; the spin cases take as many steps as 10 us of this CPU, measured once per
// process by spin_steps_for()). The sink checks each item as it comes: its number must be the next one (the
// sink is in order: a lost, repeated or reordered item fails) and its value what the stages before it make of
// that number, computed in closed form. check() runs outside the timed region and resets the data.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::bench {

enum class PipelineShape { parallel4, linear8 };

inline constexpr std::size_t kPipelineItems = 1'000'000;
// The spin cases: 10 us of work in each parallel stage, so 20 us of work per item; 100,000 items (not 1M) keep
// one run near a second on two threads.
inline constexpr std::size_t kPipelineSpinItems = 100'000;
inline constexpr std::chrono::microseconds kPipelineSpin{10};
inline constexpr std::size_t kLinearStages = 8;

struct PipelineCase {
  std::string_view id;      // benchmark name stem, e.g. "pipe4_tiny_8tok"
  std::string_view family;  // weft-demo's --workload name
  std::string_view title;   // the demo table's row title
  PipelineShape shape = PipelineShape::parallel4;
  std::size_t items = 0;
  unsigned tokens = 0;  // oneTBB's max_number_of_live_tokens; weft's bound is chosen to match (see the weft side)
  bool spin = false;    // 10 us per parallel stage, else one LCG step per stage in between
  double goal = 0.5;    // the goal for weft's time / oneTBB's
};

// Every case, in the order both programs show them.
inline constexpr PipelineCase kPipelineCases[] = {
    {"pipe4_tiny_8tok", "pipeline-tiny", "pipeline 4 stages, 1M tiny, 8 tok", PipelineShape::parallel4, kPipelineItems,
     8, false, 0.5},
    {"pipe4_tiny_64tok", "pipeline-tiny", "pipeline 4 stages, 1M tiny, 64 tok", PipelineShape::parallel4,
     kPipelineItems, 64, false, 0.5},
    {"pipe4_spin10us_8tok", "pipeline-spin", "pipeline 4 st,100k,2x10us,8 tok", PipelineShape::parallel4,
     kPipelineSpinItems, 8, true, 1.0},
    {"pipe4_spin10us_64tok", "pipeline-spin", "pipeline 4 st,100k,2x10us,64 tok", PipelineShape::parallel4,
     kPipelineSpinItems, 64, true, 1.0},
    {"linear8_tiny_8tok", "pipeline-linear", "pipeline 8 serial, 1M tiny, 8 tok", PipelineShape::linear8,
     kPipelineItems, 8, false, 0.5},
};
inline constexpr std::size_t kPipelineCaseCount = sizeof kPipelineCases / sizeof kPipelineCases[0];

// The case named `id`, or null.
[[nodiscard]] inline const PipelineCase* find_pipeline_case(std::string_view id) noexcept {
  for (const PipelineCase& c : kPipelineCases)
    if (c.id == id) return &c;
  return nullptr;
}

// The stages between the source and the sink, each of which does the work.
[[nodiscard]] constexpr std::size_t work_stages(PipelineShape shape) noexcept {
  return shape == PipelineShape::parallel4 ? 2 : kLinearStages - 2;
}

// What flows through the pipeline: 16 bytes, passed by value on both sides.
struct PipelineItem {
  std::uint64_t seq = 0;    // the source's count: the order the in-order sink must see
  std::uint64_t value = 0;  // starts as seq; each stage in between advances it
};

inline constexpr std::uint64_t kPipelineLcgMul = 6364136223846793005ULL;
inline constexpr std::uint64_t kPipelineLcgAdd = 1442695040888963407ULL;

// `steps` dependent LCG steps: a chain the compiler can neither vectorise nor shorten.
[[nodiscard]] inline std::uint64_t lcg_steps(std::uint64_t x, std::uint64_t steps) noexcept {
  for (std::uint64_t s = 0; s < steps; ++s) x = x * kPipelineLcgMul + kPipelineLcgAdd;
  return x;
}

// x -> mul * x + add (mod 2^64): what any number of LCG steps do to a value, for the check.
struct Affine {
  std::uint64_t mul = 1;
  std::uint64_t add = 0;
  [[nodiscard]] constexpr std::uint64_t operator()(std::uint64_t x) const noexcept { return mul * x + add; }
  // This map, then `next`.
  [[nodiscard]] constexpr Affine then(Affine next) const noexcept {
    return {next.mul * mul, next.mul * add + next.add};
  }
};

// The LCG steps that take `spin` on this CPU: the fastest of a few timings of a long chain (the least disturbed
// by other processes), scaled. Measured once per process; both libraries then run the same number of steps.
[[nodiscard]] inline std::uint64_t spin_steps_for(std::chrono::nanoseconds spin) {
  using Clock = std::chrono::steady_clock;
  constexpr std::uint64_t kProbe = 1 << 16;
  double best = 1e300;
  for (int i = 0; i < 25; ++i) {
    const auto start = Clock::now();
    const std::uint64_t x = lcg_steps(static_cast<std::uint64_t>(i), kProbe);
    __asm__ volatile("" : : "r"(x));  // the chain must be computed, and before the clock is read again
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - start).count());
  }
  const double per_step = std::max(best, 1.0) / static_cast<double>(kProbe);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(spin.count()) / per_step));
}

// The LCG steps per stage in between for case `c`: one for the tiny cases; for the spin ones `spin_steps`, the
// process's one measurement of spin_steps_for(kPipelineSpin).
[[nodiscard]] constexpr std::uint64_t pipeline_steps(const PipelineCase& c, std::uint64_t spin_steps) noexcept {
  return c.spin ? spin_steps : 1;
}

// The data of one pipeline workload: the source's counter, the stages' work and the sink's check. The source's
// and the sink's fields sit on separate cache lines (they run on different threads), the same for both
// libraries.
class PipelineData {
 public:
  // `steps`: LCG steps per stage in between (1 for the tiny cases, spin_steps_for(kPipelineSpin) for the
  // spin ones).
  PipelineData(const PipelineCase& c, std::uint64_t steps) : items_(c.items), steps_(steps) {
    const Affine one_stage = stage_map(steps);
    for (std::size_t k = 0; k < work_stages(c.shape); ++k) expected_ = expected_.then(one_stage);
  }

  // Counts the items alive (produced and not yet consumed) and their maximum: costs two atomic operations per
  // item, so only in the memory runs, never timed.
  void count_alive(bool on) noexcept { counting_ = on; }

  // The source: the next item, or nothing once all were produced. Called serially.
  [[nodiscard]] std::optional<PipelineItem> next_input() noexcept {
    if (produced_ == items_) return std::nullopt;
    if (counting_) max_alive_ = std::max(max_alive_, alive_.fetch_add(1, std::memory_order_relaxed) + 1);
    const std::uint64_t seq = produced_++;
    return PipelineItem{seq, seq};
  }

  // A stage in between.
  [[nodiscard]] PipelineItem work(PipelineItem item) const noexcept {
    item.value = lcg_steps(item.value, steps_);
    return item;
  }

  // The sink: each item must be the next in order and carry the value the stages make of its number.
  void consume(const PipelineItem& item) noexcept {
    bad_ += static_cast<std::uint64_t>(item.seq != consumed_ || item.value != expected_(item.seq));
    ++consumed_;
    if (counting_) alive_.fetch_sub(1, std::memory_order_relaxed);
  }

  // The most items alive at once in the runs since the last check (0 unless counting).
  [[nodiscard]] std::int64_t max_alive() const noexcept { return max_alive_; }

  // Every item came, in order, with its value; then resets for the next run.
  [[nodiscard]] bool check() noexcept {
    const bool ok = bad_ == 0 && consumed_ == items_ && produced_ == items_;
    produced_ = 0;
    consumed_ = 0;
    bad_ = 0;
    max_alive_ = 0;
    alive_.store(0, std::memory_order_relaxed);
    return ok;
  }

 private:
  [[nodiscard]] static Affine stage_map(std::uint64_t steps) noexcept {
    Affine map;
    for (std::uint64_t s = 0; s < steps; ++s) map = map.then(Affine{kPipelineLcgMul, kPipelineLcgAdd});
    return map;
  }

  // Read by every stage.
  std::uint64_t items_;
  std::uint64_t steps_;
  Affine expected_;  // what the stages in between do to a value
  bool counting_ = false;
  // The source's.
  alignas(64) std::uint64_t produced_ = 0;
  std::int64_t max_alive_ = 0;
  // The sink's.
  alignas(64) std::uint64_t consumed_ = 0;
  std::uint64_t bad_ = 0;
  // Both (memory runs only).
  alignas(64) std::atomic<std::int64_t> alive_{0};
};

}  // namespace weft::bench
