// weft::StreamGraph: a pipeline (a stream graph: source, stages, forks, joins, sinks) built once and run many
// times, each run on fresh input, reusing the layout and the item slots of the runs before it.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/pipeline.hpp"
#include "weft/detail/pipeline_join.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/stream.hpp"
#include "weft/task_graph.hpp"

namespace weft {

class Pool;

// One pipeline, built once and run again and again (Taskflow's tf::Pipeline run through `composed_of`, oneTBB's
// flow::graph reused with wait_for_all): the same calls as a TaskScope's pipeline (source, stage, fan_out, sink,
// broadcast, split, join, join_by_key, merge; see docs/pipelines.md), then run(pool) as often as needed. The
// first run lays the pipeline out (its stages' states, budgets, rings) and allocates item slots as it needs
// them; every later run resets that state instead of rebuilding it, so a warm run allocates nothing but its
// weft::Run handle's state.
//
// Contract:
// - Fresh input each run: the source's f is called anew by every run, serially, until it returns std::nullopt.
//   It may take the item's index in the run (std::size_t: 0, 1, ... from each run's start), so a source over a
//   per-run batch is  [&](std::size_t i) -> std::optional<T> { if (i == batch.size()) return {}; return batch[i]; }
//   and the program swaps `batch` between runs (not while one is in flight).
// - Each run has the guarantees of a TaskScope pipeline: every item produced is taken through the stages exactly
//   once (or filtered or dropped), Order::Input stages see the order promised, the items alive never exceed the
//   documented bound, and every item left by a stopped run is destroyed once, before the run is over.
// - One run at a time: run() while a run is in flight queues the new run behind it, as TaskGraph::run does; the
//   queued run starts (and calls the source) once the one before it has ended. run() from inside a stage of the
//   graph's own run throws weft::graph_busy.
// - A stage's exception, an Overflow::Fail stage or Run::cancel() stop that run as they stop a TaskScope
//   pipeline: Run::wait() rethrows the exception (or returns RunStatus::Cancelled), every item alive is
//   destroyed, and the next run starts afresh (a join's waiting items, a split's turn and every count reset).
// - RunStats::dropped and dropped_by_stage count the items the run's Overflow::Drop stages dropped.
// - Bad input is refused with a clear error: run() or compose_into() on a graph with no source or with a stream
//   that feeds nothing (weft::invalid_graph, naming the stage); a second source, a stream of another graph or
//   scope, an empty stream, a stream consumed twice (invalid_graph); bad options (weft::invalid_option); any
//   change while a run is in flight or queued (weft::graph_busy). A callable of the wrong shape does not compile.
// - The destructor waits for the run in flight and the queued runs. Not copyable, not movable (streams refer to
//   it).
//
// Example:
//   weft::StreamGraph pipe;
//   std::vector<int> batch;
//   auto items = pipe.source([&](std::size_t i) -> std::optional<int> {
//     if (i == batch.size()) return std::nullopt;
//     return batch[i];
//   });
//   auto squares = pipe.stage(items, [](int x) { return x * x; }, {.concurrency = weft::kUnlimited});
//   long long sum = 0;
//   pipe.sink(squares, [&](int s) { sum += s; });
//   for (int round = 0; round < 3; ++round) {
//     batch = {1, 2, 3};
//     sum = 0;
//     pipe.run(pool).wait();  // sum == 14, every round
//   }
class StreamGraph {
 public:
  // An empty graph: begin it with source().
  StreamGraph();
  // Waits for the run in flight and every queued run (they still run), then frees the graph.
  ~StreamGraph();
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;
  StreamGraph(StreamGraph&&) = delete;
  StreamGraph& operator=(StreamGraph&&) = delete;

