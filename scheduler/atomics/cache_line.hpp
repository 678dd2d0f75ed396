// The cache-line size the lock-free structures pad to, so that atomics written by different threads
// (a queue's head and tail, per-thread records) never share a line.
#pragma once

#include <cstddef>

namespace weft::atomics {

// 64 bytes on every x86-64 and most AArch64 parts. std::hardware_destructive_interference_size is not used:
// g++ warns (-Winterference-size) that its value may differ between translation units built with other flags.
inline constexpr std::size_t kCacheLine = 64;

}  // namespace weft::atomics
