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

// `call` names the public entry point, e.g. "weft::Pool::submit". Costs nothing for a lambda with captures;
// a captureless one converts to a function pointer that is never null, which the compiler folds away.
template <class F>
void require_callable(const F& f, const char* call) {
  if constexpr (std::is_constructible_v<bool, const F&>) {
    if (!static_cast<bool>(f)) [[unlikely]]
      throw_empty_callable(call);
  }
}

}  // namespace weft::detail
