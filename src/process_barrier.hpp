// The OS boundary for asymmetric fences: a full memory barrier run on every running thread of this process at
// once, so that a frequent path elsewhere can make do with a compiler barrier. Internal to weft; its users are
// the scheduler's parking (scheduler/engine/parking.hpp), the engine's idle count and its outside slots' shutdown gate.
//
// The pairing (Linux membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED): a thread A that runs
//   store x; compiler barrier; load y
// and a thread B that runs
//   store y; process_barrier(); load x
// cannot both load the old value, exactly as if A's compiler barrier were a seq_cst fence. The kernel makes
// every thread of the process that is running on a CPU execute a full barrier before the call returns; a thread
// that is not running went through one when it was switched out.
#pragma once

#include <string_view>

namespace weft::os {

// Whether process_barrier() works in this process: registers the process for it on the first call (the
// kernel needs that once per process) and remembers the answer. False on kernels before 4.14 and where a
// seccomp filter refuses membarrier; callers then use real fences on both sides. Also false when the
// environment variable WEFT_PROCESS_BARRIER is "off" at the first call: CI runs a suite that way, so that the
// fence-on-both-sides protocols run on machines whose kernel has the barrier too.
[[nodiscard]] bool process_barrier_available() noexcept;

// True if the environment variable WEFT_PROCESS_BARRIER is "off" (src/process_barrier_setting.cpp, for every OS).
[[nodiscard]] bool process_barrier_switched_off() noexcept;

// The value of WEFT_PROCESS_BARRIER when it is set to something other than "off" or nothing (a value the switch
// does not understand, which a pool refuses with weft::invalid_option); empty otherwise.
[[nodiscard]] std::string_view process_barrier_unknown_setting() noexcept;

// The barrier itself (a system call, much dearer with another of our threads running on a second CPU,
// which it interrupts; docs/perf-log.md). Only after process_barrier_available() returned true; in a child made by
// fork() it registers the child first if the kernel asks for that. Aborts if the barrier cannot be had.
void process_barrier() noexcept;

}  // namespace weft::os
