// Internals of weft::small_function (include/weft/small_function.hpp): the constraints it puts on a callable
// and the one static table of operations per stored callable type. Not a public API; include
// <weft/small_function.hpp> instead.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace weft::detail {

template <class>
inline constexpr bool dependent_false = false;

// True for the specialisations of std::function, the one callable class that is empty by a documented rule:
// small_function stores an empty one as nothing, as std::function does.
template <class>
inline constexpr bool is_std_function = false;
template <class Signature>
inline constexpr bool is_std_function<std::function<Signature>> = true;

// The inline storage is aligned like a pointer, which keeps sizeof(small_function) at Capacity + one pointer
// (with 16-byte storage alignment the object would be padded to Capacity + 16). Callables that need more go to
// the heap.
inline constexpr std::size_t small_function_storage_align = alignof(void*);

// A trivially copyable callable of at most this many bytes (and the heap pointer) is moved by a fixed-size
// memcpy of this many storage bytes, with no call through the table: cheaper than the call for a small
// capture, while copying all Capacity bytes costs more than the call saves (bench/small_function; figures in
// docs/perf-log.md).
inline constexpr std::size_t small_function_memcpy_bytes = 32;

template <class D>
inline constexpr bool relocates_by_small_memcpy = std::is_trivially_copyable_v<D> &&
                                                  sizeof(D) <= small_function_memcpy_bytes;

// A callable whose result R may bind to: a reference R must not bind to a temporary made from a prvalue or
// from a different type (g++ 12 has no std::reference_converts_from_temporary, so this is spelled out).
template <class R, class Result>
concept result_binds_without_temporary =
    !std::is_reference_v<R> || (std::is_reference_v<Result> &&
                                std::is_convertible_v<std::remove_reference_t<Result>*, std::remove_reference_t<R>*>);

// D (the decayed callable) can be stored and called as R(Args...) through an lvalue.
template <class D, class R, class... Args>
concept small_function_target = std::is_object_v<D> && std::destructible<D> && std::is_invocable_r_v<R, D&, Args...> &&
                                result_binds_without_temporary<R, std::invoke_result_t<D&, Args...>>;

// F (as passed to the constructor) can build a D = std::decay_t<F> that is a small_function_target.
template <class F, class D, class R, class... Args>
concept small_function_source = small_function_target<D, R, Args...> && std::constructible_from<D, F>;

// D is stored inline: it fits the bytes, needs no more alignment than the storage has, and moves without
// throwing (so that moving a small_function can be noexcept).
template <class D, std::size_t Capacity>
inline constexpr bool fits_inline = sizeof(D) <= Capacity && alignof(D) <= small_function_storage_align &&
                                    std::is_nothrow_move_constructible_v<D>;

enum class small_function_storage : unsigned char { empty, inline_storage, heap };

// One static table per stored callable type; a small_function holds a pointer to it.
template <class R, class... Args>
struct small_function_vtable {
  R (*invoke)(void* storage, Args&&... args);
  // Moves the stored callable from one storage to another and ends it in the source. Null when empty or when
  // relocates_by_small_memcpy holds (the small_function copies small_function_memcpy_bytes instead). Copying
  // the whole Capacity for every trivially copyable callable was measured slower for small ones.
  void (*relocate)(void* to, void* from) noexcept;
  // Null when there is nothing to destroy.
  void (*destroy)(void* storage) noexcept;
  small_function_storage storage;
};

template <class R, class F, class... Args>
R invoke_as(F& callable, Args&&... args) {
  if constexpr (std::is_void_v<R>) {
    static_cast<void>(std::invoke(callable, std::forward<Args>(args)...));
  } else {
    return std::invoke(callable, std::forward<Args>(args)...);
  }
}

template <class R, class... Args>
struct empty_ops {
  [[noreturn]] static R invoke(void*, Args&&...) { throw std::bad_function_call(); }
  static constexpr small_function_vtable<R, Args...> table{&invoke, nullptr, nullptr, small_function_storage::empty};
};

// D lives in the small_function's own bytes.
template <class D, class R, class... Args>
struct inline_ops {
  static D& object(void* storage) noexcept { return *std::launder(static_cast<D*>(storage)); }
  static R invoke(void* storage, Args&&... args) { return invoke_as<R>(object(storage), std::forward<Args>(args)...); }
  static void relocate(void* to, void* from) noexcept {
    if constexpr (std::is_trivially_copyable_v<D>) {
      std::memcpy(to, from, sizeof(D));
    } else {
      D& source = object(from);
      ::new (to) D(std::move(source));
      std::destroy_at(&source);
    }
  }
  static void destroy(void* storage) noexcept { std::destroy_at(&object(storage)); }
  static constexpr small_function_vtable<R, Args...> table{&invoke, relocates_by_small_memcpy<D> ? nullptr : &relocate,
                                                           std::is_trivially_destructible_v<D> ? nullptr : &destroy,
                                                           small_function_storage::inline_storage};
};

// D lives in one heap allocation (aligned new when alignof(D) asks for it); the storage holds only the pointer.
template <class D, class R, class... Args>
struct heap_ops {
  static D*& pointer(void* storage) noexcept { return *std::launder(static_cast<D**>(storage)); }
  static R invoke(void* storage, Args&&... args) {
    return invoke_as<R>(*pointer(storage), std::forward<Args>(args)...);
  }
  static void destroy(void* storage) noexcept { delete pointer(storage); }
  static_assert(relocates_by_small_memcpy<D*>);
  static constexpr small_function_vtable<R, Args...> table{&invoke, nullptr, &destroy, small_function_storage::heap};
};

}  // namespace weft::detail
