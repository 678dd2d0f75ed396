// graph/chunked_vector.hpp: elements across chunk boundaries match a std::vector oracle; past the first
// chunk they never move as the sequence grows; each is destroyed exactly once (by clear and by the
// destructor); a throwing constructor leaves the sequence as it was; the first chunk starts small.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "graph/chunked_vector.hpp"
#include "weft/task_graph.hpp"

namespace {

using weft::graph::ChunkedVector;

// Counts live objects; throws from its constructor when asked to.
struct Tracked {
  static inline int live = 0;
  std::uint64_t value;
  explicit Tracked(std::uint64_t v, bool fail = false) : value(v) {
    if (fail) throw std::runtime_error("Tracked: asked to fail");
    ++live;
  }
  Tracked(Tracked&& other) noexcept : value(other.value) { ++live; }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { --live; }
};

TEST_CASE("elements across many chunks match a std::vector oracle; past the first chunk they never move") {
  using V = ChunkedVector<Tracked>;
  const std::size_t n = 5 * V::kPerChunk + 3;  // several full chunks and a partial one
  {
    V v;
    std::vector<std::uint64_t> oracle;
    std::vector<const Tracked*> addresses;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t value = i * 2654435761u;
      addresses.push_back(&v.emplace_back(value));
      oracle.push_back(value);
      CHECK(v.size() == oracle.size());
    }
    CHECK(Tracked::live == static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(v[i].value == oracle[i]);
      if (i >= V::kPerChunk) CHECK(&v[i] == addresses[i]);  // only the first chunk's growth moves
    }
    v.clear();
    CHECK(v.empty());
    CHECK(Tracked::live == 0);
    for (std::size_t i = 0; i < V::kPerChunk + 1; ++i) (void)v.emplace_back(i);  // usable after clear
    CHECK(v[V::kPerChunk].value == V::kPerChunk);
  }
  CHECK(Tracked::live == 0);  // the destructor destroyed what was left
}

TEST_CASE("a constructor that throws leaves the sequence unchanged, at a chunk boundary too") {
  using V = ChunkedVector<Tracked>;
  V v;
  v.reserve(3 * V::kPerChunk);
  for (std::size_t i = 0; i < V::kPerChunk; ++i) (void)v.emplace_back(i);
  // The next element would open the second chunk.
  CHECK_THROWS_AS(v.emplace_back(std::uint64_t{99}, true), std::runtime_error);
  CHECK(v.size() == V::kPerChunk);
  CHECK(Tracked::live == static_cast<int>(V::kPerChunk));
  (void)v.emplace_back(std::uint64_t{7});
  CHECK(v.size() == V::kPerChunk + 1);
  CHECK(v[V::kPerChunk].value == 7);
  // Mid-chunk.
  CHECK_THROWS_AS(v.emplace_back(std::uint64_t{98}, true), std::runtime_error);
  CHECK(v.size() == V::kPerChunk + 1);
  v.clear();
  CHECK(Tracked::live == 0);
}

TEST_CASE("the first chunk starts small, or at the reserved size, and grows to a full chunk") {
  using V = ChunkedVector<Tracked>;
  V small;
  CHECK(small.capacity() == 0);
  (void)small.emplace_back(std::uint64_t{1});
  CHECK(small.capacity() == V::kFirstCapacity);  // a graph of a few nodes does not take a full chunk
  for (std::uint64_t i = 2; i <= V::kPerChunk + 1; ++i) (void)small.emplace_back(i);
  CHECK(small.capacity() == 2 * V::kPerChunk);
  for (std::size_t i = 0; i < small.size(); ++i) CHECK(small[i].value == i + 1);

  V reserved;
  reserved.reserve(100);
  (void)reserved.emplace_back(std::uint64_t{1});
  CHECK(reserved.capacity() == 128);
  V big;
  big.reserve(10 * V::kPerChunk);
  (void)big.emplace_back(std::uint64_t{1});
  CHECK(big.capacity() == V::kPerChunk);
}

TEST_CASE("node bodies: a chunk is 64 KiB or less, so it never needs a fresh mapping") {
  using V = ChunkedVector<weft::detail::NodeBody>;
  CHECK(V::kPerChunk * sizeof(weft::detail::NodeBody) <= V::kChunkBytes);
  CHECK(V::kPerChunk >= 512);
}

}  // namespace
