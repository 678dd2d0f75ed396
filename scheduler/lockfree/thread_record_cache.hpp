// The calling thread's records in every reclamation domain it has used without an explicit handle:
// registration on first use, release when the thread exits.
//
// Not a global singleton: each thread has its own small table, and a domain is only a key in it. The table
// is only read by its own thread; a domain destroyed before the thread exits marks the record orphaned
// (thread_registry.hpp), so a stale entry is recognised and dropped, even if a new domain reuses the address.
#pragma once

#include <vector>

namespace weft::lockfree {

class ThreadRecordCache {
 public:
  // Lets go of one record at thread exit: the owning domain type's hand-back protocol.
  using ReleaseFn = void (*)(void* record) noexcept;

  ThreadRecordCache() = default;
  ThreadRecordCache(const ThreadRecordCache&) = delete;
  ThreadRecordCache& operator=(const ThreadRecordCache&) = delete;
  // Releases every record still held, newest first.
  ~ThreadRecordCache();

  // The record this thread holds in `domain`, or nullptr.
  [[nodiscard]] void* find(const void* domain) const noexcept {
    if (last_ != nullptr && last_->domain == domain) return last_->record;
    for (const auto& e : entries_) {
      if (e.domain == domain) {
        last_ = &e;
        return e.record;
      }
    }
    return nullptr;
  }
  void insert(const void* domain, void* record, ReleaseFn release);
  // Forgets the entry for `domain` without releasing it; returns its record (nullptr if none).
  void* erase(const void* domain) noexcept;

 private:
  struct Entry {
    const void* domain;
    void* record;
    ReleaseFn release;
  };
  std::vector<Entry> entries_;
  mutable const Entry* last_ = nullptr;
};

// This thread's table (constructed on first use, destroyed at thread exit).
[[nodiscard]] ThreadRecordCache& thread_record_cache() noexcept;

}  // namespace weft::lockfree
