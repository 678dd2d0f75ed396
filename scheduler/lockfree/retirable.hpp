// The intrusive hook every object retired to a reclamation domain carries, so that retiring never allocates.
#pragma once

#include <cstdint>

#include "scheduler/atomics/memory_model.hpp"

namespace weft::lockfree {

template <atomics::MemoryModel M>
class NodeCache;

// Embedded (as a base) in every retirable object. Only the retiring thread touches these fields after the
// object is unlinked, so they are plain: the reclamation protocol orders them after every reader's accesses.
template <atomics::MemoryModel M>
struct Retirable {
  // Destroys the object and gives its memory back through the reclaiming thread's cache.
  using DisposeFn = void (*)(Retirable*, NodeCache<M>&) noexcept;

  Retirable* next_retired = nullptr;
  // QSBR only: the epoch every online thread must have announced before the object may be freed
  // (0 = not yet assigned). Unused by hazard pointers.
  std::uint64_t safe_epoch = 0;
  DisposeFn dispose = nullptr;
};

// An intrusive FIFO of retired objects, owned by one thread record.
template <atomics::MemoryModel M>
struct RetiredList {
  Retirable<M>* head = nullptr;
  Retirable<M>* tail = nullptr;
  std::size_t size = 0;

  void push_back(Retirable<M>* r) noexcept {
    r->next_retired = nullptr;
    if (tail == nullptr) {
      head = r;
    } else {
      tail->next_retired = r;
    }
    tail = r;
    ++size;
  }

  [[nodiscard]] Retirable<M>* take_all() noexcept {
    Retirable<M>* all = head;
    head = tail = nullptr;
    size = 0;
    return all;
  }
};

}  // namespace weft::lockfree
