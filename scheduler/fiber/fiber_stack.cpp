#include "scheduler/fiber/fiber_stack.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "src/stack_memory.hpp"
#include "weft/errors.hpp"

namespace weft::fiber {
namespace {

[[noreturn]] void invalid(const std::string& what) { throw invalid_option("weft::fiber::FiberStackOptions::" + what); }

[[nodiscard]] const FiberStackOptions& checked(const FiberStackOptions& options) {
  if (options.stack_size < kMinFiberStackSize || options.stack_size > kMaxFiberStackSize) {
    invalid("stack_size = " + std::to_string(options.stack_size) + " bytes: must be in [" +
            std::to_string(kMinFiberStackSize) + ", " + std::to_string(kMaxFiberStackSize) + "]");
  }
  if (options.max_stacks < 1 || options.max_stacks > kMaxFiberStacks) {
    invalid("max_stacks = " + std::to_string(options.max_stacks) + ": must be in [1, " +
            std::to_string(kMaxFiberStacks) + "] (each stack is two memory mappings)");
  }
  if (options.ceiling < options.max_stacks || options.ceiling > kMaxFiberStacks) {
    invalid("ceiling = " + std::to_string(options.ceiling) + ": must be in [max_stacks = " +
            std::to_string(options.max_stacks) + ", " + std::to_string(kMaxFiberStacks) + "]");
  }
  if (options.keep_free > options.max_stacks) {
    invalid("keep_free = " + std::to_string(options.keep_free) +
            ": must be at most max_stacks = " + std::to_string(options.max_stacks));
  }
  return options;
}

}  // namespace

void FiberStack::reset() noexcept {
  if (bottom_ != nullptr) pool_->release(std::exchange(bottom_, nullptr));
  pool_ = nullptr;
}

void* FiberStack::top() const noexcept { return static_cast<std::byte*>(bottom_) + pool_->stack_size(); }
std::size_t FiberStack::size() const noexcept { return pool_->stack_size(); }
void* FiberStack::guard() const noexcept { return static_cast<std::byte*>(bottom_) - pool_->guard_size(); }
std::size_t FiberStack::guard_size() const noexcept { return pool_->guard_size(); }

FiberStackPool::FiberStackPool(FiberStackOptions options)
    : options_(checked(options)),
      page_(os::page_size()),
      guard_(os::stack_guard_size()),
      stack_size_((options.stack_size + page_ - 1) / page_ * page_) {}

FiberStackPool::~FiberStackPool() {
  if (live_ != free_) {
    std::fprintf(stderr, "weft: a FiberStackPool was destroyed with %zu of its stacks still in use\n", live_ - free_);
    std::abort();
  }
  trim(0);
}

FiberStackPool::FreeLink* FiberStackPool::link_of(void* bottom) const noexcept {
  return reinterpret_cast<FreeLink*>(static_cast<std::byte*>(bottom) + stack_size_ - sizeof(FreeLink));
}

void* FiberStackPool::bottom_of(FreeLink* link) const noexcept {
  return reinterpret_cast<std::byte*>(link) + sizeof(FreeLink) - stack_size_;
}

FiberStack FiberStackPool::acquire_up_to(std::size_t most) noexcept {
  bool past_bound = false;
  {
    const std::lock_guard lock(mutex_);
    if (free_list_ != nullptr) {
      FreeLink* link = free_list_;
      free_list_ = link->next;
      --free_;
      return FiberStack(this, bottom_of(link));
    }
    if (live_ >= most) return FiberStack();
    // Counted before mapping (outside the lock), so that concurrent acquires never exceed the bound.
    past_bound = live_ >= options_.max_stacks;
    ++live_;
    if (live_ > peak_) peak_ = live_;
    note_live();
  }
  void* bottom = os::map_guarded_stack(stack_size_, guard_);
  const std::lock_guard lock(mutex_);
  if (bottom == nullptr) {
    --live_;
    note_live();
    return FiberStack();
  }
  ++mapped_;
  if (past_bound) ++overshoot_;
  return FiberStack(this, bottom);
}

void FiberStackPool::release(void* bottom) noexcept {
  {
    const std::lock_guard lock(mutex_);
    // Past the bound (acquire_past_bound) a released stack is never kept: the pool shrinks back to max_stacks.
    if (free_ < options_.keep_free && live_ <= options_.max_stacks) {
      FreeLink* link = link_of(bottom);
      link->next = free_list_;
      free_list_ = link;
      ++free_;
      return;
    }
    --live_;
    ++unmapped_;
    note_live();
  }
  os::unmap_guarded_stack(bottom, stack_size_, guard_);
}

void FiberStackPool::trim(std::size_t keep) noexcept {
  FreeLink* doomed = nullptr;
  {
    const std::lock_guard lock(mutex_);
    while (free_ > keep) {
      FreeLink* link = free_list_;
      free_list_ = link->next;
      link->next = doomed;
      doomed = link;
      --free_;
      --live_;
      ++unmapped_;
    }
    note_live();
  }
  // Unmapped outside the lock: munmap is a system call, and no other thread can reach these stacks any more.
  while (doomed != nullptr) {
    FreeLink* next = doomed->next;
    os::unmap_guarded_stack(bottom_of(doomed), stack_size_, guard_);
    doomed = next;
  }
}

FiberStackStats FiberStackPool::stats() const noexcept {
  const std::lock_guard lock(mutex_);
  return FiberStackStats{
      .live = live_, .free = free_, .peak = peak_, .mapped = mapped_, .unmapped = unmapped_, .overshoot = overshoot_};
}

}  // namespace weft::fiber
