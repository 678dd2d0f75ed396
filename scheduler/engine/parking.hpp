// Parking: how idle workers go to sleep and how producers wake them, with no lost wake-up and at most one
// futex call in flight at a time (scheduler/engine/worker_loop.cpp drives it; tests/parking has its Relacy model).
//
// The protocol, for a worker:
//
//   begin_search(woken)      // counted as a searcher: producers may skip waking anyone
//   ... look for work ...
//   if (end_search() && more work is visible) notify();   // the last searcher hands over
//   if nothing was found:
//     if (auto key = prepare_park(has_work)) sleep(*key, timeout);
//     woken = true           // whatever the reason park returned
//
// and for a producer: publish the work (any store), then notify().
//
// Where Linux offers membarrier (src/process_barrier.hpp), notify() orders its publish with a compiler barrier
// while nobody sleeps, and prepare_park() pays for both sides with a system call: see the constructor.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "scheduler/engine/event_count.hpp"

namespace weft::engine {

template <atomics::MemoryModel M = atomics::StdMemoryModel>
class BasicParking {
 public:
  using Events = BasicEventCount<M>;
  using Key = typename Events::Key;

  // `asymmetric`: producers order their publish before the look for sleepers with a compiler barrier, and a
  // parking worker pays for both sides with M::heavy_barrier() (src/process_barrier.hpp). Defaults to whether
  // the OS offers that barrier; false gives the plain protocol, a seq_cst fence on each side.
  explicit BasicParking(bool asymmetric = M::heavy_barrier_available()) noexcept : asymmetric_(asymmetric) {}
  BasicParking(const BasicParking&) = delete;
  BasicParking& operator=(const BasicParking&) = delete;

  // Producer: work was just published. Wakes one sleeping worker unless a worker is searching (it will find
  // the work) or a wake is already in flight (the woken worker will search, and find it).
  void notify() noexcept {
    if (asymmetric_) {
      // The common case, every worker busy, without a fence: the light barrier and the heavy one in
      // prepare_park() act as the two fences of the handshake below, so either we see the announcement of a
      // worker about to sleep or its check sees our work. Seeing one, we go on as the plain protocol does.
      if (WEFT_PLANTED("parking.look_before_barrier")) {
        if (events_.waiters() == 0) return;  // planted bug: the look is not ordered after our publish
        M::light_barrier();
      } else {
        M::light_barrier();
        if (events_.waiters() == 0) return;
      }
    }
    // seq_cst fence: orders our publish before the loads below. Either we see a searcher, or its re-check
    // after end_search() and prepare_park() sees our work (both sides fence; scheduler/engine/event_count.hpp).
    M::thread_fence(std::memory_order_seq_cst);
    // Nobody announced as a sleeper: a worker that announces later sees our work in prepare_park()'s check,
    // and every other worker is awake and will search. Looked at first because in a burst every worker is
    // busy: the sleepers' line then stays unchanged in our cache, while searching_ changes whenever a worker
    // runs dry (reading it first cost the submitter a cache miss per post).
    if (events_.waiters() == 0) return;
    if (searching_.load(std::memory_order_relaxed) > 0) return;
    if (wake_in_flight_.load(std::memory_order_relaxed)) return;
    // seq_cst: the flag is half of the handshake in prepare_park(); see there.
    if (wake_in_flight_.exchange(true, std::memory_order_seq_cst)) return;
    // The flag now promises a worker on its way to search. notify_one() returning true means some worker
    // was announced as a waiter; every announced worker either leaves park() (and clears the flag in
    // begin_search), or announced after our flag store and sees it in prepare_park(), which then does not
    // sleep. So the promise is kept by someone.
    if (!events_.notify_one()) {
      // Nobody to wake: take the promise back.
      wake_in_flight_.store(false, std::memory_order_seq_cst);
      // A producer that published while our flag was up skipped its wake, and a worker may have started to
      // park since our look. Look once more now the flag is down: this notify's fence sees that worker's
      // announcement, or that worker's check sees the skipped producer's work.
      if (!WEFT_PLANTED("parking.no_second_look")) {
        (void)events_.notify_one();
      }
    }
  }

  // Producer: puts back work it had taken out of sight (an outside thread's pop of a task it may not run
  // itself, Engine::help_from_own_slot), through `put_back`, then announces it as new work. While the work was
  // out, a searcher found nothing and may have parked: the notify of its first publish is spent, so without a
  // second one every worker can sleep beside it.
  template <class PutBack>
  void republish(PutBack&& put_back) noexcept(noexcept(put_back())) {
    put_back();
    if (!WEFT_PLANTED("parking.put_back_unannounced")) notify();
  }

