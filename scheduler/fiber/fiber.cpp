// Every fiber switch in weft happens in this file.
//
// Sanitizers. This file is compiled without AddressSanitizer's and ThreadSanitizer's instrumentation (meson adds
// -fno-sanitize=address / thread for it, and WEFT_FIBER_ASAN / WEFT_FIBER_TSAN say which runtime to annotate
// for); it calls the runtimes' fiber interfaces explicitly instead. The reason is the frames that span a switch:
// - TSan keeps a shadow call stack per fiber, pushed on function entry and popped on exit. An instrumented
//   function that switches in its middle pushes on one fiber's shadow stack and pops on another's; a fiber's
//   last frames (after its final annotation, in Boost's fiber_entry and record) would pop the resumer's.
//   Uninstrumented, the frames here push and pop nothing, so every shadow stack stays balanced by construction.
// - ASan's fake stacks (detect_stack_use_after_return) are per fiber; a fiber that ends destroys its fake stack
//   with its last annotation, and an instrumented frame returning after that would write into the freed fake
//   stack. Uninstrumented frames have no fake frames.
// The user's code (the body and the hooks, in other files) stays instrumented: it is entered and left on one
// fiber, between switches. Boost's templates are instantiated here only, so they are uninstrumented too.
//
// Annotations per switch (X to Y):
//   ASan: __sanitizer_start_switch_fiber(&saved, Y's stack) on X before the jump (a null `saved` when X ends: its
//         fake stack is freed), __sanitizer_finish_switch_fiber(saved, &X's stack) on Y after it, which is how a
//         fiber learns its resumer's stack bounds.
//   TSan: __tsan_switch_to_fiber(Y) just before the jump; one __tsan_create_fiber per Fiber, destroyed by whoever
//         sees it end. A thread's own stack is the TSan fiber __tsan_get_current_fiber() returns there.
// Boost's first jump into a new context (in its constructor, straight back out) and the unwind's throw run
// only code of this file and of Boost's assembly, so they need no annotation.
#include "scheduler/fiber/fiber.hpp"

#include <boost/context/fiber.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#error "scheduler/fiber/fiber.cpp must be compiled without sanitizer instrumentation (see the top of the file)"
#endif

// Set by meson when the build has sanitizers (the file is then a library of its own, with its own flags);
// without them it is one of the library's sources, with nothing to annotate.
#ifndef WEFT_FIBER_ASAN
#define WEFT_FIBER_ASAN 0
#endif
#ifndef WEFT_FIBER_TSAN
#define WEFT_FIBER_TSAN 0
#endif

#if WEFT_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if WEFT_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace weft::fiber {

namespace ctx = boost::context;

// The control block of one fiber, at the top of its stack. Written only by the thread running the fiber or its
// resumer, which the owner's synchronisation orders.
struct FiberRecord : ThisFiber {
  enum class State : unsigned char { not_started, running, suspended, finished };

  ctx::fiber self;    // the fiber's context while it is not running
  ctx::fiber caller;  // the resumer's context while the fiber runs
  void* body = nullptr;
  Fiber::RunFn run = nullptr;
  Fiber::DestroyFn destroy = nullptr;
  std::exception_ptr error;  // what the body threw, for the resume() that sees it end
  FiberHook hook{};          // set by suspend_with, run by resume() after the switch
  State state = State::not_started;
  bool cancelled = false;  // destroyed before it ever ran: skip the body
  bool unwinding_now = false;
  void* stack_bottom = nullptr;  // the whole usable stack, for ASan
  std::size_t stack_size = 0;
#if WEFT_FIBER_ASAN
  const void* caller_bottom = nullptr;  // the resumer's stack, learnt from finish_switch on each arrival
  std::size_t caller_size = 0;
#endif
#if WEFT_FIBER_TSAN
  void* tsan_fiber = nullptr;
  void* caller_tsan = nullptr;  // the resumer's TSan fiber, set by it before each switch
#endif

  FiberRecord() = default;
};

