// The OS boundary for memory faults: a process-wide SIGSEGV handler that asks a filter whether it knows the fault
// (and lets it say what happened) before the process dies, and per-thread alternate signal stacks for it to run on
// when the fault is a stack overflow (the faulting stack has no room left for the handler).
// Internal to weft; the fiber workers (scheduler/engine/fiber_worker.cpp) are its user.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::os {

// Called on the faulting thread, inside the signal handler, with the address the fault touched. Returns true if it
// recognised the fault, after writing what it has to say (write_stderr only: nothing that is not
// async-signal-safe, no allocation, no lock). The process then dies of the signal, as it would have without the
// handler. False: the handler that was installed before (a sanitizer's, a crash reporter's, the default) gets the
// signal instead.
using FaultFilter = bool (*)(std::uintptr_t address) noexcept;

// Makes `filter` the filter of the process's SIGSEGV handler and installs the handler (SA_ONSTACK, so it runs on
// the thread's alternate signal stack) unless it is installed already; the handler found there before becomes
// the one it passes unrecognised faults to. Called again after someone else replaced the handler (a test
// framework that restores its own), it installs itself again on top. One filter per process: a later call's
// replaces the earlier one. Thread-safe. Returns false if the OS refused.
bool install_fault_filter(FaultFilter filter) noexcept;

// Writes `length` bytes of `text` to standard error with write(2), async-signal-safe.
void write_stderr(const char* text, std::size_t length) noexcept;

// An alternate signal stack for the calling thread, for as long as the object lives (create and destroy it on the
// same thread). If the thread has one already (a sanitizer's runtime gives each thread one), that one is kept and
// this object does nothing.
class AlternateSignalStack {
 public:
  AlternateSignalStack() noexcept;
  ~AlternateSignalStack();
  AlternateSignalStack(const AlternateSignalStack&) = delete;
  AlternateSignalStack& operator=(const AlternateSignalStack&) = delete;
  // True if the thread has an alternate signal stack (this one, or the one it had already).
  [[nodiscard]] bool active() const noexcept { return active_; }

  // Bytes of each stack this class maps (the handler runs on it: enough for a sanitizer's instrumented frames).
  static constexpr std::size_t kSize = 64 * 1024;

 private:
  void* low_ = nullptr;  // the stack mapped here (null if none was needed or the OS refused)
  bool active_ = false;
};

}  // namespace weft::os
