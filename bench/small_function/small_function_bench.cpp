// weft::small_function against std::function: the life of one task — construct from a lambda, move (as into a
// queue), invoke, destroy — for a 16-byte capture (inline in both) and a 120-byte capture (inline in
// small_function, one heap allocation in std::function). Plus the cost of moving a stored callable whose capture
// is trivially copyable (its relocate is a fixed-size memcpy) or not (move constructor + destructor).
//
// Run: small_function_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <weft/small_function.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace {

template <std::size_t Bytes>
struct payload {
  std::array<std::uint64_t, Bytes / sizeof(std::uint64_t)> words{};
};

// DoNotOptimize on the function objects makes the compiler forget which callable they hold, so each call goes
// through the type-erased dispatch as it would after a real queue, and on the capture so it is rebuilt each time.
template <class Function, std::size_t CaptureBytes>
void task_lifecycle(benchmark::State& state) {
  payload<CaptureBytes> capture;
  capture.words.fill(1);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture);
    Function made([capture](std::uint64_t x) { return x + capture.words.front() + capture.words.back(); });
    static_assert(sizeof(capture) == CaptureBytes);
    benchmark::DoNotOptimize(made);
    Function queued(std::move(made));
    benchmark::DoNotOptimize(queued);
    sum = queued(sum);
    benchmark::DoNotOptimize(sum);
  }
  benchmark::ClobberMemory();
}

using weft_function = weft::small_function<std::uint64_t(std::uint64_t)>;
using std_function = std::function<std::uint64_t(std::uint64_t)>;

BENCHMARK(task_lifecycle<weft_function, 16>)->Name("lifecycle/capture16/weft_small_function");
BENCHMARK(task_lifecycle<std_function, 16>)->Name("lifecycle/capture16/std_function");
BENCHMARK(task_lifecycle<weft_function, 120>)->Name("lifecycle/capture120/weft_small_function");
BENCHMARK(task_lifecycle<std_function, 120>)->Name("lifecycle/capture120/std_function");

// 16 bytes that are not trivially copyable: relocating them runs their move constructor and destructor.
struct relocating_capture {
  payload<16> data;
  relocating_capture() = default;
  relocating_capture(const relocating_capture&) = default;
  relocating_capture(relocating_capture&& other) noexcept : data(other.data) {}
  ~relocating_capture() {}  // NOLINT(modernize-use-equals-default): must not be trivial
};

// One move of a stored callable (the queue push/pop cost), trivially copyable capture or not.
template <class Capture>
void move_stored_callable(benchmark::State& state) {
  Capture capture;
  weft_function a([capture](std::uint64_t x) { return x + capture.data.words.front(); });
  weft_function b;
  for (auto _ : state) {
    b = std::move(a);
    benchmark::DoNotOptimize(b);
    a = std::move(b);
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(2 * state.iterations());
}

struct trivial_capture {
  payload<16> data;
};

BENCHMARK(move_stored_callable<trivial_capture>)->Name("move2x/capture16/trivially_copyable");
BENCHMARK(move_stored_callable<relocating_capture>)->Name("move2x/capture16/move_constructor");

}  // namespace

BENCHMARK_MAIN();
