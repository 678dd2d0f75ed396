// Internal counters of the future-state allocator (scheduler/engine/future_alloc.cpp), for tests that check that its
// memory stays bounded while threads come and go.
#pragma once

#include <cstdint>

namespace weft::detail {

// Future-state blocks (a future's state or a Subflow child) obtained from the system and not given back to it:
// what the allocator holds, in use or cached for reuse. Exact only while no thread allocates or frees a block.
[[nodiscard]] std::uint64_t future_state_blocks_held() noexcept;

}  // namespace weft::detail