  // Wakes every sleeping worker (work only a given worker may take, shutdown). Does not touch the promise.
  void notify_all() noexcept { events_.notify_all(); }

  // Worker: starts a search for work. `woken`: the worker has left park() since its last search (woken,
  // timed out, or it did not sleep at all): it keeps the promise of any wake in flight by clearing the flag.
  void begin_search(bool woken) noexcept {
    // seq_cst: pairs with the fence in notify(): a producer either sees this count or published before it,
    // and then our search finds its work.
    searching_.fetch_add(1, std::memory_order_seq_cst);
    if (woken) {
      // Cleared only after counting ourselves above, so producers never see neither a searcher nor a wake in
      // flight. The fence: a producer that saw the flag still set published before its fence, so our search,
      // which comes after, sees its work.
      wake_in_flight_.store(false, std::memory_order_seq_cst);
      M::thread_fence(std::memory_order_seq_cst);
    }
  }

  // Worker: ends a search. Returns true if it was the last searcher: producers skipped waking anyone while it
  // searched, so if it found work and more is visible it must notify() for the rest.
  [[nodiscard]] bool end_search() noexcept {
    // seq_cst: pairs with the fence in notify(); the fence orders the decrement before the caller's next look.
    const bool last = searching_.fetch_sub(1, std::memory_order_seq_cst) == 1;
    if (last) M::thread_fence(std::memory_order_seq_cst);
    return last;
  }

  // Worker, after a search found nothing: announces itself as a sleeper, then looks once more. Returns the
  // key to sleep() on, or nothing if has_work() holds or a wake is in flight (the caller then searches again,
  // as woken). The promise check is what keeps notify()'s promise when this worker announced itself just
  // after a producer's notify_one() counted it: this worker may read the epoch that notify already bumped,
  // so sleep() would not return for it; were the work then taken by another worker, this one would sleep
  // with the flag up and every later notify() would skip its wake (a hang graph_differential hit under TSan).
  template <class HasWork>
  [[nodiscard]] std::optional<Key> prepare_park(HasWork&& has_work) noexcept {
    // prepare_wait's seq_cst RMW and fence: the checks below are ordered after it, and a notify() whose
    // fence comes later sees this announcement.
    const Key key = events_.prepare_wait();
    // The other half of notify()'s light barrier: a producer whose look for sleepers missed our announcement
    // published before it, and the checks below see its work. Costs a system call per park, against a fence
    // saved on every post and spawn.
    if (asymmetric_) M::heavy_barrier();
    if (!WEFT_PLANTED("parking.park_ignores_promise")) {
      // seq_cst: if the producer's exchange precedes our announcement in S, we see the flag; otherwise its
      // waiter count, read after its fence, sees us and the bump it makes is one our key predates.
      if (wake_in_flight_.load(std::memory_order_seq_cst)) {
        events_.cancel_wait();
        return std::nullopt;
      }
    }
    if (has_work()) {
      events_.cancel_wait();
      return std::nullopt;
    }
    return key;
  }

  // Worker: sleeps on a key from prepare_park() until a notify (returns true) or `timeout` (returns false;
  // nanoseconds::max() waits without one).
  bool sleep(Key key, std::chrono::nanoseconds timeout) noexcept {
    if (timeout == std::chrono::nanoseconds::max()) {
      events_.wait(key);
      return true;
    }
    return events_.wait_for(key, timeout);
  }

  // Snapshots for statistics and tests.
  [[nodiscard]] bool wake_in_flight() const noexcept { return wake_in_flight_.load(std::memory_order_relaxed); }
  [[nodiscard]] unsigned sleepers() const noexcept { return events_.waiters(); }
  [[nodiscard]] int searchers() const noexcept { return searching_.load(std::memory_order_relaxed); }

 private:
  const bool asymmetric_;  // see the constructor
  // Workers searching for work before they park. While one is, producers need not wake anyone.
  alignas(atomics::kCacheLine) typename M::template atomic<int> searching_{0};
  // A producer woke a sleeper that has not started searching yet: further producers need not wake another.
  typename M::template atomic<bool> wake_in_flight_{false};
  Events events_;
};

using Parking = BasicParking<>;

}  // namespace weft::engine
