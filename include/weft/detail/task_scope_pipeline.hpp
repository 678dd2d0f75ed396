// The pipeline members of weft::TaskScope (source, stage, fan_out, sink), included at the end of
// weft/task_scope.hpp.
#pragma once

#include <array>
#include <cstddef>
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
#include "weft/task_scope.hpp"

namespace weft {

template <class F>
auto TaskScope::add_source(std::span<const AnyJob> deps, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  using Traits = detail::source_traits<D>;
  static_assert(Traits::callable,
                "weft::TaskScope::source(f): f must take nothing (or std::size_t, the item index) and return "
                "std::optional<T> (std::nullopt ends the stream), T a movable object type");
  if constexpr (Traits::callable) {
    using T = typename Traits::value;
    constexpr const char* who = "weft::TaskScope::source";
    detail::require_callable(f, who);
    require_building(who);
    std::string name = options.name;
    if (name.empty()) name = "pipeline " + std::to_string(graph_.size());
    const Priority priority = options.priority;
    auto pipeline = std::make_shared<detail::Pipeline>(shared_.get(), name);
    (void)pipeline->add(who, 0, 0, detail::StageKind::source, std::move(options),
                        std::make_unique<detail::SourceBody<T, D>>(std::forward<F>(f)), sizeof(T), alignof(T));
    NodeOptions node;
    node.name = name;
    node.priority = priority;
    pipeline->job = add_job<void>(who, deps, std::move(node),
                                  [pipeline](detail::JobState<void>& state, Subflow& subflow) {
                                    bool completed = false;
                                    const std::exception_ptr error = pipeline->run(subflow, completed);
                                    if (error) {  // a stage's, or job_cancelled
                                      state.set_error(error);
                                    } else {
                                      state.set_done();
                                    }
                                  });
    pipelines_.push_back(pipeline);
    return Stream<T>(std::move(pipeline), 0);
  } else {
    return Stream<int>{};
  }
}

template <class T, class F>
auto TaskScope::stage(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::TaskScope::stage(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    using U = detail::stage_value_t<D, T>;
    static_assert(detail::PipelineItem<U>,
                  "weft::TaskScope::stage(stream, f): f must return the next item (a movable object type), or a "
                  "std::optional of it to filter items out; to consume items, use sink(stream, f)");
    if constexpr (detail::PipelineItem<U>) {
      constexpr const char* who = "weft::TaskScope::stage";
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
auto TaskScope::fan_out(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::TaskScope::fan_out(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    using R = detail::fan_range_t<D, T>;
    static_assert(std::ranges::input_range<R> && std::is_move_constructible_v<R>,
                  "weft::TaskScope::fan_out(stream, f): f must return a range (a std::vector, say) of the next "
                  "items");
    if constexpr (std::ranges::input_range<R> && std::is_move_constructible_v<R>) {
      using U = std::ranges::range_value_t<R>;
      static_assert(detail::PipelineItem<U>,
                    "weft::TaskScope::fan_out(stream, f): the range's elements must be a movable object type");
      if constexpr (detail::PipelineItem<U>) {
        constexpr const char* who = "weft::TaskScope::fan_out";
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
Job<void> TaskScope::sink(const Stream<T>& in, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(detail::ItemCallable<D, T>,
                "weft::TaskScope::sink(stream, f): f must take the stream's item (as T, T&& or const T&)");
  if constexpr (detail::ItemCallable<D, T>) {
    static_assert(std::is_void_v<detail::item_result_t<D, T>>,
                  "weft::TaskScope::sink(stream, f): f must return nothing (void); to pass items on, use stage()");
    constexpr const char* who = "weft::TaskScope::sink";
    detail::require_callable(f, who);
    (void)add_stage<T>(who, in, detail::StageKind::sink, std::make_unique<detail::SinkBody<T, D>>(std::forward<F>(f)),
                       std::move(options), 1, 1);
    return in.pipeline_->job;
  } else {
    return {};
  }
}

template <std::size_t N, class T>
std::array<Stream<T>, N> TaskScope::broadcast(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::TaskScope::broadcast<N>(stream): N must be 1 .. weft::kMaxBranches");
  static_assert(std::is_copy_constructible_v<T>,
                "weft::TaskScope::broadcast<N>(stream): every branch gets its own copy of each item, so the item "
                "type must be copyable (share large or move-only data through a std::shared_ptr<const X>)");
  if constexpr (std::is_copy_constructible_v<T> && N >= 1 && N <= kMaxBranches) {
    using State = detail::BroadcastState<T>;
    return add_fork<T, N>("weft::TaskScope::broadcast", in, std::make_unique<detail::BroadcastBody<T, N>>(),
                          std::move(options), sizeof(State), alignof(State));
  } else {
    return {};
  }
}

template <std::size_t N, class T>
std::array<Stream<T>, N> TaskScope::split(const Stream<T>& in, StageOptions options) {
  static_assert(N >= 1 && N <= kMaxBranches, "weft::TaskScope::split<N>(stream): N must be 1 .. weft::kMaxBranches");
  if constexpr (N >= 1 && N <= kMaxBranches) {
    using Body = detail::SplitBody<T, N, detail::RoundRobin>;
    using State = detail::SplitState<T>;
    auto body = std::make_unique<Body>(detail::RoundRobin{});
    return add_fork<T, N>("weft::TaskScope::split", in, std::move(body), std::move(options), sizeof(State),
                          alignof(State));
  } else {
    return {};
  }
}

template <std::size_t N, class T, class F>
std::array<Stream<T>, N> TaskScope::split(const Stream<T>& in, F&& route, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(N >= 1 && N <= kMaxBranches,
                "weft::TaskScope::split<N>(stream, route): N must be 1 .. weft::kMaxBranches");
  static_assert(detail::SplitRoute<D, T>,
                "weft::TaskScope::split<N>(stream, route): route must take the item as const T& and return the "
                "index (an integer, 0 .. N - 1) of the branch it goes to");
  if constexpr (detail::SplitRoute<D, T> && N >= 1 && N <= kMaxBranches) {
    constexpr const char* who = "weft::TaskScope::split";
    detail::require_callable(route, who);
    using Body = detail::SplitBody<T, N, D>;
    using State = detail::SplitState<T>;
    auto body = std::make_unique<Body>(std::forward<F>(route));
    return add_fork<T, N>(who, in, std::move(body), std::move(options), sizeof(State), alignof(State));
  } else {
    return {};
  }
}

template <class T, std::size_t N, class Body>
std::array<Stream<T>, N> TaskScope::add_fork(const char* who, const Stream<T>& in, std::unique_ptr<Body> body,
                                             StageOptions options, std::size_t size, std::size_t align) {
  Body* named = body.get();
  const Stream<T> forked = add_stage<T>(who, in, detail::StageKind::fork, std::move(body), std::move(options),
                                        size > sizeof(T) ? size : sizeof(T), align > alignof(T) ? align : alignof(T),
                                        static_cast<std::uint32_t>(N));
  if constexpr (requires { named->name(std::string(), std::string()); }) {
    named->name(forked.pipeline_->stage_name(forked.stage_), forked.pipeline_->name());
  }
  std::array<Stream<T>, N> branches;
  for (std::size_t j = 0; j < N; ++j)
    branches[j] = Stream<T>(forked.pipeline_, forked.stage_, static_cast<std::uint32_t>(j));
  return branches;
}

template <class... Ts>
Stream<std::tuple<Ts...>> TaskScope::join(const std::tuple<Stream<Ts>...>& in, StageOptions options) {
  static_assert(sizeof...(Ts) >= 2, "weft::TaskScope::join(streams): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::TaskScope::join(streams): the items must be nothrow move constructible (a join moves them "
                "into the tuple)");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...)) {
    using Tuple = std::tuple<Ts...>;
    return add_joined<Tuple>("weft::TaskScope::join", inputs_of(in), detail::StageKind::join,
                             std::make_unique<detail::PositionJoinBody<Ts...>>(), std::move(options));
  } else {
    return {};
  }
}

template <class... Ts, class F>
Stream<std::tuple<Ts...>> TaskScope::join_by_key(const std::tuple<Stream<Ts>...>& in, F&& key, StageOptions options) {
  using D = std::decay_t<F>;
  static_assert(sizeof...(Ts) >= 2, "weft::TaskScope::join_by_key(streams, key): join two or more streams");
  static_assert((std::is_nothrow_move_constructible_v<Ts> && ...),
                "weft::TaskScope::join_by_key(streams, key): the items must be nothrow move constructible (a join "
                "moves them into the tuple)");
  static_assert(detail::JoinKey<D, Ts...>,
                "weft::TaskScope::join_by_key(streams, key): key must take an item of every stream (as const T&) "
                "and return keys of one type");
  if constexpr (sizeof...(Ts) >= 2 && (std::is_nothrow_move_constructible_v<Ts> && ...) && detail::JoinKey<D, Ts...>) {
    using K = detail::join_key_t<D, Ts...>;
    static_assert(detail::HashableKey<K>,
                  "weft::TaskScope::join_by_key(streams, key): the key type must be default constructible, "
                  "movable, equality comparable and hashable by std::hash");
    if constexpr (detail::HashableKey<K>) {
      constexpr const char* who = "weft::TaskScope::join_by_key";
      detail::require_callable(key, who);
      using Tuple = std::tuple<Ts...>;
      return add_joined<Tuple>(who, inputs_of(in), detail::StageKind::join,
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
Stream<T> TaskScope::merge(std::span<const Stream<T>> in, StageOptions options) {
  std::vector<detail::StreamInput> inputs;
  inputs.reserve(in.size());
  for (const Stream<T>& stream : in)
    inputs.push_back(detail::StreamInput{&stream.pipeline_, stream.stage_, stream.port_});
  return add_joined<T>("weft::TaskScope::merge", inputs, detail::StageKind::merge,
                       std::make_unique<detail::MergeBody<T>>(), std::move(options));
}

template <class... Ts>
std::vector<detail::StreamInput> TaskScope::inputs_of(const std::tuple<Stream<Ts>...>& in) {
  return std::apply(
      [](const auto&... stream) {
        return std::vector<detail::StreamInput>{detail::StreamInput{&stream.pipeline_, stream.stage_, stream.port_}...};
      },
      in);
}

template <class Out, class Body>
Stream<Out> TaskScope::add_joined(const char* who, const std::vector<detail::StreamInput>& inputs,
                                  detail::StageKind kind, std::unique_ptr<Body> body, StageOptions options) {
  require_building(who);
  if (inputs.empty()) {
    throw invalid_graph(std::string(who) + ": no streams given (an empty merge has nothing to take items from)");
  }
  const std::shared_ptr<detail::Pipeline>* first = nullptr;
  std::vector<detail::Pipeline::Output> outputs;
  outputs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::shared_ptr<detail::Pipeline>& pipeline = *inputs[i].pipeline;
    if (pipeline == nullptr) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) +
                          " is empty (a default-constructed weft::Stream)" +
                          (options.name.empty() ? std::string() : ", given to stage '" + options.name + "'"));
    }
    if (pipeline->scope() != shared_.get()) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) + " (of stage '" +
                          pipeline->stage_name(inputs[i].stage) + "' of pipeline '" + pipeline->name() +
                          "') belongs to another TaskScope: a stage may only consume streams of its own scope");
    }
    if (first == nullptr) {
      first = &pipeline;
    } else if (pipeline != *first) {
      throw invalid_graph(std::string(who) + ": stream " + std::to_string(i) + " comes from pipeline '" +
                          pipeline->name() + "', stream 0 from pipeline '" + (*first)->name() +
                          "': the streams joined or merged must come from one source (fork its stream with "
                          "broadcast or split)");
    }
    outputs.push_back(detail::Pipeline::Output{inputs[i].stage, inputs[i].port});
  }
  const std::shared_ptr<detail::Pipeline> pipeline = *first;
  const std::uint32_t index = pipeline->add_join(who, outputs, kind, std::move(options), std::move(body), sizeof(Out),
                                                 alignof(Out));
  return Stream<Out>(pipeline, index);
}

template <class Out, class Body, class T>
Stream<Out> TaskScope::add_stage(const char* who, const Stream<T>& in, detail::StageKind kind,
                                 std::unique_ptr<Body> body, StageOptions options, std::size_t size, std::size_t align,
                                 std::uint32_t outputs) {
  require_building(who);
  if (!in.valid()) {
    std::string message = who;
    message += ": the stream is empty (a default-constructed weft::Stream)";
    if (!options.name.empty()) message += ", given to stage '" + options.name + "'";
    throw invalid_graph(message);
  }
  if (in.pipeline_->scope() != shared_.get()) {
    std::string message = who;
    message += ": the stream of stage '" + in.pipeline_->stage_name(in.stage_) + "' of pipeline '" +
               in.pipeline_->name() +
               "' belongs to another TaskScope: a stage may only consume streams of its own "
               "scope";
    throw invalid_graph(message);
  }
  const std::uint32_t index = in.pipeline_->add(who, in.stage_, in.port_, kind, std::move(options), std::move(body),
                                                size, align, outputs);
  return Stream<Out>(in.pipeline_, index);
}

}  // namespace weft
