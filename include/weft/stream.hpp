// weft::Stream and weft::StageOptions: the typed streams of a TaskScope pipeline (source, stage, fan_out, sink).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "weft/node_options.hpp"
#include "weft/pool_options.hpp"

namespace weft {

class TaskScope;
class StreamGraph;

namespace detail {
class Pipeline;  // include/weft/detail/pipeline.hpp: the stages of one pipeline, built by a TaskScope
template <class Owner, class SinkResult>
class PipelineBuilder;  // include/weft/detail/pipeline_builder.hpp: the building calls of TaskScope and StreamGraph
}  // namespace detail

// In which order a pipeline stage takes its items.
enum class Order : std::uint8_t {
  Any,    // as they arrive: a parallel stage before it may have reordered them
  Input,  // in the order the source produced them (or, after a fan_out stage, the order it emitted them), like
          // oneTBB's serial_in_order filter. An item filtered out or dropped before the stage leaves no gap
          // that stalls it.
};

// The inbox of a stage when StageOptions::capacity is not given.
inline constexpr std::size_t kDefaultStageCapacity = 16;
// The largest StageOptions::concurrency and capacity: a pipeline keeps one item slot per unit of them.
inline constexpr std::size_t kMaxStageBound = std::size_t{1} << 20;

// The most branches of one fork (TaskScope::broadcast<N>, split<N>).
inline constexpr std::size_t kMaxBranches = 64;

// Options of one pipeline stage (TaskScope::source, stage, fan_out, sink). Every member has a default, so
// designated initializers naming any subset compile:
//   scope.stage(lines, parse, {.concurrency = 4, .capacity = 64});
// Bad values (concurrency 0 or above kMaxStageBound, capacity 0 or above kMaxStageBound, a source with a
// concurrency other than 1, an enumerator out of range) throw weft::invalid_option naming the call, the stage,
// the option and the value. A source's capacity, overflow and order have no use and are otherwise ignored.
//
// Memory: the items alive in a pipeline at once (produced by the source and not yet consumed by the sink) never
// exceed the sum, over its stages, of capacity + concurrency (a concurrency of kUnlimited counts as the pool's
// workers + 1; a fan_out stage, or a fork (broadcast, split), starts a new sum for the items it makes, over the
// stages of every branch; a join or merge adds its share to each input's sum). The source waits for room (without
// holding a thread) when that many are alive. Under Overflow::Block an item that finds an Order::Any stage's
// inbox full parks holding back its producer (the source, or the stage before) until it enters the inbox; one
// bound for an Order::Input stage, or a fan_out stage's element, waits beyond the inbox instead, within the
// sum. StageOptions::live_tokens, on the source, caps it further with one number for the whole pipeline.
struct StageOptions {
  // Shown in errors and statistics; default "stage <index>" (the source: "source"). The source's name, or
  // "pipeline <job index>", also names the pipeline and its job.
  std::string name{};
  // At most this many items in the stage's body at once (>= 1; kUnlimited: no limit of its own). The source is
  // always serial: 1.
  unsigned concurrency = 1;
  // Items waiting to enter the stage beyond which `overflow` acts (>= 1; see Memory above).
  std::size_t capacity = kDefaultStageCapacity;
  // What an item that finds the inbox full does: Block waits, holding back its producer (see Memory above; no
  // thread is held); Drop drops it and counts it (RunStats::dropped and dropped_by_stage); Fail cancels the
  // run, whose wait() throws weft::inbox_full naming the stage.
  Overflow overflow = Overflow::Block;
  // The order the stage takes its items in (see weft::Order).
  Order order = Order::Any;
  // The priority of the pool tasks that start at this stage (see weft::Priority); the source's is also the
  // pipeline job's.
  Priority priority = Priority::Normal;
  // The source only: at most this many items alive in the pipeline at once, any number >= 1 (oneTBB's
  // max_number_of_live_tokens: `parallel_pipeline(8, ...)` is `.live_tokens = 8`). An item holds its token from
  // the source's call that makes it until it leaves the sink, is filtered out or dropped (every Overflow; the
  // token of one filtered or dropped comes back once its place has passed the Order::Input stages after it); an
  // exception or a cancel stops the pipeline and destroys the items alive, tokens and all. The stages' own bound
  // (see Memory above) still holds: the pipeline's is the smaller of the two. A fan_out stage's elements are new
  // items with tokens of their own: the source's items are at most live_tokens, and so are each fan_out stage's.
  // kUnbounded (the default): no limit but the stages'. 0, or a value on a stage other than the source, throws
  // weft::invalid_option naming the option and the value.
  std::size_t live_tokens = kUnbounded;
};

// A typed stream of items of type T flowing out of one pipeline stage (or out of one branch of a fork:
// TaskScope::broadcast, split), to be consumed by exactly one later stage (TaskScope::stage, fan_out, sink,
// broadcast or split). A handle: copies name the same stream. Valid only in the TaskScope (or weft::StreamGraph)
// that made it.
//
// Example:
//   weft::Stream<std::string> lines = scope.source([&]() -> std::optional<std::string> { return next(in); });
//   weft::Stream<std::size_t> sizes = scope.stage(lines, [](std::string s) { return s.size(); });
//   weft::Job<void> done = scope.sink(sizes, [&](std::size_t n) { total += n; });
template <class T>
class Stream {
 public:
  using value_type = T;  // the type of the items flowing through the stream

  // An empty handle: passing it to a stage throws weft::invalid_graph.
  Stream() noexcept = default;

  // True unless default-constructed.
  [[nodiscard]] bool valid() const noexcept { return pipeline_ != nullptr; }

 private:
  template <class Owner, class SinkResult>
  friend class detail::PipelineBuilder;
  Stream(std::shared_ptr<detail::Pipeline> pipeline, std::uint32_t stage, std::uint32_t port = 0) noexcept
      : pipeline_(std::move(pipeline)), stage_(stage), port_(port) {}

  std::shared_ptr<detail::Pipeline> pipeline_;
  std::uint32_t stage_ = 0;  // the stage whose output this stream is
  std::uint32_t port_ = 0;   // which of its outputs: a fork stage's branch; else 0
};

}  // namespace weft
