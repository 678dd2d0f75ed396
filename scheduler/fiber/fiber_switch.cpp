// Every fiber switch of a weft built without Boost.Context (MinGW-w64 on x86-64 Windows): fiber.hpp's Fiber and
// ThisFiber on src/context_switch.hpp's switch, over the same FiberStacks as fiber.cpp (weft's own stacks, guard,
// pool and overflow report). meson compiles either this file or fiber.cpp, never both.
//
// It differs from fiber.cpp only in the switch underneath:
// - A fiber's context is a saved stack pointer (os::SavedContext); the resumer's is saved in the record on each
//   resume, the fiber's on each suspend. The control block and the body sit at the top of the stack as in
//   fiber.cpp; the new context's frame starts below the body.
// - The forced unwind of a suspended fiber that is destroyed is weft's own exception (ForcedUnwind, below; not a
//   std::exception), thrown by suspend() when the destroyer resumes it with `unwind_request` set. fiber.cpp's is
//   Boost's forced_unwind; both must pass through the fiber's code (ThisFiber::unwinding()).
// - The body's end: the entry function records it and switches to the resumer for good; the resumer sees the
//   fiber's context gone (`self` null) as with Boost.
// No sanitizer runtime is annotated: MinGW has none. A build with sanitizers takes fiber.cpp (meson).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "scheduler/fiber/fiber.hpp"
#include "src/context_switch.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#error "scheduler/fiber/fiber_switch.cpp annotates no sanitizer: a build with sanitizers uses fiber.cpp"
#endif

namespace weft::fiber {

namespace {

// Thrown inside a suspended fiber whose Fiber is destroyed, to run the destructors on its stack; caught by the
// fiber's entry function.
struct ForcedUnwind {};

}  // namespace

// The control block of one fiber, at the top of its stack. Written only by the thread running the fiber or its
// resumer, which the owner's synchronisation orders.
struct FiberRecord : ThisFiber {
  enum class State : unsigned char { not_started, running, suspended, finished };

  os::SavedContext self = nullptr;    // the fiber's context while it is not running; null once it has ended
  os::SavedContext caller = nullptr;  // the resumer's context while the fiber runs
  void* body = nullptr;
  Fiber::RunFn run = nullptr;
  Fiber::DestroyFn destroy = nullptr;
  std::exception_ptr error;  // what the body threw, for the resume() that sees it end
  FiberHook hook{};          // set by suspend_with, run by resume() after the switch
  State state = State::not_started;
  bool cancelled = false;       // destroyed before it ever ran: skip the body
  bool unwind_request = false;  // set by the destroyer of a suspended fiber: suspend() throws ForcedUnwind
  bool unwinding_now = false;