  // The start of the pipeline, once per graph: f() -> std::optional<T>, or f(std::size_t index) with the item's
  // index in the run; called serially by each run until it returns std::nullopt. options as TaskScope::source's
  // (name, priority, live_tokens); the source's name is also the pipeline's (default "pipeline"). Throws
  // invalid_graph if the graph has a source already.
  template <class F>
  auto source(F&& f, StageOptions options = {});
  // A stage: f(item) -> U, or -> std::optional<U> to filter (as TaskScope::stage).
  template <class T, class F>
  auto stage(const Stream<T>& in, F&& f, StageOptions options = {});
  // A stage whose f returns a range; each element goes on as an item (as TaskScope::fan_out).
  template <class T, class F>
  auto fan_out(const Stream<T>& in, F&& f, StageOptions options = {});
  // The end of the pipeline (or of one branch of it): f(item) for every item, returning nothing. A run is over
  // when the last item has left every sink.
  template <class T, class F>
  void sink(const Stream<T>& in, F&& f, StageOptions options = {});
  // Every item to each of N branches, each its own copy (as TaskScope::broadcast).
  template <std::size_t N, class T>
  std::array<Stream<T>, N> broadcast(const Stream<T>& in, StageOptions options = {});
  // Each item to one of N branches, in turn from each run's start (as TaskScope::split).
  template <std::size_t N, class T>
  std::array<Stream<T>, N> split(const Stream<T>& in, StageOptions options = {});
  // Each item to branch route(item) (as TaskScope::split with a route).
  template <std::size_t N, class T, class F>
  std::array<Stream<T>, N> split(const Stream<T>& in, F&& route, StageOptions options = {});
  // The n-th item of each stream make the n-th tuple (as TaskScope::join).
  template <class... Ts>
  Stream<std::tuple<Ts...>> join(const std::tuple<Stream<Ts>...>& in, StageOptions options = {});
  // Items of equal key(item) make a tuple (as TaskScope::join_by_key).
  template <class... Ts, class F>
  Stream<std::tuple<Ts...>> join_by_key(const std::tuple<Stream<Ts>...>& in, F&& key, StageOptions options = {});
  // Every item of every stream, as they arrive (as TaskScope::merge).
  template <class T>
  Stream<T> merge(std::span<const Stream<T>> in, StageOptions options = {});
  // merge() of a braced list:  pipe.merge({a, b}).
  template <class T>
  Stream<T> merge(std::initializer_list<Stream<T>> in, StageOptions options = {}) {
    return merge(std::span<const Stream<T>>(in.begin(), in.size()), std::move(options));
  }

  // Starts a run on `pool` (or queues it behind the run in flight): the source is called anew. Throws
  // invalid_graph for a graph with no source or a stream that feeds nothing, pool_closed for a shut-down pool,
  // graph_busy when called from inside the graph's own run.
  Run run(Pool& pool);
  // The same with an error policy, a trace, an on_done callback (see RunOptions; outcomes have one node, the
  // pipeline).
  Run run(Pool& pool, RunOptions options);
  // Adds the pipeline to `outer` as one module node (Taskflow's `taskflow.composed_of(pipeline)`): each run of
  // `outer` runs the pipeline once, when the node's predecessors are done, on the same pool. The graph must
  // outlive every run of `outer`. A run of the pipeline in flight when the node starts fails the node with
  // graph_busy (as TaskGraph::add_graph). Throws invalid_graph as run() does.
  // Example: weft::Node stream = pipe.compose_into(outer, {.name = "pipeline"}); outer.add_edge(load, stream);
  Node compose_into(TaskGraph& outer, NodeOptions options = {});
  // True while a run is in flight or queued.
  [[nodiscard]] bool running() const noexcept { return graph_.running(); }
  // The pipeline's name (its source's StageOptions::name, else "pipeline"); empty before source().
  [[nodiscard]] std::string name() const;

 private:
  // Throws graph_busy, naming `who`, while a run is in flight or queued.
  void require_idle(const char* who) const;
  // Throws invalid_graph unless the pipeline has a source and every stream feeds a stage.
  void require_complete(const char* who) const;
  // Adds the TaskGraph node that runs the pipeline.
  void add_node(Priority priority);
  // Checks that `in` is a stream of this graph (valid, of this pipeline), naming who and the stage's name.
  template <class T>
  void require_own(const char* who, const Stream<T>& in, const std::string& stage) const;
  template <class Out, class Body, class T>
  Stream<Out> add_stage(const char* who, const Stream<T>& in, detail::StageKind kind, std::unique_ptr<Body> body,
                        StageOptions options, std::size_t size, std::size_t align, std::uint32_t outputs = 1);
  template <class T, std::size_t N, class Body>
  std::array<Stream<T>, N> add_fork(const char* who, const Stream<T>& in, std::unique_ptr<Body> body,
                                    StageOptions options, std::size_t size, std::size_t align);
  template <class Out, class Body>
  Stream<Out> add_joined(const char* who, const std::vector<detail::StreamInput>& inputs, detail::StageKind kind,
                         std::unique_ptr<Body> body, StageOptions options);

