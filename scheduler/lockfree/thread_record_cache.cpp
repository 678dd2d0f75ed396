#include "scheduler/lockfree/thread_record_cache.hpp"

namespace weft::lockfree {

ThreadRecordCache::~ThreadRecordCache() {
  while (!entries_.empty()) {
    const Entry e = entries_.back();
    entries_.pop_back();
    e.release(e.record);
  }
}

void ThreadRecordCache::insert(const void* domain, void* record, ReleaseFn release) {
  entries_.push_back(Entry{domain, record, release});
  last_ = nullptr;  // push_back may have moved the entries
}

void* ThreadRecordCache::erase(const void* domain) noexcept {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->domain == domain) {
      void* record = it->record;
      entries_.erase(it);
      last_ = nullptr;
      return record;
    }
  }
  return nullptr;
}

ThreadRecordCache& thread_record_cache() noexcept {
  thread_local ThreadRecordCache cache;
  return cache;
}

}  // namespace weft::lockfree
