// How deep waits may nest on one thread. A wait inside a task (Future::get, Run::wait, a join) runs the awaited
// work, and whatever else it finds, on the waiting thread's own stack; recursion through waits therefore grows
// that stack by a few frames per level. Past a reserve kept free for the work a wait runs, the calls that would
// nest deeper refuse with weft::nesting_too_deep instead of overflowing the stack, and a wait that has already
// begun there runs only its own deque (its own descendants), never unrelated work.
#pragma once

#include <cstddef>

namespace weft::sched {

// Stack kept free below a wait for the work it runs: a quarter of the thread's stack, at most this.
inline constexpr std::size_t kStackReserve = 256 * 1024;

// True if the calling thread has less stack left than its reserve.
[[nodiscard]] bool stack_low() noexcept;

// Throws weft::nesting_too_deep naming `call` (e.g. "weft::Future::get") if stack_low().
void require_stack(const char* call);

}  // namespace weft::sched
