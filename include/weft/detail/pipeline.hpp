// The stages of one TaskScope pipeline: their type-erased bodies (built here, from the user's callables) and
// the description TaskScope fills in; graph/pipeline/pipeline_run.cpp runs it.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/job.hpp"
#include "weft/stream.hpp"

namespace weft {
class Subflow;
}  // namespace weft

namespace weft::detail {

// What one stage does to an item. Items live in the pipeline's item slots, as raw storage sized and aligned for
// every type of the pipeline; a body moves its input out of the slot and constructs its output in the same slot.
class StageBody {
 public:
  StageBody() = default;
  StageBody(const StageBody&) = delete;
  StageBody& operator=(const StageBody&) = delete;
  virtual ~StageBody() = default;

  // The source: constructs the next item at `slot` and returns true, or returns false at the end of the stream
  // (nothing constructed). Called serially; `index`: the item's number in this run (0, 1, ...).
  virtual bool produce(void* slot, std::uint64_t index) {
    static_cast<void>(slot);
    static_cast<void>(index);
    return false;
  }
  // Any other stage: consumes the input at `slot`, which is destroyed whatever happens (an exception included),
  // and constructs its output there: returns false if there is none (filtered out; always for a sink). A fan-out
  // stage constructs its fan state (the range and where it is in it) and returns true.
  virtual bool process(void* slot) = 0;
  // A fan-out or fork stage: moves the next element of the fan state at `state` to `out` and returns true, or
  // returns false at the end of the range (nothing constructed). `port`: the output the element goes to (a fork
  // stage's branch; 0 for a fan-out stage).
  virtual bool next(void* state, void* out, std::uint32_t& port) {
    static_cast<void>(state);
    static_cast<void>(out);
    static_cast<void>(port);
    return false;
  }
  // A fork stage: true once next() would return false, so that no slot is taken only to learn it.
  virtual bool finished(void* state) noexcept {
    static_cast<void>(state);
    return false;
  }
  // A fan-out stage: destroys the fan state at `state`.
  virtual void destroy_state(void* state) noexcept { static_cast<void>(state); }
  // Destroys an output of this stage at `slot` (an element, for a fan-out stage).
  virtual void destroy(void* slot) noexcept = 0;
  // A sequence stage: the sequence number of the item at `slot` (its key function's value). Throws
  // std::out_of_range, naming the stage, for a negative key.
  virtual std::uint64_t sequence_key(void* slot) {
    static_cast<void>(slot);
    return 0;
  }
  // A priority buffer stage: true if the item at `a` ranks below the one at `b` (its comparison, less(a, b)).
  // Called under the stage's lock; an exception of the comparison is kept (take_error) and the answer is false.
  virtual bool ranks_below(void* a, void* b) noexcept {
    static_cast<void>(a);
    static_cast<void>(b);
    return false;
  }
  // A priority buffer stage: the exception its comparison threw, if any, taken once (under the stage's lock).
  virtual std::exception_ptr take_error() noexcept { return nullptr; }
  // Forgets what the body recorded in a run (a join's waiting items, a round-robin split's turn), once every item
  // of that run is gone: the next run of a reused pipeline starts afresh.
  virtual void reset() noexcept {}
};

template <class T>
T* slot_as(void* slot) noexcept {
  return std::launder(static_cast<T*>(slot));
}

// Destroys the input in its slot when process() ends, whichever way, unless done() destroyed it already.
template <class T>
struct DestroyInput {
  T* input;
  explicit DestroyInput(T* item) noexcept : input(item) {}
  DestroyInput(const DestroyInput&) = delete;
  DestroyInput& operator=(const DestroyInput&) = delete;
  ~DestroyInput() {
    if (input != nullptr) input->~T();
  }
  void done() noexcept {
    input->~T();
    input = nullptr;
  }
};

// Calls f with the item: as an rvalue when f takes one (by value or T&&), else as an lvalue (T& or const T&).
template <class F, class T>
decltype(auto) call_with_item(F& f, T& item) {
  if constexpr (std::is_invocable_v<F&, T&&>) {
    return std::invoke(f, std::move(item));
  } else {
    return std::invoke(f, item);
  }
}

template <class F, class T>
concept ItemCallable = std::is_invocable_v<F&, T&&> || std::is_invocable_v<F&, T&>;

template <class F, class T>
struct item_result {
  using type = void;
};
template <class F, class T>
  requires std::is_invocable_v<F&, T&&>
struct item_result<F, T> {
  using type = std::invoke_result_t<F&, T&&>;
};
template <class F, class T>
  requires(!std::is_invocable_v<F&, T &&> && std::is_invocable_v<F&, T&>)
struct item_result<F, T> {
  using type = std::invoke_result_t<F&, T&>;
};
template <class F, class T>
using item_result_t = typename item_result<F, T>::type;

template <class T>
struct optional_value {
  using type = void;
};
template <class T>
struct optional_value<std::optional<T>> {
  using type = T;
};

// What a stage f produces from a T: the U of a std::optional<U> result (a filter), else the result itself.
template <class F, class T>
using stage_value_t = std::conditional_t<std::is_void_v<typename optional_value<item_result_t<F, T>>::type>,
                                         item_result_t<F, T>, typename optional_value<item_result_t<F, T>>::type>;

// An item type a pipeline can carry: an object type that can be moved, and destroyed without throwing.
template <class T>
concept PipelineItem = std::is_object_v<T> && !std::is_array_v<T> && std::move_constructible<T> &&
                       std::is_nothrow_destructible_v<T>;

// A source's callable: f() or f(std::size_t index) (the item's number in the run), returning std::optional<T>.
template <class F>
struct source_traits {
  static constexpr bool callable = false;
};
template <class F>
  requires std::invocable<F&>
struct source_traits<F> {
  using value = typename optional_value<std::invoke_result_t<F&>>::type;
  static constexpr bool callable = PipelineItem<value>;
  static constexpr bool indexed = false;
};
template <class F>
  requires(!std::invocable<F&> && std::invocable<F&, std::size_t>)
struct source_traits<F> {
  using value = typename optional_value<std::invoke_result_t<F&, std::size_t>>::type;
  static constexpr bool callable = PipelineItem<value>;
  static constexpr bool indexed = true;
};

template <class T, class F>
class SourceBody final : public StageBody {
 public:
  template <class G>
  explicit SourceBody(G&& f) : f_(std::forward<G>(f)) {}
  bool produce(void* slot, std::uint64_t index) override {
    std::optional<T> item = call(index);
    if (!item) return false;
    ::new (slot) T(std::move(*item));
    return true;
  }
  bool process(void* slot) override {
    static_cast<void>(slot);
    return false;
  }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }

