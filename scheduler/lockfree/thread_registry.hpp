// The per-thread records of a reclamation domain: registration, reuse by later threads, and the hand-over
// that lets a thread exit and its domain be destroyed in either order.
//
// Records live in a push-only lock-free list (Michael 2004): never unlinked while the domain lives, so
// scanners may walk it at any time. A record is in one of four states:
//   free      - no thread owns it; the next registering thread may claim it (and inherits its leftovers);
//   owned     - a thread (explicit handle or thread-local cache) uses it;
//   releasing - its owner is handing it back and still touches the domain; the domain's destructor waits;
//   orphaned  - the domain was destroyed while the record was owned: the owner deletes it when it lets go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <thread>

#include "scheduler/atomics/memory_model.hpp"

namespace weft::lockfree {

enum : std::uint32_t { kRecordFree = 0, kRecordOwned = 1, kRecordReleasing = 2, kRecordOrphaned = 3 };

template <atomics::MemoryModel M>
struct RegistryRecord {
  typename M::template atomic<std::uint32_t> state{kRecordOwned};
  // Immutable once the record is published by the release CAS on the registry head.
  RegistryRecord* next_record = nullptr;
};

// Record must derive from RegistryRecord<M>.
template <class Record, atomics::MemoryModel M>
class ThreadRegistry {
 public:
  ThreadRegistry() noexcept {
    head_.store(nullptr, std::memory_order_relaxed);  // not shared yet
    count_.store(0, std::memory_order_relaxed);       // not shared yet
  }
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Claims a free record or publishes a new one made by make(); the caller owns it afterwards.
  template <class Make>
  [[nodiscard]] Record* acquire(Make&& make) {
    // acquire: we read next_record and, once we claim a record, its leftover state written by its last owner.
    for (auto* r = head_.load(std::memory_order_acquire); r != nullptr; r = r->next_record) {
      std::uint32_t expected = kRecordFree;
      // acquire on success: the previous owner's release (end_release) made its retired list visible to us.
      if (r->state.load(std::memory_order_relaxed) == kRecordFree &&
          r->state.compare_exchange_strong(expected, kRecordOwned, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
        return static_cast<Record*>(r);
      }
    }
    Record* fresh = make();
    // Counted before it is visible, so a scanner never sees more records than count() (bounds stay sound).
    count_.fetch_add(1, std::memory_order_relaxed);                  // relaxed: the release CAS below publishes it
    RegistryRecord<M>* top = head_.load(std::memory_order_relaxed);  // only a guess for the CAS
    do {
      fresh->next_record = top;
      // release: walkers that see the record (acquire) see its initialised fields and next_record.
    } while (!head_.compare_exchange_weak(top, fresh, std::memory_order_release, std::memory_order_relaxed));
    return fresh;
  }

  // Owner letting go, step 1. False when the domain is already gone (orphaned): the caller must delete r and
  // must not touch the domain. True: the domain stays alive until end_release.
  [[nodiscard]] static bool begin_release(Record* r) noexcept {
    std::uint32_t expected = kRecordOwned;
    // acquire on failure: the destroying domain's CAS to orphaned released its clean-up of our record.
    // (acquire on success too: g++ rejects a failure order stronger than the success order.)
    return r->state.compare_exchange_strong(expected, kRecordReleasing, std::memory_order_acquire,
                                            std::memory_order_acquire);
  }
  // Owner letting go, step 2: the record is free for the next thread.
  static void end_release(Record* r) noexcept {
    // release: the next owner (acquire CAS in acquire()) and a destroying domain see our final writes.
    r->state.store(kRecordFree, std::memory_order_release);
  }

  // For the domain's destructor. For each record: a free one is passed to on_free (then deleted by the
  // registry); an owned one becomes orphaned and is passed to on_orphan (the owner deletes it later);
  // a releasing one is waited for, then treated as free.
  template <class OnFree, class OnOrphan>
  void destroy(OnFree&& on_free, OnOrphan&& on_orphan) noexcept {
    auto* r = head_.load(std::memory_order_acquire);  // acquire: see every published record's fields
    while (r != nullptr) {
      auto* next = r->next_record;
      auto* rec = static_cast<Record*>(r);
      for (;;) {
        std::uint32_t s = kRecordOwned;
        // acq_rel: acquire the owner's writes to its record; release our clean-up to its begin_release.
        if (r->state.compare_exchange_strong(s, kRecordOrphaned, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
          on_orphan(*rec);
          break;
        }
        if (s == kRecordFree) {  // acquire above paired with end_release: the last owner is done
          on_free(*rec);
          delete rec;
          break;
        }
        std::this_thread::yield();  // releasing: the owner finishes with the domain shortly
      }
      r = next;
    }
  }

  template <class F>
  void for_each(F&& f) const {
    // acquire: pairs with acquire()'s release CAS, so each record's fields are initialised when we read them.
    for (auto* r = head_.load(std::memory_order_acquire); r != nullptr; r = r->next_record) {
      f(*static_cast<Record*>(r));
    }
  }

  // Records ever created (never decreases while the domain lives).
  [[nodiscard]] std::size_t count() const noexcept {
    // relaxed: it only grows; a bound check orders it after its own acquire (see BoundTracker::check).
    return count_.load(std::memory_order_relaxed);
  }

 private:
  typename M::template atomic<RegistryRecord<M>*> head_;
  typename M::template atomic<std::size_t> count_;
};

}  // namespace weft::lockfree