namespace {

// Fiber::Resumed and the record's size fix where things go at the top of a stack: the record, then the body.
constexpr std::size_t kRecordAlign = 64;
constexpr std::size_t kMaxBodyShare = 8;  // a body may take at most 1/8 of the stack

[[nodiscard]] FiberRecord& record(ThisFiber* self) noexcept { return *static_cast<FiberRecord*>(self); }

[[nodiscard]] std::uintptr_t record_address(const FiberStack& stack) noexcept {
  return (reinterpret_cast<std::uintptr_t>(stack.top()) - sizeof(FiberRecord)) & ~(kRecordAlign - 1);
}

// Boost's stack allocator for a fiber built on a preallocated stack: Boost calls deallocate when the context ends.
// The stack is the Fiber's, and the record on it must outlive Boost's use (resume() reads it after the end), so
// the Fiber returns it to the pool, not this.
struct KeepStack {
  ctx::stack_context allocate() { std::abort(); }  // never called: the stack is preallocated
  void deallocate(ctx::stack_context&) noexcept {}
};

// --- the switches ------------------------------------------------------------------------------------------

// On the resumer: into the fiber, back when it suspends or ends (then `r.self` is empty). Also used to unwind a
// suspended fiber (`unwind`), which Boost does by throwing forced_unwind on it.
void enter(FiberRecord& r, bool unwind) {
#if WEFT_FIBER_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, r.stack_bottom, r.stack_size);
#endif
#if WEFT_FIBER_TSAN
  r.caller_tsan = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(r.tsan_fiber, 0);
#endif
  if (unwind) {
    ctx::fiber doomed = std::move(r.self);  // its destructor throws forced_unwind on the fiber and comes back
  } else {
    r.self = std::move(r.self).resume();
  }
#if WEFT_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// On the fiber: back to its resumer, and back here when resumed again (on whichever thread resumed it).
void leave(FiberRecord& r) {
#if WEFT_FIBER_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, r.caller_bottom, r.caller_size);
#endif
#if WEFT_FIBER_TSAN
  __tsan_switch_to_fiber(r.caller_tsan, 0);
#endif
  try {
    r.caller = std::move(r.caller).resume();
  } catch (const ctx::detail::forced_unwind&) {
    // Destroyed while suspended: arrived from the destroyer, which is now the one to end on.
#if WEFT_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, &r.caller_bottom, &r.caller_size);
#endif
    r.unwinding_now = true;
    throw;
  }
#if WEFT_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &r.caller_bottom, &r.caller_size);
#endif
}

// On the fiber, just before its last jump (made by Boost once the entry function returns or the unwind leaves
// it): nothing instrumented runs on this stack after this.
void leave_for_good(FiberRecord& r) noexcept {
#if WEFT_FIBER_ASAN
  __sanitizer_start_switch_fiber(nullptr, r.caller_bottom, r.caller_size);  // null: free this fiber's fake stack
#endif
#if WEFT_FIBER_TSAN
  __tsan_switch_to_fiber(r.caller_tsan, 0);
#endif
  (void)r;
}

// The fiber's entry function: runs the body, catches what it throws for the resumer, and lets only the forced
// unwind of a destroyed fiber through (Boost's entry catches it and jumps to the destroyer).
ctx::fiber trampoline(FiberRecord& r, ctx::fiber&& caller) {
  r.caller = std::move(caller);
#if WEFT_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &r.caller_bottom, &r.caller_size);  // first arrival: no fake stack yet
#endif
  if (!r.cancelled) {
    try {
      r.run(r.body, r);
    } catch (const ctx::detail::forced_unwind&) {
      r.destroy(r.body);
      r.state = FiberRecord::State::finished;
      leave_for_good(r);
      throw;
    } catch (...) {
      r.error = std::current_exception();
    }
  }
  r.destroy(r.body);
  r.state = FiberRecord::State::finished;
  leave_for_good(r);
  return std::move(r.caller);
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
  r->stack_bottom = stack.bottom();
  r->stack_size = stack.size();
#if WEFT_FIBER_TSAN
  r->tsan_fiber = __tsan_create_fiber(0);
#endif
  // Boost gets the stack below the body; it puts its own record at the top of that part.
  ctx::stack_context whole;
  whole.sp = stack.top();
  whole.size = stack.size();
  const std::size_t boost_size = static_cast<std::size_t>(static_cast<std::byte*>(body) -
                                                          static_cast<std::byte*>(stack.bottom()));
  r->self = ctx::fiber(std::allocator_arg, ctx::preallocated(body, boost_size, whole), KeepStack{},
                       [r](ctx::fiber&& caller) { return trampoline(*r, std::move(caller)); });
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
#if WEFT_FIBER_TSAN
  __tsan_destroy_fiber(r.tsan_fiber);
#endif
  r.~FiberRecord();  // drops an exception the body threw that no resume() saw (the fiber was being destroyed)
  self_ = nullptr;
  stack_.reset();
}

// Kept small, its rare paths out of line, so that LTO can inline it into a resuming loop: a `ret` after the
// switch costs a return misprediction per round trip (fcontext switches by `jmp`, which leaves the processor's
// return stack out of step), an inlined resume has none.
Fiber::Resumed Fiber::resume() {
  if (self_ == nullptr || record(self_).state == FiberRecord::State::running) [[unlikely]]
    refuse_resume();
  FiberRecord& r = record(self_);
  r.state = FiberRecord::State::running;
  enter(r, false);
  if (!r.self) [[unlikely]]
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
#if WEFT_FIBER_TSAN
  __tsan_destroy_fiber(r.tsan_fiber);
#endif
  r.~FiberRecord();
  self_ = nullptr;
  stack_.reset();
  if (error) std::rethrow_exception(std::move(error));
  return Resumed::finished;
}

}  // namespace weft::fiber
