// weft::PerWorker<T>: one value of T per thread that runs a pool's tasks, like tbb::combinable and
// tbb::enumerable_thread_specific, for reductions that do not fit parallel_reduce (a histogram, per-thread
// buffers merged at the end).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "weft/detail/require_callable.hpp"
#include "weft/pool.hpp"

namespace weft {

// One value of T per thread index of a pool (Pool::current_thread_index), made on a thread's first local(), plus
// one per outside thread that calls local() while it runs no task of the pool.
//
// Contract:
// - local() returns the calling thread's value, making it first (from the initializer, or T{}) if this thread's
//   slot has none. Inside a task of the pool the slot is the thread index's: an array of max_thread_index()
//   slots, 128 bytes apart (no two threads' values share a cache line), found without a lock or an atomic; a
//   worker's slot is also remembered in a thread-local cache, so its local() is a load and a compare. Two
//   threads never hold one index at once, so no two threads ever touch one value at once. A slot belongs to an
//   index, not a thread: after a thread that was not a worker exits, another may get its index and then finds
//   its value (for a reduction, the sum is the same).
// - A thread that runs no task of the pool (the thread that calls parallel_for, before or after it; a thread of
//   another pool) gets its own value from a short list of outside threads, found by std::thread::id under a
//   mutex: correct from any number of threads, slower (hoist the reference out of a loop).
// - combine, combine_each, iteration, size and clear read or change every value: call them when no thread is
//   in local() or using a value (after the loop that filled them returned). local() may run concurrently with
//   other local() calls only.
// - The initializer is called concurrently (one call per slot filled); an exception from it leaves the slot
//   empty and comes out of local().
// - A reference from local() is the calling thread's: a task that waits (a nested loop, Future::get,
//   TaskGroup::wait) may resume on another thread, so call local() again after a wait rather than keep it.
// - The pool must outlive every local() call. Neither copyable nor movable (values are referenced by threads).
//
// Example:
//   weft::PerWorker<std::vector<long>> bins(pool, [] { return std::vector<long>(16, 0); });
//   weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { ++bins.local()[key(i) % 16]; });
//   std::vector<long> total(16, 0);
//   bins.combine_each([&](const std::vector<long>& b) { for (int k = 0; k < 16; ++k) total[k] += b[k]; });
template <class T>
class PerWorker {
  // One line or more per value: 128 bytes, so that neither a neighbour on the same 64-byte line nor the pair of
  // lines an x86 core's spatial prefetcher fetches together is shared with another thread's value.
  static constexpr std::size_t kSlotAlign = 128;
  struct alignas(kSlotAlign) Slot {
    std::optional<T> value{};
  };
  struct Outside {
    std::thread::id thread;
    Slot slot;
  };

  template <bool Const>
  class Iterator {
    using Owner = std::conditional_t<Const, const PerWorker, PerWorker>;

   public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<Const, const T&, T&>;
    using pointer = std::conditional_t<Const, const T*, T*>;

    Iterator() = default;
    Iterator(Owner* owner, std::size_t position) noexcept : owner_(owner), position_(position) { skip_empty(); }
    [[nodiscard]] reference operator*() const { return *owner_->slot_at(position_).value; }
    [[nodiscard]] pointer operator->() const { return &**this; }
    Iterator& operator++() {
      ++position_;
      skip_empty();
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    [[nodiscard]] friend bool operator==(const Iterator& a, const Iterator& b) noexcept {
      return a.position_ == b.position_;
    }

   private:
    void skip_empty() noexcept {
      if (owner_ == nullptr) return;
      const std::size_t end = owner_->slot_count();
      while (position_ < end && !owner_->slot_at(position_).value) ++position_;
    }
    Owner* owner_ = nullptr;
    std::size_t position_ = 0;
  };

 public:
  // Iterates over the values made so far (slots that have none are skipped): thread indices in order, then the
  // outside threads in the order they first called local(). Not while local() runs (see above).
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  // Values start as T{}.
  explicit PerWorker(Pool& pool)
    requires std::default_initializable<T>
      : PerWorker(pool, [] { return T{}; }) {}

  // Values start as init() (called once per slot, concurrently; see above). init is kept in a std::function (it
  // runs once per slot, not per call), so it must be copyable. Throws std::invalid_argument if init is an empty
  // std::function or a null pointer.
  template <class Init>
    requires std::invocable<Init&> && std::constructible_from<T, std::invoke_result_t<Init&>>
  PerWorker(Pool& pool, Init init)
      : pool_(&pool), slot_count_(pool.max_thread_index()), slots_(std::make_unique<Slot[]>(slot_count_)) {
    detail::require_callable(init, "weft::PerWorker");
    init_ = [init = std::move(init)]() mutable { return T(std::invoke(init)); };
  }

  PerWorker(const PerWorker&) = delete;
  PerWorker& operator=(const PerWorker&) = delete;
  ~PerWorker() = default;

  // The calling thread's value, made if it has none (see above).
  [[nodiscard]] T& local() {
    bool exists = false;
    return local(exists);
  }

