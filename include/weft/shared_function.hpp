// weft::shared_function: a copyable callable whose copies share one stored callable (PoolOptions' hooks).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

#include "weft/detail/small_function_vtable.hpp"
#include "weft/small_function.hpp"

namespace weft {

namespace detail {
template <class>
inline constexpr bool is_small_function = false;
template <class Signature, std::size_t Capacity, StoragePolicy Policy>
inline constexpr bool is_small_function<small_function<Signature, Capacity, Policy>> = true;
}  // namespace detail

// shared_function<R(Args...)>: a type-erased callable that can be copied although the callable it holds may be
// move-only: every copy refers to the one callable stored when the first was built (as std::shared_ptr does),
// and the callable is destroyed with the last copy. Made for callbacks that one configuration hands to several
// owners (PoolOptions' hooks: copies of one PoolOptions configure several pools, all calling the same object).
//
// Contract:
// - Construction from f requires that std::decay_t<F>& can be invoked with Args... and its result converts to
//   R (a reference R must not bind to a temporary), exactly as for small_function; anything else does not
//   compile (std::is_constructible_v is false). Move-only callables are accepted. The callable is stored with
//   one heap allocation (std::bad_alloc if that fails). A null function or member pointer, an empty
//   std::function or an empty small_function gives an empty object.
// - Copying never allocates and never copies the callable: it takes one more reference (an atomic increment).
//   Moving leaves the source empty. Assigning rebinds this object only; the other copies keep their callable.
// - Calling: operator() calls the shared callable as a non-const lvalue, like small_function; concurrent calls
//   through any of the copies are exactly as safe as concurrent calls of the callable itself, so a callable
//   shared between threads (or pools) must be thread-safe, and state it captures is shared by every copy.
//   A call costs one indirect call after one load (the same as small_function's). Calling an empty object
//   throws std::bad_function_call. Exceptions from the callable propagate.
// - Copies may be made, assigned and destroyed concurrently with calls through other copies; one object is not
//   to be assigned while another thread uses it.
//
// Example:
//   std::atomic<int> calls{0};
//   weft::shared_function<void(int)> count = [&calls](int n) { calls += n; };
//   weft::shared_function<void(int)> same = count;  // no allocation: both call the one lambda
//   count(1);
//   same(2);  // calls == 3
//   auto owner = std::make_unique<int>(5);
//   weft::shared_function<int()> read = [p = std::move(owner)] { return *p; };  // move-only: still copyable
//   auto copy = read;  // copy() == 5
template <class Signature>
class shared_function {
  static_assert(detail::dependent_false<Signature>,
                "weft::shared_function<Signature>: Signature must be a function type R(Args...) without "
                "qualifiers, e.g. weft::shared_function<void(int)>");
};

template <class R, class... Args>
class shared_function<R(Args...)> {
  // The shared block: the reference count, the call and destroy entries, then the callable (Block<D> below).
  struct BlockBase {
    std::atomic<std::size_t> references{1};
    R (*invoke)(BlockBase*, Args&&...);
    void (*destroy)(BlockBase*) noexcept;
  };
  template <class D>
  struct Block final : BlockBase {
    template <class F>
    explicit Block(F&& f) : BlockBase{{1}, &call, &erase}, callable(std::forward<F>(f)) {}
    static R call(BlockBase* base, Args&&... args) {
      if constexpr (std::is_void_v<R>) {
        std::invoke(static_cast<Block*>(base)->callable, std::forward<Args>(args)...);
      } else {
        return std::invoke(static_cast<Block*>(base)->callable, std::forward<Args>(args)...);
      }
    }
    static void erase(BlockBase* base) noexcept { delete static_cast<Block*>(base); }
    D callable;
  };

 public:
  // An empty object (operator bool false); calling it throws std::bad_function_call.
  shared_function() noexcept = default;
  shared_function(std::nullptr_t) noexcept {}  // empty, as the default constructor

  // Stores std::decay_t<F> built from f in a new shared block (one allocation), or nothing if f is empty.
  template <class F, class D = std::decay_t<F>>
    requires(!std::same_as<D, shared_function>) && detail::small_function_source<F, D, R, Args...>
  shared_function(F&& f) {
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> || detail::is_std_function<D> ||
                  detail::is_small_function<D>) {
      if (!static_cast<bool>(f)) return;
    }
    block_ = new Block<D>(std::forward<F>(f));
  }

  // Shares other's callable (one more reference; no allocation, no copy of the callable).
  shared_function(const shared_function& other) noexcept : block_(other.block_) {
    // relaxed: a new reference is made from an existing one, which keeps the block alive meanwhile.
    if (block_ != nullptr) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  // Takes over other's reference; `other` is left empty.
  shared_function(shared_function&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}

  // Drops this object's reference (destroying its callable if it was the last) and shares other's. Copy and
  // swap: a self-assignment takes a reference, swaps, and drops one again.
  // NOLINTNEXTLINE(bugprone-unhandled-self-assignment): clang-tidy sees copy and swap only through a named copy
  shared_function& operator=(const shared_function& other) noexcept {
    shared_function(other).swap(*this);
    return *this;
  }
  // Drops this object's reference and takes over other's; `other` is left empty.
  shared_function& operator=(shared_function&& other) noexcept {
    shared_function(std::move(other)).swap(*this);
    return *this;
  }
  // Strong guarantee: if building the new callable throws, *this keeps its old one.
  template <class F>
    requires(!std::same_as<std::decay_t<F>, shared_function>) && std::constructible_from<shared_function, F>
  shared_function& operator=(F&& f) {
    shared_function(std::forward<F>(f)).swap(*this);
    return *this;
  }
  // Drops this object's reference, leaving it empty.
  shared_function& operator=(std::nullptr_t) noexcept {
    shared_function().swap(*this);
    return *this;
  }

  // Drops the reference; the last copy destroys the callable and frees the block.
  ~shared_function() {
    // acq_rel: the last owner sees every other owner's use of the callable before destroying it.
    if (block_ != nullptr && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) block_->destroy(block_);
  }

  // Calls the shared callable; throws std::bad_function_call if there is none.
  R operator()(Args... args) const {
    if (block_ == nullptr) throw std::bad_function_call();
    return block_->invoke(block_, std::forward<Args>(args)...);
  }

  // True if it holds a callable.
  explicit operator bool() const noexcept { return block_ != nullptr; }

  // True if both hold the same stored callable (one is a copy of the other), or both are empty.
  [[nodiscard]] bool shares_with(const shared_function& other) const noexcept { return block_ == other.block_; }

  // Exchanges the callables (references) of the two objects; never allocates.
  void swap(shared_function& other) noexcept { std::swap(block_, other.block_); }
  friend void swap(shared_function& a, shared_function& b) noexcept { a.swap(b); }

  // f == nullptr: true if f is empty.
  friend bool operator==(const shared_function& f, std::nullptr_t) noexcept { return !f; }

 private:
  BlockBase* block_ = nullptr;
};

}  // namespace weft
