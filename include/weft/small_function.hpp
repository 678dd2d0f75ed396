// weft::small_function: the move-only callable every weft task is stored in.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "weft/detail/small_function_vtable.hpp"

namespace weft {

// Where small_function may put a callable that does not fit its inline storage.
enum class StoragePolicy : unsigned char {
  InlineOrHeap,  // one heap allocation (aligned new when needed) for a callable that does not fit
  InlineOnly,    // such a callable does not compile; the error names its size or alignment and the remedy
};

// small_function<R(Args...), Capacity, Policy>: a move-only, type-erased callable with Capacity bytes of inline
// storage, for callables that cannot be copied (captured unique_ptr, promises) and a task queue that must not
// allocate per task.
//
// Contract:
// - Construction from f (an object, function pointer or member pointer) requires that std::decay_t<F>& can be
//   invoked with Args... and its result converts to R; a reference R must not bind to a temporary. Anything else
//   does not compile (std::is_constructible_v is false). A null function or member pointer, or an empty
//   std::function, gives an empty object (as std::function's own constructor does).
// - Storage: the callable D is stored inline, with no allocation, when sizeof(D) <= Capacity,
//   alignof(D) <= alignof(void*) and D's move constructor is noexcept. Otherwise, under InlineOrHeap, it is
//   stored with exactly one heap allocation (aligned new for over-aligned D); under InlineOnly
//   (small_function_inline_only) it does not compile: the error is "use of deleted function ... [with ...
//   CallableSize = 200; CallableAlign = 1; CallableMoveIsNoexcept = true; ... Capacity = 128 ...]" and quotes
//   the declaration, whose comment gives the remedy. std::is_constructible_v is false for such a callable.
//   fits_inline<F> says at compile time which happens; is_inline() says it at run time.
// - sizeof(small_function<void(), 128>) == 128 + sizeof(void*): the storage is aligned like a pointer (not
//   to 16), so no padding follows it; in general Capacity rounded up to alignof(void*), plus one pointer.
// - Move construction, move assignment and swap are noexcept and never allocate; the source is left empty.
//   A move copies min(Capacity, 32) storage bytes for the heap pointer or a trivially copyable callable of at
//   most that size; any other callable is moved by one call through the table (memcpy of its size if
//   trivially copyable, else its noexcept move constructor plus destructor). Self-move-assignment changes
//   nothing. Copying is deleted.
// - Calling an empty small_function throws std::bad_function_call. Exceptions from the callable propagate;
//   the callable stays stored. With R = void the callable's result is discarded.
// - operator() is not const: the callable may change its captured state, so a const reference cannot call it.
//   A call writes nothing in the small_function itself, so concurrent calls on one object are exactly as safe
//   as concurrent calls of the stored callable; every other concurrent use of one object needs a lock.
// - The callable is destroyed exactly once: by reassignment, `= nullptr`, or destruction of its last owner.
//
// Example:
//   auto buffer = std::make_unique<std::vector<int>>(1000);
//   weft::small_function<std::size_t(int)> task = [b = std::move(buffer)](int v) {
//     b->push_back(v);
//     return b->size();
//   };  // inline: a unique_ptr fits in 128 bytes
//   auto queued = std::move(task);  // noexcept, no allocation; task is now empty
//   std::size_t n = queued(7);      // 1001
//   weft::small_function_inline_only<void()> checked = [] {};  // a too-big capture here would not compile
template <class Signature, std::size_t Capacity = 128, StoragePolicy Policy = StoragePolicy::InlineOrHeap>
class small_function {
  static_assert(detail::dependent_false<Signature>,
                "weft::small_function<Signature>: Signature must be a function type R(Args...) without "
                "qualifiers, e.g. weft::small_function<int(double)>");
};

// The inline-only variant: a callable that would need the heap is a compile error (see the contract above).
template <class Signature, std::size_t Capacity = 128>
using small_function_inline_only = small_function<Signature, Capacity, StoragePolicy::InlineOnly>;

template <class R, class... Args, std::size_t Capacity, StoragePolicy Policy>
class small_function<R(Args...), Capacity, Policy> {
  static_assert(Capacity >= sizeof(void*),
                "weft::small_function: Capacity must be at least sizeof(void*), the heap fallback's pointer");
  using vtable = detail::small_function_vtable<R, Args...>;

 public:
  // True if a callable of type F is stored inline, with no allocation.
  template <class F>
  static constexpr bool fits_inline = detail::fits_inline<std::decay_t<F>, Capacity>;

  // An empty object (operator bool false); calling it throws std::bad_function_call.
  small_function() noexcept = default;
  small_function(std::nullptr_t) noexcept {}  // empty, as the default constructor

