// Fibers: a function running on its own FiberStack, switched to and from explicitly, on Boost.Context's fcontext
// fibers (fiber.cpp), or on weft's own switch where weft is built without Boost.Context (fiber_switch.cpp: MinGW-w64
// on x86-64 Windows). Only compiled when weft is built with fibers (WEFT_FIBERS=1: `fibers` allowed, and
// Boost.Context found where it is the switch).
//
// The model is asymmetric: whoever calls Fiber::resume() (a thread's own stack or another fiber) runs the fiber
// until it calls ThisFiber::suspend() or its body ends; control then returns from resume(). A suspended fiber may be
// resumed by any thread (it migrates); calls on one Fiber must be ordered by the caller's own synchronisation.
//
// Invariants and the reasons for them:
// - Save, then publish. ThisFiber::suspend_then(hook) runs `hook` on the resumer's side after the fiber's context
//   has been saved, so the hook may hand the fiber to another thread (a wait list, a run queue) and that thread
//   may resume it at once: a fiber that published itself before its context was saved could be resumed while
//   still running on its old stack (a double resume). After the hook, resume() touches nothing of the Fiber.
// - Exceptions: the body's exception is caught on the fiber and rethrown by the resume() that saw the body end;
//   the fiber has then finished and its stack is back in the pool. Never suspend inside a `catch` block: the
//   C++ runtime keeps the exception being handled per thread, so the handler would end on the wrong thread (or
//   pop another fiber's exception) after a switch.
// - A Fiber destroyed while suspended is unwound: suspend() throws the switch's forced unwind inside it
//   (boost::context::detail::forced_unwind, or fiber_switch.cpp's own; neither is a std::exception), the
//   destructors on its stack run, and its stack returns to the pool. Code on a fiber must let that exception
//   pass: a `catch (...)` on a fiber rethrows when ThisFiber::unwinding() is true.
// - Sanitizers: every switch is annotated for AddressSanitizer (stack bounds and fake stacks) and ThreadSanitizer
//   (one TSan fiber per Fiber). fiber.cpp, which holds every switch, is compiled without the sanitizers'
//   instrumentation so that no instrumented frame spans a switch; see fiber.cpp.
// - thread_local after a switch: a fiber that migrated runs on another thread, but the compiler may reuse a
//   thread_local's address computed before the switch. Read thread_locals on a path after a switch through an
//   accessor declared with WEFT_FIBER_SAFE_TLS.
#pragma once

#if !defined(WEFT_FIBERS) || !WEFT_FIBERS
#error "scheduler/fiber/fiber.hpp needs a weft built with fibers (WEFT_FIBERS=1: Boost.Context found, -Dfibers allowed)"
#endif

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "scheduler/fiber/fiber_stack.hpp"
#include "scheduler/fiber/safe_tls.hpp"

namespace weft::fiber {

class Fiber;

// A callback the resumer runs after a fiber suspended with suspend_then (see Fiber::resume). Must not throw.
struct FiberHook {
  // Called as call(context, suspended) once the fiber is saved; null for a plain suspend().
  void (*call)(void* context, Fiber& suspended) noexcept = nullptr;
  // Passed back to `call` (suspend_then: the hook object).
  void* context = nullptr;
};

// The running fiber's view of itself, passed to its body. Valid while the body runs.
class ThisFiber {
 public:
  ThisFiber(const ThisFiber&) = delete;
  ThisFiber& operator=(const ThisFiber&) = delete;

  // Switches back to whoever resumed this fiber; returns when the fiber is resumed again (perhaps on another
  // thread). Throws the forced unwind (above) if the Fiber is destroyed meanwhile: let it pass.
  void suspend();
  // Like suspend(), but `hook(fiber)` runs on the resumer's side once this fiber's context is saved, with the
  // suspended Fiber; from then on the hook's owner may resume it on any thread. `hook` must not throw; it is
  // called through a reference, so it must outlive the call (a local of the caller is fine).
  template <class Hook>
    requires std::is_nothrow_invocable_v<Hook&, Fiber&>
  void suspend_then(Hook& hook) {
    suspend_with(FiberHook{.call = [](void* context,
                                      Fiber& fiber) noexcept { std::invoke(*static_cast<Hook*>(context), fiber); },
                           .context = &hook});
  }
  // suspend_then with a type-erased hook.
  void suspend_with(FiberHook hook);
  // True while this fiber is being unwound because its Fiber was destroyed while suspended: a `catch (...)` on
  // the fiber must then rethrow.
  [[nodiscard]] bool unwinding() const noexcept;

