// What a lock-free structure needs from a memory-reclamation domain (HazardPointerDomain, QsbrDomain).
#pragma once

#include <concepts>
#include <cstddef>

#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/lockfree/retirable.hpp"

namespace weft::lockfree {

// A domain D provides:
//  - D::memory_model, the MemoryModel its atomics use;
//  - D::ThreadRef, a copyable view of one thread's registration (from d.current(), the calling thread's
//    implicit registration, or d.register_thread().ref(), an explicit one), which allocates node blocks
//    through the thread's cache; d.allocate_block / d.free_block do so without one (construction, destruction);
//  - D::Guard, built from a ThreadRef for the length of one operation: protect<Slot>(src) returns a pointer
//    read from src that stays dereferenceable until the guard ends or clear() is called;
//    protect_if<Slot>(p, src, expected) protects p if src still holds expected (p's reachability follows);
//    retire(r) hands an unlinked object to the domain, which calls r->dispose once no thread can reach it.
template <class D>
concept Reclaimer = atomics::MemoryModel<typename D::memory_model> &&
                    requires(D& domain, typename D::ThreadRef t, typename D::Guard& guard,
                             const typename D::memory_model::template atomic<Retirable<typename D::memory_model>*>& src,
                             Retirable<typename D::memory_model>* r, void* block, std::size_t n) {
                      { domain.current() } -> std::same_as<typename D::ThreadRef>;
                      { domain.register_thread().ref() } -> std::same_as<typename D::ThreadRef>;
                      { t.allocate(n, n) } -> std::same_as<void*>;
                      { t.deallocate(block, n, n) } noexcept;
                      { domain.allocate_block(n, n) } -> std::same_as<void*>;
                      { domain.free_block(block, n, n) } noexcept;
                      requires std::constructible_from<typename D::Guard, typename D::ThreadRef>;
                      { guard.template protect<0>(src) } -> std::same_as<Retirable<typename D::memory_model>*>;
                      { guard.template protect_if<1>(r, src, r) } -> std::same_as<bool>;
                      { guard.clear() } noexcept;
                      { guard.retire(r) } noexcept;
                    };

}  // namespace weft::lockfree
