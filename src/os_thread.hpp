// The OS boundary for threads: how many CPUs this process may run on, thread names, pinning.
// Internal to weft: the scheduler calls these; users configure them through PoolOptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::os {

// Number of CPUs in this process's affinity mask (what `taskset` allows), at least 1.
// Differs from std::thread::hardware_concurrency() in a container or under taskset.
[[nodiscard]] unsigned usable_cpu_count() noexcept;

// Names the calling thread (truncated to the 15 characters Linux keeps) so it shows in `top -H`
// and debuggers. Returns false if the OS refused.
bool set_current_thread_name(std::string_view name) noexcept;

// The calling thread's name as the OS keeps it (empty if the OS would not say).
[[nodiscard]] std::string current_thread_name();

// The calling thread's id as the OS numbers it (Linux: gettid), as `top -H` and perf show it.
[[nodiscard]] std::uint32_t current_thread_id() noexcept;

// Restricts the calling thread to the given CPUs. Returns false (and changes nothing) if a CPU
// index is out of range or the OS refused, e.g. because the CPU is not in the process's mask.
bool pin_current_thread(std::span<const unsigned> cpus) noexcept;

// The CPUs in this process's affinity mask, ascending.
[[nodiscard]] std::vector<unsigned> allowed_cpus();

// Sets the calling thread's nice value. Returns an empty optional on success, else the OS's reason.
[[nodiscard]] std::optional<std::string> set_current_thread_nice(int nice);

// The calling thread's stack: its lowest usable address (the stack grows down towards it) and its size. Asks
// the OS once per thread and remembers. Both 0 if the OS would not say.
struct StackBounds {
  std::uintptr_t low = 0;
  std::size_t size = 0;
};
[[nodiscard]] StackBounds current_stack_bounds() noexcept;

}  // namespace weft::os
