// weft::Semaphore and how a run's nodes take and give back its units (docs/graph.md, "Semaphores").
//
// Each semaphore has a mutex, held only for a few instructions per take or give: a node with semaphores is
// never on the in-place path, so a lock per semaphore per execution is not where a graph's time goes, and the
// protocol below is then plain to check (no Relacy model).
//
// Taking (take_semaphores): the node's needs are tried one semaphore at a time, each under its own lock. If one
// lacks units, the node is parked on it under that same lock, holding a unit of its run so the run cannot end,
// and then gives back what it took of the others. A release (give) adds its units under the lock and unlinks
// the waiters that now fit, first parked first, and re-posts them after unlocking; each retries all-or-nothing.
//
// No lost wake-up: a node parks only after seeing, under the semaphore's lock, too few units; every later
// increase of the units goes through give() under that lock, which looks at the waiters. A woken node that
// does not take its units of the semaphore that woke it hands the wake-up on (give with 0 units), so the
// waiters behind it are looked at again; one that fails to take them found them taken by another node, whose
// release will look again. Hence: while a node waits, some node holds units of its semaphore, or a woken node
// is on its way.
#include "weft/semaphore.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "graph/run_state.hpp"
#include "weft/errors.hpp"

namespace weft {

Semaphore::Semaphore(std::size_t count) : count_(count), available_(count) {
  if (count == 0)
    throw invalid_option(
        "weft::Semaphore: count = 0: must be at least 1 (a semaphore of no units would never let a node start)");
}

Semaphore::~Semaphore() {
  const std::size_t available = available_.load(std::memory_order_acquire);
  const std::size_t waiting = waiting_.load(std::memory_order_acquire);
  if (available == count_ && waiting == 0 && head_ == nullptr) return;
  // A run still uses it: its nodes would touch freed memory. Report instead of corrupting.
  std::fprintf(stderr,
               "weft::Semaphore destroyed while %zu of its %zu units are taken and %zu nodes wait for it: a "
               "semaphore must outlive every run that uses it\n",
               count_ - available, count_, waiting);
  std::abort();
}

namespace detail {

// The semaphore's lock and waiters, for graph/semaphore.cpp only.
class SemaphoreAccess {
 public:
  // Takes `units` if there are that many; else, if may_park() (called under the lock) allows it, appends
  // `waiter`. Returns true if taken.
  template <class MayPark>
  static bool take_or_park(Semaphore& semaphore, std::size_t units, graph::SemaphoreWaiter& waiter, bool& parked,
                           MayPark may_park) {
    const std::lock_guard<std::mutex> hold(semaphore.lock_);
    const std::size_t available = semaphore.available_.load(std::memory_order_relaxed);
    parked = false;
    if (available >= units) {
      semaphore.available_.store(available - units, std::memory_order_relaxed);
      return true;
    }
    if (!may_park()) return false;
    waiter.next = nullptr;
    waiter.units = units;
    if (semaphore.tail_ == nullptr) {
      semaphore.head_ = &waiter;
    } else {
      semaphore.tail_->next = &waiter;
    }
    semaphore.tail_ = &waiter;
    semaphore.waiting_.fetch_add(1, std::memory_order_relaxed);
    parked = true;
    return false;
  }

  // Gives `units` back (0: only looks at the waiters again) and unlinks the waiters to re-post: from the first
  // parked, while the units they need fit in what is available (less what the ones before them need). The
  // first that does not fit stops the walk, so a node needing several units is not overtaken forever by nodes
  // needing one. Returns them linked through `next`, each with woken_from set.
  [[nodiscard]] static graph::SemaphoreWaiter* give(Semaphore& semaphore, std::size_t units) noexcept {
    const std::lock_guard<std::mutex> hold(semaphore.lock_);
    const std::size_t available = semaphore.available_.load(std::memory_order_relaxed) + units;
    semaphore.available_.store(available, std::memory_order_relaxed);
    return wake_locked(semaphore, available);
  }

  // Unlinks every waiter of `run` (its run was cancelled) and then wakes as give(semaphore, 0) does: with them
  // gone, those behind may fit. Returns all of them, linked through `next`.
  [[nodiscard]] static graph::SemaphoreWaiter* remove_run(Semaphore& semaphore, const graph::RunState* run) noexcept {
    const std::lock_guard<std::mutex> hold(semaphore.lock_);
    graph::SemaphoreWaiter* removed = nullptr;
    graph::SemaphoreWaiter** removed_end = &removed;
    graph::SemaphoreWaiter* kept_tail = nullptr;
    std::size_t count = 0;
    for (graph::SemaphoreWaiter** at = &semaphore.head_; *at != nullptr;) {
      graph::SemaphoreWaiter* const waiter = *at;
      if (waiter->run != run) {
        kept_tail = waiter;
        at = &waiter->next;
        continue;
      }
      *at = waiter->next;
      waiter->next = nullptr;
      *removed_end = waiter;
      removed_end = &waiter->next;
      ++count;
    }
    semaphore.tail_ = kept_tail;
    semaphore.waiting_.fetch_sub(count, std::memory_order_relaxed);
    *removed_end = wake_locked(semaphore, semaphore.available_.load(std::memory_order_relaxed));
    return removed;
  }

 private:
  [[nodiscard]] static graph::SemaphoreWaiter* wake_locked(Semaphore& semaphore, std::size_t budget) noexcept {
    graph::SemaphoreWaiter* woken = nullptr;
    graph::SemaphoreWaiter** woken_end = &woken;
    std::size_t count = 0;
    while (semaphore.head_ != nullptr && semaphore.head_->units <= budget) {
      graph::SemaphoreWaiter* const waiter = semaphore.head_;
      budget -= waiter->units;
      semaphore.head_ = waiter->next;
      waiter->next = nullptr;
      waiter->woken_from = &semaphore;
      *woken_end = waiter;
      woken_end = &waiter->next;
      ++count;
    }
    if (semaphore.head_ == nullptr) semaphore.tail_ = nullptr;
    semaphore.waiting_.fetch_sub(count, std::memory_order_relaxed);
    return woken;
  }
};

}  // namespace detail
}  // namespace weft

