// weft::Trace and the recording half of TraceImpl: finding the calling thread's buffer and appending to it.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <new>
#include <sstream>
#include <system_error>

#include "scheduler/tracing/trace_impl.hpp"
#include "src/os_thread.hpp"
#include "weft/errors.hpp"

namespace weft::tracing {

namespace {

// Serials of traces, never reused: a thread's cached look-up names a trace by its serial, so a cache entry of a
// destroyed trace can never match a new one made at the same address.
std::atomic<std::uint64_t> next_serial{1};

struct CachedThread {
  std::uint64_t serial = 0;
  TraceThread* thread = nullptr;
};

// The calling thread's last few (trace, buffer) look-ups: a pool's trace and a run's may both record at once.
constexpr std::size_t kCacheWays = 4;
thread_local std::array<CachedThread, kCacheWays> tls_cache{};
thread_local unsigned tls_cache_next = 0;

[[nodiscard]] std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TraceImpl::TraceImpl(const TraceOptions& options)
    : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      max_events_(options.max_events),
      origin_(steady_ns()) {
  if (options.max_events == 0) throw invalid_option("weft::TraceOptions::max_events = 0: must be at least 1");
  for (const char* name : {"task", "steal", "park"}) (void)intern(name);  // kTaskName, kStealName, kParkName
}

TraceImpl::~TraceImpl() {
  for (const auto& thread : threads_) {
    TraceChunk* chunk = thread->head.load(std::memory_order_relaxed);
    while (chunk != nullptr) delete std::exchange(chunk, chunk->next.load(std::memory_order_relaxed));
  }
}

std::int64_t TraceImpl::now() const noexcept { return steady_ns() - origin_; }

std::uint32_t TraceImpl::intern(std::string_view name) {
  const std::lock_guard lock(mutex_);
  std::string key(name);
  const auto found = name_index_.find(key);
  if (found != name_index_.end()) return found->second;
  const auto index = static_cast<std::uint32_t>(names_.size());
  names_.push_back(key);
  try {
    name_index_.emplace(std::move(key), index);
  } catch (...) {
    names_.pop_back();
    throw;
  }
  return index;
}

TraceThread* TraceImpl::thread_here() noexcept {
  for (const CachedThread& entry : tls_cache) {
    if (entry.serial == serial_) return entry.thread;
  }
  TraceThread* thread = find_or_add_thread();
  if (thread != nullptr) tls_cache[tls_cache_next++ % kCacheWays] = {serial_, thread};
  return thread;
}

TraceThread* TraceImpl::find_or_add_thread() noexcept {
  const std::uint32_t id = os::current_thread_id();
  try {
    const std::lock_guard lock(mutex_);
    for (const auto& thread : threads_) {
      if (thread->os_id == id) {
        // This thread's, evicted from the cache; or that of a thread that exited, whose id the OS gave to this
        // one. acquire: pairs with the last release store of `published` by its previous writer, so that its
        // writes of tail and tail_used happen before this thread takes them over.
        (void)thread->published.load(std::memory_order_acquire);
        return thread.get();
      }
    }
    auto thread = std::make_unique<TraceThread>();
    thread->os_id = id;
    thread->name = os::current_thread_name();
    threads_.push_back(std::move(thread));
    return threads_.back().get();
  } catch (...) {
    return nullptr;  // out of memory (or the mutex failed): the event is counted as dropped
  }
}

TraceChunk* TraceImpl::new_chunk() noexcept {
  std::size_t granted = reserved_.load(std::memory_order_relaxed);
  std::size_t room = 0;
  do {
    room = std::min(TraceChunk::kCapacity, max_events_ - granted);
    if (room == 0) return nullptr;
    // relaxed: a count; nothing is published through it.
  } while (!reserved_.compare_exchange_weak(granted, granted + room, std::memory_order_relaxed));
  auto* chunk = new (std::nothrow) TraceChunk(room);
  if (chunk == nullptr) reserved_.fetch_sub(room, std::memory_order_relaxed);  // give the room back
  return chunk;
}

void TraceImpl::record(const TraceEvent& event) noexcept {
  TraceThread* thread = thread_here();
  if (thread == nullptr) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (thread->tail == nullptr || thread->tail_used == thread->tail->capacity) {
    TraceChunk* chunk = new_chunk();
    if (chunk == nullptr) {
      // Only this thread writes it; relaxed: a count read after the work is over.
      thread->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // The link is published by the release store of `published` below, which covers an event in it.
    if (thread->tail == nullptr) {
      thread->head.store(chunk, std::memory_order_relaxed);
    } else {
      thread->tail->next.store(chunk, std::memory_order_relaxed);
    }
    thread->tail = chunk;
    thread->tail_used = 0;
  }
  thread->tail->events[thread->tail_used++] = event;
  // release: the event (and any chunk link) is written before a reader that acquires the count reads it.
  thread->published.store(thread->published.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

std::size_t TraceImpl::size() const noexcept {
  const std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& thread : threads_) total += thread->published.load(std::memory_order_acquire);
  return total;
}

std::uint64_t TraceImpl::dropped() const noexcept {
  const std::lock_guard lock(mutex_);
  std::uint64_t total = refused_.load(std::memory_order_relaxed);
  for (const auto& thread : threads_) total += thread->dropped.load(std::memory_order_relaxed);
  return total;
}

}  // namespace weft::tracing

namespace weft {

Trace::Trace(TraceOptions options) : impl_(std::make_unique<tracing::TraceImpl>(options)) {}

Trace::~Trace() = default;

void Trace::pause() noexcept { impl_->set_recording(false); }

void Trace::resume() noexcept { impl_->set_recording(true); }

bool Trace::recording() const noexcept { return impl_->recording(); }

std::size_t Trace::size() const noexcept { return impl_->size(); }

std::uint64_t Trace::dropped() const noexcept { return impl_->dropped(); }

void Trace::write_json(std::ostream& out) const { impl_->write_json(out); }

std::string Trace::json() const {
  std::ostringstream out;
  impl_->write_json(out);
  return std::move(out).str();
}

void Trace::save(const std::string& path) const {
  std::ofstream file(path, std::ios::out | std::ios::trunc);
  if (!file) {
    throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                            "weft::Trace::save: cannot open \"" + path + "\" for writing");
  }
  impl_->write_json(file);
  file.flush();
  if (!file) {
    throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                            "weft::Trace::save: writing \"" + path + "\" failed");
  }
}

}  // namespace weft
