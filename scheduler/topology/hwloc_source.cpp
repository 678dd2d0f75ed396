// Topology from hwloc, in a weft built with it (WEFT_HWLOC = 1): the machine's, or one an hwloc synthetic
// description names. Without hwloc every call says so and the caller falls back (topology.cpp).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/topology/hwloc_config.hpp"
#include "scheduler/topology/topology_access.hpp"
#include "weft/topology.hpp"

#if WEFT_HWLOC
#include <hwloc.h>
#endif

namespace weft {

bool Topology::synthetic_available() noexcept { return WEFT_HWLOC != 0; }

bool topology_from_hwloc_available() noexcept { return WEFT_HWLOC != 0; }

}  // namespace weft

namespace weft::topology {

#if WEFT_HWLOC

namespace {

// Owns one hwloc topology.
class HwlocTopology {
 public:
  HwlocTopology() { ok_ = hwloc_topology_init(&handle_) == 0; }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  ~HwlocTopology() {
    if (ok_) hwloc_topology_destroy(handle_);
  }
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] hwloc_topology_t get() const noexcept { return handle_; }

 private:
  hwloc_topology_t handle_{};
  bool ok_ = false;
};

std::vector<unsigned> pus_of(hwloc_const_bitmap_t set, const std::vector<unsigned>& ours) {
  std::vector<unsigned> out;
  for (const unsigned cpu : ours) {
    if (hwloc_bitmap_isset(set, cpu) != 0) out.push_back(cpu);
  }
  return out;
}

}  // namespace

bool from_hwloc(const char* description, Topology& out, std::string& why) {
  HwlocTopology topology;
  if (!topology.ok()) {
    why = "hwloc_topology_init failed";
    return false;
  }
  hwloc_topology_t topo = topology.get();
  // Devices are not needed: leaving them out keeps the load at a few milliseconds.
  (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (description != nullptr && hwloc_topology_set_synthetic(topo, description) != 0) {
    why = "hwloc does not accept this synthetic description (see hwloc's \"Synthetic topologies\")";
    return false;
  }
  if (hwloc_topology_load(topo) != 0) {
    why = "hwloc_topology_load failed";
    return false;
  }
  const int pu_count = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  const int node_count = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  std::vector<CpuInfo> cpus;
  std::vector<unsigned> ours;
  for (int i = 0; i < pu_count; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    CpuInfo cpu{.cpu = pu->os_index};
    const hwloc_obj* core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
    // A PU without a core (some virtual machines) is its own core, numbered after every real one.
    cpu.core = core != nullptr ? core->logical_index : 0x10000U + pu->logical_index;
    const hwloc_obj* package = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
    cpu.package = package != nullptr ? package->logical_index : 0;
    for (int n = 0; n < node_count; ++n) {
      const hwloc_obj* node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
      if (node->cpuset != nullptr && hwloc_bitmap_isset(node->cpuset, pu->os_index) != 0) {
        cpu.numa_node = node->logical_index;
        break;
      }
    }
    cpus.push_back(cpu);
    ours.push_back(cpu.cpu);
  }

  // The nodes our CPUs are on, ascending: the order of the distance matrix Topology expects.
  std::vector<unsigned> nodes;
  for (const CpuInfo& cpu : cpus) nodes.push_back(cpu.numa_node);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::vector<unsigned> distances;
  unsigned matrices = 1;
  hwloc_distances_s* matrix = nullptr;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &matrices, &matrix, HWLOC_DISTANCES_KIND_MEANS_LATENCY,
                                  0) == 0 &&
      matrices >= 1 && matrix != nullptr) {
    std::vector<int> at(nodes.size(), -1);  // our node i is the matrix's object at[i]
    for (unsigned k = 0; k < matrix->nbobjs; ++k) {
      const auto it = std::find(nodes.begin(), nodes.end(), matrix->objs[k]->logical_index);
      if (it != nodes.end()) at[static_cast<std::size_t>(it - nodes.begin())] = static_cast<int>(k);
    }
    if (std::find(at.begin(), at.end(), -1) == at.end()) {
      for (const int a : at) {
        for (const int b : at)
          distances.push_back(static_cast<unsigned>(
              matrix->values[static_cast<std::size_t>(a) * matrix->nbobjs + static_cast<std::size_t>(b)]));
      }
    }
    hwloc_distances_release(topo, matrix);
  }

  std::vector<CacheInfo> caches;
  for (const hwloc_obj_type_t type :
       {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE}) {
    const int count = hwloc_get_nbobjs_by_type(topo, type);
    for (int i = 0; i < count; ++i) {
      const hwloc_obj* cache = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
      if (cache->attr == nullptr || cache->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
      caches.push_back(
          {.level = cache->attr->cache.depth, .bytes = cache->attr->cache.size, .cpus = pus_of(cache->cpuset, ours)});
    }
  }
  out = Topology(std::move(cpus), std::move(distances), std::move(caches));
  detail::TopologyAccess::set_source(out, TopologySource::Hwloc);
  return true;
}

#else

bool from_hwloc(const char* /*description*/, Topology& /*out*/, std::string& why) {
  why = "weft was built without hwloc (meson option -Dhwloc; Debian's libhwloc-dev)";
  return false;
}

#endif

}  // namespace weft::topology
