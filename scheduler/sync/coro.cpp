// The compiled half of weft's coroutines (weft/task.hpp): which pool a coroutine is running on, where a spawned
// Task's exception goes, and how a coroutine waits on a weft::Event, WaitGroup or ConditionVariable without a
// thread. Everything else of Task, sync_wait, spawn and when_all is inline in the headers.
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "scheduler/engine/pool_access.hpp"
#include "scheduler/fiber/fiber_lot.hpp"
#include "scheduler/sync/coro_word.hpp"
#include "scheduler/sync/word_protocol.hpp"
#include "weft/condition_variable.hpp"
#include "weft/detail/coro_resumer.hpp"
#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/task.hpp"
#include "weft/wait_group.hpp"

namespace weft {
namespace detail {

Pool* coro_current_pool() noexcept { return PoolAccess::current(); }

void coro_report_error(Pool& pool, std::exception_ptr error) noexcept {
  PoolAccess::report_error(pool, std::move(error));
}

// The private word of an Event or WaitGroup, for the coroutine waits below.
struct CoroWordAccess {
  static std::atomic<std::uint32_t>& word(Event& event) noexcept { return event.state_; }
  static std::atomic<std::uint32_t>& word(WaitGroup& group) noexcept { return group.state_; }
  static std::atomic<std::uint32_t>& word(ConditionVariable& cv) noexcept { return cv.generation_; }
};

}  // namespace detail

namespace sync {
namespace {

namespace word = sync::word;
using detail::kWordValue;
using detail::kWordWaiters;
using Lot = fiber::BasicFiberLot<>;

// The coroutines parked on a primitive's word, by the word's address: the fiber lot's protocol (its Dekker
// pairing and bucket locks, model-checked in tests/fiber/fiber_lot_model.cpp), a lot of its own, so that the
// fibers' wake-ups never scan coroutines and a build without fibers has it too.
Lot coro_lot;

enum class Kind : std::uint8_t { manual, automatic, group, generation };

// One coroutine's wait on a word, on the heap (the awaiter in its frame only points here): the lot's entry,
// what to resume and where. Freed just before the coroutine resumes.
struct WordAwait {
  Lot::Waiter waiter;
  std::atomic<std::uint32_t>* word = nullptr;
  Kind kind = Kind::manual;
  std::coroutine_handle<> handle;
  Pool* pool = nullptr;  // where it resumes (the pool whose task suspended); null: on the waking thread
  bool* dropped = nullptr;
  std::uint32_t seen = 0;  // Kind::generation: the generation read under the mutex; any other value is a notify
};

// What trying a wait once more came to.
enum class Outcome : std::uint8_t {
  resume,   // it may resume: the event is set, the count is zero, an Auto release was taken, a notify came
  parked,   // it is parked in the lot: another thread owns it now, and nothing of it is touched after
  refused,  // not ready, and its pool has stopped: it resumes with task_dropped (drop below)
};

// Tries the wait once more (see Outcome).
// Follows word::sleep: announce kWordWaiters with a CAS from a value that is not ready, then park only while the
// word still holds it (the lot checks under its bucket's lock). The notifier's RMW clears the bit and, having
// read it, wakes the word (PrimitiveParking::wake_all in wait_primitives.cpp, which also reaches this lot).
Outcome try_or_park(WordAwait& w) noexcept {
  std::atomic<std::uint32_t>& atom = *w.word;
  // acquire: a value that says ready makes what its notifier did before visible to the resumed coroutine.
  std::uint32_t seen = atom.load(std::memory_order_acquire);
  for (;;) {
    const std::uint32_t value = seen & kWordValue;
    switch (w.kind) {
      case Kind::manual:
        if ((value & word::kEventSet) != 0) return Outcome::resume;
        break;
      case Kind::group:
        if (value == 0) return Outcome::resume;
        break;
      case Kind::generation:
        if (value != w.seen) return Outcome::resume;
        break;
      case Kind::automatic:
        if (word::auto_releases(value) != 0) {
          if (word::auto_take(atom)) return Outcome::resume;  // acquire inside: pairs with auto_signal's release
          seen = atom.load(std::memory_order_acquire);
          continue;
        }
        break;
    }
    if ((seen & kWordWaiters) == 0) {
      // acquire, on success and on failure: a failure's value is judged for readiness at the loop's top, and a
      // ready one must make its notifier's writes visible (success only announces; acquire there costs nothing
      // more on x86 and keeps the failure order no stronger than the success order, as the standard asks).
      if (!atom.compare_exchange_weak(seen, seen | kWordWaiters, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
        continue;
      }
      seen |= kWordWaiters;
    }
    // A stopped pool resumes nothing: the wait is refused rather than parked for good. The lot reads the same
    // test again under its bucket's lock (after its fence), so a stop that comes after this look either finds the
    // wait in the lot (the stopped hook's take_owned) or is seen there; then the loop comes back here.
    const auto stopped = [&w]() noexcept { return w.pool != nullptr && detail::PoolAccess::stopped(*w.pool); };
    if (stopped()) return Outcome::refused;
    w.waiter.word = &atom;
    w.waiter.owner = w.pool;
    w.waiter.payload = &w;
    if (coro_lot.enqueue_if(atom, seen, w.waiter, stopped)) return Outcome::parked;
    seen = atom.load(std::memory_order_acquire);  // the word changed meanwhile: judge the new value
  }
}

// Resumes the coroutine of a finished wait: frees the wait first (the coroutine may destroy the primitive).
void finish(WordAwait* w, bool dropped) noexcept {
  const std::coroutine_handle<> handle = w->handle;
  bool* const flag = w->dropped;
  delete w;
  if (dropped) *flag = true;
  handle.resume();
}

// A wait that will not take a signal (its pool stopped or refused it): an Auto wait leaves the event's count of
// waits in progress, consuming no release.
void leave_if_auto(const WordAwait& w) noexcept {
  if (w.kind == Kind::automatic) (void)word::auto_leave(*w.word, true);
}

// Resumes, with task_dropped, a wait that its pool will never resume.
void drop(WordAwait* w) noexcept {
  leave_if_auto(*w);
  finish(w, true);
}

// Runs a woken wait on the pool it came from: tries again, and resumes the coroutine or parks it again (a wake-up
// may be spurious: another waiter took an Auto release first, or the wake was meant for an earlier object at the
// same address).
class WokenWait {
 public:
  explicit WokenWait(WordAwait* w) noexcept : w_(w) {}
  WokenWait(WokenWait&& other) noexcept : w_(std::exchange(other.w_, nullptr)) {}
  WokenWait& operator=(WokenWait&&) = delete;
  WokenWait(const WokenWait&) = delete;
  WokenWait& operator=(const WokenWait&) = delete;
  // Never run (the pool refused it, or dropped it at a shutdown): the coroutine resumes here, and its co_await
  // throws weft::task_dropped.
  ~WokenWait() {
    if (w_ != nullptr) drop(std::exchange(w_, nullptr));
  }
  void operator()() noexcept {
    WordAwait* const w = std::exchange(w_, nullptr);
    switch (try_or_park(*w)) {
      case Outcome::resume:
        finish(w, false);
        break;
      case Outcome::parked:
        break;
      case Outcome::refused:
        drop(w);
        break;
    }
  }

 private:
  WordAwait* w_;
};

void on_wake(WordAwait* w) noexcept {
  if (w->pool == nullptr) {
    WokenWait{w}();  // awaited outside any pool: continues on the waking thread
    return;
  }
  try {
    w->pool->post(WokenWait(w));
  } catch (...) {
    // Refused: the WokenWait's destructor has resumed the coroutine with task_dropped.
  }
}

// The end of a co_await's first try: true if the coroutine suspends (parked: the lot's wake-up owns the wait now);
// false if it goes on at once, ready or, its pool stopped, with *dropped set (an Auto wait has left its count).
bool suspend_or_not(std::unique_ptr<WordAwait> w) noexcept {
  switch (try_or_park(*w)) {
    case Outcome::resume:
      return false;
    case Outcome::parked:
      (void)w.release();
      return true;
    case Outcome::refused:
      leave_if_auto(*w);
      *w->dropped = true;
      return false;
  }
  return false;
}

// Throws std::bad_alloc (nothing counted or parked then) and, for a full Auto event, std::length_error.
bool await_word(std::atomic<std::uint32_t>& atom, Kind kind, std::coroutine_handle<> handle, bool* dropped) {
  auto w = std::make_unique<WordAwait>();  // first: nothing below may fail once an Auto wait is counted
  w->word = &atom;
  w->kind = kind;
  w->handle = handle;
  w->pool = detail::coro_current_pool();
  w->dropped = dropped;
  if (kind == Kind::automatic) {
    switch (word::auto_join(atom)) {
      case word::AutoJoin::taken:
        return false;
      case word::AutoJoin::full:
        throw std::length_error("co_await weft::Event: " + std::to_string(detail::kEventMaxWaits) +
                                " waits are in progress on this Mode::Auto event already, the most it counts");
      case word::AutoJoin::waiting:
        break;
    }
  }
  return suspend_or_not(std::move(w));
}

bool await_notify(std::atomic<std::uint32_t>& generation, std::unique_lock<std::mutex>& lock,
                  std::coroutine_handle<> handle, bool* dropped) {
  auto w = std::make_unique<WordAwait>();  // first: a failure leaves the lock held, nothing parked
  w->word = &generation;
  w->kind = Kind::generation;
  w->handle = handle;
  w->pool = detail::coro_current_pool();
  w->dropped = dropped;
  // Read with the mutex held, as ConditionVariable::wait does: a notify after the caller checked its condition
  // (under the mutex) bumps the generation past this value, so the wait below cannot miss it.
  w->seen = generation.load(std::memory_order_acquire) & kWordValue;
  lock.unlock();
  return suspend_or_not(std::move(w));  // not suspended: await_resume locks again, unless dropped
}

// engine::StoppedHook: the waits parked for `pool` resume here with task_dropped (the pool has stopped and will
// never run them; finish_shutdown calls this after its workers joined).
void drop_parked(Pool& pool) noexcept {
  Lot::Waiter* taken = coro_lot.take_owned(&pool);
  while (taken != nullptr) {
    Lot::Waiter* const next = taken->next;  // read first: the wait is freed as it resumes
    drop(static_cast<WordAwait*>(taken->payload));
    taken = next;
  }
}

// Installs drop_parked before main: a program that parks coroutines links this file, and with it this object.
struct InstallStoppedHook {
  InstallStoppedHook() noexcept { engine::set_stopped_hook(&drop_parked); }
};
const InstallStoppedHook install_stopped_hook;

}  // namespace

void coro_wake_word(std::atomic<std::uint32_t>& word) noexcept {
  Lot::Waiter* taken = coro_lot.take(&word, true);
  while (taken != nullptr) {
    Lot::Waiter* const next = taken->next;  // read first: the wait may resume and be freed
    on_wake(static_cast<WordAwait*>(taken->payload));
    taken = next;
  }
}

}  // namespace sync

namespace detail {

bool coro_await_event(Event& event, std::coroutine_handle<> handle, bool* dropped) {
  const auto kind = event.mode() == Event::Mode::Auto ? sync::Kind::automatic : sync::Kind::manual;
  return sync::await_word(CoroWordAccess::word(event), kind, handle, dropped);
}

bool coro_await_group(WaitGroup& group, std::coroutine_handle<> handle, bool* dropped) {
  return sync::await_word(CoroWordAccess::word(group), sync::Kind::group, handle, dropped);
}

bool coro_await_notify(ConditionVariable& cv, std::unique_lock<std::mutex>& lock, std::coroutine_handle<> handle,
                       bool* dropped) {
  if (coro_current_pool() == nullptr) {
    // On a plain thread (sync_wait's, before the first suspension): a wake-up there would resume the coroutine
    // inside the notifier's notify, where it would lock the mutex the notifier may hold. It blocks instead, as
    // any plain thread's wait does.
    cv.wait(lock);
    return false;
  }
  return sync::await_notify(CoroWordAccess::word(cv), lock, handle, dropped);
}

}  // namespace detail
}  // namespace weft
