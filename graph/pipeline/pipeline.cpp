// weft::detail::Pipeline: the checks of each stage as TaskScope adds it (the run is graph/pipeline/pipeline_run.cpp).
#include <algorithm>
#include <string>
#include <utility>

#include "weft/detail/pipeline.hpp"
#include "weft/errors.hpp"

namespace weft::detail {

namespace {

[[noreturn]] void refuse_option(const char* who, const std::string& stage, const std::string& pipeline,
                                const char* option, const std::string& value, const char* limit) {
  std::string message = who;
  message += ": stage '" + stage + "' of pipeline '" + pipeline + "': StageOptions::" + option + " = " + value;
  message += " is out of range (";
  message += limit;
  message += ")";
  throw invalid_option(message);
}

}  // namespace

void Pipeline::require_open(const char* who, std::uint32_t from, std::uint32_t port) const {
  const Stage& stage = stages_[from];
  if (port < stage.to.size() && stage.to[port] == kOpen) return;
  std::string message = who;
  message += ": the stream of stage '" + stage.name + "'";
  if (stage.kind == StageKind::fork) message += " (branch " + std::to_string(port) + ")";
  message += " of pipeline '" + name_ + "' ";
  if (port >= stage.to.size()) {
    message += "does not exist (a sink has no stream)";
  } else {
    const Stage& consumer = stages_[stage.to[port]];
    if (consumer.kind == StageKind::fork) {
      message += "was forked by stage '" + consumer.name + "': consume the branches it returned instead";
    } else {
      message += "already feeds stage '" + consumer.name +
                 "': a stream feeds exactly one stage (to feed several, fork it with broadcast or split)";
    }
  }
  throw invalid_graph(message);
}

bool Pipeline::complete() const noexcept {
  for (const Stage& stage : stages_) {
    for (const std::uint32_t to : stage.to) {
      if (to == kOpen) return false;
    }
  }
  return !stages_.empty();
}

const std::string& Pipeline::open_stage_name() const {
  for (const Stage& stage : stages_) {
    for (const std::uint32_t to : stage.to) {
      if (to == kOpen) return stage.name;
    }
  }
  return stages_.back().name;
}

std::uint32_t Pipeline::add(const char* who, std::uint32_t from, std::uint32_t port, StageKind kind,
                            StageOptions options, std::unique_ptr<StageBody> body, std::size_t size, std::size_t align,
                            std::uint32_t outputs) {
  if (kind != StageKind::source) require_open(who, from, port);
  changed();
  const std::uint32_t index = push(who, from, port, kind, std::move(options), std::move(body), size, align, outputs);
  if (kind != StageKind::source) stages_[from].to[port] = index;
  return index;
}

std::uint32_t Pipeline::add_join(const char* who, const std::vector<Output>& inputs, StageKind kind,
                                 StageOptions options, std::unique_ptr<StageBody> body, std::size_t size,
                                 std::size_t align) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    require_open(who, inputs[i].stage, inputs[i].port);
    for (std::size_t j = 0; j < i; ++j) {
      if (inputs[j].stage == inputs[i].stage && inputs[j].port == inputs[i].port) {
        throw invalid_graph(std::string(who) + ": the stream of stage '" + stages_[inputs[i].stage].name +
                            "' of pipeline '" + name_ + "' is given twice (inputs " + std::to_string(j) + " and " +
                            std::to_string(i) + "): a stream feeds exactly one stage");
      }
    }
  }
  if (options.order != Order::Any) {
    refuse_option(who, options.name.empty() ? "stage " + std::to_string(stages_.size()) : options.name, name_, "order",
                  options.order == Order::Input ? "Order::Input" : std::to_string(static_cast<int>(options.order)),
                  kind == StageKind::join ? "Order::Any: a join pairs its items by position or by key"
                                          : "Order::Any: a merge takes its items as they arrive");
  }
  std::vector<Output> kept(inputs);  // before any change: may throw
  changed();
  const std::uint32_t index = push(who, inputs[0].stage, inputs[0].port, kind, std::move(options), std::move(body),
                                   size, align, 1);
  stages_[index].inputs = std::move(kept);
  for (const Output& input : inputs) stages_[input.stage].to[input.port] = index;
  return index;
}

