// Linux's side of src/cpu_topology.hpp: /sys/devices/system/cpu/cpuN/{topology,cache} and
// /sys/devices/system/node/nodeN/{cpulist,distance}. Plain file reads: no system call beyond open and read.
#include "src/cpu_topology.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace weft::os {
namespace {

const std::filesystem::path kCpuRoot = "/sys/devices/system/cpu";
const std::filesystem::path kNodeRoot = "/sys/devices/system/node";

std::optional<std::string> read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<unsigned> read_unsigned(const std::filesystem::path& path) {
  const auto line = read_line(path);
  if (!line || line->empty()) return std::nullopt;
  try {
    const long value = std::stol(*line);
    if (value < 0) return std::nullopt;
    return static_cast<unsigned>(value);
  } catch (...) {
    return std::nullopt;
  }
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nothing on a malformed list.
std::optional<std::vector<unsigned>> parse_list(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    try {
      const auto dash = item.find('-');
      const unsigned first = static_cast<unsigned>(std::stoul(item.substr(0, dash)));
      const unsigned last = dash == std::string::npos ? first
                                                      : static_cast<unsigned>(std::stoul(item.substr(dash + 1)));
      if (last < first || last - first > 1'000'000) return std::nullopt;
      for (unsigned cpu = first; cpu <= last; ++cpu) out.push_back(cpu);
    } catch (...) {
      return std::nullopt;
    }
  }
  return out;
}

// "48K" -> 49152.
std::uint64_t parse_size(const std::string& text) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0; ++i)
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  if (i < text.size()) {
    if (text[i] == 'K') value <<= 10U;
    if (text[i] == 'M') value <<= 20U;
    if (text[i] == 'G') value <<= 30U;
  }
  return value;
}

// The kernel's NUMA nodes, ascending, with their CPU lists; empty if the kernel has none (CONFIG_NUMA off).
std::map<unsigned, std::vector<unsigned>> read_nodes() {
  std::map<unsigned, std::vector<unsigned>> nodes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeRoot, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 5 || name.compare(0, 4, "node") != 0 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    const auto list = read_line(entry.path() / "cpulist");
    auto cpus = list ? parse_list(*list) : std::nullopt;
    if (cpus) nodes[static_cast<unsigned>(std::stoul(name.substr(4)))] = std::move(*cpus);
  }
  return nodes;
}

}  // namespace

std::optional<MachineFacts> read_machine_facts(std::span<const unsigned> cpus) {
  MachineFacts facts;
  const auto nodes = read_nodes();
  std::vector<unsigned> used_nodes;
  for (const unsigned cpu : cpus) {
    const auto dir = kCpuRoot / ("cpu" + std::to_string(cpu));
    const auto package = read_unsigned(dir / "topology" / "physical_package_id");
    const auto siblings = read_line(dir / "topology" / "thread_siblings_list");
    const auto sibling_cpus = siblings ? parse_list(*siblings) : std::nullopt;
    if (!package || !sibling_cpus || sibling_cpus->empty()) return std::nullopt;
    CpuFacts one{.cpu = cpu, .package = *package, .core = sibling_cpus->front(), .node = 0};
    for (const auto& [node, node_cpus] : nodes) {
      if (std::find(node_cpus.begin(), node_cpus.end(), cpu) != node_cpus.end()) one.node = node;
    }
    if (std::find(used_nodes.begin(), used_nodes.end(), one.node) == used_nodes.end()) used_nodes.push_back(one.node);
    facts.cpus.push_back(one);

    // Its caches, each kept once (the first CPU that names it); instruction caches left out.
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "cache", error)) {
      const auto type = read_line(entry.path() / "type");
      const auto level = read_unsigned(entry.path() / "level");
      const auto size = read_line(entry.path() / "size");
      const auto shared = read_line(entry.path() / "shared_cpu_list");
      auto shared_cpus = shared ? parse_list(*shared) : std::nullopt;
      if (!type || *type == "Instruction" || !level || !size || !shared_cpus) continue;
      std::vector<unsigned> ours;
      for (const unsigned c : *shared_cpus) {
        if (std::find(cpus.begin(), cpus.end(), c) != cpus.end()) ours.push_back(c);
      }
      const bool known = std::any_of(facts.caches.begin(), facts.caches.end(), [&](const CacheFacts& cache) {
        return cache.level == *level && cache.cpus == ours;
      });
      if (!known) facts.caches.push_back({.level = *level, .bytes = parse_size(*size), .cpus = std::move(ours)});
    }
  }
  std::sort(used_nodes.begin(), used_nodes.end());
  facts.nodes = used_nodes;
  // Each node's row of distances names every node of the kernel's, in ascending order.
  std::vector<unsigned> all_nodes;
  for (const auto& [node, node_cpus] : nodes) all_nodes.push_back(node);
  for (const unsigned from : used_nodes) {
    if (nodes.empty()) break;
    const auto row = read_line(kNodeRoot / ("node" + std::to_string(from)) / "distance");
    std::vector<unsigned> values;
    if (row) {
      std::stringstream in(*row);
      unsigned value = 0;
      while (in >> value) values.push_back(value);
    }
    if (values.size() != all_nodes.size()) {
      facts.distances.clear();
      break;
    }
    for (const unsigned to : used_nodes) {
      const auto at = std::find(all_nodes.begin(), all_nodes.end(), to) - all_nodes.begin();
      facts.distances.push_back(values[static_cast<std::size_t>(at)]);
    }
  }
  return facts;
}

}  // namespace weft::os
