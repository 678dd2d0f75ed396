// The machine as weft sees it: the CPUs this process may use, grouped into SMT siblings, cores, NUMA nodes and
// packages, with the caches they share and the distances between nodes; and where a pool's workers go on it
// (weft::placement, the rules of Pinning::Cores, Compact and Spread and of PoolOptions::numa_node).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/pool_options.hpp"

namespace weft {

namespace detail {
struct TopologyAccess;
}  // namespace detail

// Where a Topology's facts came from.
enum class TopologySource : std::uint8_t {
  Hwloc,      // the hwloc library (weft built with it: topology_from_hwloc_available())
  Sysfs,      // Linux's /sys/devices/system/{cpu,node}, in a weft built without hwloc or where hwloc failed
  Synthetic,  // an hwloc synthetic description (Topology::synthetic), for tests and what-ifs
  Given,      // the CpuInfo list a program passed to the constructor
  Flat,       // no facts: each CPU its own core, one NUMA node, one package (the OS said nothing)
};

// One CPU (a hardware thread, hwloc's "PU") of a Topology. The ids are dense and numbered in ascending order of the
// machine's own ids over the CPUs the topology holds: package in [0, packages()), numa_node in [0, numa_nodes()),
// core in [0, cores()) (unique over the whole machine, not per package).
struct CpuInfo {
  unsigned cpu = 0;        // the OS's number for it: what taskset, PoolOptions::cpus and sched_getcpu() use
  unsigned package = 0;    // its socket
  unsigned numa_node = 0;  // the memory node it is closest to
  unsigned core = 0;       // its physical core; CPUs with the same core are SMT siblings
  unsigned smt = 0;        // its rank among its core's CPUs, ascending by `cpu`: 0 for the first thread of a core
};

// A data or unified cache, and the CPUs that share it.
struct CacheInfo {
  unsigned level = 0;          // 1, 2, 3...
  std::uint64_t bytes = 0;     // its size
  std::vector<unsigned> cpus;  // the OS numbers of the CPUs (of this topology) that share it, ascending
};

// The CPUs this process may use and how they are grouped. A value: copy it, keep it, compare it. Built once,
// never updated: a change of the process's affinity mask later is seen by the next Topology::current().
class Topology {
 public:
  // The machine this process runs on, as far as it may use it (its affinity mask at the time of the call): from
  // hwloc in a weft built with it, else from Linux's /sys, else (another OS, or /sys unreadable) flat. Never throws
  // for lack of facts: source() says what it found. Costs a few milliseconds (hwloc reads /sys and /proc).
  [[nodiscard]] static Topology current();

  // The machine an hwloc synthetic description names, e.g. "pack:2 numa:2 core:16 pu:2" (two packages of two NUMA
  // nodes of sixteen cores of two threads each: 128 CPUs numbered 0..127 in that order). Throws
  // weft::invalid_option naming the description if hwloc refuses it, or if weft was built without hwloc
  // (synthetic_available() is false then). Node distances are those of an hwloc description that gives them,
  // else derived from the packages (default_distance).
  [[nodiscard]] static Topology synthetic(std::string_view description);

  // Whether Topology::synthetic works in this build (weft found hwloc when it was configured).
  [[nodiscard]] static bool synthetic_available() noexcept;

  // A topology with no facts: each CPU its own core, all on one node and one package. `cpus` in any order,
  // without repeats (invalid_option otherwise); an empty list gives an empty topology.
  [[nodiscard]] static Topology flat(std::vector<unsigned> cpus);

  // A topology of the CPUs given, with the ids as the caller numbers them (renumbered densely, keeping their order;
  // `smt` is recomputed from `cpu` and `core`). `distances`, if not empty, is the node distance matrix, row-major,
  // of side the number of distinct numa_node ids given (in their ascending order), 10 on the diagonal as Linux's
  // SLIT says it; empty means default_distance. Throws invalid_option naming the CPU or the size if a CPU repeats
  // or the matrix has the wrong size. The source is TopologySource::Given.
  explicit Topology(std::vector<CpuInfo> cpus, std::vector<unsigned> distances = {},
                    std::vector<CacheInfo> caches = {});

  // The empty topology (no CPUs); source() is Flat.
  Topology() = default;

