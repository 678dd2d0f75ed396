// ChunkedVector: an append-only sequence kept in chunks of at most kChunkBytes, so that no single allocation is
// large and growing a big sequence moves (almost) nothing.
//
// Why the node bodies of a TaskGraph live in one: a 2^20-node graph's bodies are 64 MiB. As one std::vector
// that is one allocation beyond glibc's mmap ceiling (32 MiB at most), so every build mapped fresh memory and
// page-faulted all of it in (kernel page clearing and fault handling, a large share of the chain_1M build's
// time under perf; docs/perf-log.md), and a builder that did not reserve() moved every body through its
// small_function table on each doubling. Full chunks come from the ordinary heap, are reused from one build to
// the next in a long-running process, and never move.
//
// The first chunk starts small (or at the size reserve() asked for) and doubles up to a full chunk, moving its
// elements as a vector would: a graph of a few nodes (every TaskScope makes one) does not take 64 KiB. Only
// elements below kPerChunk can ever move; from the second chunk on, an element stays where it was built.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::graph {

template <class T>
class ChunkedVector {
  static_assert(std::is_nothrow_move_constructible_v<T>, "the first chunk's growth moves its elements");

 public:
  // 64 KiB chunks: under glibc's default mmap threshold (128 KiB), so they come from the heap.
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  static constexpr std::size_t kPerChunk = kChunkBytes / sizeof(T) > 0 ? std::bit_floor(kChunkBytes / sizeof(T))
                                                                       : std::size_t{1};
  static constexpr unsigned kShift = std::countr_zero(kPerChunk);
  static constexpr std::size_t kMask = kPerChunk - 1;
  // The first chunk's capacity when nothing was reserved.
  static constexpr std::size_t kFirstCapacity = std::min<std::size_t>(16, kPerChunk);

  ChunkedVector() = default;
  ChunkedVector(const ChunkedVector&) = delete;
  ChunkedVector& operator=(const ChunkedVector&) = delete;
  ~ChunkedVector() { clear(); }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  // Elements that fit without allocating.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return chunks_.empty() ? 0 : first_capacity_ + (chunks_.size() - 1) * kPerChunk;
  }

  [[nodiscard]] T& operator[](std::size_t i) noexcept { return chunks_[i >> kShift].get()[i & kMask]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return chunks_[i >> kShift].get()[i & kMask]; }

  // Room for `n` elements in all: the first chunk is sized for them (up to a full chunk) if it is yet to be
  // allocated; the chunk table gets room for the rest (their chunks are allocated as elements arrive).
  void reserve(std::size_t n) {
    chunks_.reserve((n + kPerChunk - 1) >> kShift);
    if (chunks_.empty() && n > 0) reserved_first_ = std::min(std::bit_ceil(n), kPerChunk);
  }

  // Strong guarantee: if allocating or constructing the element throws, nothing changed.
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity()) make_room();  // may throw: nothing has changed yet
    T* slot = &(*this)[size_];
    ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }

  // Destroys every element (in order) and frees every chunk.
  void clear() noexcept {
    for (std::size_t i = 0; i < size_; ++i) (*this)[i].~T();
    size_ = 0;
    chunks_.clear();
    first_capacity_ = 0;
  }

 private:
  struct FreeChunk {
    void operator()(T* p) const noexcept { ::operator delete(static_cast<void*>(p), std::align_val_t{alignof(T)}); }
  };
  using Chunk = std::unique_ptr<T, FreeChunk>;

  static Chunk allocate(std::size_t elements) {
    return Chunk(static_cast<T*>(::operator new(elements * sizeof(T), std::align_val_t{alignof(T)})));
  }

  // Called when full: grows the first chunk (doubling, up to a full chunk) or appends a full chunk.
  void make_room() {
    if (chunks_.empty()) {
      const std::size_t first = reserved_first_ != 0 ? reserved_first_ : kFirstCapacity;
      chunks_.reserve(1);
      chunks_.push_back(allocate(first));
      first_capacity_ = first;
    } else if (first_capacity_ < kPerChunk) {
      const std::size_t grown = std::min(first_capacity_ * 2, kPerChunk);
      Chunk bigger = allocate(grown);
      T* from = chunks_.front().get();
      for (std::size_t i = 0; i < size_; ++i) {
        ::new (static_cast<void*>(bigger.get() + i)) T(std::move(from[i]));  // noexcept (asserted above)
        from[i].~T();
      }
      chunks_.front() = std::move(bigger);
      first_capacity_ = grown;
    } else {
      chunks_.reserve(chunks_.size() + 1);  // may throw before the chunk exists: nothing leaks
      chunks_.push_back(allocate(kPerChunk));
    }
  }

  std::vector<Chunk> chunks_;  // chunk k holds elements [k * kPerChunk, (k + 1) * kPerChunk)
  std::size_t size_ = 0;
  std::size_t first_capacity_ = 0;  // capacity of chunks_[0] (kPerChunk once grown), 0 while there is none
  std::size_t reserved_first_ = 0;  // reserve()'s size for the first chunk, 0 for kFirstCapacity
};

}  // namespace weft::graph
