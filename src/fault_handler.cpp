#include "src/fault_handler.hpp"

#include <atomic>
#include <mutex>

#include <signal.h>
#include <unistd.h>

#include "src/stack_memory.hpp"

namespace weft::os {
namespace {

// The filter and the handler it replaced. Written under `install_mutex` before the handler is installed (the
// sigaction call orders them before any signal that runs the handler); the filter is atomic because a later
// install_fault_filter may replace it while a fault on another thread reads it.
std::atomic<FaultFilter> installed_filter{nullptr};
struct sigaction previous_action {};
std::mutex install_mutex;

void on_fault(int signal, siginfo_t* info, void* context);

[[nodiscard]] bool is_ours(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == &on_fault;
}

// Gives the signal to the handler that was installed before ours, as if ours had never been there.
void pass_on(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = previous_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  // The default action (an ignored SIGSEGV would only fault again, forever): returning re-runs the faulting
  // access, which now kills the process with the signal.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  // acquire: pairs with install_fault_filter's release store.
  const FaultFilter filter = installed_filter.load(std::memory_order_acquire);
  if (filter != nullptr && info != nullptr && filter(reinterpret_cast<std::uintptr_t>(info->si_addr))) {
    // Recognised and told: die of the signal, as without this handler (and without a sanitizer's report, which
    // would only repeat it without the advice).
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    ::sigaction(signal, &fallback, nullptr);
    return;  // the faulting access runs again and kills the process
  }
  pass_on(signal, info, context);
}

}  // namespace

bool install_fault_filter(FaultFilter filter) noexcept {
  const std::lock_guard lock(install_mutex);
  installed_filter.store(filter, std::memory_order_release);
  struct sigaction current {};
  if (::sigaction(SIGSEGV, nullptr, &current) != 0) return false;
  if (is_ours(current)) return true;
  struct sigaction action {};
  action.sa_sigaction = &on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  // Swapped in one call, so that no fault between a read and a write finds neither handler; `previous_action`
  // is then what was there (possibly changed since the read above: the swap's answer is the true one).
  struct sigaction replaced {};
  if (::sigaction(SIGSEGV, &action, &replaced) != 0) return false;
  if (!is_ours(replaced)) previous_action = replaced;
  return true;
}

void write_stderr(const char* text, std::size_t length) noexcept {
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;  // nothing more can be done from a signal handler
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}

AlternateSignalStack::AlternateSignalStack() noexcept {
  stack_t current{};
  if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) {
    active_ = true;  // the thread has one: keep it
    return;
  }
  const std::size_t page = page_size();
  const std::size_t size = (kSize + page - 1) / page * page;
  // A guard page below it too: a handler that overflowed its own stack must not write over a neighbour's memory.
  low_ = map_guarded_stack(size, page);
  if (low_ == nullptr) return;
  stack_t stack{};
  stack.ss_sp = low_;
  stack.ss_size = size;
  stack.ss_flags = 0;
  if (::sigaltstack(&stack, nullptr) != 0) {
    unmap_guarded_stack(low_, size, page);
    low_ = nullptr;
    return;
  }
  active_ = true;
}

AlternateSignalStack::~AlternateSignalStack() {
  if (low_ == nullptr) return;
  stack_t disable{};
  disable.ss_flags = SS_DISABLE;
  ::sigaltstack(&disable, nullptr);
  const std::size_t page = page_size();
  unmap_guarded_stack(low_, (kSize + page - 1) / page * page, page);
}

}  // namespace weft::os
