// The building calls a pipeline's owner shares (weft::TaskScope's one-shot pipelines, weft::StreamGraph's reused
// one): stage, fan_out, sink, sequence, priority_buffer, broadcast, split, join, join_by_key, merge and the source's
// stage, written once.
#pragma once

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

namespace weft::detail {

// "weft::TaskScope" + "::stage": the name of a public call, made at compile time so that it outlives every use.
template <std::size_t A, std::size_t B>
constexpr std::array<char, A + B - 1> call_name(const char (&owner)[A], const char (&call)[B]) noexcept {
  std::array<char, A + B - 1> name{};
  for (std::size_t i = 0; i + 1 < A; ++i) name[i] = owner[i];
  for (std::size_t i = 0; i < B; ++i) name[A - 1 + i] = call[i];
  return name;
}

// What a fan_out stage's f returns: `range` if R is an input range that can be moved, `type` its elements (else
// void).
template <class R>
struct range_element {
  static constexpr bool range = false;
  using type = void;
};
template <class R>
  requires(std::ranges::input_range<R> && std::is_move_constructible_v<R>)
struct range_element<R> {
  static constexpr bool range = true;
  using type = std::ranges::range_value_t<R>;
};

// The building calls of a pipeline, for an Owner that derives from PipelineBuilder<Owner, SinkResult> (CRTP) and
// makes it a friend. Owner gives:
// - `static constexpr char kPipelineOwner[]`: its public name, which prefixes every call's errors;
// - `static constexpr const char* kForeignStream`: what an error says of a stream of another owner, after
//   "belongs to ";
// - `void require_building(const char* who) const`: throws unless stages may be added now;
// - `bool owns(const Pipeline&) const noexcept`: whether a stream's pipeline is one of its own;
// - `std::shared_ptr<Pipeline> new_pipeline(const char* who, const StageOptions&)`: a pipeline for a new source;
// - `SinkResult sunk(const std::shared_ptr<Pipeline>&)`: what sink() returns.
// The owner's header declares the public calls with `using` and their contract comments.
template <class Owner, class SinkResult>
class PipelineBuilder {
 public:
  // A stage: f(item) -> U, or -> std::optional<U> to filter.
  template <class T, class F>
  auto stage(const Stream<T>& in, F&& f, StageOptions options = {});
  // A stage whose f returns a range; each element goes on as an item.
  template <class T, class F>
  auto fan_out(const Stream<T>& in, F&& f, StageOptions options = {});
  // The end of the pipeline (or of one branch of it): f(item) for every item, returning nothing.
  template <class T, class F>
  SinkResult sink(const Stream<T>& in, F&& f, StageOptions options = {});
  // A sequencer: each item goes on in the order of key(item), its sequence number (0, 1, 2, ...).
  template <class T, class F>
  [[nodiscard]] Stream<T> sequence(const Stream<T>& in, F&& key, StageOptions options = {});
  // A priority buffer: the items waiting go on highest first, by less(a, b).
  template <class T, class F>
  [[nodiscard]] Stream<T> priority_buffer(const Stream<T>& in, F&& less, StageOptions options = {});
  // Every item to each of N branches, each its own copy.
  template <std::size_t N, class T>
  [[nodiscard]] std::array<Stream<T>, N> broadcast(const Stream<T>& in, StageOptions options = {});
  // Each item to one of N branches, in turn.
  template <std::size_t N, class T>
  [[nodiscard]] std::array<Stream<T>, N> split(const Stream<T>& in, StageOptions options = {});
  // Each item to branch route(item).
  template <std::size_t N, class T, class F>
  [[nodiscard]] std::array<Stream<T>, N> split(const Stream<T>& in, F&& route, StageOptions options = {});
  // The n-th item of each stream make the n-th tuple.
  template <class... Ts>
  [[nodiscard]] Stream<std::tuple<Ts...>> join(const std::tuple<Stream<Ts>...>& in, StageOptions options = {});
  // Items of equal key(item) make a tuple.
  template <class... Ts, class F>
  [[nodiscard]] Stream<std::tuple<Ts...>> join_by_key(const std::tuple<Stream<Ts>...>& in, F&& key,
                                                      StageOptions options = {});
  // Every item of every stream, as they arrive.
  template <class T>
  [[nodiscard]] Stream<T> merge(std::span<const Stream<T>> in, StageOptions options = {});
  // merge() of a braced list.
  template <class T>
  [[nodiscard]] Stream<T> merge(std::initializer_list<Stream<T>> in, StageOptions options = {}) {
    return merge(std::span<const Stream<T>>(in.begin(), in.size()), std::move(options));
  }