  TaskGraph graph_;                             // one node: the pipeline
  std::shared_ptr<detail::Pipeline> pipeline_;  // null before source()
};

template <class F>
auto StreamGraph::source(F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  using Traits = detail::source_traits<D>;
  static_assert(Traits::callable,
                "weft::StreamGraph::source(f): f must take nothing (or std::size_t, the item index) and return "
                "std::optional<T> (std::nullopt ends the run's stream), T a movable object type");
  if constexpr (Traits::callable) {
    using T = typename Traits::value;
    constexpr const char* who = "weft::StreamGraph::source";
    detail::require_callable(f, who);
    require_idle(who);
    if (pipeline_ != nullptr) {
      throw invalid_graph(std::string(who) + ": the graph has a source already (pipeline '" + pipeline_->name() +
                          "'): a StreamGraph is one pipeline, with one source (fork its stream with broadcast or "
                          "split to feed several branches)");
    }
    std::string name = options.name.empty() ? std::string("pipeline") : options.name;
    const Priority priority = options.priority;
    auto pipeline = std::make_shared<detail::Pipeline>(this, name, "weft::StreamGraph", true);
    (void)pipeline->add(who, 0, 0, detail::StageKind::source, std::move(options),
                        std::make_unique<detail::SourceBody<T, D>>(std::forward<F>(f)), sizeof(T), alignof(T));
    pipeline_ = std::move(pipeline);
    try {
      add_node(priority);
    } catch (...) {
      pipeline_.reset();
      throw;
    }
    return Stream<T>(pipeline_, 0);
  } else {
    return Stream<int>{};
  }
}

template <class T, class F>
auto StreamGraph::stage(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::StreamGraph::stage(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    using U = detail::stage_value_t<D, T>;
    static_assert(detail::PipelineItem<U>,
                  "weft::StreamGraph::stage(stream, f): f must return the next item (a movable object type), or a "
                  "std::optional of it to filter items out; to consume items, use sink(stream, f)");
    if constexpr (detail::PipelineItem<U>) {
      constexpr const char* who = "weft::StreamGraph::stage";
      detail::require_callable(f, who);
      return add_stage<U>(who, in, detail::StageKind::map, std::make_unique<detail::MapBody<T, D>>(std::forward<F>(f)),
                          std::move(options), sizeof(U), alignof(U));
    } else {
      return Stream<int>{};
    }
  } else {
    return Stream<int>{};
  }
}

template <class T, class F>
auto StreamGraph::fan_out(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::StreamGraph::fan_out(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    using R = detail::fan_range_t<D, T>;
    static_assert(std::ranges::input_range<R> && std::is_move_constructible_v<R>,
                  "weft::StreamGraph::fan_out(stream, f): f must return a range (a std::vector, say) of the next "
                  "items");
    if constexpr (std::ranges::input_range<R> && std::is_move_constructible_v<R>) {
      using U = std::ranges::range_value_t<R>;
      static_assert(detail::PipelineItem<U>,
                    "weft::StreamGraph::fan_out(stream, f): the range's elements must be a movable object type");
      if constexpr (detail::PipelineItem<U>) {
        constexpr const char* who = "weft::StreamGraph::fan_out";
        detail::require_callable(f, who);
        using State = detail::FanState<T, D>;
        return add_stage<U>(who, in, detail::StageKind::fan_out,
                            std::make_unique<detail::FanOutBody<T, D>>(std::forward<F>(f)), std::move(options),
                            sizeof(State) > sizeof(U) ? sizeof(State) : sizeof(U),
                            alignof(State) > alignof(U) ? alignof(State) : alignof(U));
      } else {
        return Stream<int>{};
      }
    } else {
      return Stream<int>{};
    }
  } else {
    return Stream<int>{};
  }
}

template <class T, class F>
void StreamGraph::sink(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::StreamGraph::sink(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    static_assert(std::is_void_v<detail::item_result_t<D, T>>,
                  "weft::StreamGraph::sink(stream, f): f must return nothing (void); to pass items on, use stage()");
    constexpr const char* who = "weft::StreamGraph::sink";
    detail::require_callable(f, who);
    (void)add_stage<T>(who, in, detail::StageKind::sink, std::make_unique<detail::SinkBody<T, D>>(std::forward<F>(f)),
                       std::move(options), 1, 1);
  }
}

template <std::size_t N, class T>
std::array<Stream<T>, N> StreamGraph::broadcast(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::StreamGraph::broadcast<N>(stream): N must be 1 .. weft::kMaxBranches");
  static_assert(std::is_copy_constructible_v<T>,
                "weft::StreamGraph::broadcast<N>(stream): every branch gets its own copy of each item, so the item "
                "type must be copyable (share large or move-only data through a std::shared_ptr<const X>)");
  if constexpr (std::is_copy_constructible_v<T> && N >= 1 && N <= kMaxBranches) {
    using State = detail::BroadcastState<T>;
    return add_fork<T, N>("weft::StreamGraph::broadcast", in, std::make_unique<detail::BroadcastBody<T, N>>(),
                          std::move(options), sizeof(State), alignof(State));
  } else {
    return {};
  }
}

template <std::size_t N, class T>
std::array<Stream<T>, N> StreamGraph::split(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches, "weft::StreamGraph::split<N>(stream): N must be 1 .. weft::kMaxBranches");
  if constexpr (N >= 1 && N <= kMaxBranches) {
    using Body = detail::SplitBody<T, N, detail::RoundRobin>;
    using State = detail::SplitState<T>;
    return add_fork<T, N>("weft::StreamGraph::split", in, std::make_unique<Body>(detail::RoundRobin{}),
                          std::move(options), sizeof(State), alignof(State));
  } else {
    return {};
  }
}

