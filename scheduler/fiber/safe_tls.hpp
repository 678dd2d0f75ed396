// Reading a thread_local where the running code may have moved to another thread since it last read one: on a
// fiber, after any call that may suspend it (a wait, a task run inline), since a suspended fiber may resume on
// another worker. Needs no fibers itself: the rule holds for code built either way (Engine::this_thread_worker,
// the stack guard's *_here checks follow it without the macro).
//
// Why: compilers take the thread pointer as fixed for the length of a function. They compute a thread_local's
// address (on ARM64: `mrs tpidr_el0` plus the variable's offset) once and reuse it, across calls and out of
// loops, so after a migration an inlined access reads or writes the *old* thread's variable. On x86-64 a plain
// read addresses through %fs each time and hides this; ARM64 shows it. An accessor defined in another source
// file is safe only by accident: a unity build or LTO that inlines it brings the reuse back. Hence accessors that
// cannot be inlined and whose result the compiler cannot see through.
#pragma once

// Declares `[[gnu::noinline]] Type* Name() noexcept` returning the address of the thread_local `Variable` as seen
// by the thread that calls it. Each call computes the address anew: the function is not inlined, and the empty
// asm makes its result opaque, so the compiler cannot fold two calls into one across a fiber switch (which it
// may do with a plain `&Variable`, or with an accessor it can see through, even at -O0 on clang).
#define WEFT_FIBER_SAFE_TLS(Name, Type, Variable)  \
  [[gnu::noinline]] inline Type* Name() noexcept { \
    Type* address = &(Variable);                   \
    asm volatile("" : "+r"(address));              \
    return address;                                \
  }
