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

void Pipeline::require_open(const char* who, std::uint32_t from) const {
  if (from + 1 == stages_.size() && stages_.back().kind != StageKind::sink) return;
  std::string message = who;
  message += ": the stream of stage '" + stages_[from].name + "' of pipeline '" + name_ + "' already feeds stage '";
  message += stages_[from + 1 < stages_.size() ? from + 1 : from].name;
  message += "': a stream feeds exactly one stage";
  throw invalid_graph(message);
}

std::uint32_t Pipeline::add(const char* who, std::uint32_t from, StageKind kind, StageOptions options,
                            std::unique_ptr<StageBody> body, std::size_t size, std::size_t align) {
  if (kind != StageKind::source) require_open(who, from);
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
  stages_.reserve(stages_.size() + 1);  // so that push_back below cannot throw after the checks
  options.name = name;
  slot_size_ = std::max(slot_size_, size);
  slot_align_ = std::max(slot_align_, align);
  stages_.push_back(Stage{std::move(name), std::move(options), kind, std::move(body)});
  return index;
}

}  // namespace weft::detail
