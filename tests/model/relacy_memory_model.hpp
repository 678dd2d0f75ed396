// Relacy adapter for scheduler/atomics/memory_model.hpp: the same structure text, every atomic access and every
// shared plain access checked by Relacy's simulated weak memory model. Each operation reports the caller's
// source line (std::source_location), so Relacy's history points into the structure, not into this file.
//
// Relacy reports use-after-free only when the freed object is touched through an atomic (its atomics carry a
// signature that is checked on every access; a var in freed memory is not checked). A node whose early free a
// test must catch should therefore be reached through at least one atomic member.
//
// Include order matters: standard headers first, then <relacy/relacy.hpp> (it redefines new/delete),
// then this file, then the structure under test.
#pragma once

#include <atomic>
#include <source_location>

#include <relacy/relacy.hpp>

// Relacy rewrites std::memory_order_* into its own enum plus a debug-info argument. The structures under
// test spell std::memory_order_* as production code does, and this adapter converts them, so drop the macros.
#undef memory_order_relaxed
#undef memory_order_consume
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst
// Relacy's global operator new/delete still track every allocation (use-after-free, leaks); the keyword
// macros only add a source line, and they break `= delete` in the structures' headers.
#undef new
#undef delete

namespace weft::model {

inline rl::memory_order to_relacy(std::memory_order order) noexcept {
  switch (order) {
    case std::memory_order_relaxed:
      return rl::mo_relaxed;
    case std::memory_order_consume:
      return rl::mo_consume;
    case std::memory_order_acquire:
      return rl::mo_acquire;
    case std::memory_order_release:
      return rl::mo_release;
    case std::memory_order_acq_rel:
      return rl::mo_acq_rel;
    case std::memory_order_seq_cst:
      return rl::mo_seq_cst;
  }
  return rl::mo_seq_cst;
}

inline rl::debug_info where(const std::source_location& at) noexcept {
  return rl::debug_info(at.function_name(), at.file_name(), at.line());
}

template <class T>
class RelacyAtomic {
  using Loc = std::source_location;
  static constexpr auto sc = std::memory_order_seq_cst;

 public:
  RelacyAtomic() = default;                // left uninitialised on purpose: Relacy flags a read before the first store
  RelacyAtomic(T value) : atom_(value) {}  // NOLINT(google-explicit-constructor): mirrors std::atomic
  RelacyAtomic(const RelacyAtomic&) = delete;
  RelacyAtomic& operator=(const RelacyAtomic&) = delete;

  T load(std::memory_order o = sc, Loc at = Loc::current()) const { return atom_.load(to_relacy(o), where(at)); }
  void store(T v, std::memory_order o = sc, Loc at = Loc::current()) { atom_.store(v, to_relacy(o), where(at)); }
  T exchange(T v, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.exchange(v, to_relacy(o), where(at));
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.compare_exchange_strong(expected, desired, to_relacy(o), where(at));
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success, std::memory_order failure,
                               Loc at = Loc::current()) {
    return atom_.compare_exchange_strong(expected, desired, to_relacy(success), where(at), to_relacy(failure),
                                         where(at));
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.compare_exchange_weak(expected, desired, to_relacy(o), where(at));
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success, std::memory_order failure,
                             Loc at = Loc::current()) {
    return atom_.compare_exchange_weak(expected, desired, to_relacy(success), where(at), to_relacy(failure), where(at));
  }
  template <class U = T>
  T fetch_add(U delta, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.fetch_add(delta, to_relacy(o), where(at));
  }
  template <class U = T>
  T fetch_sub(U delta, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.fetch_sub(delta, to_relacy(o), where(at));
  }
  T fetch_and(T mask, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.fetch_and(mask, to_relacy(o), where(at));
  }
  T fetch_or(T mask, std::memory_order o = sc, Loc at = Loc::current()) {
    return atom_.fetch_or(mask, to_relacy(o), where(at));
  }

 private:
  mutable rl::atomic<T> atom_;
};

template <class T>
class RelacyVar {
  using Loc = std::source_location;

 public:
  RelacyVar() = default;
  explicit RelacyVar(T value) : var_(value) {}

  [[nodiscard]] T load(Loc at = Loc::current()) const { return var_(where(at)).load(); }
  void store(T value, Loc at = Loc::current()) { var_(where(at)).store(value); }

 private:
  rl::var<T> var_;
};

// A std::mutex that Relacy schedules around (a real one would block the one OS thread Relacy runs on).
class RelacyMutex {
  using Loc = std::source_location;

 public:
  void lock(Loc at = Loc::current()) { mutex_.lock(where(at)); }
  void unlock(Loc at = Loc::current()) { mutex_.unlock(where(at)); }

 private:
  rl::mutex mutex_;
};

struct RelacyMemoryModel {
  template <class T>
  using atomic = RelacyAtomic<T>;
  template <class T>
  using var = RelacyVar<T>;
  using mutex = RelacyMutex;

  static void thread_fence(std::memory_order order, std::source_location at = std::source_location::current()) {
    rl::atomic_thread_fence(to_relacy(order), where(at));
  }
  // Asymmetric fences: Relacy cannot make another thread fence, so the pair is modelled by what the kernel
  // guarantees it amounts to (src/process_barrier.hpp): a seq_cst fence on each side. The models check the
  // protocol built on the pair, not the kernel.
  static void light_barrier(std::source_location at = std::source_location::current()) {
    rl::atomic_thread_fence(rl::mo_seq_cst, where(at));
  }
  static void heavy_barrier(std::source_location at = std::source_location::current()) {
    rl::atomic_thread_fence(rl::mo_seq_cst, where(at));
  }
  static bool heavy_barrier_available() noexcept { return true; }
  // Relacy models fences exactly, so the model tests check the fence-based algorithm, not the TSan variant.
  static constexpr bool fences_invisible = false;
};

}  // namespace weft::model
