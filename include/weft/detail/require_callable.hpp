// Refuses a callable that can be empty and is (a null function or member pointer, an empty std::function) at
// the call that was handed it, naming that call: calling it later, on a worker, would be undefined behaviour or
// a std::bad_function_call far from its cause.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace weft::detail {

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_empty_callable(const char* call) {
  std::string message = call;
  message += ": the callable is empty (a null function pointer or an empty std::function)";
  throw std::invalid_argument(message);
}

// `call` names the public entry point, e.g. "weft::Pool::submit". A function named directly (a reference to
// it) cannot be null and is not tested (g++ warns that its address is never null); pointers are compared with
// nullptr; a class that can be empty says so through operator bool (std::function). A lambda costs nothing.
template <class F>
void require_callable(const F& f, const char* call) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    if (f == nullptr) [[unlikely]]
      throw_empty_callable(call);
  } else if constexpr (std::is_class_v<F> && std::is_constructible_v<bool, const F&>) {
    if (!static_cast<bool>(f)) [[unlikely]]
      throw_empty_callable(call);
  }
}

}  // namespace weft::detail