 protected:
  PipelineBuilder() = default;
  ~PipelineBuilder() = default;
  PipelineBuilder(const PipelineBuilder&) = default;
  PipelineBuilder& operator=(const PipelineBuilder&) = default;

  // The source's stage: checks f, takes a pipeline from the owner (new_pipeline), adds the stage, then calls
  // started(pipeline, priority) (the owner's job or node that runs it) and returns the source's stream.
  template <class F, class Started>
  auto begin_pipeline(F&& f, StageOptions options, Started&& started);

 private:
  Owner& owner() noexcept { return static_cast<Owner&>(*this); }
  template <std::size_t N>
  static constexpr auto who(const char (&call)[N]) noexcept {
    return call_name(Owner::kPipelineOwner, call);
  }
  // Checks `in` (valid, of this owner; not yet consumed: Pipeline::add) and adds the stage after it.
  template <class Out, class Body, class T>
  Stream<Out> add_stage(const char* who, const Stream<T>& in, StageKind kind, std::unique_ptr<Body> body,
                        StageOptions options, std::size_t size, std::size_t align, std::uint32_t outputs = 1);
  // Adds a fork stage (broadcast, split) after `in` and returns its N branches.
  template <class T, std::size_t N, class Body>
  std::array<Stream<T>, N> add_fork(const char* who, const Stream<T>& in, std::unique_ptr<Body> body,
                                    StageOptions options, std::size_t size, std::size_t align);
  // Checks `inputs` (not empty, valid, of this owner, of one pipeline) and adds a join or merge stage after them.
  template <class Out, class Body>
  Stream<Out> add_joined(const char* who, const std::vector<StreamInput>& inputs, StageKind kind,
                         std::unique_ptr<Body> body, StageOptions options);
  template <class... Ts>
  static std::vector<StreamInput> inputs_of(const std::tuple<Stream<Ts>...>& in);
};

template <class Owner, class SinkResult>
template <class F, class Started>
auto PipelineBuilder<Owner, SinkResult>::begin_pipeline(F&& f, StageOptions options, Started&& started) {
  using D = std::decay_t<F>;
  using Traits = source_traits<D>;
  static_assert(Traits::callable,
                "weft::{TaskScope,StreamGraph}::source(f): f must take nothing (or std::size_t, the item index) and "
                "return std::optional<T> (std::nullopt ends the stream, or a StreamGraph's run of it), T a movable "
                "object type");
  if constexpr (Traits::callable) {
    using T = typename Traits::value;
    static constexpr auto name = who("::source");
    require_callable(f, name.data());
    owner().require_building(name.data());
    std::shared_ptr<Pipeline> pipeline = owner().new_pipeline(name.data(), options);
    const Priority priority = options.priority;
    (void)pipeline->add(name.data(), 0, 0, StageKind::source, std::move(options),
                        std::make_unique<SourceBody<T, D>>(std::forward<F>(f)), sizeof(T), alignof(T));
    started(pipeline, priority);
    return Stream<T>(std::move(pipeline), 0);
  } else {
    return Stream<int>{};
  }
}

template <class Owner, class SinkResult>
template <class T, class F>
auto PipelineBuilder<Owner, SinkResult>::stage(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  using U = stage_value_t<D, T>;  // void if f does not take the item
  static_assert(ItemCallable<D, T>,
                "weft::{TaskScope,StreamGraph}::stage(stream, f): f must take the stream's item (as T, T&& or "
                "const T&)");
  static_assert(!ItemCallable<D, T> || PipelineItem<U>,
                "weft::{TaskScope,StreamGraph}::stage(stream, f): f must return the next item (a movable object "
                "type), or a std::optional of it to filter items out; to consume items, use sink(stream, f)");
  if constexpr (ItemCallable<D, T> && PipelineItem<U>) {
    static constexpr auto name = who("::stage");
    require_callable(f, name.data());
    return add_stage<U>(name.data(), in, StageKind::map, std::make_unique<MapBody<T, D>>(std::forward<F>(f)),
                        std::move(options), sizeof(U), alignof(U));
  } else {
    return Stream<int>{};  // refused above: no follow-on errors
  }
}

template <class Owner, class SinkResult>
template <class T, class F>
auto PipelineBuilder<Owner, SinkResult>::fan_out(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  using R = fan_range_t<D, T>;                // void if f does not take the item
  using U = typename range_element<R>::type;  // void unless R is a movable input range
  static_assert(ItemCallable<D, T>,
                "weft::{TaskScope,StreamGraph}::fan_out(stream, f): f must take the stream's item (as T, T&& or "
                "const T&)");
  static_assert(!ItemCallable<D, T> || range_element<R>::range,
                "weft::{TaskScope,StreamGraph}::fan_out(stream, f): f must return a range (a std::vector, say) of "
                "the next items");
  static_assert(!range_element<R>::range || PipelineItem<U>,
                "weft::{TaskScope,StreamGraph}::fan_out(stream, f): the range's elements must be a movable object "
                "type");
  if constexpr (ItemCallable<D, T> && PipelineItem<U>) {
    static constexpr auto name = who("::fan_out");
    require_callable(f, name.data());
    using State = FanState<T, D>;
    return add_stage<U>(name.data(), in, StageKind::fan_out, std::make_unique<FanOutBody<T, D>>(std::forward<F>(f)),
                        std::move(options), sizeof(State) > sizeof(U) ? sizeof(State) : sizeof(U),
                        alignof(State) > alignof(U) ? alignof(State) : alignof(U));
  } else {
    return Stream<int>{};  // refused above: no follow-on errors
  }
}

template <class Owner, class SinkResult>
template <class T, class F>
SinkResult PipelineBuilder<Owner, SinkResult>::sink(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(ItemCallable<D, T>,
                "weft::{TaskScope,StreamGraph}::sink(stream, f): f must take the stream's item (as T, T&& or const "
                "T&)");
  static_assert(!ItemCallable<D, T> || std::is_void_v<item_result_t<D, T>>,
                "weft::{TaskScope,StreamGraph}::sink(stream, f): f must return nothing (void); to pass items on, "
                "use stage()");
  if constexpr (ItemCallable<D, T> && std::is_void_v<item_result_t<D, T>>) {
    static constexpr auto name = who("::sink");
    require_callable(f, name.data());
    (void)add_stage<T>(name.data(), in, StageKind::sink, std::make_unique<SinkBody<T, D>>(std::forward<F>(f)),
                       std::move(options), 1, 1);
    return owner().sunk(in.pipeline_);
  } else {
    return SinkResult();  // refused above
  }
}

template <class Owner, class SinkResult>
template <class T, class F>
Stream<T> PipelineBuilder<Owner, SinkResult>::sequence(const Stream<T>& in, F&& key, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(SequenceKey<D, T>,
                "weft::{TaskScope,StreamGraph}::sequence(stream, key): key must take the item as const T& and return "
                "its sequence number (an integer: 0, 1, 2, ...)");
  if constexpr (SequenceKey<D, T>) {
    static constexpr auto name = who("::sequence");
    require_callable(key, name.data());
    auto body = std::make_unique<SequenceBody<T, D>>(std::forward<F>(key));
    SequenceBody<T, D>* named = body.get();
    const Stream<T> out = add_stage<T>(name.data(), in, StageKind::sequence, std::move(body), std::move(options),
                                       sizeof(T), alignof(T));
    named->name(name.data(), out.pipeline_->stage_name(out.stage_), out.pipeline_->name());
    return out;
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <class T, class F>
Stream<T> PipelineBuilder<Owner, SinkResult>::priority_buffer(const Stream<T>& in, F&& less, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(PriorityLess<D, T>,
                "weft::{TaskScope,StreamGraph}::priority_buffer(stream, less): less must take two items as const T& "
                "and return whether the first ranks below the second (a bool), as std::priority_queue's comparison");
  if constexpr (PriorityLess<D, T>) {
    static constexpr auto name = who("::priority_buffer");
    require_callable(less, name.data());
    return add_stage<T>(name.data(), in, StageKind::priority,
                        std::make_unique<PriorityBody<T, D>>(std::forward<F>(less)), std::move(options), sizeof(T),
                        alignof(T));
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <std::size_t N, class T>
std::array<Stream<T>, N> PipelineBuilder<Owner, SinkResult>::broadcast(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::{TaskScope,StreamGraph}::broadcast<N>(stream): N must be 1 .. weft::kMaxBranches");
  static_assert(std::is_copy_constructible_v<T>,
                "weft::{TaskScope,StreamGraph}::broadcast<N>(stream): every branch gets its own copy of each item, so "
                "the item type must be copyable (share large or move-only data through a std::shared_ptr<const X>)");
  if constexpr (std::is_copy_constructible_v<T> && N >= 1 && N <= kMaxBranches) {
    static constexpr auto name = who("::broadcast");
    using State = BroadcastState<T>;
    return add_fork<T, N>(name.data(), in, std::make_unique<BroadcastBody<T, N>>(), std::move(options), sizeof(State),
                          alignof(State));
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <std::size_t N, class T>
std::array<Stream<T>, N> PipelineBuilder<Owner, SinkResult>::split(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::{TaskScope,StreamGraph}::split<N>(stream): N must be 1 .. weft::kMaxBranches");
  if constexpr (N >= 1 && N <= kMaxBranches) {
    static constexpr auto name = who("::split");
    using Body = SplitBody<T, N, RoundRobin>;
    using State = SplitState<T>;
    return add_fork<T, N>(name.data(), in, std::make_unique<Body>(RoundRobin{}), std::move(options), sizeof(State),
                          alignof(State));
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <std::size_t N, class T, class F>
std::array<Stream<T>, N> PipelineBuilder<Owner, SinkResult>::split(const Stream<T>& in, F&& route,
                                                                   StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::{TaskScope,StreamGraph}::split<N>(stream, route): N must be 1 .. weft::kMaxBranches");
  static_assert(SplitRoute<D, T>,
                "weft::{TaskScope,StreamGraph}::split<N>(stream, route): route must take the item as const T& and "
                "return the index (an integer, 0 .. N - 1) of the branch it goes to");
  if constexpr (SplitRoute<D, T> && N >= 1 && N <= kMaxBranches) {
    static constexpr auto name = who("::split");
    require_callable(route, name.data());
    using Body = SplitBody<T, N, D>;
    using State = SplitState<T>;
    return add_fork<T, N>(name.data(), in, std::make_unique<Body>(std::forward<F>(route)), std::move(options),
                          sizeof(State), alignof(State));
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <class... Ts>
Stream<std::tuple<Ts...>> PipelineBuilder<Owner, SinkResult>::join(const std::tuple<Stream<Ts>...>& in,
                                                                   StageOptions options) {
  static_assert(sizeof...(Ts) >= 2, "weft::{TaskScope,StreamGraph}::join(streams): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::{TaskScope,StreamGraph}::join(streams): the items must be nothrow move constructible (a join "
                "moves them into the tuple)");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...)) {
    static constexpr auto name = who("::join");
    return add_joined<std::tuple<Ts...>>(name.data(), inputs_of(in), StageKind::join,
                                         std::make_unique<PositionJoinBody<Ts...>>(), std::move(options));
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <class... Ts, class F>
Stream<std::tuple<Ts...>> PipelineBuilder<Owner, SinkResult>::join_by_key(const std::tuple<Stream<Ts>...>& in, F&& key,
                                                                          StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(sizeof...(Ts) >= 2,
                "weft::{TaskScope,StreamGraph}::join_by_key(streams, key): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::{TaskScope,StreamGraph}::join_by_key(streams, key): the items must be nothrow move "
                "constructible (a join moves them into the tuple)");
  static_assert(JoinKey<D, Ts...>,
                "weft::{TaskScope,StreamGraph}::join_by_key(streams, key): key must take an item of every stream (as "
                "const T&) and return keys of one type");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...) && JoinKey<D, Ts...>) {
    using K = join_key_t<D, Ts...>;
    static_assert(HashableKey<K>,
                  "weft::{TaskScope,StreamGraph}::join_by_key(streams, key): the key type must be default "
                  "constructible, movable, equality comparable and hashable by std::hash");
    if constexpr (HashableKey<K>) {
      static constexpr auto name = who("::join_by_key");
      require_callable(key, name.data());
      return add_joined<std::tuple<Ts...>>(name.data(), inputs_of(in), StageKind::join,
                                           std::make_unique<KeyJoinBody<K, D, Ts...>>(std::forward<F>(key)),
                                           std::move(options));
    } else {
      return {};
    }
  } else {
    return {};
  }
}

template <class Owner, class SinkResult>
template <class T>
Stream<T> PipelineBuilder<Owner, SinkResult>::merge(std::span<const Stream<T>> in, StageOptions options) {
  static constexpr auto name = who("::merge");
  std::vector<StreamInput> inputs;
  inputs.reserve(in.size());
  for (const Stream<T>& stream : in) inputs.push_back(StreamInput{&stream.pipeline_, stream.stage_, stream.port_});
  return add_joined<T>(name.data(), inputs, StageKind::merge, std::make_unique<MergeBody<T>>(), std::move(options));
}

template <class Owner, class SinkResult>
template <class... Ts>
std::vector<StreamInput> PipelineBuilder<Owner, SinkResult>::inputs_of(const std::tuple<Stream<Ts>...>& in) {
  return std::apply(
      [](const auto&... stream) {
        return std::vector<StreamInput>{StreamInput{&stream.pipeline_, stream.stage_, stream.port_}...};
      },
      in);
}

template <class Owner, class SinkResult>
template <class Out, class Body, class T>
Stream<Out> PipelineBuilder<Owner, SinkResult>::add_stage(const char* who, const Stream<T>& in, StageKind kind,
                                                          std::unique_ptr<Body> body, StageOptions options,
                                                          std::size_t size, std::size_t align, std::uint32_t outputs) {
  owner().require_building(who);
  if (!in.valid()) {
    std::string message = who;
    message += ": the stream is empty (a default-constructed weft::Stream)";
    if (!options.name.empty()) message += ", given to stage '" + options.name + "'";
    throw invalid_graph(message);
  }
  if (!owner().owns(*in.pipeline_)) {
    throw invalid_graph(std::string(who) + ": the stream of stage '" + in.pipeline_->stage_name(in.stage_) +
                        "' of pipeline '" + in.pipeline_->name() + "' belongs to " + Owner::kForeignStream);
  }
  const std::uint32_t index = in.pipeline_->add(who, in.stage_, in.port_, kind, std::move(options), std::move(body),
                                                size, align, outputs);
  return Stream<Out>(in.pipeline_, index);
}

template <class Owner, class SinkResult>
template <class T, std::size_t N, class Body>
std::array<Stream<T>, N> PipelineBuilder<Owner, SinkResult>::add_fork(const char* who, const Stream<T>& in,
                                                                      std::unique_ptr<Body> body, StageOptions options,
                                                                      std::size_t size, std::size_t align) {
  Body* named = body.get();
  const Stream<T> forked = add_stage<T>(who, in, StageKind::fork, std::move(body), std::move(options),
                                        size > sizeof(T) ? size : sizeof(T), align > alignof(T) ? align : alignof(T),
                                        static_cast<std::uint32_t>(N));
  if constexpr (requires { named->name(who, std::string(), std::string()); }) {
    named->name(who, forked.pipeline_->stage_name(forked.stage_), forked.pipeline_->name());
  }
  std::array<Stream<T>, N> branches;
  for (std::size_t j = 0; j < N; ++j) {
    branches[j] = Stream<T>(forked.pipeline_, forked.stage_, static_cast<std::uint32_t>(j));
  }
  return branches;
}

template <class Owner, class SinkResult>
template <class Out, class Body>
Stream<Out> PipelineBuilder<Owner, SinkResult>::add_joined(const char* who, const std::vector<StreamInput>& inputs,
                                                           StageKind kind, std::unique_ptr<Body> body,
                                                           StageOptions options) {
  owner().require_building(who);
  if (inputs.empty()) {
    throw invalid_graph(std::string(who) + ": no streams given (an empty merge has nothing to take items from)");
  }
  const std::shared_ptr<Pipeline>* first = nullptr;
  std::vector<Pipeline::Output> outputs;
  outputs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::shared_ptr<Pipeline>& pipeline = *inputs[i].pipeline;
    if (pipeline == nullptr) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) +
                          " is empty (a default-constructed weft::Stream)" +
                          (options.name.empty() ? std::string() : ", given to stage '" + options.name + "'"));
    }
    if (!owner().owns(*pipeline)) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) + " (of stage '" +
                          pipeline->stage_name(inputs[i].stage) + "' of pipeline '" + pipeline->name() +
                          "') belongs to " + Owner::kForeignStream);
    }
    if (first == nullptr) {
      first = &pipeline;
    } else if (pipeline != *first) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) + " comes from pipeline '" +
                          pipeline->name() + "', stream 0 from pipeline '" + (*first)->name() +
                          "': the streams joined or merged must come from one source (fork its stream with "
                          "broadcast or split)");
    }
    outputs.push_back(Pipeline::Output{inputs[i].stage, inputs[i].port});
  }
  const std::shared_ptr<Pipeline> pipeline = *first;
  const std::uint32_t index = pipeline->add_join(who, outputs, kind, std::move(options), std::move(body), sizeof(Out),
                                                 alignof(Out));
  return Stream<Out>(pipeline, index);
}

}  // namespace weft::detail
