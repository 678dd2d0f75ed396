// Fiber stacks: a thread-safe pool of guard-paged stacks, mapped once and reused.
//
// Each stack is one private anonymous mapping (src/stack_memory.hpp): a PROT_NONE guard page at its low end (stacks
// grow down), the usable stack above it, reserved without committing memory, so a stack costs its address space
// and the pages it touched. The guard is set once, when the stack is mapped; reuse never calls mprotect, so a
// reused stack costs a lock and a pointer pop (protected_fixedsize_stack pays an mmap and an mprotect per fiber). An
// overflow touches the guard page first and dies of SIGSEGV instead of writing over whatever lies below.
//
// Bound: acquire() hands out at most `max_stacks` stacks at once (in use plus kept free), so the pool's address
// space is at most max_stacks * (stack_size + its guard: one page on Linux, 72 KiB on Windows); at the bound it returns
// an empty FiberStack and the caller falls back, it never crashes. acquire_past_bound() may go past it, up to
// `ceiling`, for a caller whose fallback could never end (a suspending wait: scheduler/engine/fiber_worker.hpp); each
// stack it maps past max_stacks is counted (FiberStackStats::overshoot) and unmapped when released, so the pool comes
// back under its bound on its own.
//
// Shrinking: release() keeps at most `keep_free` unused stacks mapped and unmaps any stack beyond that, so a burst
// of fibers does not pin its peak memory; trim() lets the owner go lower (to zero) when it goes idle.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <utility>

namespace weft::fiber {

// Smallest and largest usable size a fiber stack may have, in bytes (before rounding up to whole pages).
inline constexpr std::size_t kMinFiberStackSize = 16 * 1024;
inline constexpr std::size_t kMaxFiberStackSize = std::size_t{1} << 30;
// Most stacks a pool may bound itself to: each costs two memory mappings (guard and stack), and Linux's default
// vm.max_map_count is 65,530 mappings per process.
inline constexpr std::size_t kMaxFiberStacks = 30'000;

// What a FiberStackPool is built with; FiberStackPool's constructor checks each field.
struct FiberStackOptions {
  // Usable bytes per stack, rounded up to whole pages; in [kMinFiberStackSize, kMaxFiberStackSize].
  std::size_t stack_size = 8 * 1024 * 1024;
  // Most stacks acquire() lets exist at once, in use or kept free; in [1, kMaxFiberStacks].
  std::size_t max_stacks = 1024;
  // Most stacks that may exist at once counting those acquire_past_bound() maps past max_stacks; in
  // [max_stacks, kMaxFiberStacks].
  std::size_t ceiling = kMaxFiberStacks;
  // Most unused stacks a release keeps mapped for reuse; beyond that the released stack is unmapped. At most
  // max_stacks.
  std::size_t keep_free = 16;
};

// Counts for tests and diagnostics; one consistent snapshot (taken under the pool's lock).
struct FiberStackStats {
  std::size_t live = 0;       // stacks mapped now: in use + free
  std::size_t free = 0;       // mapped and unused, ready for acquire()
  std::size_t peak = 0;       // most stacks ever live at once
  std::size_t mapped = 0;     // stacks ever mapped (each one mmap, and one mprotect for its guard)
  std::size_t unmapped = 0;   // stacks ever unmapped (by release past keep_free or past max_stacks, or by trim)
  std::size_t overshoot = 0;  // stacks ever mapped past max_stacks (by acquire_past_bound)
};

class FiberStackPool;

// One stack from a FiberStackPool, owned: move-only, returned to its pool when destroyed or reset. Empty when
// default-constructed, moved from, or returned by acquire() at the pool's bound.
class FiberStack {
 public:
  // An empty handle (no stack).
  FiberStack() noexcept = default;
  // Takes `other`'s stack; `other` becomes empty. (Inline, as the moves below: a fiber's hand-over between a
  // wait list and a worker moves its Fiber several times, and out-of-line moves were a
  // sizeable share of a ping-pong's instructions: docs/perf-log.md.)
  FiberStack(FiberStack&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)), bottom_(std::exchange(other.bottom_, nullptr)) {}
  // Returns this handle's stack (if any) to its pool, then takes `other`'s.
  FiberStack& operator=(FiberStack&& other) noexcept {
    if (this != &other) {
      if (bottom_ != nullptr) reset();
      pool_ = std::exchange(other.pool_, nullptr);
      bottom_ = std::exchange(other.bottom_, nullptr);
    }
    return *this;
  }
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  // Returns the stack to its pool.
  ~FiberStack() {
    if (bottom_ != nullptr) reset();
  }

