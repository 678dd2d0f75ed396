// The pipeline members of weft::TaskScope (source, stage, fan_out, sink), included at the end of
// weft/task_scope.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "weft/detail/pipeline.hpp"
#include "weft/task_scope.hpp"

namespace weft {

template <class F>
auto TaskScope::add_source(std::span<const AnyJob> deps, F&& f, StageOptions options) {
  using D = std::decay_t<F>;
  using Traits = detail::source_traits<D>;
  static_assert(Traits::callable,
                "weft::TaskScope::source(f): f must take nothing and return std::optional<T> (std::nullopt ends the "
                "stream), T a movable object type");
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
