// How deep waits may nest on one thread. A wait inside a task (Future::get, Run::wait, a join) runs the awaited
// work, and whatever else it finds, on the waiting thread's own stack; recursion through waits therefore grows
// that stack by a few frames per level. Past a reserve kept free for the work a wait runs, the calls that would
// nest deeper refuse with weft::nesting_too_deep instead of overflowing the stack, and a wait that has already
// begun there runs only its own deque (its own descendants), never unrelated work.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::fiber {

// Stack kept free below a wait for the work it runs: a quarter of the thread's stack, at most this.
inline constexpr std::size_t kStackReserve = 256 * 1024;

namespace stack_guard_detail {
// The lowest address the calling thread's frames may reach before the reserve: 0 until looked up (once per
// thread), 1 if the OS would not say (then nothing is ever refused). An inline variable with a constant
// initializer, so the check on every wait is one thread-local load and a compare, inlined without LTO.
inline thread_local std::uintptr_t tls_limit = 0;
// The stack the calling code runs on when it is a fiber's (scheduler/engine/fiber_worker.cpp sets both with tls_limit
// before each resume; zero on a thread's own stack), for throw_too_deep's message.
inline thread_local std::uintptr_t tls_fiber_low = 0;
inline thread_local std::size_t tls_fiber_size = 0;
[[nodiscard]] std::uintptr_t look_up_limit() noexcept;
[[noreturn]] void throw_too_deep(const char* call);
}  // namespace stack_guard_detail

// The stack pointer. Read from the register where the compiler allows: __builtin_frame_address(0) would make
// every function that inlines the check set up a frame pointer, which on the spawn + get path cost more than
// the check itself (callgrind, fib(28) on one worker; docs/perf-log.md). The address
// of a local would not do: under ASan's fake stacks it lies on the heap.
[[nodiscard]] inline std::uintptr_t stack_pointer() noexcept {
  std::uintptr_t sp;
#if defined(__x86_64__)
  asm("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  asm("mov %0, sp" : "=r"(sp));
#else
  sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
#endif
  return sp;
}

// Identifies the stack the calling code runs on: a fiber's (its lowest address), or the thread's own (the address
// of one of the thread's thread-locals, which no stack holds). Code that reads the same value runs on the same
// stack, hence one piece at a time: whatever runs deeper on it runs while the frames below wait.
[[nodiscard]] inline std::uintptr_t current_stack_id() noexcept {
  const std::uintptr_t fiber = stack_guard_detail::tls_fiber_low;
  return fiber != 0 ? fiber : reinterpret_cast<std::uintptr_t>(&stack_guard_detail::tls_fiber_low);
}

// True if the calling thread has less stack left than its reserve.
[[nodiscard]] inline bool stack_low() noexcept {
  std::uintptr_t limit = stack_guard_detail::tls_limit;
  if (limit == 0) [[unlikely]]
    limit = stack_guard_detail::look_up_limit();
  return stack_pointer() < limit;
}

// True if less than the reserve plus `margin` bytes is left: what a caller a few frames above a stack_low() check
// sees of it (Engine::admit, for the wait it is about to enter).
[[nodiscard]] inline bool stack_low_within(std::size_t margin) noexcept {
  std::uintptr_t limit = stack_guard_detail::tls_limit;
  if (limit == 0) [[unlikely]]
    limit = stack_guard_detail::look_up_limit();
  return stack_pointer() < limit + margin;
}

// On a fiber: true if less than twice the reserve is left. A suspending wait (Engine::wait_on_fiber) stops running
// tasks on its own stack there and suspends instead, so that the code it ran keeps a reserve's worth of room above
// the limit where the calls that nest further (a run, a spawn) refuse: recursion through waits is then served by
// more fibers rather than refused. On a thread's own stack the same as stack_low().
[[nodiscard]] inline bool stack_low_for_nesting() noexcept {
  std::uintptr_t limit = stack_guard_detail::tls_limit;
  if (limit == 0) [[unlikely]]
    limit = stack_guard_detail::look_up_limit();
  const std::uintptr_t low = stack_guard_detail::tls_fiber_low;
  return stack_pointer() < (low != 0 ? 2 * limit - low : limit);
}

// Throws weft::nesting_too_deep naming `call` (e.g. "weft::Future::get") if stack_low().
inline void require_stack(const char* call) {
  if (stack_low()) [[unlikely]]
    stack_guard_detail::throw_too_deep(call);
}

// stack_low() and stack_low_for_nesting() for a function that may have moved to another thread since it began
// (on a fiber: a loop around a suspension). Never inlined, so they read the thread-locals of the thread they run
// on (scheduler/fiber/safe_tls.hpp); the inline checks above, inlined there, could read the old thread's limit,
// which belongs to whatever stack runs there now.
[[nodiscard, gnu::noinline]] bool stack_low_here() noexcept;
[[nodiscard, gnu::noinline]] bool stack_low_for_nesting_here() noexcept;

}  // namespace weft::fiber