template <std::size_t N, class T, class F>
std::array<Stream<T>, N> StreamGraph::split(const Stream<T>& in, F&& route, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::StreamGraph::split<N>(stream, route): N must be 1 .. weft::kMaxBranches");
  static_assert(detail::SplitRoute<D, T>,
                "weft::StreamGraph::split<N>(stream, route): route must take the item as const T& and return the "
                "index (an integer, 0 .. N - 1) of the branch it goes to");
  if constexpr (detail::SplitRoute<D, T> && N >= 1 && N <= kMaxBranches) {
    constexpr const char* who = "weft::StreamGraph::split";
    detail::require_callable(route, who);
    using Body = detail::SplitBody<T, N, D>;
    using State = detail::SplitState<T>;
    return add_fork<T, N>(who, in, std::make_unique<Body>(std::forward<F>(route)), std::move(options), sizeof(State),
                          alignof(State));
  } else {
    return {};
  }
}

template <class... Ts>
Stream<std::tuple<Ts...>> StreamGraph::join(const std::tuple<Stream<Ts>...>& in, StageOptions options) {
  static_assert(sizeof...(Ts) >= 2, "weft::StreamGraph::join(streams): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::StreamGraph::join(streams): the items must be nothrow move constructible (a join moves them "
                "into the tuple)");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...)) {
    std::vector<detail::StreamInput> inputs = std::apply(
        [](const auto&... s) {
          return std::vector<detail::StreamInput>{detail::StreamInput{&s.pipeline_, s.stage_, s.port_}...};
        },
        in);
    return add_joined<std::tuple<Ts...>>("weft::StreamGraph::join", inputs, detail::StageKind::join,
                                         std::make_unique<detail::PositionJoinBody<Ts...>>(), std::move(options));
  } else {
    return {};
  }
}

template <class... Ts, class F>
Stream<std::tuple<Ts...>> StreamGraph::join_by_key(const std::tuple<Stream<Ts>...>& in, F&& key, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(sizeof...(Ts) >= 2, "weft::StreamGraph::join_by_key(streams, key): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::StreamGraph::join_by_key(streams, key): the items must be nothrow move constructible (a join "
                "moves them into the tuple)");
  static_assert(detail::JoinKey<D, Ts...>,
                "weft::StreamGraph::join_by_key(streams, key): key must take an item of every stream (as const T&) "
                "and return keys of one type");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...) && detail::JoinKey<D, Ts...>) {
    using K = detail::join_key_t<D, Ts...>;
    static_assert(detail::HashableKey<K>,
                  "weft::StreamGraph::join_by_key(streams, key): the key type must be default constructible, "
                  "movable, equality comparable and hashable by std::hash");
    if constexpr (detail::HashableKey<K>) {
      constexpr const char* who = "weft::StreamGraph::join_by_key";
      detail::require_callable(key, who);
      std::vector<detail::StreamInput> inputs = std::apply(
          [](const auto&... s) {
            return std::vector<detail::StreamInput>{detail::StreamInput{&s.pipeline_, s.stage_, s.port_}...};
          },
          in);
      return add_joined<std::tuple<Ts...>>(who, inputs, detail::StageKind::join,
                                           std::make_unique<detail::KeyJoinBody<K, D, Ts...>>(std::forward<F>(key)),
                                           std::move(options));
    } else {
      return {};
    }
  } else {
    return {};
  }
}

