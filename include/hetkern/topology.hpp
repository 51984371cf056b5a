// The machine as hetkern sees it (hwloc), and where host-parallel schedules put their threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hk {

/// Where the threads of a host-parallel schedule run (the schedule parameter `pin`).
///   none     not bound: every thread may run on any CPU the process is allowed
///   compact  one thread per core, cores in topology order: the first threads fill the cores of
///            one cache and NUMA domain before the next; hyperthreads only once every core has one
///   scatter  one thread per core, consecutive threads alternate between packages, NUMA nodes and
///            caches, so that few threads get the most memory bandwidth and cache
///   numa     the team cut into one contiguous group per NUMA node (as even as possible), each
///            group compact on its node; static loops then give each node a contiguous share
enum class PinPolicy { none, compact, scatter, numa };

/// "none", "compact", "scatter" or "numa".
const char* name_of(PinPolicy policy);
/// The policy named by `text`; throws hk::Error(Errc::invalid_parameter).
PinPolicy parse_pin_policy(std::string_view text);

/// Caches of one level and size: `count` of them of `size_bytes` each (data or unified caches).
struct CacheInfo {
  int level = 0;
  std::int64_t size_bytes = 0;
  int count = 0;
};

/// The part of the machine this process may use (its allowed cpuset, narrowed by OMP_PLACES when
/// set). Counts are of objects holding at least one allowed PU.
struct TopologyInfo {
  bool available = false;    // hwloc discovered a topology; false: reason says why
  bool this_system = false;  // the topology is this machine's (not HWLOC_SYNTHETIC / HWLOC_XMLFILE)
  std::string source;        // "this system", "synthetic", "xml" or "unavailable"
  std::string reason;        // why hwloc is unavailable (empty when available)
  int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
  std::vector<CacheInfo> caches;  // by level, then size
  std::string digest;             // topology_digest()
};

TopologyInfo topology_info();

/// A stable identifier of the allowed topology (its tree, cache sizes and PU numbers), e.g.
/// "hwloc-3f2a9c0d17b4e851"; "no-hwloc" when hwloc is unavailable. Equal on machines with the
/// same layout; tuning records carry it.
std::string topology_digest();

/// Where `threads` threads go under `policy`: the OS index of the PU each thread is bound to
/// (thread t gets pus[t]; empty for PinPolicy::none or without hwloc). More threads than allowed
/// PUs wrap around. `applied` says whether hetkern binds threads this way on this machine; `note`
/// says why not when it does not.
struct BindingPlan {
  PinPolicy policy = PinPolicy::none;
  int threads = 0;
  std::vector<int> pus;
  std::vector<int> numa_nodes;  // the NUMA node (OS index) of each pus[t]
  bool applied = false;
  std::string note;
};

BindingPlan binding_plan(int threads, PinPolicy policy);

/// The policy a host-parallel schedule uses when it names none: the environment variable
/// HETKERN_PIN when it names a policy (another value is reported once on stderr and ignored),
/// else compact where hetkern can bind threads (a topology of this machine, OpenMP not binding
/// its threads itself) and the layout has levels to respect (several packages or NUMA nodes, or
/// several PUs per core), and none elsewhere.
PinPolicy default_pin_policy();

}  // namespace hk
