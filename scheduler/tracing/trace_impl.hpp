// The recording side of weft::Trace: per-thread append-only event buffers, read while they grow.
//
// Invariants:
// - Each TraceThread has one writer at a time: the OS thread whose id it carries (a thread looks its buffer up by
//   its id, so a buffer left by a thread that exited is taken over by a later thread the OS gave the same id,
//   never shared by two live threads).
// - A writer fills an event, then publishes the new count with a release store; a reader acquires the count and
//   reads only that many events. Chunks are linked before the count that covers them is published, and are never
//   moved nor freed before the TraceImpl is, so a reader needs no lock against writers.
// - Names are interned under mutex_, before any event naming them is published; the JSON writer holds mutex_
//   while it reads the counts and the names, so every name an event it reads refers to is in names_.
// - The events kept never exceed max_events: a chunk's room is reserved from the shared budget when the chunk
//   is made (one RMW per 1,024 events), and an event with no room is counted as dropped.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/trace.hpp"

namespace weft::tracing {

// What an event is about; decides how it is written (see TraceEvent's fields).
enum class TraceCategory : std::uint8_t { task, steal, park, node, stage };

struct TraceEvent {
  std::int64_t start = 0;     // nanoseconds since the trace's origin
  std::int64_t duration = 0;  // nanoseconds (task, node, stage); park: how long the worker slept
  // task: its priority (weft::Priority); steal: the victim worker; node: the node's index; stage: the item number.
  std::uint64_t arg = 0;
  std::uint32_t name = 0;  // an index into the trace's names (TraceImpl::intern)
  // task: the worker's index (or TaskEvent::not_a_worker); node: the run's number; stage: the stage's index.
  std::uint32_t arg2 = 0;
  TraceCategory category = TraceCategory::task;
};

struct TraceChunk {
  static constexpr std::size_t kCapacity = 1024;
  explicit TraceChunk(std::size_t room) noexcept : capacity(room) {}
  const std::size_t capacity;  // events this chunk may hold: what the budget granted, at most kCapacity
  std::atomic<TraceChunk*> next{nullptr};
  std::array<TraceEvent, kCapacity> events;
};

struct TraceThread {
  std::uint32_t os_id = 0;
  std::string name;
  std::atomic<TraceChunk*> head{nullptr};
  TraceChunk* tail = nullptr;             // the writer's
  std::size_t tail_used = 0;              // the writer's: events in tail
  std::atomic<std::size_t> published{0};  // events readable; written by the writer (release), read (acquire)
  std::atomic<std::uint64_t> dropped{0};
};

class TraceImpl {
 public:
  // Names every trace has: the pool's events.
  static constexpr std::uint32_t kTaskName = 0;
  static constexpr std::uint32_t kStealName = 1;
  static constexpr std::uint32_t kParkName = 2;

  explicit TraceImpl(const TraceOptions& options);
  ~TraceImpl();
  TraceImpl(const TraceImpl&) = delete;
  TraceImpl& operator=(const TraceImpl&) = delete;

  // relaxed: a switch read once per event; an event racing a pause() may be kept or not.
  [[nodiscard]] bool recording() const noexcept { return recording_.load(std::memory_order_relaxed); }
  void set_recording(bool on) noexcept { recording_.store(on, std::memory_order_relaxed); }

  // Nanoseconds since the trace was made (steady clock).
  [[nodiscard]] std::int64_t now() const noexcept;
  // The index of `name` among the trace's names, adding it if new. Throws std::bad_alloc.
  [[nodiscard]] std::uint32_t intern(std::string_view name);
  // A number for a run that records into this trace (the "run" argument of its node events).
  [[nodiscard]] std::uint32_t next_run() noexcept { return runs_.fetch_add(1, std::memory_order_relaxed); }

  // Keeps `event` in the calling thread's buffer, or counts it dropped (budget spent, or out of memory).
  void record(const TraceEvent& event) noexcept;
  // A complete event of `category` that started at `start` and ends now.
  void complete(TraceCategory category, std::uint32_t name, std::int64_t start, std::uint64_t arg,
                std::uint32_t arg2) noexcept {
    record(TraceEvent{start, now() - start, arg, name, arg2, category});
  }

  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] std::uint64_t dropped() const noexcept;
  void write_json(std::ostream& out) const;

 private:
  [[nodiscard]] TraceThread* thread_here() noexcept;
  [[nodiscard]] TraceThread* find_or_add_thread() noexcept;
  // A new chunk for `thread` with room granted from the budget, or null if none is left (or no memory).
  [[nodiscard]] TraceChunk* new_chunk() noexcept;

  const std::uint64_t serial_;  // unique among all traces of the process, for the threads' look-up caches
  const std::size_t max_events_;
  const std::int64_t origin_;  // steady_clock ticks (ns) at construction
  std::atomic<bool> recording_{true};
  std::atomic<std::uint32_t> runs_{0};
  std::atomic<std::size_t> reserved_{0};   // events granted to chunks so far (<= max_events_)
  std::atomic<std::uint64_t> refused_{0};  // events dropped for want of a buffer at all
  mutable std::mutex mutex_;               // guards names_ and threads_ (their growth)
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_index_;  // names_ by name
  std::vector<std::unique_ptr<TraceThread>> threads_;
};

struct TraceAccess {
  [[nodiscard]] static TraceImpl* impl(const Trace& trace) noexcept { return trace.impl_.get(); }
  [[nodiscard]] static TraceImpl* impl(const std::shared_ptr<Trace>& trace) noexcept {
    return trace ? trace->impl_.get() : nullptr;
  }
};

}  // namespace weft::tracing
