// The futex as the wait primitives' Relacy models see it (tests/wait/*_model.cpp): what the kernel does, one lock
// (the kernel's hash bucket, one for every word) under which a park compares the word and sleeps, and under which a
// wake takes the sleepers; the wake uses only the word's address. A waiter that sleeps with nobody left to wake it
// is a deadlock, which Relacy reports.
#pragma once

#include <chrono>
#include <cstdint>

#include "tests/model/relacy_memory_model.hpp"

namespace weft::model {

using FutexWord = RelacyMemoryModel::atomic<std::uint32_t>;

// The kernel's side of the futex: one bucket for every word.
struct FutexKernel {
  rl::mutex lock;
  rl::condition_variable sleepers;
};

// The running scenario's kernel (each scenario's constructor sets it; Relacy runs one iteration at a time).
inline FutexKernel* futex_kernel = nullptr;

// The parking policy the word's protocol (scheduler/sync/word_protocol.hpp) is instantiated with in the models.
struct ModelParking {
  static void park(FutexWord& w, std::uint32_t expected, std::chrono::nanoseconds /*slice: never times out*/) {
    futex_kernel->lock.lock($);
    if (w.load(std::memory_order_relaxed) == expected) futex_kernel->sleepers.wait(futex_kernel->lock, $);
    futex_kernel->lock.unlock($);
  }
  static void wake_all(FutexWord& /*w: its address only, as the futex*/) {
    futex_kernel->lock.lock($);
    futex_kernel->sleepers.notify_all($);
    futex_kernel->lock.unlock($);
  }
};

}  // namespace weft::model
