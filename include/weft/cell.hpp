// weft::OverwriteCell and weft::WriteOnceCell: one value that a pipeline stage or sink (or any task or thread)
// writes and any thread reads, oneTBB's overwrite_node and write_once_node. A reader may wait for the first value,
// on a worker too: it waits as weft::Event::wait does (a task suspends, or its worker runs other tasks meanwhile).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "weft/event.hpp"

namespace weft {

// The latest value written (oneTBB's overwrite_node): put() replaces it, and readers see the last value put before
// their read; a reader that comes late still sees it.
//
// Contract:
// - put(v) from any thread at any time (a sink's or a stage's body, say: `scope.sink(stream, cell.writer())`);
//   puts of several threads at once leave one of their values, the last to take the cell's lock.
// - get() waits until a value was put (or returns at once), then returns a copy of the latest; get_shared() the
//   same as a std::shared_ptr<const T>, sharing the value without a copy; try_get() and value() never wait. A wait
//   on a worker of a pool suspends the task (fibers) or runs the pool's other tasks meanwhile, as
//   weft::Event::wait does: a reader inside the pool does not hold back the pipeline that writes the value. If no
//   value may come, wait with get_for(timeout).
// - clear() forgets the value (overwrite_node::clear): reads after it wait (get) or find none (try_get) until the
//   next put(). A value a reader got stays valid.
// - value() of a cell without a value throws std::logic_error saying so.
// - Not copyable or movable (waiters refer to it); destroy it only once no thread reads or waits on it.
//
// Example:
//   weft::OverwriteCell<double> latest;
//   scope.sink(readings, latest.writer());        // each reading replaces the one before
//   pool.post([&] { show(latest.get()); });       // waits for the first reading, then shows the latest
template <class T>
class OverwriteCell {
  static_assert(std::is_object_v<T> && std::is_copy_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "weft::OverwriteCell<T>: readers get copies of the value, so T must be a copyable object type");

 public:
  // An empty cell.
  OverwriteCell() = default;
  OverwriteCell(const OverwriteCell&) = delete;
  OverwriteCell& operator=(const OverwriteCell&) = delete;

  // Replaces the value with `value` and releases the readers waiting for one.
  void put(T value) { put_shared(std::make_shared<const T>(std::move(value))); }
  // A callable that put()s its argument: a sink's or a stage's f (`scope.sink(stream, cell.writer())`). The cell
  // must outlive the pipeline's runs.
  [[nodiscard]] auto writer() noexcept {
    return [this](T value) { put(std::move(value)); };
  }
  // Waits for a value, then returns a copy of the latest.
  [[nodiscard]] T get() { return *get_shared(); }
  // Waits for a value, then returns the latest, shared (never null).
  [[nodiscard]] std::shared_ptr<const T> get_shared() {
    for (;;) {
      ready_.wait();
      if (std::shared_ptr<const T> value = load()) return value;  // else cleared since: wait again
    }
  }
  // As get(), for at most `timeout`: std::nullopt if no value came by then.
  template <class Rep, class Period>
  [[nodiscard]] std::optional<T> get_for(std::chrono::duration<Rep, Period> timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (std::shared_ptr<const T> value = load()) return *value;
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= left.zero() || !ready_.wait_for(left)) {
        if (std::shared_ptr<const T> value = load()) return *value;
        return std::nullopt;
      }
    }
  }
  // The latest value now, or std::nullopt; never waits.
  [[nodiscard]] std::optional<T> try_get() const {
    if (std::shared_ptr<const T> value = load()) return *value;
    return std::nullopt;
  }
  // The latest value now; throws std::logic_error if none was put (or clear() came after the last put).
  [[nodiscard]] T value() const {
    if (std::shared_ptr<const T> value = load()) return *value;
    throw std::logic_error(
        "weft::OverwriteCell::value: the cell holds no value (none was put yet, or clear() came after the last "
        "put): wait for one with get() or get_for(), or test with try_get()");
  }
  // True if the cell holds a value now (a snapshot).
  [[nodiscard]] bool has_value() const { return load() != nullptr; }
  // Forgets the value.
  void clear() {
    std::shared_ptr<const T> old;
    {
      const std::lock_guard<std::mutex> hold(lock_);
      old = std::move(value_);
      value_.reset();
      ready_.clear();  // under the lock: the event is set exactly while a value is held
    }
  }

 private:
  void put_shared(std::shared_ptr<const T> value) {
    {
      const std::lock_guard<std::mutex> hold(lock_);
      value_.swap(value);
      ready_.signal();
    }
    // `value` (the one replaced) is released here, outside the lock.
  }
  [[nodiscard]] std::shared_ptr<const T> load() const {
    const std::lock_guard<std::mutex> hold(lock_);
    return value_;
  }

  mutable std::mutex lock_;  // guards value_ and keeps ready_ in step with it
  std::shared_ptr<const T> value_;
  Event ready_;  // set while value_ is not null
};

