// The OS boundary for threads: how many CPUs this process may run on, thread names, pinning.
// Internal to weft: the scheduler calls these; users configure them through PoolOptions.
#pragma once

#include <span>
#include <string_view>

namespace weft::os {

// Number of CPUs in this process's affinity mask (what `taskset` allows), at least 1.
// Differs from std::thread::hardware_concurrency() in a container or under taskset.
[[nodiscard]] unsigned usable_cpu_count() noexcept;

// Names the calling thread (truncated to the 15 characters Linux keeps) so it shows in `top -H`
// and debuggers. Returns false if the OS refused.
bool set_current_thread_name(std::string_view name) noexcept;

// Restricts the calling thread to the given CPUs. Returns false (and changes nothing) if a CPU
// index is out of range or the OS refused, e.g. because the CPU is not in the process's mask.
bool pin_current_thread(std::span<const unsigned> cpus) noexcept;

}  // namespace weft::os