namespace weft::graph {
namespace {

// Re-posts each waiter of a list that give() or remove_run() returned. Reads a waiter's fields before
// re-posting it: once posted, its node may run and park again, relinking it.
void resume_all(SemaphoreWaiter* list) noexcept {
  while (list != nullptr) {
    SemaphoreWaiter* const next = list->next;
    RunState* const run = list->run;
    const std::uint32_t node = list->node;
    run->resume_parked(node);  // may end that run: `list` is not touched after this
    list = next;
  }
}

}  // namespace

std::uint32_t GraphImpl::semaphore_slot(std::uint32_t node) const noexcept {
  const auto found = std::lower_bound(semaphore_nodes_.begin(), semaphore_nodes_.end(), node,
                                      [](const SemaphoreNode& entry, std::uint32_t n) { return entry.node < n; });
  return static_cast<std::uint32_t>(found - semaphore_nodes_.begin());
}

void RunState::run_node_with_semaphores(std::uint32_t node) noexcept {
  switch (take_semaphores(node)) {
    case Take::parked:
      return;  // whoever gives units back re-posts it
    case Take::skip:
      run_node(node);  // cancelled: execute() skips the body, and the run goes on to its successors as usual
      return;
    case Take::taken:
      break;
  }
  const std::size_t branch = execute(node, 0);  // joins the node's subflow; a condition's pick
  const std::uint32_t slot = graph_.semaphore_slot(node);
  const SemaphoreNode& entry = graph_.semaphore_nodes()[slot];
  give_semaphores(slot, 0, entry.end - entry.begin);  // before any successor starts
  run_node_successors(node, branch);
}

RunState::Take RunState::take_semaphores(std::uint32_t node) noexcept {
  const std::uint32_t slot = graph_.semaphore_slot(node);
  const SemaphoreNode& entry = graph_.semaphore_nodes()[slot];
  const SemaphoreNeed* const needs = graph_.semaphore_needs() + entry.begin;
  const std::uint32_t count = entry.end - entry.begin;
  SemaphoreWaiter& waiter = semaphore_waiters_[slot];
  // The semaphore whose release re-posted this task (if one did) is tried first: see the file's comment.
  Semaphore* const woken_from = std::exchange(waiter.woken_from, nullptr);
  if (cancelled()) {
    if (woken_from != nullptr) resume_all(detail::SemaphoreAccess::give(*woken_from, 0));  // hand the wake-up on
    return Take::skip;
  }
  std::uint32_t start = 0;
  while (woken_from != nullptr && needs[start].semaphore != woken_from) ++start;
  for (std::uint32_t taken = 0; taken != count; ++taken) {
    const SemaphoreNeed& need = needs[(start + taken) % count];
    bool parked = false;
    const bool ok = detail::SemaphoreAccess::take_or_park(*need.semaphore, need.units, waiter, parked, [this] {
      // Under the semaphore's lock, so that a cancel either sees this node parked (wake_parked_on_cancel takes
      // the same lock) or is seen here.
      if (cancelled()) return false;
      add_unit();  // the parked node's: the run cannot end while it waits
      return true;
    });
    if (ok) continue;
    // After parking (or not), the units taken so far go back: their release may wake others, even this node.
    give_semaphores(slot, start, taken);
    return parked ? Take::parked : Take::skip;
  }
  return Take::taken;
}

void RunState::give_semaphores(std::uint32_t slot, std::uint32_t start, std::uint32_t count) noexcept {
  const SemaphoreNode& entry = graph_.semaphore_nodes()[slot];
  const SemaphoreNeed* const needs = graph_.semaphore_needs() + entry.begin;
  const std::uint32_t size = entry.end - entry.begin;
  for (std::uint32_t i = 0; i != count; ++i) {
    const SemaphoreNeed& need = needs[(start + i) % size];
    resume_all(detail::SemaphoreAccess::give(*need.semaphore, need.units));
  }
}

void RunState::resume_parked(std::uint32_t node) noexcept {
  // ready() posts it with a unit of its own (or, refused, fails the run with task_dropped); then the unit it
  // held while parked ends. The unit this thread holds (a task of any run, or none) plays no part.
  ready(node);
  finish_unit();
}

void RunState::semaphore_task_dropped(std::uint32_t node) noexcept {
  SemaphoreWaiter& waiter = semaphore_waiters_[graph_.semaphore_slot(node)];
  if (Semaphore* const woken_from = std::exchange(waiter.woken_from, nullptr))
    resume_all(detail::SemaphoreAccess::give(*woken_from, 0));
}

bool RunState::try_add_unit() noexcept {
  std::uint64_t now = pending_.load(std::memory_order_relaxed);
  while (now != 0) {
    if (pending_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

void RunState::wake_parked_on_cancel() noexcept {
  if (semaphore_waiters_ == nullptr) return;  // no node of the graph has semaphores
  // Cancel may come from outside the run, after it ended and its graph was changed or destroyed: a unit of
  // the run keeps the graph's layout valid while the semaphores are walked.
  if (!try_add_unit()) return;
  for (Semaphore* const semaphore : graph_.semaphores())
    resume_all(detail::SemaphoreAccess::remove_run(*semaphore, this));
  finish_unit();
}

}  // namespace weft::graph