  // True if this handle holds a stack.
  [[nodiscard]] explicit operator bool() const noexcept { return bottom_ != nullptr; }
  // The lowest usable address (just above the guard page); a stack grows down towards it.
  [[nodiscard]] void* bottom() const noexcept { return bottom_; }
  // One past the highest usable address: where a new stack starts.
  [[nodiscard]] void* top() const noexcept;
  // Usable bytes, top() - bottom(): the pool's stack_size(), a whole number of pages.
  [[nodiscard]] std::size_t size() const noexcept;
  // The guard: guard_size() bytes just below bottom(), mapped PROT_NONE (on Windows laid out as src/stack_memory.hpp
  // says).
  [[nodiscard]] void* guard() const noexcept;
  // The guard's size (one page on Linux: os::stack_guard_size()).
  [[nodiscard]] std::size_t guard_size() const noexcept;
  // Returns the stack to its pool now; the handle becomes empty.
  void reset() noexcept;

 private:
  friend class FiberStackPool;
  FiberStack(FiberStackPool* pool, void* bottom) noexcept : pool_(pool), bottom_(bottom) {}

  FiberStackPool* pool_ = nullptr;
  void* bottom_ = nullptr;
};

// A thread-safe pool of guard-paged fiber stacks (see the top of this file). Every FiberStack it hands out must be
// returned (destroyed or reset) before the pool is destroyed.
class FiberStackPool {
 public:
  // Throws weft::invalid_option naming the field and its value when an option is out of range.
  explicit FiberStackPool(FiberStackOptions options = {});
  // Unmaps every stack. A stack still handed out is a bug in the owner: the process aborts with a message.
  ~FiberStackPool();
  FiberStackPool(const FiberStackPool&) = delete;
  FiberStackPool& operator=(const FiberStackPool&) = delete;

  // A free stack if there is one, else a newly mapped one; empty at the bound (max_stacks live) or when the OS
  // refuses the memory. Thread-safe.
  [[nodiscard]] FiberStack acquire() noexcept { return acquire_up_to(options_.max_stacks); }
  // As acquire(), but past max_stacks up to the ceiling: for a caller that cannot fall back. A stack mapped while
  // max_stacks or more exist counts in stats().overshoot; any stack released while more than max_stacks exist is
  // unmapped. Empty at the ceiling or when the OS refuses the memory. Thread-safe.
  [[nodiscard]] FiberStack acquire_past_bound() noexcept { return acquire_up_to(options_.ceiling); }
  // Unmaps free stacks until at most `keep` remain free. Thread-safe; for the owner to call when it goes idle.
  void trim(std::size_t keep = 0) noexcept;
  // A snapshot of the counts. Thread-safe.
  [[nodiscard]] FiberStackStats stats() const noexcept;
  // True if more than max_stacks stacks exist (acquire_past_bound went past it): a hint, read without the lock,
  // for an owner that keeps stacks it could give back (idle fibers) to give them back now.
  [[nodiscard]] bool past_bound() const noexcept { return past_bound_.load(std::memory_order_relaxed); }
  // Usable bytes per stack: options().stack_size rounded up to whole pages.
  [[nodiscard]] std::size_t stack_size() const noexcept { return stack_size_; }
  // The guard below each stack: one page on Linux (os::stack_guard_size()).
  [[nodiscard]] std::size_t guard_size() const noexcept { return guard_; }
  // The options as given (stack_size before rounding).
  [[nodiscard]] const FiberStackOptions& options() const noexcept { return options_; }

 private:
  friend class FiberStack;
  // A free stack keeps the link to the next free one in its own top bytes, so the free list needs no memory of
  // its own and release() cannot fail.
  struct FreeLink {
    FreeLink* next;
  };
  [[nodiscard]] FiberStack acquire_up_to(std::size_t most) noexcept;
  void release(void* bottom) noexcept;
  [[nodiscard]] FreeLink* link_of(void* bottom) const noexcept;
  [[nodiscard]] void* bottom_of(FreeLink* link) const noexcept;

  const FiberStackOptions options_;
  const std::size_t page_;
  const std::size_t guard_;  // os::stack_guard_size(): one page on Linux, more on Windows (src/stack_memory.hpp)
  const std::size_t stack_size_;

  mutable std::mutex mutex_;
  FreeLink* free_list_ = nullptr;  // guarded by mutex_, as are the counts below
  std::size_t free_ = 0;
  std::size_t live_ = 0;
  std::size_t peak_ = 0;
  std::size_t mapped_ = 0;
  std::size_t unmapped_ = 0;
  std::size_t overshoot_ = 0;
  // live_ > max_stacks, written under mutex_ whenever live_ changes; relaxed: a hint (past_bound()), which orders
  // nothing and is exact at the next change.
  std::atomic<bool> past_bound_{false};
  void note_live() noexcept { past_bound_.store(live_ > options_.max_stacks, std::memory_order_relaxed); }
};

}  // namespace weft::fiber
