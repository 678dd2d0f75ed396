// weft::Generator<T>: a synchronous lazy sequence written as a coroutine with co_yield, read as an input range.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <coroutine>
#include <cstddef>
#include <exception>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace weft {

// A sequence of T computed on demand: each step of the range resumes the coroutine until its next co_yield, on
// the reading thread. Nothing of a pool is involved (no task, no suspension on a weft wait): it is cppcoro's
// generator, or C++23's std::generator for one type.
//
// Contract:
// - Lazily started: calling the coroutine allocates its frame (global operator new) and runs nothing; begin()
//   runs it to the first co_yield (or its end). begin() may be called once (again throws std::logic_error).
// - An input range (std::ranges::input_range): a range-for, std::ranges algorithms that read once. *it refers to
//   the object the coroutine yielded (a temporary of `co_yield expr` included), valid until the next ++it.
// - An exception the body lets out is rethrown by the begin() or ++it that resumed it; the sequence then ends.
// - The body may not co_await (it runs on the reader's thread, synchronously); co_yield and co_return only.
// - Move-only; destroying it (finished or not) frees the frame, and the objects in it.
//
// Example:
//   weft::Generator<int> iota(int from, int to) {
//     for (int i = from; i < to; ++i) co_yield i;
//   }
//   int sum_to_five() {
//     int sum = 0;
//     for (int i : iota(0, 5)) sum += i;
//     return sum;  // 10
//   }
template <class T>
class [[nodiscard]] Generator {
 public:
  // The type of the elements, and what *it gives: a reference to the yielded object.
  using value_type = std::remove_cvref_t<T>;
  using reference = std::conditional_t<std::is_reference_v<T>, T, T&>;

  class promise_type {
   public:
    Generator get_return_object() noexcept {
      return Generator(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(std::remove_reference_t<T>& value) noexcept {
      value_ = std::addressof(value);
      return {};
    }
    std::suspend_always yield_value(std::remove_reference_t<T>&& value) noexcept {
      value_ = std::addressof(value);
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error_ = std::current_exception(); }
    // A generator runs synchronously on its reader's thread: it has nothing to wait for.
    template <class U>
    std::suspend_never await_transform(U&&) = delete;

    [[nodiscard]] reference value() const noexcept { return static_cast<reference>(*value_); }
    void rethrow_if_failed() {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

   private:
    std::add_pointer_t<std::remove_reference_t<T>> value_ = nullptr;
    std::exception_ptr error_;
  };

  // The position in the sequence; equal to end() (std::default_sentinel) once the coroutine has ended.
  class iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = Generator::value_type;
    using reference = Generator::reference;
    using difference_type = std::ptrdiff_t;

    iterator() noexcept = default;
    // The object the coroutine yielded last.
    [[nodiscard]] reference operator*() const noexcept { return handle_.promise().value(); }
    // Resumes the coroutine to its next co_yield (or its end); rethrows what the body let out.
    iterator& operator++() {
      handle_.resume();
      if (handle_.done()) handle_.promise().rethrow_if_failed();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return !it.handle_ || it.handle_.done();
    }

   private:
    friend class Generator;
    explicit iterator(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
    std::coroutine_handle<promise_type> handle_;
  };

  // An empty sequence, of no coroutine.
  Generator() noexcept = default;
  // Takes over other's coroutine; `other` is left empty.
  Generator(Generator&& other) noexcept
      : handle_(std::exchange(other.handle_, {})), started_(std::exchange(other.started_, false)) {}
  // Frees this one's coroutine, then takes over other's.
  Generator& operator=(Generator&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
      started_ = std::exchange(other.started_, false);
    }
    return *this;
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  // Frees the coroutine's frame, wherever it stopped.
  ~Generator() { reset(); }

  // Runs the coroutine to its first co_yield. Throws std::logic_error if called twice; rethrows what the body let
  // out before its first co_yield. An empty Generator gives an empty range.
  iterator begin() {
    if (!handle_) return iterator();
    if (started_) throw std::logic_error("weft::Generator::begin: called twice (a generator is read once)");
    started_ = true;
    handle_.resume();
    if (handle_.done()) handle_.promise().rethrow_if_failed();
    return iterator(handle_);
  }
  // The end of the sequence.
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

 private:
  explicit Generator(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  void reset() noexcept {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

  std::coroutine_handle<promise_type> handle_;
  bool started_ = false;
};

}  // namespace weft