 private:
  std::optional<T> call(std::uint64_t index) {
    if constexpr (source_traits<F>::indexed) {
      return f_(static_cast<std::size_t>(index));
    } else {
      static_cast<void>(index);
      return f_();
    }
  }
  F f_;
};

template <class In, class F>
class MapBody final : public StageBody {
 public:
  using Result = item_result_t<F, In>;
  using Out = stage_value_t<F, In>;
  static constexpr bool kFilter = !std::is_void_v<typename optional_value<Result>::type>;

  template <class G>
  explicit MapBody(G&& f) : f_(std::forward<G>(f)) {}
  bool process(void* slot) override {
    DestroyInput<In> input(slot_as<In>(slot));
    if constexpr (kFilter) {
      std::optional<Out> out = call_with_item(f_, *input.input);
      if (!out) return false;
      input.done();
      ::new (slot) Out(std::move(*out));
      return true;
    } else {
      Out out = call_with_item(f_, *input.input);
      input.done();
      ::new (slot) Out(std::move(out));
      return true;
    }
  }
  void destroy(void* slot) noexcept override { slot_as<Out>(slot)->~Out(); }

 private:
  F f_;
};

template <class In, class F>
class SinkBody final : public StageBody {
 public:
  template <class G>
  explicit SinkBody(G&& f) : f_(std::forward<G>(f)) {}
  bool process(void* slot) override {
    DestroyInput<In> input(slot_as<In>(slot));
    call_with_item(f_, *input.input);
    return false;
  }
  void destroy(void* slot) noexcept override { static_cast<void>(slot); }

 private:
  F f_;
};

// A fan-out stage's state while it hands out the elements of the range its callable returned: the item too,
// since the range may refer to it (a view of a const T&). It stays where it was constructed (the input's
// slot), so the range's iterator and any reference into the item stay valid.
template <class In, class F>
struct FanState {
  using Range = std::remove_cvref_t<item_result_t<F, In>>;
  In item;
  Range range;
  std::ranges::iterator_t<Range> at;
  FanState(In&& input, F& f) : item(std::move(input)), range(call_with_item(f, item)), at(std::ranges::begin(range)) {}
  FanState(const FanState&) = delete;
  FanState& operator=(const FanState&) = delete;
};

template <class F, class T>
using fan_range_t = std::remove_cvref_t<item_result_t<F, T>>;
template <class F, class T>
using fan_value_t = std::ranges::range_value_t<fan_range_t<F, T>>;

