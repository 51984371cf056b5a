// The hwloc topology of the process's allowed cpuset, and the binding plans computed from it.
#pragma once

#include <hwloc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hetkern/topology.hpp"

namespace hk::detail {

class Topology {
 public:
  /// This machine as hwloc reports it, or the topology HWLOC_XMLFILE or HWLOC_SYNTHETIC
  /// describes; on this machine limited to the allowed cpuset (cgroups) and to the process's CPU
  /// affinity (taskset), or, when OpenMP binds its threads, to the PUs of OpenMP's places.
  /// Null, with `failure` saying why, when hwloc cannot load a topology.
  static std::unique_ptr<Topology> discover(std::string& failure);

  /// A synthetic topology in hwloc's syntax ("pack:2 numa:2 core:8 pu:2"), limited to the PUs
  /// listed in `allowed_pus` (hwloc's list syntax, "0-7,16"; empty: all). For tests and for
  /// planning machines we do not have. Throws hk::Error(Errc::invalid_parameter).
  static std::unique_ptr<Topology> synthetic(std::string_view description, std::string_view allowed_pus = {});

  /// A topology from an hwloc XML file. Throws hk::Error(Errc::invalid_file).
  static std::unique_ptr<Topology> from_xml(const std::string& path);

  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  /// The XML hwloc would write for this topology (tests round-trip it through from_xml).
  std::string to_xml() const;

  TopologyInfo info() const;
  std::string digest() const;
  bool this_system() const { return this_system_; }

  /// The plan for `threads` threads (applied and note left for the caller to fill).
  BindingPlan plan(int threads, PinPolicy policy) const;

  /// The smallest level-`level` data or unified cache over an allowed core; 0 when there is none.
  std::int64_t data_cache_bytes(int level) const;
  /// The level-`level` data or unified caches over the allowed cores, all of them together; 0
  /// when there are none.
  std::int64_t total_data_cache_bytes(int level) const;

  /// Binds the calling thread to one PU (OS index), or to the whole allowed cpuset when pu < 0.
  /// False when the operating system refuses.
  bool bind_this_thread(int pu) const;

 private:
  struct Core {
    std::vector<int> pus;  // OS indices of its allowed PUs, in logical order
    int numa = -1;         // index into numa_os_
  };

  Topology(hwloc_topology_t handle, const char* source);
  void index();
  std::vector<int> scatter_cores(hwloc_obj_t obj) const;
  // Threads over cores in `order`: a PU per core, the cores' second PUs after all first ones.
  std::vector<int> fill(const std::vector<int>& order, int threads) const;

  hwloc_topology_t topo_;
  const char* source_;  // "this system", "synthetic" or "xml"
  bool this_system_ = false;
  hwloc_bitmap_t allowed_ = nullptr;  // the allowed cpuset: what "unbound" means
  std::vector<Core> cores_;         // allowed cores in logical (depth-first) order
  std::vector<int> numa_os_;        // OS indices of the NUMA nodes holding allowed PUs
  hwloc_obj_type_t core_type_ = HWLOC_OBJ_CORE;  // PU when the topology has no cores
};

/// The topology of this process, discovered on first use. Null when hwloc is unavailable or
/// failed; then one warning went to stderr and threads run unpinned.
const Topology* host_topology();

/// Why host_topology() is null (empty when it is not).
const std::string& host_topology_failure();

/// data_cache_bytes(level) of the host topology, or `fallback` without one (or without the level).
std::int64_t host_data_cache_bytes(int level, std::int64_t fallback);
/// total_data_cache_bytes(level) of the host topology, or `fallback` without one.
std::int64_t host_total_data_cache_bytes(int level, std::int64_t fallback);

}  // namespace hk::detail