  FiberRecord() = default;
};

namespace {

// As fiber.cpp: the record, then the body, at the top of a stack.
constexpr std::size_t kRecordAlign = 64;
constexpr std::size_t kMaxBodyShare = 8;  // a body may take at most 1/8 of the stack

[[nodiscard]] FiberRecord& record(ThisFiber* self) noexcept { return *static_cast<FiberRecord*>(self); }

[[nodiscard]] std::uintptr_t record_address(const FiberStack& stack) noexcept {
  return (reinterpret_cast<std::uintptr_t>(stack.top()) - sizeof(FiberRecord)) & ~(kRecordAlign - 1);
}

// --- the switches ------------------------------------------------------------------------------------------

// On the resumer: into the fiber, back when it suspends or ends (then `r.self` is null). With `unwind`, the
// suspended fiber throws ForcedUnwind from its suspend() and ends.
void enter(FiberRecord& r, bool unwind) noexcept {
  r.unwind_request = unwind;
  (void)os::switch_context(&r.caller, r.self, &r);
}

// On the fiber: back to its resumer, and back here when resumed again (on whichever thread resumed it).
void leave(FiberRecord& r) {
  (void)os::switch_context(&r.self, r.caller, nullptr);
  if (r.unwind_request) [[unlikely]] {
    r.unwinding_now = true;
    throw ForcedUnwind{};
  }
}

// The fiber's entry function: runs the body, catches what it throws for the resumer (the forced unwind ends here),
// and switches to the resumer for good.
[[noreturn]] void fiber_entry(void* arg) noexcept {
  FiberRecord& r = *static_cast<FiberRecord*>(arg);
  if (!r.cancelled) {
    try {
      r.run(r.body, r);
    } catch (const ForcedUnwind&) {
      // Destroyed while suspended: the destructors on the stack have run.
    } catch (...) {
      r.error = std::current_exception();
    }
  }
  r.destroy(r.body);
  r.state = FiberRecord::State::finished;
  r.self = nullptr;
  os::SavedContext ended = nullptr;  // never resumed
  (void)os::switch_context(&ended, r.caller, nullptr);
  std::abort();
}

[[noreturn]] void misuse(const char* what) {
  std::fprintf(stderr, "weft: %s\n", what);
  std::abort();
}

}  // namespace

// --- ThisFiber ---------------------------------------------------------------------------------------------

void ThisFiber::suspend() { suspend_with(FiberHook{}); }

void ThisFiber::suspend_with(FiberHook hook) {
  FiberRecord& r = record(this);
  r.hook = hook;
  leave(r);
}

bool ThisFiber::unwinding() const noexcept { return static_cast<const FiberRecord*>(this)->unwinding_now; }

// --- Fiber -------------------------------------------------------------------------------------------------

void* Fiber::body_storage(const FiberStack& stack, std::size_t size, std::size_t align) {
  if (!stack) {
    throw std::invalid_argument(
        "weft::fiber::Fiber: no stack (FiberStackPool::acquire() returned none at its bound: fall back to "
        "waiting without a fiber)");
  }
  if (size > stack.size() / kMaxBodyShare) {
    throw std::invalid_argument("weft::fiber::Fiber: a body of " + std::to_string(size) +
                                " bytes is more than 1/8 of the " + std::to_string(stack.size()) +
                                "-byte stack it would live on");
  }
  return reinterpret_cast<void*>((record_address(stack) - size) & ~(std::uintptr_t{align} - 1));
}

void Fiber::start(FiberStack stack, void* body, RunFn run, DestroyFn destroy) {
  auto* r = ::new (reinterpret_cast<void*>(record_address(stack))) FiberRecord();
  r->body = body;
  r->run = run;
  r->destroy = destroy;
  // The context's frame below the body; the OS's view of the stack is the whole of it, guard included in the
  // reservation.
  r->self = os::make_context(body, stack.bottom(), stack.guard(), &fiber_entry);
  self_ = r;
  stack_ = std::move(stack);
}

void Fiber::destroy() noexcept {
  if (self_ == nullptr) return;
  FiberRecord& r = record(self_);
  switch (r.state) {
    case FiberRecord::State::running:
      misuse("a weft::fiber::Fiber was destroyed while running (from its own body?)");
    case FiberRecord::State::not_started:
      r.cancelled = true;  // runs to its end at once, skipping the body
      r.state = FiberRecord::State::running;
      enter(r, false);
      break;
    case FiberRecord::State::suspended:
      r.state = FiberRecord::State::running;
      enter(r, true);
      break;
    case FiberRecord::State::finished:
      break;
  }
  if (r.state != FiberRecord::State::finished) misuse("a destroyed weft::fiber::Fiber did not end");
  r.~FiberRecord();  // drops an exception the body threw that no resume() saw (the fiber was being destroyed)
  self_ = nullptr;
  stack_.reset();
}

Fiber::Resumed Fiber::resume() {
  if (self_ == nullptr || record(self_).state == FiberRecord::State::running) [[unlikely]]
    refuse_resume();
  FiberRecord& r = record(self_);
  r.state = FiberRecord::State::running;
  enter(r, false);
  if (r.self == nullptr) [[unlikely]]
    return finished();
  r.state = FiberRecord::State::suspended;
  if (r.hook.call != nullptr) {
    const FiberHook hook = std::exchange(r.hook, FiberHook{});
    hook.call(hook.context, *this);  // the fiber is saved: the hook may publish it; nothing below touches it
  }
  return Resumed::suspended;
}

void Fiber::refuse_resume() const {
  if (self_ == nullptr) throw std::logic_error("weft::fiber::Fiber::resume: no fiber (empty, moved from or ended)");
  throw std::logic_error("weft::fiber::Fiber::resume: the fiber is running (resumed twice?)");
}

Fiber::Resumed Fiber::finished() {
  FiberRecord& r = record(self_);
  std::exception_ptr error = std::move(r.error);
  r.~FiberRecord();
  self_ = nullptr;
  stack_.reset();
  if (error) std::rethrow_exception(std::move(error));
  return Resumed::finished;
}

}  // namespace weft::fiber
