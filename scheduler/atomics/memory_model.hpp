// The memory model a lock-free structure is written against.
//
// Every lock-free structure in scheduler/ is a template over a MemoryModel so that one text serves both
// production (StdMemoryModel: std::atomic, real fences) and the Relacy model tests
// (tests/model/relacy_memory_model.hpp: every access checked under a simulated weak memory model).
// Shared non-atomic data goes through Var so Relacy can flag data races on it too.
#pragma once

#include <atomic>
#include <concepts>
#include <mutex>
#include <utility>

#include "src/process_barrier.hpp"

namespace weft::atomics {

// A plain shared cell. Under Relacy the same interface records every access.
template <class T>
class PlainVar {
 public:
  PlainVar() = default;
  explicit PlainVar(T value) noexcept(std::is_nothrow_move_constructible_v<T>) : value_(std::move(value)) {}

  [[nodiscard]] const T& load() const noexcept { return value_; }
  void store(T value) noexcept(std::is_nothrow_move_assignable_v<T>) { value_ = std::move(value); }

 private:
  T value_{};
};

struct StdMemoryModel {
  template <class T>
  using atomic = std::atomic<T>;
  template <class T>
  using var = PlainVar<T>;
  // For the rare slow path that serialises (NodePool::take_batch): Relacy must see it as a lock too.
  using mutex = std::mutex;

  // Under ThreadSanitizer the fence still orders the hardware, but TSan derives no happens-before from it
  // (g++ 12 warns -Wtsan). That is fine where a fence only orders atomics against each other (the Dekker
  // handshakes of EventCount and the scheduler's parking); a structure whose plain data relies on a fence for
  // happens-before switches to its fences_invisible variant instead.
  static void thread_fence(std::memory_order order) noexcept {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(_WIN32)
    if (order == std::memory_order_seq_cst) {
      // Any locked instruction orders like mfence on x86, and costs less. g++ emits `lock or $0, (%rsp)`: its
      // target is the slot at the top of the frame, and when the code after the fence reloads that slot (a
      // spilled pointer, often) the load waits on the locked write. On the Chase-Lev pop of a Subflow join that
      // was a large share of fib(28)'s time through Subflow (docs/perf-log.md). Here the same locked `or` targets 64
      // bytes below the stack pointer: inside the red zone the x86-64 ABI gives every function (so the address
      // is mapped and no other thread's), away from the slots a frame reloads. The or of 0 writes back what it
      // read, so whatever lives there is unchanged.
      __asm__ __volatile__("lock orl $0, -64(%%rsp)" : : : "memory", "cc");
      return;
    }
#endif
    // Everywhere else (ARM64 among them: `dmb ish` for seq_cst) the standard fence, the very call the Relacy
    // models check (tests/model/relacy_memory_model.hpp forwards thread_fence to rl::atomic_thread_fence).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
    __atomic_thread_fence(static_cast<int>(order));
#pragma GCC diagnostic pop
#else
    std::atomic_thread_fence(order);
#endif
  }
  // Asymmetric fences (src/process_barrier.hpp): light_barrier() on a frequent path and heavy_barrier() on a
  // rare one order like two seq_cst fences, at the cost of a compiler barrier on the frequent side. Only where
  // heavy_barrier_available(); otherwise use thread_fence on both sides.
  static void light_barrier() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }
  static void heavy_barrier() noexcept { os::process_barrier(); }
  [[nodiscard]] static bool heavy_barrier_available() noexcept { return os::process_barrier_available(); }
  // True when standalone fences are invisible to the race detector (ThreadSanitizer does not model
  // atomic_thread_fence). Structures then use the equivalent ordered operations on the atomics themselves.
#if defined(__SANITIZE_THREAD__)
  static constexpr bool fences_invisible = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  static constexpr bool fences_invisible = true;
#else
  static constexpr bool fences_invisible = false;
#endif
#else
  static constexpr bool fences_invisible = false;
#endif
};

// What a structure needs from its memory model.
template <class M>
concept MemoryModel = requires {
  typename M::template atomic<int>;
  typename M::template var<int>;
  typename M::mutex;
  { M::thread_fence(std::memory_order_seq_cst) };
  { M::fences_invisible } -> std::convertible_to<bool>;
  { M::light_barrier() };
  { M::heavy_barrier() };
  { M::heavy_barrier_available() } -> std::convertible_to<bool>;
};

static_assert(MemoryModel<StdMemoryModel>);

}  // namespace weft::atomics