  // Stores std::decay_t<F> built from f: inline when it fits, else with one heap allocation.
  template <class F, class D = std::decay_t<F>>
    requires(!std::same_as<D, small_function>) && detail::small_function_source<F, D, R, Args...> &&
            (Policy == StoragePolicy::InlineOrHeap || detail::fits_inline<D, Capacity>)
  small_function(F&& f) noexcept(detail::fits_inline<D, Capacity>&& std::is_nothrow_constructible_v<D, F>) {
    // Only a pointer can be null; a function reference F decays to a pointer that never is. An empty
    // std::function gives an empty object too, as it does for std::function itself: stored, it would only
    // throw bad_function_call when called, far from where it was handed over (a PoolOptions hook, say).
    if constexpr (std::is_pointer_v<std::remove_cvref_t<F>> || std::is_member_pointer_v<std::remove_cvref_t<F>> ||
                  detail::is_std_function<D>) {
      if (f == nullptr) return;
    }
    if constexpr (detail::fits_inline<D, Capacity>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      vtable_ = &detail::inline_ops<D, R, Args...>::table;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
      vtable_ = &detail::heap_ops<D, R, Args...>::table;
    }
  }

  // InlineOnly rejects a callable that would need the heap. Deleted rather than unconstrained-and-static_assert
  // so that std::is_constructible_v stays false; the error quotes this declaration with its template arguments,
  // which state the callable's size, alignment and whether its move is noexcept.
  template <class F, class D = std::decay_t<F>, std::size_t CallableSize = sizeof(D),
            std::size_t CallableAlign = alignof(D),
            bool CallableMoveIsNoexcept = std::is_nothrow_move_constructible_v<D>>
    requires(Policy == StoragePolicy::InlineOnly) &&
                (!std::same_as<D, small_function>) && detail::small_function_source<F, D, R, Args...> &&
                (!detail::fits_inline<D, Capacity>)
  small_function(F&&) = delete;  // Needs the heap: raise Capacity, or use weft::small_function (one allocation)

  // Takes over other's callable (see the contract: no allocation); `other` is left empty.
  small_function(small_function&& other) noexcept { take(other); }

  // Destroys this object's callable, then takes over other's; `other` is left empty. Self-assignment changes
  // nothing.
  small_function& operator=(small_function&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }

  // Strong guarantee: if building the new callable throws, *this keeps its old one.
  template <class F>
    requires(!std::same_as<std::decay_t<F>, small_function>) && std::constructible_from<small_function, F>
  small_function& operator=(F&& f) {
    *this = small_function(std::forward<F>(f));
    return *this;
  }

  // Destroys the callable, leaving the object empty.
  small_function& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }

  small_function(const small_function&) = delete;
  small_function& operator=(const small_function&) = delete;

  // Destroys the callable, if any (and frees its heap block, if it had one).
  ~small_function() { reset(); }

  // Calls the stored callable; throws std::bad_function_call if there is none.
  R operator()(Args... args) { return vtable_->invoke(storage_, std::forward<Args>(args)...); }

  // True if it holds a callable.
  explicit operator bool() const noexcept { return vtable_->storage != detail::small_function_storage::empty; }

  // True if a callable is stored in the object itself (no heap allocation); false if empty or on the heap.
  [[nodiscard]] bool is_inline() const noexcept {
    return vtable_->storage == detail::small_function_storage::inline_storage;
  }

  // Exchanges the two callables (by three moves; never allocates).
  void swap(small_function& other) noexcept {
    if (this == &other) return;
    small_function held(std::move(other));
    other.take(*this);
    take(held);
  }

  friend void swap(small_function& a, small_function& b) noexcept { a.swap(b); }

  // f == nullptr: true if f is empty.
  friend bool operator==(const small_function& f, std::nullptr_t) noexcept { return !f; }

 private:
  void reset() noexcept {
    if (vtable_->destroy != nullptr) vtable_->destroy(storage_);
    vtable_ = &detail::empty_ops<R, Args...>::table;
  }

  // Precondition: *this holds nothing (empty or just destroyed). Leaves `other` empty.
  void take(small_function& other) noexcept {
    vtable_ = other.vtable_;
    if (vtable_->relocate != nullptr) {
      vtable_->relocate(storage_, other.storage_);
    } else {
      // Empty, the heap pointer, or a small trivially copyable callable: copying bytes past its end (within the
      // storage) costs nothing extra and keeps the size a constant.
      std::memcpy(storage_, other.storage_, std::min(Capacity, detail::small_function_memcpy_bytes));
    }
    other.vtable_ = &detail::empty_ops<R, Args...>::table;
  }

  const vtable* vtable_ = &detail::empty_ops<R, Args...>::table;
  alignas(detail::small_function_storage_align) std::byte storage_[Capacity];
};

}  // namespace weft