template <class T>
Stream<T> StreamGraph::merge(std::span<const Stream<T>> in, StageOptions options) {
  std::vector<detail::StreamInput> inputs;
  inputs.reserve(in.size());
  for (const Stream<T>& s : in) inputs.push_back(detail::StreamInput{&s.pipeline_, s.stage_, s.port_});
  return add_joined<T>("weft::StreamGraph::merge", inputs, detail::StageKind::merge,
                       std::make_unique<detail::MergeBody<T>>(), std::move(options));
}

template <class T>
void StreamGraph::require_own(const char* who, const Stream<T>& in, const std::string& stage) const {
  if (!in.valid()) {
    std::string message = who;
    message += ": the stream is empty (a default-constructed weft::Stream)";
    if (!stage.empty()) message += ", given to stage '" + stage + "'";
    throw invalid_graph(message);
  }
  if (in.pipeline_ != pipeline_) {
    throw invalid_graph(std::string(who) + ": the stream of stage '" + in.pipeline_->stage_name(in.stage_) +
                        "' of pipeline '" + in.pipeline_->name() +
                        "' belongs to another StreamGraph or TaskScope: a stage may only consume streams of its own "
                        "graph");
  }
}

template <class Out, class Body, class T>
Stream<Out> StreamGraph::add_stage(const char* who, const Stream<T>& in, detail::StageKind kind,
                                   std::unique_ptr<Body> body, StageOptions options, std::size_t size,
                                   std::size_t align, std::uint32_t outputs) {
  require_idle(who);
  require_own(who, in, options.name);
  const std::uint32_t index = pipeline_->add(who, in.stage_, in.port_, kind, std::move(options), std::move(body), size,
                                             align, outputs);
  return Stream<Out>(pipeline_, index);
}

template <class T, std::size_t N, class Body>
std::array<Stream<T>, N> StreamGraph::add_fork(const char* who, const Stream<T>& in, std::unique_ptr<Body> body,
                                               StageOptions options, std::size_t size, std::size_t align) {
  Body* named = body.get();
  const Stream<T> forked = add_stage<T>(who, in, detail::StageKind::fork, std::move(body), std::move(options),
                                        size > sizeof(T) ? size : sizeof(T), align > alignof(T) ? align : alignof(T),
                                        static_cast<std::uint32_t>(N));
  if constexpr (requires { named->name(std::string(), std::string()); }) {
    named->name(pipeline_->stage_name(forked.stage_), pipeline_->name());
  }
  std::array<Stream<T>, N> branches;
  for (std::size_t j = 0; j < N; ++j) branches[j] = Stream<T>(pipeline_, forked.stage_, static_cast<std::uint32_t>(j));
  return branches;
}

template <class Out, class Body>
Stream<Out> StreamGraph::add_joined(const char* who, const std::vector<detail::StreamInput>& inputs,
                                    detail::StageKind kind, std::unique_ptr<Body> body, StageOptions options) {
  require_idle(who);
  if (inputs.empty()) {
    throw invalid_graph(std::string(who) + ": no streams given (an empty merge has nothing to take items from)");
  }
  std::vector<detail::Pipeline::Output> outputs;
  outputs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::shared_ptr<detail::Pipeline>& pipeline = *inputs[i].pipeline;
    if (pipeline == nullptr) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) +
                          " is empty (a default-constructed weft::Stream)");
    }
    if (pipeline != pipeline_) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) + " (of stage '" +
                          pipeline->stage_name(inputs[i].stage) + "' of pipeline '" + pipeline->name() +
                          "') belongs to another StreamGraph or TaskScope: a stage may only consume streams of its "
                          "own graph");
    }
    outputs.push_back(detail::Pipeline::Output{inputs[i].stage, inputs[i].port});
  }
  const std::uint32_t index = pipeline_->add_join(who, outputs, kind, std::move(options), std::move(body), sizeof(Out),
                                                  alignof(Out));
  return Stream<Out>(pipeline_, index);
}

}  // namespace weft
