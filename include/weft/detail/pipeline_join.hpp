// The bodies of the stages that join streams of one pipeline (TaskScope::join, join_by_key, merge): each keeps the
// items waiting for their partners, under a lock of its own; graph/pipeline/pipeline_join.cpp runs them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/detail/pipeline.hpp"

namespace weft::detail {

// A join stage: the items that arrive on its inputs wait (in their slots: the join keeps only their handles)
// until each input has one that matches; the run then builds the tuple in the slot of input 0's part.
class JoinBody : public StageBody {
 public:
  // What arrive() did with an item.
  enum class Arrival : std::uint8_t {
    waiting,  // kept: it waits for its partners
    matched,  // it completed a match: `parts` holds one handle per input
    lost,     // a partner of it was filtered out or dropped (a position join): the caller destroys it
  };
  // Records the item `item` (in the slot `handle`), number `seq` in its input's order, on input `input`. May
  // throw (a key function's exception): nothing is then recorded.
  virtual Arrival arrive(std::uint32_t input, std::uint64_t seq, const void* item, void* handle, void** parts) = 0;
  // A position join: the item numbered `seq` of input `input` was filtered out or dropped before the join. Writes
  // the handles of the parts waiting for it to `parts` (the caller destroys them) and returns how many.
  virtual std::size_t lost(std::uint32_t input, std::uint64_t seq, void** parts) {
    static_cast<void>(input);
    static_cast<void>(seq);
    static_cast<void>(parts);
    return 0;
  }
  // Builds the tuple in `items[0]` from the parts at items[0 .. inputs): every part is consumed. Never throws
  // (the item types are nothrow move constructible).
  virtual void make(void* const* items) noexcept = 0;
  // The parts waiting, per input (`counts` has one element per input); for the run's end.
  virtual void waiting(std::size_t* counts) const = 0;
  // True for a join by position (it takes markers of items lost before it).
  [[nodiscard]] virtual bool by_position() const noexcept = 0;
  bool process(void* slot) override {
    static_cast<void>(slot);
    return false;
  }
};

template <class... Ts>
using join_tuple_t = std::tuple<Ts...>;

template <class... Ts>
class JoinMaker : public JoinBody {
 public:
  static constexpr std::size_t N = sizeof...(Ts);
  using Tuple = std::tuple<Ts...>;
  void make(void* const* items) noexcept override { make_at(items, std::index_sequence_for<Ts...>{}); }
  void destroy(void* slot) noexcept override { slot_as<Tuple>(slot)->~Tuple(); }

 private:
  template <std::size_t... I>
  void make_at(void* const* items, std::index_sequence<I...>) noexcept {
    Tuple made(std::move(*slot_as<Ts>(items[I]))...);
    (slot_as<Ts>(items[I])->~Ts(), ...);
    ::new (items[0]) Tuple(std::move(made));
  }
};

// A join by position: the items numbered n of every input (the n-th each received, in its input's order) make
// tuple n. An item lost on one input (filtered or dropped: a marker) makes its partners lost too.
template <class... Ts>
class PositionJoinBody final : public JoinMaker<Ts...> {
 public:
  using Base = JoinMaker<Ts...>;
  using Arrival = JoinBody::Arrival;
  static constexpr std::size_t N = sizeof...(Ts);

  Arrival arrive(std::uint32_t input, std::uint64_t seq, const void* item, void* handle, void** parts) override {
    static_cast<void>(item);
    const std::lock_guard<std::mutex> hold(lock_);
    Entry& entry = entries_[seq];
    ++entry.arrived;
    if (entry.dead) {
      if (entry.arrived == N) entries_.erase(seq);
      return Arrival::lost;
    }
    entry.parts[input] = handle;
    if (entry.arrived < N) return Arrival::waiting;
    for (std::size_t i = 0; i < N; ++i) parts[i] = entry.parts[i];
    entries_.erase(seq);
    return Arrival::matched;
  }
  std::size_t lost(std::uint32_t input, std::uint64_t seq, void** parts) override {
    static_cast<void>(input);
    const std::lock_guard<std::mutex> hold(lock_);
    Entry& entry = entries_[seq];
    ++entry.arrived;
    std::size_t count = 0;
    if (!entry.dead) {
      entry.dead = true;
      for (void*& part : entry.parts) {
        if (part != nullptr) parts[count++] = std::exchange(part, nullptr);
      }
    }
    if (entry.arrived == N) entries_.erase(seq);
    return count;
  }
  void waiting(std::size_t* counts) const override {
    const std::lock_guard<std::mutex> hold(lock_);
    for (const auto& [seq, entry] : entries_) {
      for (std::size_t i = 0; i < N; ++i) counts[i] += entry.parts[i] != nullptr ? 1 : 0;
    }
  }
  [[nodiscard]] bool by_position() const noexcept override { return true; }
  void reset() noexcept override { entries_.clear(); }