template <class In, class F>
class FanOutBody final : public StageBody {
 public:
  using Out = fan_value_t<F, In>;
  using State = FanState<In, F>;

  template <class G>
  explicit FanOutBody(G&& f) : f_(std::forward<G>(f)) {}
  bool process(void* slot) override {
    DestroyInput<In> input(slot_as<In>(slot));
    In item(std::move(*input.input));
    input.done();
    ::new (slot) State(std::move(item), f_);
    return true;
  }
  bool next(void* state, void* out, std::uint32_t& port) override {
    port = 0;
    State& s = *slot_as<State>(state);
    if (s.at == std::ranges::end(s.range)) return false;
    ::new (out) Out(std::ranges::iter_move(s.at));
    ++s.at;
    return true;
  }
  void destroy_state(void* state) noexcept override { slot_as<State>(state)->~State(); }
  void destroy(void* slot) noexcept override { slot_as<Out>(slot)->~Out(); }

 private:
  F f_;
};

// A broadcast stage's state: the item, copied to every branch but the last, which gets the item itself.
template <class T>
struct BroadcastState {
  T item;
  std::uint32_t port = 0;  // the branch the next copy goes to
  explicit BroadcastState(T&& input) : item(std::move(input)) {}
};

template <class T, std::uint32_t N>
class BroadcastBody final : public StageBody {
 public:
  using State = BroadcastState<T>;
  bool process(void* slot) override {
    DestroyInput<T> input(slot_as<T>(slot));
    T item(std::move(*input.input));
    input.done();
    ::new (slot) State(std::move(item));
    return true;
  }
  bool next(void* state, void* out, std::uint32_t& port) override {
    State& s = *slot_as<State>(state);
    if (s.port == N) return false;
    if (s.port + 1 == N) {
      ::new (out) T(std::move(s.item));
    } else {
      ::new (out) T(std::as_const(s.item));
    }
    port = s.port++;
    return true;
  }
  bool finished(void* state) noexcept override { return slot_as<State>(state)->port == N; }
  void destroy_state(void* state) noexcept override { slot_as<State>(state)->~State(); }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }
};

// A split stage's state: the item and the branch it goes to.
template <class T>
struct SplitState {
  T item;
  std::uint32_t port;
  bool sent = false;
  SplitState(T&& input, std::uint32_t to) : item(std::move(input)), port(to) {}
};

// Routes each item to one branch: `route(item) -> index` (RoundRobin: the next branch in turn). An index out of
// range throws std::out_of_range naming the stage, the pipeline and the value.
struct RoundRobin {};

template <class T, std::uint32_t N, class Route>
class SplitBody final : public StageBody {
 public:
  using State = SplitState<T>;
  template <class G>
  explicit SplitBody(G&& route) : route_(std::forward<G>(route)) {}
  // Called once the stage is named: errors name it and `who`, the public call that made it.
  void name(const char* who, std::string stage, std::string pipeline) {
    who_ = who;
    stage_ = std::move(stage);
    pipeline_ = std::move(pipeline);
  }
  bool process(void* slot) override {
    DestroyInput<T> input(slot_as<T>(slot));
    std::uint32_t port = 0;
    if constexpr (std::is_same_v<Route, RoundRobin>) {
      port = static_cast<std::uint32_t>(turn_.fetch_add(1, std::memory_order_relaxed) % N);
    } else {
      const auto index = std::invoke(route_, std::as_const(*input.input));
      if (std::cmp_less(index, 0) || std::cmp_greater_equal(index, N)) {
        throw std::out_of_range(std::string(who_) + ": stage '" + stage_ + "' of pipeline '" + pipeline_ +
                                "': its route returned " + std::to_string(index) + " for a split into " +
                                std::to_string(N) + " branches (0 .. " + std::to_string(N - 1) + ")");
      }
      port = static_cast<std::uint32_t>(index);
    }
    T item(std::move(*input.input));
    input.done();
    ::new (slot) State(std::move(item), port);
    return true;
  }
  bool next(void* state, void* out, std::uint32_t& port) override {
    State& s = *slot_as<State>(state);
    if (s.sent) return false;
    ::new (out) T(std::move(s.item));
    port = s.port;
    s.sent = true;
    return true;
  }
  bool finished(void* state) noexcept override { return slot_as<State>(state)->sent; }
  void destroy_state(void* state) noexcept override { slot_as<State>(state)->~State(); }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }
  void reset() noexcept override { turn_.store(0, std::memory_order_relaxed); }

 private:
  [[no_unique_address]] Route route_;
  std::atomic<std::uint64_t> turn_{0};  // RoundRobin: the next item's number; relaxed, only its count matters
  const char* who_ = "weft::TaskScope::split";
  std::string stage_;
  std::string pipeline_;
};

