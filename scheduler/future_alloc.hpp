// Internal counters of the future-state allocator (scheduler/future_alloc.cpp), for tests that check that its
// memory stays bounded while threads come and go.
#pragma once

#include <cstdint>

namespace weft::detail {

// Future-state blocks obtained from the system and not given back to it: what the allocator holds, in use or
// cached for reuse. Exact only while no thread allocates or frees a future state.
[[nodiscard]] std::uint64_t future_state_blocks_held() noexcept;

}  // namespace weft::detail
