// The unbounded multi-producer multi-consumer FIFO queue of Michael and Scott ("Simple, Fast, and Practical
// Non-Blocking and Blocking Concurrent Queue Algorithms", PODC 1996), for tasks submitted from threads
// outside the workers. Lock-free; nodes are reclaimed through a Reclaimer domain (hazard pointers or QSBR)
// and recycled through the domain's node pool, so a steady push/pop stream does not call malloc.
#pragma once

#include <cstddef>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/lockfree/reclaimer.hpp"
#include "scheduler/lockfree/retirable.hpp"

namespace weft::lockfree {

template <class T, Reclaimer R>
class MSQueue {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "MSQueue<T>: T must be nothrow-move-constructible and nothrow-destructible (a pop that threw "
                "after unlinking its node would lose the item)");
  using M = typename R::memory_model;

  // The first node is a dummy; every later node holds one value, which the dequeuer moves out of the node
  // that becomes the new dummy (so a retired node never holds a live T).
  struct Node : Retirable<M> {
    typename M::template atomic<Node*> next;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): T may be a pointer; its storage is the pointer's size
    alignas(T) std::byte storage[sizeof(T)];

    T* value() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
    static void dispose_node(Retirable<M>* r, NodeCache<M>& cache) noexcept {
      auto* n = static_cast<Node*>(r);
      n->~Node();
      cache.deallocate(n, sizeof(Node), alignof(Node));
    }
  };

 public:
  using value_type = T;
  using domain_type = R;
  using ThreadRef = typename R::ThreadRef;

  // An empty queue reclaiming through `domain`, which must outlive the queue.
  explicit MSQueue(R& domain) : domain_(domain) {
    Node* dummy = init_node(domain_.allocate_block(sizeof(Node), alignof(Node)));
    // relaxed: the queue is not shared until its constructor returns (publication is the caller's job).
    head_.store(dummy, std::memory_order_relaxed);
    tail_.store(dummy, std::memory_order_relaxed);
  }
  MSQueue(const MSQueue&) = delete;
  MSQueue& operator=(const MSQueue&) = delete;
  // Destroys the remaining items. No thread may use the queue any more.
  ~MSQueue() {
    Node* n = head_.load(std::memory_order_relaxed);  // relaxed: quiescent, no concurrent user
    bool dummy = true;
    while (n != nullptr) {
      Node* next = n->next.load(std::memory_order_relaxed);  // relaxed: quiescent
      if (!dummy) n->value()->~T();
      dummy = false;
      n->~Node();
      domain_.free_block(n, sizeof(Node), alignof(Node));
      n = next;
    }
  }

  // Appends value. The calling thread's implicit registration is used (registered on first use).
  void push(T value) { push(domain_.current(), std::move(value)); }
  // Appends value on behalf of the thread registered as t.
  void push(ThreadRef t, T value) {
    Node* node = make_node(t);
    ::new (static_cast<void*>(node->storage)) T(std::move(value));
    typename R::Guard guard(t);
    for (;;) {
      Node* last = guard.template protect<0>(tail_);
      // acquire: if it is non-null we help swing tail to it, and later readers of tail (acquire) need
      // its initialisation, which its linker released.
      Node* next = last->next.load(std::memory_order_acquire);
      if (next != nullptr) {
        // Tail lags behind: help. release: a reader of tail sees next's contents (see above). Failure: someone
        // else moved it; relaxed as we retry from a fresh protect anyway.
        tail_.compare_exchange_strong(last, next, std::memory_order_release, std::memory_order_relaxed);
        continue;
      }
      Node* expected = nullptr;
      // release: the dequeuer that acquires this link sees the value and node constructed above.
      if (last->next.compare_exchange_strong(expected, node, std::memory_order_release, std::memory_order_relaxed)) {
        // Swing tail to our node; failing means another thread already helped. release: as above.
        tail_.compare_exchange_strong(last, node, std::memory_order_release, std::memory_order_relaxed);
        return;
      }
    }
  }

  // True if the queue looked empty: head and tail were the same node. A hint without a hazard (nothing is
  // dereferenced). A push swings tail before it returns, so once a push has returned (and its caller's
  // fence has run), a later look that is ordered after that fence sees the queue non-empty.
  [[nodiscard]] bool empty_hint() const noexcept {
    // acquire on both: cheap on x86; keeps the two reads in order for the argument above.
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

  // Removes and returns the oldest item, or nullopt if the queue was empty at the linearisation point.
  [[nodiscard]] std::optional<T> try_pop() { return try_pop(domain_.current()); }
  [[nodiscard]] std::optional<T> try_pop(ThreadRef t) {
    typename R::Guard guard(t);
    for (;;) {
      Node* first = guard.template protect<0>(head_);
      // acquire: the linker's release made next's value and fields visible.
      Node* next = first->next.load(std::memory_order_acquire);
      // next is reachable (hence safe) only while head is still first: protect it, then re-check head.
      if (!guard.template protect_if<1>(next, head_, first)) continue;
      if (next == nullptr) return std::nullopt;
      // acquire: we may dereference nothing through it, but a helping CAS below republishes `next`.
      Node* last = tail_.load(std::memory_order_acquire);
      if (first == last) {
        // Tail still points at the dummy we are about to retire: move it on first, or a pusher could
        // still be using the retired node as its tail. release: as in push.
        tail_.compare_exchange_strong(last, next, std::memory_order_release, std::memory_order_relaxed);
        continue;
      }
      // seq_cst: the unlink must precede (in the single total order) the scanner's hazard reads; with
      // hazard pointers under TSan no fence backs this up (see hazard_pointers.hpp). On x86 it costs the
      // same as acq_rel. Failure: relaxed, we restart from a fresh protect.
      if (head_.compare_exchange_strong(first, next, std::memory_order_seq_cst, std::memory_order_relaxed)) {
        std::optional<T> out(std::move(*next->value()));
        next->value()->~T();  // next is the new dummy: its storage must hold no live T
        guard.clear();
        guard.retire(first);
        return out;
      }
    }
  }

 private:
  static Node* make_node(ThreadRef t) { return init_node(t.allocate(sizeof(Node), alignof(Node))); }
  static Node* init_node(void* block) noexcept {
    auto* node = ::new (block) Node;
    node->dispose = &Node::dispose_node;
    // relaxed: published by the release CAS that links the node (or the queue's construction).
    node->next.store(nullptr, std::memory_order_relaxed);
    return node;
  }

  R& domain_;
  alignas(atomics::kCacheLine) typename M::template atomic<Node*> head_;
  // alignas also rounds the queue's size up, so whatever follows the queue stays off tail's line.
  alignas(atomics::kCacheLine) typename M::template atomic<Node*> tail_;
};

}  // namespace weft::lockfree