 private:
  friend struct FiberRecord;  // fiber.cpp: the whole control block, of which this is the public face
  ThisFiber() = default;
  ~ThisFiber() = default;
};

// A fiber: its stack, and the body running (or to run) on it. Move-only; owned by whoever may resume it.
class Fiber {
 public:
  // What resume() came back from.
  enum class Resumed : unsigned char { suspended, finished };

  // No fiber.
  Fiber() noexcept = default;
  // A fiber that will run `body(this_fiber)` on `stack` when first resumed; the body is moved onto the top of the
  // stack. Throws std::invalid_argument naming weft::fiber::Fiber if `stack` is empty (acquire() at the pool's
  // bound: the caller must fall back) or too small for the body.
  template <class Body>
    requires std::is_invocable_v<std::decay_t<Body>&, ThisFiber&>
  Fiber(FiberStack stack, Body&& body) {
    using Stored = std::decay_t<Body>;
    void* storage = body_storage(stack, sizeof(Stored), alignof(Stored));
    Stored* stored = ::new (storage) Stored(std::forward<Body>(body));
    start(
        std::move(stack), stored, [](void* b, ThisFiber& self) { std::invoke(*static_cast<Stored*>(b), self); },
        [](void* b) noexcept { static_cast<Stored*>(b)->~Stored(); });
  }
  // Takes `other`'s fiber; `other` becomes empty.
  Fiber(Fiber&& other) noexcept : self_(std::exchange(other.self_, nullptr)), stack_(std::move(other.stack_)) {}
  // Destroys this fiber (as ~Fiber does), then takes `other`'s.
  Fiber& operator=(Fiber&& other) noexcept {
    if (this != &other) {
      if (self_ != nullptr) destroy();
      self_ = std::exchange(other.self_, nullptr);
      stack_ = std::move(other.stack_);
    }
    return *this;
  }
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  // A fiber never resumed ends without running its body; a suspended one is unwound (its destructors run). Either
  // way its stack returns to its pool. Destroying a running fiber (from its own body) aborts.
  ~Fiber() {
    if (self_ != nullptr) destroy();
  }

  // Runs the fiber (from its start, or from where it suspended) until it suspends or its body ends. If it
  // suspended with suspend_then, the hook runs before this returns, and this returns `suspended` without touching
  // the Fiber afterwards. If the body ended, the fiber's stack is back in its pool, the Fiber is empty, and the
  // body's exception, if it threw, is rethrown here. Resuming an empty or running fiber throws std::logic_error.
  [[nodiscard]] Resumed resume();
  // True if this holds a fiber that has not finished.
  [[nodiscard]] explicit operator bool() const noexcept { return self_ != nullptr; }
  // The fiber's own view of itself, for a resumer to hand to the code that runs on it (null if empty).
  [[nodiscard]] ThisFiber* this_fiber() const noexcept { return self_; }
  // The stack it runs on (empty if the Fiber is).
  [[nodiscard]] const FiberStack& stack() const noexcept { return stack_; }

 private:
  friend struct FiberRecord;
  using RunFn = void (*)(void* body, ThisFiber& self);
  using DestroyFn = void (*)(void* body) noexcept;
  // Where the body goes on `stack` (below the fiber's control block); checks the stack.
  [[nodiscard]] static void* body_storage(const FiberStack& stack, std::size_t size, std::size_t align);
  // Builds the control block and the suspended context; the body is already in place. Destroys the body if it
  // fails.
  void start(FiberStack stack, void* body, RunFn run, DestroyFn destroy);
  void destroy() noexcept;
  // resume()'s rare paths, out of line: misuse (throws std::logic_error), and the body's end.
  [[noreturn, gnu::noinline, gnu::cold]] void refuse_resume() const;
  [[gnu::noinline]] Resumed finished();

  ThisFiber* self_ = nullptr;  // the control block, at the top of stack_
  FiberStack stack_;
};

}  // namespace weft::fiber
