// The OS boundary for switching stacks by hand, where weft's fibers do not use Boost.Context (MinGW-w64 on x86-64
// Windows: Debian ships no MinGW build of it). One implementation so far: src/windows/context_switch.cpp, the
// Win64 calling convention's callee-saved registers and the thread information block's stack fields. Linux's
// fibers switch with Boost.Context (scheduler/fiber/fiber.cpp), which does the same in its own assembly.
// Internal to weft; scheduler/fiber/fiber_switch.cpp is its user.
#pragma once

#include <cstddef>

namespace weft::os {

// A suspended context: the stack pointer its switch left, which points at the registers saved below it. Null: no
// context.
using SavedContext = void*;

// The function a new context runs: called with the `arg` of the first switch into it. It must never return (its
// last act is a switch away, from which it is never resumed).
using ContextEntry = void (*)(void* arg);

// Prepares a context that runs `entry` on the stack whose usable part is [low, top) (16-byte aligned `top`; the
// context's own frame takes its highest 336 bytes), with the OS's view of the thread's stack (the thread
// information block's stack base, limit and allocation base, which the OS's exception dispatch and stack checks
// read) set to `top`, `low` and `reserved_low` (the start of the stack's reservation, its guard included) while
// the context runs, and an exception list of its own, empty at first. Writes only to the stack; the MXCSR and x87
// control words are the calling thread's.
[[nodiscard]] SavedContext make_context(void* top, void* low, void* reserved_low, ContextEntry entry) noexcept;

// Saves the running context (its callee-saved registers, floating-point control words and stack fields) in
// `*from`, then resumes `to`, which continues with `arg`: as its entry's argument if it is new, as the result of
// its own switch_context call if it was suspended by one. Returns, when some context switches back to `*from`,
// what that switch passed. `to` may have been suspended on another thread: a context migrates with its stack.
extern "C" void* weft_switch_context(SavedContext* from, SavedContext to, void* arg) noexcept;
inline void* switch_context(SavedContext* from, SavedContext to, void* arg) noexcept {
  return weft_switch_context(from, to, arg);
}

}  // namespace weft::os