// The first value written (oneTBB's write_once_node): the first put() sets it for good, and later ones are refused;
// every reader, however late, sees that first value.
//
// Contract:
// - try_put(v) from any thread at any time: true if it set the value, false if one was set already (v is then
//   dropped). put(v) is try_put that throws std::logic_error for a second value.
// - get() waits until the value is set (or returns at once) and returns a reference to it, valid as long as the
//   cell; value() and try_get() never wait. A wait on a worker of a pool suspends the task (fibers) or runs the
//   pool's other tasks meanwhile, as weft::Event::wait does. If no value may come, wait with get_for(timeout).
// - Reading a set value takes no lock: it never changes. value() of a cell without a value throws
//   std::logic_error saying so.
// - Not copyable or movable; destroy it only once no thread reads or waits on it.
//
// Example:
//   weft::WriteOnceCell<std::string> first_error;
//   scope.sink(errors, [&](std::string e) { (void)first_error.try_put(std::move(e)); });
//   pool.post([&] { log(first_error.get()); });  // waits for the first error
template <class T>
class WriteOnceCell {
  static_assert(std::is_object_v<T> && std::is_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "weft::WriteOnceCell<T>: T must be a movable object type");

 public:
  // An empty cell.
  WriteOnceCell() = default;
  WriteOnceCell(const WriteOnceCell&) = delete;
  WriteOnceCell& operator=(const WriteOnceCell&) = delete;
  ~WriteOnceCell() {
    if (state_.load(std::memory_order_acquire) == kSet) std::launder(reinterpret_cast<T*>(storage_))->~T();
  }

  // Sets the value to `value` if none was set yet (true), else drops `value` (false).
  [[nodiscard]] bool try_put(T value) {
    std::uint8_t empty = kEmpty;
    // relaxed: only one putter may win; the value's publication is the release store below.
    if (!state_.compare_exchange_strong(empty, kWriting, std::memory_order_relaxed)) return false;
    try {
      ::new (static_cast<void*>(storage_)) T(std::move(value));
    } catch (...) {
      state_.store(kEmpty, std::memory_order_relaxed);  // the value could not be made: the cell stays empty
      throw;
    }
    state_.store(kSet, std::memory_order_release);  // pairs with the readers' acquire loads
    ready_.signal();
    return true;
  }
  // Sets the value; throws std::logic_error if one was set already.
  void put(T value) {
    if (!try_put(std::move(value))) {
      throw std::logic_error(
          "weft::WriteOnceCell::put: the cell holds a value already (a write-once cell takes the first value "
          "only): use try_put() to offer a value that may come second");
    }
  }
  // A callable that try_put()s its argument (a second value is dropped): a sink's f. The cell must outlive the
  // pipeline's runs.
  [[nodiscard]] auto writer() noexcept {
    return [this](T value) { (void)try_put(std::move(value)); };
  }
  // Waits for the value, then returns it.
  [[nodiscard]] const T& get() {
    while (!is_set()) ready_.wait();
    return stored();
  }
  // As get(), for at most `timeout`: null if no value came by then.
  template <class Rep, class Period>
  [[nodiscard]] const T* get_for(std::chrono::duration<Rep, Period> timeout) {
    if (!is_set()) (void)ready_.wait_for(timeout);
    return is_set() ? &stored() : nullptr;
  }
  // The value, or null if none was set yet; never waits.
  [[nodiscard]] const T* try_get() const noexcept { return is_set() ? &stored() : nullptr; }
  // The value; throws std::logic_error if none was set yet.
  [[nodiscard]] const T& value() const {
    if (!is_set()) {
      throw std::logic_error(
          "weft::WriteOnceCell::value: the cell holds no value yet: wait for it with get() or get_for(), or test "
          "with try_get()");
    }
    return stored();
  }
  // True once the value is set.
  [[nodiscard]] bool has_value() const noexcept { return is_set(); }

 private:
  static constexpr std::uint8_t kEmpty = 0;
  static constexpr std::uint8_t kWriting = 1;
  static constexpr std::uint8_t kSet = 2;
  [[nodiscard]] bool is_set() const noexcept { return state_.load(std::memory_order_acquire) == kSet; }
  [[nodiscard]] const T& stored() const noexcept { return *std::launder(reinterpret_cast<const T*>(storage_)); }

  std::atomic<std::uint8_t> state_{kEmpty};  // kSet (release) once storage_ holds the value, never again changed
  alignas(T) unsigned char storage_[sizeof(T)];
  Event ready_;  // signalled once the value is set
};

}  // namespace weft
