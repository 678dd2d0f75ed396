// What a fiber stack overflow says before the process dies. Only built with fibers (WEFT_FIBERS=1).
//
// An overflow touches the guard page below the fiber's stack (scheduler/fiber/fiber_stack.hpp) and faults. The
// process's SIGSEGV handler (src/fault_handler.hpp) runs on the worker thread's alternate signal stack, since the
// fiber's has no room left, and asks the filter here whether the fault is in the guard of the fiber running on that
// thread (the stack guard's thread-locals, scheduler/fiber/stack_guard.hpp, hold its bounds). If so it writes which
// pool and worker, how large the stack was and which option sets it, and the process dies of SIGSEGV as it would have;
// any other fault goes to the handler installed before (a sanitizer's, a crash reporter's, the default).
#pragma once

#if !defined(WEFT_FIBERS) || !WEFT_FIBERS
#error "scheduler/fiber/fiber_overflow.hpp needs a weft built with fibers"
#endif

#include <cstddef>

#include "src/fault_handler.hpp"

namespace weft::fiber {

// Installs the process's SIGSEGV handler with the overflow filter unless it is installed already (again if
// someone replaced it since). Called by each pool that runs on fibers, as it starts; thread-safe.
void install_fiber_overflow_report() noexcept;

// While it lives, the calling thread is worker `worker` of pool `pool_name` for the overflow report, and has an
// alternate signal stack for the handler to run on. Create and destroy it on the worker's thread; `pool_name`
// must outlive it.
class FiberOverflowScope {
 public:
  FiberOverflowScope(const char* pool_name, unsigned worker, std::size_t guard_size) noexcept;
  ~FiberOverflowScope();
  FiberOverflowScope(const FiberOverflowScope&) = delete;
  FiberOverflowScope& operator=(const FiberOverflowScope&) = delete;

  // What the report says of the thread; read by the signal handler.
  struct Context {
    const char* pool_name;
    unsigned worker;
    std::size_t guard_size;
  };

 private:
  Context context_;
  os::AlternateSignalStack alternate_;
};

}  // namespace weft::fiber
