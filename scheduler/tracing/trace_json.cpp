// TraceImpl::write_json: the events as Chrome Trace Event JSON ("JSON Object Format": {"traceEvents": [...]}).
#include <cinttypes>
#include <cstdio>
#include <ostream>
#include <string_view>

#include "scheduler/tracing/trace_impl.hpp"
#include "weft/pool_options.hpp"

namespace weft::tracing {

namespace {

void write_string(std::ostream& out, std::string_view text) {
  out << '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\r':
        out << "\\r";
        break;
      case '\t':
        out << "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out << escaped;
        } else {
          out << c;  // UTF-8 bytes pass through as they are
        }
    }
  }
  out << '"';
}

// Nanoseconds as microseconds with three decimals (the format's unit is the microsecond).
void write_micros(std::ostream& out, std::int64_t ns) {
  if (ns < 0) ns = 0;
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  out << text;
}

[[nodiscard]] const char* priority_name(std::uint64_t priority) noexcept {
  switch (static_cast<Priority>(priority)) {
    case Priority::High:
      return "High";
    case Priority::Normal:
      return "Normal";
    case Priority::Low:
      return "Low";
  }
  return "?";
}

[[nodiscard]] const char* category_name(TraceCategory category) noexcept {
  switch (category) {
    case TraceCategory::task:
    case TraceCategory::steal:
    case TraceCategory::park:
      return "pool";
    case TraceCategory::node:
      return "node";
    case TraceCategory::stage:
      return "stage";
  }
  return "?";
}

void write_args(std::ostream& out, const TraceEvent& event) {
  switch (event.category) {
    case TraceCategory::task:
      out << R"({"priority":")" << priority_name(event.arg) << '"';
      if (event.arg2 == TaskEvent::not_a_worker) {
        out << R"(,"worker":null})";
      } else {
        out << R"(,"worker":)" << event.arg2 << '}';
      }
      return;
    case TraceCategory::steal:
      out << R"({"victim":)" << event.arg << '}';
      return;
    case TraceCategory::park:
      out << R"({"slept_us":)";
      write_micros(out, event.duration);
      out << '}';
      return;
    case TraceCategory::node:
      out << R"({"node":)" << event.arg << R"(,"run":)" << event.arg2 << '}';
      return;
    case TraceCategory::stage:
      out << R"({"item":)" << event.arg << R"(,"stage":)" << event.arg2 << '}';
      return;
  }
  out << "{}";
}

}  // namespace

void TraceImpl::write_json(std::ostream& out) const {
  // Held throughout: names_ and threads_ cannot grow meanwhile, so every name a published event refers to is
  // here (it was interned before the event was published). Writers are not held up: they take it only to
  // intern a name or to register a thread.
  const std::lock_guard lock(mutex_);
  out << R"({"traceEvents":[)" << '\n';
  out << R"({"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"weft"}})";
  std::size_t kept = 0;
  std::uint64_t dropped = refused_.load(std::memory_order_relaxed);
  for (const auto& thread : threads_) {
    out << ",\n"
        << R"({"ph":"M","pid":1,"tid":)" << thread->os_id << R"(,"name":"thread_name","args":{"name":)";
    write_string(out, thread->name.empty() ? "thread " + std::to_string(thread->os_id) : thread->name);
    out << "}}";
  }
  for (const auto& thread : threads_) {
    // acquire: pairs with the writer's release store; the events and chunk links below it are written.
    const std::size_t count = thread->published.load(std::memory_order_acquire);
    dropped += thread->dropped.load(std::memory_order_relaxed);
    kept += count;
    const TraceChunk* chunk = thread->head.load(std::memory_order_relaxed);
    std::size_t in_chunk = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (in_chunk == chunk->capacity) {
        chunk = chunk->next.load(std::memory_order_relaxed);
        in_chunk = 0;
      }
      const TraceEvent& event = chunk->events[in_chunk++];
      const bool instant = event.category == TraceCategory::steal || event.category == TraceCategory::park;
      out << ",\n" << (instant ? R"({"ph":"i","s":"t")" : R"({"ph":"X")");
      out << R"(,"pid":1,"tid":)" << thread->os_id << R"(,"ts":)";
      write_micros(out, event.start);
      if (!instant) {
        out << R"(,"dur":)";
        write_micros(out, event.duration);
      }
      out << R"(,"cat":")" << category_name(event.category) << R"(","name":)";
      write_string(out, names_[event.name]);
      out << R"(,"args":)";
      write_args(out, event);
      out << '}';
    }
  }
  out << "\n],\n"
      << R"("displayTimeUnit":"ns","otherData":{"kept":)" << kept << R"(,"dropped":)" << dropped << "}}\n";
}

}  // namespace weft::tracing
