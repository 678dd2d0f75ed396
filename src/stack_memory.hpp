// The OS boundary for stacks made by hand: address space reserved for a stack, with an inaccessible guard below it.
// Internal to weft; the fiber stacks (scheduler/fiber/fiber_stack.hpp) and the alternate signal stacks
// (src/fault_handler.hpp) are its users.
#pragma once

#include <cstddef>

namespace weft::os {

// The size of a memory page (4096 where the OS would not say).
[[nodiscard]] std::size_t page_size() noexcept;

// The guard a stack of map_guarded_stack needs below it, a multiple of page_size(). Linux: one page (a fault there
// runs its handler on an alternate signal stack). Windows, which runs an exception's handlers on the faulting
// stack itself: one page never committed at the bottom, the room a stack-overflow exception's handlers run in
// (AlternateSignalStack::kSize, src/fault_handler.hpp), and one guard page above it (src/windows/stack_memory.cpp).
[[nodiscard]] std::size_t stack_guard_size() noexcept;

// Maps `guard + usable` bytes of private memory, both multiples of page_size(): the lowest `guard` bytes are
// inaccessible (PROT_NONE: a touch faults with SIGSEGV), the `usable` bytes above them readable and writable. The
// memory is reserved without committing it (MAP_NORESERVE): a page costs memory only once it is touched, so a
// large stack that is used shallowly costs its address space and the pages it touched. Returns the lowest usable
// address (just above the guard), or null if the OS refused (no memory, no mapping left: each stack is two of the
// process's mappings). On Windows the guard is laid out as the OS lays out a thread's stack (see
// stack_guard_size): a touch of it, while a context on the stack runs with its stack fields (src/context_switch.hpp),
// raises a stack-overflow exception with room left for its handlers; with any other thread information, an access
// violation.
[[nodiscard]] void* map_guarded_stack(std::size_t usable, std::size_t guard) noexcept;
// Unmaps what map_guarded_stack(usable, guard) returned as `low`.
void unmap_guarded_stack(void* low, std::size_t usable, std::size_t guard) noexcept;

}  // namespace weft::os