// A sequence stage: passes each item on unchanged; the run holds items until their key's turn (0, 1, 2, ...).
template <class T, class Key>
class SequenceBody final : public StageBody {
 public:
  template <class G>
  explicit SequenceBody(G&& key) : key_(std::forward<G>(key)) {}
  // Called once the stage is named: errors name it and `who`, the public call that made it.
  void name(const char* who, std::string stage, std::string pipeline) {
    who_ = who;
    stage_ = std::move(stage);
    pipeline_ = std::move(pipeline);
  }
  std::uint64_t sequence_key(void* slot) override {
    const auto key = std::invoke(key_, std::as_const(*slot_as<T>(slot)));
    if (std::cmp_less(key, 0)) {
      throw std::out_of_range(std::string(who_) + ": stage '" + stage_ + "' of pipeline '" + pipeline_ +
                              "': its key returned " + std::to_string(key) +
                              ": a sequence number is 0, 1, 2, ... (never negative)");
    }
    return static_cast<std::uint64_t>(key);
  }
  bool process(void* slot) override {
    static_cast<void>(slot);  // the item stays where it is, now this stage's output
    return true;
  }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }

 private:
  [[no_unique_address]] Key key_;
  const char* who_ = "weft::TaskScope::sequence";
  std::string stage_;
  std::string pipeline_;
};

// A priority buffer stage: passes each item on unchanged; the run hands its waiting items on highest first, by
// `less` (as std::priority_queue: the item no other ranks below goes first).
template <class T, class Less>
class PriorityBody final : public StageBody {
 public:
  template <class G>
  explicit PriorityBody(G&& less) : less_(std::forward<G>(less)) {}
  bool ranks_below(void* a, void* b) noexcept override {
    try {
      return static_cast<bool>(std::invoke(less_, std::as_const(*slot_as<T>(a)), std::as_const(*slot_as<T>(b))));
    } catch (...) {
      if (!error_) error_ = std::current_exception();
      return false;
    }
  }
  std::exception_ptr take_error() noexcept override { return std::exchange(error_, nullptr); }
  bool process(void* slot) override {
    static_cast<void>(slot);  // the item stays where it is, now this stage's output
    return true;
  }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }
  void reset() noexcept override { error_ = nullptr; }

 private:
  [[no_unique_address]] Less less_;
  std::exception_ptr error_;  // guarded by the stage's lock
};

// A priority buffer's comparison: callable with two const T&, returning something convertible to bool.
template <class F, class T>
concept PriorityLess = std::is_invocable_v<F&, const T&, const T&> &&
                       std::is_convertible_v<std::invoke_result_t<F&, const T&, const T&>, bool>;

// A sequence stage's key: callable with a const T&, returning an integer (not bool), the item's sequence number.
template <class F, class T>
concept SequenceKey = std::is_invocable_v<F&, const T&> && std::is_integral_v<std::invoke_result_t<F&, const T&>> &&
                      !std::is_same_v<std::invoke_result_t<F&, const T&>, bool>;

// A split's route: callable with a const T&, returning an integer index.
template <class F, class T>
concept SplitRoute = std::is_invocable_v<F&, const T&> && std::is_integral_v<std::invoke_result_t<F&, const T&>> &&
                     !std::is_same_v<std::invoke_result_t<F&, const T&>, bool>;

// One stream given to a join or merge (the parts of a weft::Stream that TaskScope reads).
struct StreamInput {
  const std::shared_ptr<Pipeline>* pipeline;
  std::uint32_t stage;
  std::uint32_t port;
};

enum class StageKind : std::uint8_t { source, map, fan_out, fork, join, merge, sequence, priority, sink };

namespace pipeline {
class Run;  // graph/pipeline/pipeline_run.hpp: a pipeline's layout, slots and carriers
}  // namespace pipeline