 private:
  struct Entry {
    std::array<void*, N> parts{};
    std::size_t arrived = 0;  // items and markers of this number seen, over every input
    bool dead = false;        // one of them was a marker: the others are lost as they come
  };
  mutable std::mutex lock_;
  std::unordered_map<std::uint64_t, Entry> entries_;
};

// A join by key: an item of each input with equal keys make a tuple (several of one input with one key wait
// in their arrival order). key(item) is called on every item, outside the join's lock.
template <class K, class F, class... Ts>
class KeyJoinBody final : public JoinMaker<Ts...> {
 public:
  using Arrival = JoinBody::Arrival;
  static constexpr std::size_t N = sizeof...(Ts);

  template <class G>
  explicit KeyJoinBody(G&& key) : key_(std::forward<G>(key)) {}
  Arrival arrive(std::uint32_t input, std::uint64_t seq, const void* item, void* handle, void** parts) override {
    static_cast<void>(seq);
    K key = key_of(input, item, std::index_sequence_for<Ts...>{});
    const std::lock_guard<std::mutex> hold(lock_);
    auto found = entries_.find(key);
    if (found == entries_.end()) found = entries_.emplace(std::move(key), Entry{}).first;
    Entry& entry = found->second;
    entry[input].push_back(handle);
    for (const std::deque<void*>& waiting : entry) {
      if (waiting.empty()) return Arrival::waiting;
    }
    for (std::size_t i = 0; i < N; ++i) {
      parts[i] = entry[i].front();
      entry[i].pop_front();
    }
    bool empty = true;
    for (const std::deque<void*>& waiting : entry) empty = empty && waiting.empty();
    if (empty) entries_.erase(found);
    return Arrival::matched;
  }
  void waiting(std::size_t* counts) const override {
    const std::lock_guard<std::mutex> hold(lock_);
    for (const auto& [key, entry] : entries_) {
      for (std::size_t i = 0; i < N; ++i) counts[i] += entry[i].size();
    }
  }
  [[nodiscard]] bool by_position() const noexcept override { return false; }
  void reset() noexcept override { entries_.clear(); }

 private:
  template <std::size_t... I>
  K key_of(std::uint32_t input, const void* item, std::index_sequence<I...>) {
    K key{};
    static_cast<void>(((input == I ? (key = std::invoke(key_, *static_cast<const Ts*>(item)), true) : false) || ...));
    return key;
  }
  using Entry = std::array<std::deque<void*>, N>;
  F key_;
  mutable std::mutex lock_;
  std::unordered_map<K, Entry> entries_;
};

// A merge stage: items of any input go on as they arrive, unchanged (in place: nothing is moved).
template <class T>
class MergeBody final : public StageBody {
 public:
  bool process(void* slot) override {
    static_cast<void>(slot);
    return true;
  }
  void destroy(void* slot) noexcept override { slot_as<T>(slot)->~T(); }
};

// A join_by_key's key function: callable with a const T& of every input, all giving one hashable key type.
template <class F, class... Ts>
concept JoinKey = (std::is_invocable_v<F&, const Ts&> && ...) &&
                  requires { typename std::common_type_t<std::decay_t<std::invoke_result_t<F&, const Ts&>>...>; };

template <class F, class... Ts>
using join_key_t = std::common_type_t<std::decay_t<std::invoke_result_t<F&, const Ts&>>...>;

template <class K>
concept HashableKey = requires(const K& a, const K& b) {
  { std::hash<K>{}(a) } -> std::convertible_to<std::size_t>;
  { a == b } -> std::convertible_to<bool>;
} && std::is_default_constructible_v<K> && std::is_move_constructible_v<K>;

}  // namespace weft::detail
