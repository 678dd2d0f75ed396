#include "scheduler/fiber/fiber_overflow.hpp"

#include <cstdint>

#include "scheduler/fiber/stack_guard.hpp"

namespace weft::fiber {
namespace {

// The calling worker's context (null on any other thread). Initial-exec TLS (the library's model with fibers):
// reading it is a load relative to the thread register, safe in a signal handler.
thread_local const FiberOverflowScope::Context* tls_overflow_context = nullptr;

// A message built without allocating, for a signal handler.
class Message {
 public:
  void add(const char* text) noexcept {
    while (*text != '\0' && length_ < sizeof buffer_) buffer_[length_++] = *text++;
  }
  void add_bounded(const char* text, std::size_t most) noexcept {
    for (std::size_t i = 0; i < most && text[i] != '\0' && length_ < sizeof buffer_; ++i) buffer_[length_++] = text[i];
  }
  void add_decimal(std::uint64_t value) noexcept {
    char digits[20];
    std::size_t count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (count > 0 && length_ < sizeof buffer_) buffer_[length_++] = digits[--count];
  }
  void add_hex(std::uint64_t value) noexcept {
    add("0x");
    char digits[16];
    std::size_t count = 0;
    do {
      digits[count++] = "0123456789abcdef"[value & 15];
      value >>= 4;
    } while (value != 0);
    while (count > 0 && length_ < sizeof buffer_) buffer_[length_++] = digits[--count];
  }
  void write() const noexcept { os::write_stderr(buffer_, length_); }

 private:
  char buffer_[1024];
  std::size_t length_ = 0;
};

// The filter (os::FaultFilter): a fault in the guard page of the fiber that runs on this thread.
bool report_overflow(std::uintptr_t address) noexcept {
  const FiberOverflowScope::Context* context = tls_overflow_context;
  const std::uintptr_t low = stack_guard_detail::tls_fiber_low;
  const std::size_t size = stack_guard_detail::tls_fiber_size;
  if (context == nullptr || low == 0 || size == 0) return false;
  if (address >= low || address < low - context->guard_size) return false;
  Message message;
  message.add("weft: fiber stack overflow: a task on worker ");
  message.add_decimal(context->worker);
  message.add(" of pool '");
  message.add_bounded(context->pool_name, 64);
  message.add("' used all ");
  message.add_decimal(size / 1024);
  message.add(" KiB of its fiber stack and touched the guard page below it (address ");
  message.add_hex(address);
  message.add("). Give the pool larger fiber stacks with PoolOptions::fiber_stack_size (now ");
  message.add_decimal(size);
  message.add(
      " bytes; address space is reserved, memory is used only as the stack grows), or make the task "
#if defined(_WIN32)
      "recurse less deeply. The process dies of the exception.\n");
#else
      "recurse less deeply. The process dies of SIGSEGV.\n");
#endif
  message.write();
  return true;
}

}  // namespace

void install_fiber_overflow_report() noexcept { (void)os::install_fault_filter(&report_overflow); }

FiberOverflowScope::FiberOverflowScope(const char* pool_name, unsigned worker, std::size_t guard_size) noexcept
    : context_{pool_name, worker, guard_size} {
  tls_overflow_context = &context_;
}

FiberOverflowScope::~FiberOverflowScope() { tls_overflow_context = nullptr; }

}  // namespace weft::fiber
