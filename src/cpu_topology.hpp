// The OS boundary for the machine's shape: which CPUs share a core, a NUMA node, a package and a cache, as the
// kernel reports them (Linux: /sys/devices/system/{cpu,node}). Internal to weft: scheduler/topology/ builds
// weft::Topology from these facts when weft has no hwloc.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace weft::os {

// One CPU as the kernel numbers it. `core` is the OS number of the first CPU of its core (its SMT siblings share
// it), `package` the kernel's package id, `node` the kernel's NUMA node id (0 where the kernel has no nodes).
struct CpuFacts {
  unsigned cpu = 0;
  unsigned package = 0;
  unsigned core = 0;
  unsigned node = 0;
};

// A data or unified cache: its level, its size and the CPUs (of those asked about) that share it.
struct CacheFacts {
  unsigned level = 0;
  std::uint64_t bytes = 0;
  std::vector<unsigned> cpus;
};

struct MachineFacts {
  std::vector<CpuFacts> cpus;       // in the order asked
  std::vector<unsigned> nodes;      // the kernel's node ids the CPUs are on, ascending
  std::vector<unsigned> distances;  // nodes.size() squared, row-major in the order of `nodes`; empty if unknown
  std::vector<CacheFacts> caches;   // each cache once
};

// The facts of the CPUs given (the process's own, os::allowed_cpus()), or nothing if the OS does not report them
// (not Linux, /sys not mounted, a CPU without its topology directory).
[[nodiscard]] std::optional<MachineFacts> read_machine_facts(std::span<const unsigned> cpus);

}  // namespace weft::os
