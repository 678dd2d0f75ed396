// What the engine's own files share (engine.cpp, worker_loop.cpp, steal.cpp, submit.cpp, shutdown.cpp, inline_run.cpp,
// and spawn_path.hpp, which pool.cpp includes for the spawn path). Internal to the engine.
#pragma once

#include <cstddef>

#include "scheduler/engine/engine.hpp"

namespace weft::engine::engine_internal {

// The worker the calling thread is (in any engine), so that a task spawned on a worker goes to its deque. An
// inline variable with a constant initializer: every file reads it with a plain thread-local load, no wrapper
// call, which the spawn path (submit.cpp) pays per task without LTO.
inline thread_local Worker* tls_worker = nullptr;

// The index of a priority's shared queue.
[[nodiscard]] constexpr std::size_t slot(Priority p) noexcept { return static_cast<std::size_t>(p); }

// Steals from `deque` (any thread) until it takes a task, or null once the deque looks empty. A lost race means
// another thread took an item, so retrying stays lock-free.
template <class Deque>
[[nodiscard]] Task* steal_until_taken_or_empty(Deque& deque) noexcept {
  for (;;) {
    const auto result = deque.steal();
    if (result) return result.item;
    if (result.status == lockfree::StealStatus::empty) return nullptr;
  }
}

}  // namespace weft::engine::engine_internal
