// The WEFT_PROCESS_BARRIER switch, the same on every OS: "off" makes process_barrier_available() answer false
// (so that the fence-on-both-sides protocols run where the barrier exists too); any other value is refused.
#include <cstdlib>
#include <string_view>

#include "src/process_barrier.hpp"

namespace weft::os {

bool process_barrier_switched_off() noexcept {
  const char* const value = std::getenv("WEFT_PROCESS_BARRIER");
  return value != nullptr && std::string_view(value) == "off";
}

std::string_view process_barrier_unknown_setting() noexcept {
  const char* const value = std::getenv("WEFT_PROCESS_BARRIER");
  if (value == nullptr) return {};
  const std::string_view setting(value);
  return setting == "off" ? std::string_view() : setting;
}

}  // namespace weft::os