  // Every CPU, ascending by CpuInfo::cpu.
  [[nodiscard]] std::span<const CpuInfo> cpus() const noexcept { return cpus_; }
  // The CpuInfo of the OS's CPU `cpu`, or null if this topology does not hold it.
  [[nodiscard]] const CpuInfo* find(unsigned cpu) const noexcept;
  // How many packages, NUMA nodes and cores the CPUs span (0 for the empty topology).
  [[nodiscard]] unsigned packages() const noexcept { return packages_; }
  [[nodiscard]] unsigned numa_nodes() const noexcept { return nodes_; }
  [[nodiscard]] unsigned cores() const noexcept { return cores_; }
  // The most CPUs any one core has (1 without SMT; 0 for the empty topology).
  [[nodiscard]] unsigned threads_per_core() const noexcept { return threads_per_core_; }
  // The OS numbers of node `node`'s CPUs, ascending (empty for a node out of range).
  [[nodiscard]] std::vector<unsigned> node_cpus(unsigned node) const;
  // The distance from node `from` to node `to` (10 to itself; larger is farther, as in Linux's SLIT), both in
  // [0, numa_nodes()); 0 if either is out of range.
  [[nodiscard]] unsigned distance(unsigned from, unsigned to) const noexcept;
  // The caches found (empty if the source gives none), by level, then by first CPU.
  [[nodiscard]] std::span<const CacheInfo> caches() const noexcept { return caches_; }
  // Where the facts came from.
  [[nodiscard]] TopologySource source() const noexcept { return source_; }
  // Whether the topology knows cores and nodes (any source but Flat): what Pinning::Cores, Compact, Spread and
  // PoolOptions::numa_node need.
  [[nodiscard]] bool has_facts() const noexcept { return source_ != TopologySource::Flat; }
  // One line per node and its cores, then the caches: for logs and bug reports.
  [[nodiscard]] std::string describe() const;

  // The distance weft assumes between two nodes when the source gives none: 10 to itself, 20 within a package,
  // 30 across packages.
  static constexpr unsigned default_distance(bool same_node, bool same_package) noexcept {
    return same_node ? 10 : same_package ? 20 : 30;
  }

  friend bool operator==(const Topology&, const Topology&) = default;

 private:
  friend struct detail::TopologyAccess;
  std::vector<CpuInfo> cpus_;
  std::vector<unsigned> distances_;  // nodes_ x nodes_, row-major
  std::vector<CacheInfo> caches_;
  unsigned packages_ = 0;
  unsigned nodes_ = 0;
  unsigned cores_ = 0;
  unsigned threads_per_core_ = 0;
  TopologySource source_ = TopologySource::Flat;
};

// Whether this weft was built with hwloc (then Topology::current() asks hwloc, and Topology::synthetic works).
[[nodiscard]] bool topology_from_hwloc_available() noexcept;

// Where each of `workers` workers of a pool configured by `options` goes on `topology`: one entry per worker,
// the OS numbers of the CPUs it may run on (one CPU when pinned, a node's CPUs for PoolOptions::numa_node without
// a pinning, empty for anywhere). A pure function: the pool calls it with Topology::current() and its worker
// count, and a test or a program may call it with any topology to see what a pool would do there. With more
// workers than CPUs the order starts again from its first CPU. The rules:
// - Pinning::None: anywhere (or anywhere on the node, with numa_node).
// - Pinning::OnePerCpu: worker i on the i-th CPU, ascending. Pinning::CpuList: worker i on cpus[i % cpus.size()].
// - Pinning::Cores: the first CPU of every core (cores in order of node, then core), then the second of every core
//   that has one, and so on: no two workers share a core while a core is free.
// - Pinning::Compact: node by node; within a node, its cores' first CPUs, then their second, as Cores does.
// - Pinning::Spread: worker i on node i % nodes, taking that node's CPUs in Compact's order (a node out of CPUs is
//   skipped until every node is).
// - numa_node: only that node's CPUs (with OnePerCpu, Cores, Compact or Spread); CpuList with it is refused.
// Throws weft::invalid_option naming the option and its value: numa_node out of range, a policy that needs facts
// on a Flat topology, a CpuList CPU the topology does not hold, an empty CpuList, or a pinning value that is not a
// weft::Pinning.
[[nodiscard]] std::vector<std::vector<unsigned>> placement(const Topology& topology, const PoolOptions& options,
                                                           unsigned workers);

}  // namespace weft
