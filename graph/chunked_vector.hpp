// ChunkedVector: an append-only sequence kept in fixed-size chunks, so that growing it never moves an element
// and no single allocation is large.
//
// Why the node bodies of a TaskGraph live in one: a 2^20-node graph's bodies are 64 MiB. As one std::vector
// that is one allocation beyond glibc's mmap ceiling (32 MiB at most), so every build mapped fresh memory and
// page-faulted all of it in (about half of the chain_1M build's time under perf, kernel page clearing and
// fault handling), and a builder that did not reserve() moved every body through its small_function table on
// each doubling. Chunks of kChunkBytes come from the ordinary heap, are reused from one build to the next in a
// long-running process, and never move.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace weft::detail {

template <class T>
class ChunkedVector {
 public:
  // 64 KiB chunks: under glibc's default mmap threshold (128 KiB), so they come from the heap.
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  static constexpr std::size_t kPerChunk =
      kChunkBytes / sizeof(T) > 0 ? std::bit_floor(kChunkBytes / sizeof(T)) : std::size_t{1};
  static constexpr unsigned kShift = std::countr_zero(kPerChunk);
  static constexpr std::size_t kMask = kPerChunk - 1;

  ChunkedVector() = default;
  ChunkedVector(const ChunkedVector&) = delete;
  ChunkedVector& operator=(const ChunkedVector&) = delete;
  ~ChunkedVector() { clear(); }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  [[nodiscard]] T& operator[](std::size_t i) noexcept { return chunks_[i >> kShift].get()[i & kMask]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return chunks_[i >> kShift].get()[i & kMask]; }

  // Room in the chunk table for `n` elements (the chunks themselves are allocated as elements arrive).
  void reserve(std::size_t n) { chunks_.reserve((n + kPerChunk - 1) >> kShift); }

  // Strong guarantee: if allocating a chunk or constructing the element throws, nothing changed.
  template <class... Args>
  T& emplace_back(Args&&... args) {
    const std::size_t at = size_ & kMask;
    if (at == 0 && (size_ >> kShift) == chunks_.size()) {
      chunks_.reserve(chunks_.size() + 1);  // may throw before the chunk exists: nothing leaks
      chunks_.emplace_back(allocate_chunk());
    }
    T* slot = chunks_[size_ >> kShift].get() + at;
    ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }

  // Destroys every element (in order) and frees every chunk.
  void clear() noexcept {
    for (std::size_t i = 0; i < size_; ++i) (*this)[i].~T();
    size_ = 0;
    chunks_.clear();
  }

 private:
  struct FreeChunk {
    void operator()(T* p) const noexcept { ::operator delete(static_cast<void*>(p), std::align_val_t{alignof(T)}); }
  };
  using Chunk = std::unique_ptr<T, FreeChunk>;

  static Chunk allocate_chunk() {
    return Chunk(static_cast<T*>(::operator new(kPerChunk * sizeof(T), std::align_val_t{alignof(T)})));
  }

  std::vector<Chunk> chunks_;  // chunk k holds elements [k * kPerChunk, (k + 1) * kPerChunk)
  std::size_t size_ = 0;
};

}  // namespace weft::detail