std::uint32_t Pipeline::push(const char* who, std::uint32_t from, std::uint32_t port, StageKind kind,
                             StageOptions options, std::unique_ptr<StageBody> body, std::size_t size, std::size_t align,
                             std::uint32_t outputs) {
  const auto index = static_cast<std::uint32_t>(stages_.size());
  std::string name = options.name;
  if (name.empty()) name = kind == StageKind::source ? std::string("source") : "stage " + std::to_string(index);
  if (kind == StageKind::source) {
    if (options.concurrency != 1) {
      refuse_option(who, name, name_, "concurrency", std::to_string(options.concurrency),
                    "a source is called serially: 1");
    }
  } else if (options.concurrency == 0 || (options.concurrency > kMaxStageBound && options.concurrency != kUnlimited)) {
    refuse_option(who, name, name_, "concurrency", std::to_string(options.concurrency),
                  "1 .. 1048576, or weft::kUnlimited");
  }
  if (kind == StageKind::source && options.live_tokens == 0) {
    refuse_option(who, name, name_, "live_tokens", "0",
                  "at least 1, or weft::kUnbounded for no limit but the stages': a pipeline without a token could "
                  "never make an item");
  }
  if (kind != StageKind::source && options.live_tokens != kUnbounded) {
    refuse_option(who, name, name_, "live_tokens", std::to_string(options.live_tokens),
                  "only the source's is used, as the whole pipeline's: leave a stage's at weft::kUnbounded");
  }
  if (options.capacity == 0 || options.capacity > kMaxStageBound) {
    refuse_option(who, name, name_, "capacity",
                  options.capacity == kUnbounded ? std::string("weft::kUnbounded") : std::to_string(options.capacity),
                  "1 .. 1048576: a pipeline stage's inbox is always bounded");
  }
  if (options.overflow != Overflow::Block && options.overflow != Overflow::Drop && options.overflow != Overflow::Fail) {
    refuse_option(who, name, name_, "overflow", std::to_string(static_cast<int>(options.overflow)),
                  "Block, Drop or Fail");
  }
  if (options.order != Order::Any && options.order != Order::Input) {
    refuse_option(who, name, name_, "order", std::to_string(static_cast<int>(options.order)), "Any or Input");
  }
  if (options.priority != Priority::High && options.priority != Priority::Normal && options.priority != Priority::Low) {
    refuse_option(who, name, name_, "priority", std::to_string(static_cast<int>(options.priority)),
                  "High, Normal or Low");
  }
  if (kind == StageKind::sequence) {
    if (options.concurrency != 1) {
      refuse_option(who, name, name_, "concurrency",
                    options.concurrency == kUnlimited ? std::string("weft::kUnlimited")
                                                      : std::to_string(options.concurrency),
                    "a sequence hands its items on one at a time, in the order of their keys: 1");
    }
    if (options.overflow == Overflow::Drop) {
      refuse_option(who, name, name_, "overflow", "Overflow::Drop",
                    "Block or Fail: an item a sequence dropped would leave its key missing for good");
    }
    if (options.order != Order::Any) {
      refuse_option(who, name, name_, "order", "Order::Input",
                    "Order::Any: a sequence takes its items in the order of their keys, whatever order they come in");
    }
  }
  if (kind == StageKind::priority && options.order != Order::Any) {
    refuse_option(who, name, name_, "order", "Order::Input",
                  "Order::Any: a priority buffer hands its items on by their rank, not in the order they came");
  }
  stages_.reserve(stages_.size() + 1);  // so that push_back below cannot throw after the checks
  options.name = name;
  slot_size_ = std::max(slot_size_, size);
  slot_align_ = std::max(slot_align_, align);
  std::vector<std::uint32_t> to(kind == StageKind::sink ? 0 : outputs, kOpen);  // before any change: may throw
  stages_.push_back(Stage{std::move(name), std::move(options), kind, std::move(body), from, std::move(to), port});
  return index;
}

}  // namespace weft::detail
