// weft::Trace: a recording of what ran where, written as Chrome Trace Event JSON (Perfetto, chrome://tracing).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

namespace weft {

namespace tracing {  // scheduler/tracing/: the recorder behind a Trace
class TraceImpl;
struct TraceAccess;
}  // namespace tracing

// How much a Trace keeps.
struct TraceOptions {
  // At most this many events are kept (>= 1); later ones are not kept and are counted in Trace::dropped(), so a
  // trace left on holds bounded memory (40 bytes an event, allocated 1,024 events at a time per thread).
  std::size_t max_events = std::size_t{1} << 20;
};

// A recording of the work a pool runs, per thread, on one steady clock:
// - with `PoolOptions::trace`: every task of the pool ("task", category "pool": the worker or outside thread
//   that ran it, its priority), each successful steal ("steal", an instant: the victim worker) and each time a
//   worker sleeps ("park", an instant at the moment it went to sleep, with how long it slept), plus everything
//   below for every graph, scope and pipeline run on that pool;
// - with `RunOptions::trace` (one TaskGraph or TaskScope run): each execution of each node (its name, category
//   "node"; a node with several tokens or a condition loop appears once per execution) and each pipeline stage's
//   body on each item (the stage's name, category "stage", with the item's number in the source's order).
// Tasks, nodes and stages are complete events (`"ph":"X"`: a start and a duration), so a node's event nests
// inside the pool task that ran it on that thread's track; each thread is named (the pool's workers
// "<PoolOptions::name>-<index>").
//
// Recording is off unless a Trace is given, and costs one predictable branch per task then. On, each task,
// node or stage execution costs two clock reads and an append to a buffer of the recording thread (no lock, no
// shared write). Events are kept until the Trace is destroyed; at most TraceOptions::max_events of them.
//
// Thread safety: recording happens from any number of threads at once; size(), dropped(), write_json(), json()
// and save() may be called at any time, also while recording goes on (they see the events finished before the
// call, and perhaps some finished during it). pause() and resume() may be called from any thread.
//
// Lifetime: the pools and runs that record hold the Trace by shared_ptr, so it outlives them.
//
// Example (the whole program is docs/examples/trace.cpp):
//   auto trace = std::make_shared<weft::Trace>();
//   weft::Pool pool{weft::PoolOptions{.threads = 2, .trace = trace}};
//   weft::TaskGraph g;
//   const weft::Node load = g.add_node([] { /* read the input */ }, {.name = "load"});
//   g.add_edge(load, g.add_node([] { /* parse it */ }, {.name = "parse"}));
//   g.run(pool).wait();
//   trace->save("weft-trace.json");  // open it in https://ui.perfetto.dev or chrome://tracing
class Trace {
 public:
  // Throws weft::invalid_option if options.max_events is 0.
  explicit Trace(TraceOptions options = {});
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Stops recording: events that start from now on are not kept (one that started before ends and is kept).
  void pause() noexcept;
  // Starts recording again after pause(). A new Trace records from the start.
  void resume() noexcept;
  // Whether events are being recorded (not paused).
  [[nodiscard]] bool recording() const noexcept;

  // Events kept so far.
  [[nodiscard]] std::size_t size() const noexcept;
  // Events not kept because max_events were kept already.
  [[nodiscard]] std::uint64_t dropped() const noexcept;

  // Writes the events kept so far as one Chrome Trace Event JSON object: {"traceEvents": [...], ...}.
  // Timestamps are microseconds (with nanosecond decimals) since the Trace was made. Thread names come first as
  // metadata events; "otherData" holds the counts of kept and dropped events.
  void write_json(std::ostream& out) const;
  // The same as a string.
  [[nodiscard]] std::string json() const;
  // Writes the JSON to the file at `path`, replacing it. Throws std::system_error naming the path if the file
  // cannot be written.
  void save(const std::string& path) const;

 private:
  friend struct tracing::TraceAccess;
  std::unique_ptr<tracing::TraceImpl> impl_;
};

}  // namespace weft