  // The same, and `exists` says whether the value was there already (false: it was just made).
  [[nodiscard]] T& local(bool& exists) {
    const Cache& cache = cache_;
    if (cache.owner == id_) [[likely]] {
      exists = true;
      return *cache.value;
    }
    return slot_local(exists);
  }

  // op(op(v0, v1), v2)... over every value made (in iteration order); op(T, const T&) gives something a T is made
  // from (it must be associative; with values from threads in no particular order, commutative too). No value:
  // a fresh one from the initializer (T{} by default).
  template <class Op>
    requires std::invocable<const Op&, T, const T&> &&
             std::constructible_from<T, std::invoke_result_t<const Op&, T, const T&>>
  [[nodiscard]] T combine(Op op) const {
    std::optional<T> acc;
    for (const T& value : *this) {
      if (acc) {
        acc.emplace(std::invoke(op, std::move(*acc), value));
      } else {
        acc.emplace(value);
      }
    }
    if (!acc) return init_();
    return std::move(*acc);
  }

  // f(value) for every value made, in iteration order, through a const reference.
  template <class F>
    requires std::invocable<F&, const T&>
  void combine_each(F f) const {
    for (const T& value : *this) std::invoke(f, value);
  }

  // Number of values made so far (slots with a value).
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 0;
    for (auto it = begin(); it != end(); ++it) ++n;
    return n;
  }
  // No value made yet.
  [[nodiscard]] bool empty() const noexcept { return begin() == end(); }
  // Destroys every value: each thread's next local() makes a fresh one.
  void clear() noexcept {
    for (std::size_t i = 0; i < slot_count_; ++i) slots_[i].value.reset();
    outside_.clear();
    id_ = next_id();  // every thread's cached value is gone
  }

  [[nodiscard]] iterator begin() noexcept { return iterator(this, 0); }
  [[nodiscard]] iterator end() noexcept { return iterator(this, slot_count()); }
  [[nodiscard]] const_iterator begin() const noexcept { return const_iterator(this, 0); }
  [[nodiscard]] const_iterator end() const noexcept { return const_iterator(this, slot_count()); }

 private:
  // A worker's last value, per thread and per T: local() on a worker of the pool, again and again (once per
  // element of a loop), is a thread-local load and a compare, where Pool::current_thread_index() is two calls
  // into the library and a lookup of its own thread-local (a histogram through local() per element took about
  // 1.8x tbb::combinable's time without it; docs/perf-log.md). Only a worker's slot is cached: a worker's index
  // is its own for the pool's life, while another thread's answer depends on whether it runs a task right now.
  // `owner` is the PerWorker's id, unique for the process's life and renewed by clear(), so a stale entry (of a
  // destroyed or cleared PerWorker) never matches.
  struct Cache {
    std::uint64_t owner = 0;
    T* value = nullptr;
  };
  static inline thread_local Cache cache_{};

  [[nodiscard]] static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> counter{0};
    // relaxed: only uniqueness matters, which the read-modify-write gives.
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  // The value of the calling thread's index, or its outside value; a worker's is cached.
  T& slot_local(bool& exists) {
    if (const std::optional<unsigned> index = pool_->current_thread_index()) [[likely]] {
      Slot& slot = slots_[*index];
      exists = slot.value.has_value();
      if (!exists) slot.value.emplace(init_());
      if (*index < pool_->size()) cache_ = Cache{id_, &*slot.value};
      return *slot.value;
    }
    return outside_local(exists);
  }

  // An outside thread's value: found (or appended) under the mutex. A std::deque never moves its elements when
  // one is appended, so a reference handed out stays valid.
  T& outside_local(bool& exists) {
    const std::thread::id me = std::this_thread::get_id();
    const std::lock_guard<std::mutex> lock(outside_mutex_);
    for (Outside& entry : outside_) {
      if (entry.thread == me) {
        exists = entry.slot.value.has_value();
        if (!exists) entry.slot.value.emplace(init_());
        return *entry.slot.value;
      }
    }
    exists = false;
    Outside& entry = outside_.emplace_back();
    entry.thread = me;
    try {
      entry.slot.value.emplace(init_());
    } catch (...) {
      outside_.pop_back();
      throw;
    }
    return *entry.slot.value;
  }

  [[nodiscard]] std::size_t slot_count() const noexcept { return slot_count_ + outside_.size(); }
  [[nodiscard]] Slot& slot_at(std::size_t i) noexcept {
    return i < slot_count_ ? slots_[i] : outside_[i - slot_count_].slot;
  }
  [[nodiscard]] const Slot& slot_at(std::size_t i) const noexcept {
    return i < slot_count_ ? slots_[i] : outside_[i - slot_count_].slot;
  }

  Pool* pool_;
  std::uint64_t id_ = next_id();
  std::size_t slot_count_;
  std::unique_ptr<Slot[]> slots_;
  // Not on the hot path: called once per slot filled.
  std::function<T()> init_;
  std::mutex outside_mutex_;
  std::deque<Outside> outside_;
};

}  // namespace weft