// The description of one pipeline, filled in stage by stage by TaskScope (source, stage, fan_out, sink) and run
// once, inside the scope job the source made (graph/pipeline/pipeline_run.cpp). The stages form a tree from the
// source: each stream (a stage's output, or one branch of a fork stage's) feeds exactly one stage; a fork stage
// (broadcast, split) has several outputs, a sink none.
class Pipeline {
 public:
  // `scope` identifies the TaskScope (streams of another scope are refused); `name` is the pipeline's, as its
  // job's.
  // `owner`: the public class whose name prefixes the run's errors ("weft::TaskScope", "weft::StreamGraph").
  // `keep_layout`: keep the run's layout and slots after a run, for the next (a StreamGraph's); else they are
  // freed when the run ends (a TaskScope's pipeline runs once).
  Pipeline(const void* scope, std::string name, const char* owner = "weft::TaskScope", bool keep_layout = false);
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  // Adds the stage consuming output `port` of stage `from` (ignored for the source). `outputs`: its own number
  // of output streams (1; a fork stage's branches; 0 for a sink). `who` is the public call, which every error
  // names: invalid_option for a bad option, invalid_graph if that stream already feeds a stage. `size`/`align`:
  // the largest object the stage leaves in an item slot. Returns the new stage's index.
  std::uint32_t add(const char* who, std::uint32_t from, std::uint32_t port, StageKind kind, StageOptions options,
                    std::unique_ptr<StageBody> body, std::size_t size, std::size_t align, std::uint32_t outputs = 1);

  // One output of a stage: (stage, port).
  struct Output {
    std::uint32_t stage;
    std::uint32_t port;
  };
  // Adds a join or merge stage consuming every stream of `inputs` (at least one; a position join or key join
  // needs two): invalid_graph if one of them already feeds a stage or is given twice, invalid_option for a bad
  // option (Order::Input: a join pairs by position or key, a merge takes its items as they arrive).
  std::uint32_t add_join(const char* who, const std::vector<Output>& inputs, StageKind kind, StageOptions options,
                         std::unique_ptr<StageBody> body, std::size_t size, std::size_t align);

  // Throws invalid_graph (naming `who`, the pipeline and the stage) unless output `port` of stage `from` feeds
  // nothing yet.
  void require_open(const char* who, std::uint32_t from, std::uint32_t port) const;

  // True once every stream of the pipeline feeds a stage (every branch ends in a sink).
  [[nodiscard]] bool complete() const noexcept;
  [[nodiscard]] const void* scope() const noexcept { return scope_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const char* owner() const noexcept { return owner_; }
  // The name of stage `stage`.
  [[nodiscard]] const std::string& stage_name(std::uint32_t stage) const { return stages_[stage].name; }
  // The name of a stage with a stream that feeds nothing (run() refuses the pipeline), or of the last stage.
  [[nodiscard]] const std::string& open_stage_name() const;

  // Runs every item through the stages, inside the pipeline's job (its node's Subflow); returns once every task
  // it spawned has finished. Returns what the job reports: the exception that stopped it (a stage's,
  // inbox_full, task_dropped), weft::job_cancelled if the run was cancelled, or null; `completed` is true if
  // the source ended and every item reached the sink (or was filtered or dropped). With keep_layout, the layout
  // made by the first run (or the first on a pool of another size) is reset, not rebuilt, by every later run.
  // One run at a time.
  std::exception_ptr run(Subflow& subflow, bool& completed) noexcept;

  // What run() needs of a stage.
  struct Stage {
    std::string name;
    StageOptions options;
    StageKind kind;
    std::unique_ptr<StageBody> body;
    std::uint32_t from = 0;              // the stage whose output it consumes (the source: 0, unused)
    std::vector<std::uint32_t> to = {};  // per output: the stage consuming it, or kOpen
    std::uint32_t from_port = 0;         // which output of `from`
    std::vector<Output> inputs = {};     // a join or merge stage: every stream it consumes, `from` the first
  };
  static constexpr std::uint32_t kOpen = ~std::uint32_t{0};
  [[nodiscard]] const std::vector<Stage>& stages() const noexcept { return stages_; }
  [[nodiscard]] std::size_t slot_size() const noexcept { return slot_size_; }
  [[nodiscard]] std::size_t slot_align() const noexcept { return slot_align_; }

  // The pipeline's job (its node in the scope's graph), which sink() returns.
  Job<void> job;

 private:
  // Checks the options, names the stage and appends it (its input not yet marked consumed).
  std::uint32_t push(const char* who, std::uint32_t from, std::uint32_t port, StageKind kind, StageOptions options,
                     std::unique_ptr<StageBody> body, std::size_t size, std::size_t align, std::uint32_t outputs);

  // A stage was added: the kept layout, if any, is made anew by the next run.
  void changed() noexcept;

  const void* scope_;
  std::string name_;
  const char* owner_;
  bool keep_layout_;
  std::unique_ptr<pipeline::Run> compiled_;  // keep_layout: the last run's layout and slots, reset
  std::vector<Stage> stages_;
  std::size_t slot_size_ = 1;
  std::size_t slot_align_ = alignof(std::max_align_t);
};

}  // namespace weft::detail
