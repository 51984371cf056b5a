// Topology discovery with hwloc and the binding plans of the pinning policies.
#include "runtime/platform/topology.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "hetkern/error.hpp"

namespace hk::detail {
namespace {

struct Bitmap {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  Bitmap() = default;
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  ~Bitmap() { hwloc_bitmap_free(b); }
};

struct Handle {
  hwloc_topology_t t = nullptr;
  Handle() { hwloc_topology_init(&t); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (t) hwloc_topology_destroy(t);
  }
  hwloc_topology_t release() { return std::exchange(t, nullptr); }
};

bool is_data_cache(hwloc_obj_t o) {
  return hwloc_obj_type_is_cache(o->type) && o->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION;
}

// The level-`level` data or unified cache above `core`; null when there is none.
hwloc_obj_t data_cache_above(hwloc_obj_t core, int level) {
  for (hwloc_obj_t o = core->parent; o; o = o->parent)
    if (is_data_cache(o) && int(o->attr->cache.depth) == level) return o;
  return nullptr;
}

// Limits the topology to `set`; false when that leaves no PU.
bool restrict_to(hwloc_topology_t t, hwloc_const_bitmap_t set) {
  if (!hwloc_bitmap_intersects(set, hwloc_topology_get_topology_cpuset(t))) return false;
  return hwloc_topology_restrict(t, set, HWLOC_RESTRICT_FLAG_REMOVE_CPULESS) == 0;
}

// The PUs of OpenMP's places when OpenMP binds its threads (OMP_PROC_BIND other than false, or
// OMP_PLACES alone): libomp has then bound the initial thread to one place already, so the
// process's affinity no longer says which CPUs the process may use, and the places do.
bool openmp_places(Bitmap& out) {
  if (omp_get_proc_bind() == omp_proc_bind_false) return false;
  const int n = omp_get_num_places();
  for (int p = 0; p < n; ++p) {
    std::vector<int> ids(std::size_t(std::max(0, omp_get_place_num_procs(p))));
    omp_get_place_proc_ids(p, ids.data());
    for (int id : ids) hwloc_bitmap_set(out.b, unsigned(id));
  }
  return !hwloc_bitmap_iszero(out.b);
}

void serialize(hwloc_obj_t o, std::string& out) {
  out += hwloc_obj_type_string(o->type);
  if (hwloc_obj_type_is_cache(o->type)) out += "(" + std::to_string(o->attr->cache.size) + ")";
  if (o->type == HWLOC_OBJ_PU || o->type == HWLOC_OBJ_NUMANODE) out += "#" + std::to_string(o->os_index);
  out += "[";
  for (hwloc_obj_t m = o->memory_first_child; m; m = m->next_sibling) serialize(m, out);
  for (unsigned i = 0; i < o->arity; ++i) serialize(o->children[i], out);
  out += "]";
}

}  // namespace

Topology::Topology(hwloc_topology_t handle, const char* source) : topo_(handle), source_(source) {
  this_system_ = hwloc_topology_is_thissystem(topo_) != 0;
  allowed_ = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo_));
  hwloc_bitmap_and(allowed_, allowed_, hwloc_topology_get_topology_cpuset(topo_));
  index();
}

Topology::~Topology() {
  hwloc_bitmap_free(allowed_);
  hwloc_topology_destroy(topo_);
}

std::unique_ptr<Topology> Topology::discover(std::string& failure) {
  Handle h;
  const char* source = "this system";
  std::string load_failure = "hwloc could not load the topology";
  // Forced explicitly, so that a bad file or description fails here: hwloc's own handling of
  // these variables silently falls back to the real machine.
  if (const char* xml = std::getenv("HWLOC_XMLFILE"); xml && *xml) {
    if (hwloc_topology_set_xml(h.t, xml) != 0) {
      failure = "HWLOC_XMLFILE=" + std::string(xml) + " cannot be read as an hwloc XML topology";
      return nullptr;
    }
    source = "xml";
    load_failure = "HWLOC_XMLFILE=" + std::string(xml) + " cannot be loaded as an hwloc XML topology";
  } else if (const char* synthetic = std::getenv("HWLOC_SYNTHETIC"); synthetic && *synthetic) {
    if (hwloc_topology_set_synthetic(h.t, synthetic) != 0) {
      failure = "HWLOC_SYNTHETIC=\"" + std::string(synthetic) + "\" is not a valid synthetic topology";
      return nullptr;
    }
    source = "synthetic";
  }
  // Without hwloc's XML plugin, set_xml accepts any path and only load fails.
  if (hwloc_topology_load(h.t) != 0) {
    failure = load_failure;
    return nullptr;
  }
  // hwloc's allowed cpuset is the cgroup's; taskset and sched_setaffinity narrow the process's
  // binding (on Linux, the union of its threads' affinities) without changing it.
  if (hwloc_topology_is_thissystem(h.t)) {
    Bitmap usable;
    const bool places = openmp_places(usable);
    if (!places && (hwloc_get_cpubind(h.t, usable.b, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(usable.b)))
      hwloc_bitmap_copy(usable.b, hwloc_topology_get_allowed_cpuset(h.t));
    if (!restrict_to(h.t, usable.b)) {
      failure = places ? "OpenMP's places name no PU this process may use"
                       : "the process's CPU affinity names no PU hwloc found";
      return nullptr;
    }
  }
  if (hwloc_get_nbobjs_by_type(h.t, HWLOC_OBJ_PU) <= 0) {
    failure = "hwloc found no processing unit";
    return nullptr;
  }
  return std::unique_ptr<Topology>(new Topology(h.release(), source));
}

std::unique_ptr<Topology> Topology::synthetic(std::string_view description, std::string_view allowed_pus) {
  Handle h;
  const std::string text(description);
  if (hwloc_topology_set_synthetic(h.t, text.c_str()) != 0 || hwloc_topology_load(h.t) != 0)
    throw Error(Errc::invalid_parameter, "topology", "synthetic", "'" + text + "' is not a valid hwloc synthetic topology");
  if (!allowed_pus.empty()) {
    Bitmap set;
    const std::string list(allowed_pus);
    if (hwloc_bitmap_list_sscanf(set.b, list.c_str()) != 0 || !restrict_to(h.t, set.b))
      throw Error(Errc::invalid_parameter, "topology", "allowed_pus",
                  "'" + list + "' names no PU of '" + text + "'");
  }
  return std::unique_ptr<Topology>(new Topology(h.release(), "synthetic"));
}

std::unique_ptr<Topology> Topology::from_xml(const std::string& path) {
  Handle h;
  if (hwloc_topology_set_xml(h.t, path.c_str()) != 0 || hwloc_topology_load(h.t) != 0)
    throw Error(Errc::invalid_file, "topology", path, "not an hwloc XML topology");
  return std::unique_ptr<Topology>(new Topology(h.release(), "xml"));
}

std::string Topology::to_xml() const {
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(topo_, &buffer, &length, 0) != 0) return {};
  std::string out(buffer, std::size_t(std::max(0, length - 1)));
  hwloc_free_xmlbuffer(topo_, buffer);
  return out;
}

void Topology::index() {
  core_type_ = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  std::vector<hwloc_obj_t> nodes;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, n));)
    if (hwloc_bitmap_intersects(n->cpuset, allowed_)) {
      nodes.push_back(n);
      numa_os_.push_back(int(n->os_index));
    }
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo_, core_type_, c));) {
    Core core;
    for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_inside_cpuset_by_type(topo_, c->cpuset, HWLOC_OBJ_PU, pu));)
      if (hwloc_bitmap_isset(allowed_, pu->os_index)) core.pus.push_back(int(pu->os_index));
    for (std::size_t k = 0; k < nodes.size() && core.numa < 0; ++k)
      if (hwloc_bitmap_isincluded(c->cpuset, nodes[k]->cpuset)) core.numa = int(k);
    cores_.push_back(std::move(core));
  }
}

std::vector<int> Topology::scatter_cores(hwloc_obj_t obj) const {
  if (obj->type == core_type_) {
    if (cores_[obj->logical_index].pus.empty()) return {};
    return {int(obj->logical_index)};
  }
  // Round robin over the children's own scatter orders: consecutive threads land in different
  // children at every level (packages, then NUMA nodes and caches inside them).
  std::vector<std::vector<int>> parts;
  for (unsigned i = 0; i < obj->arity; ++i) {
    auto part = scatter_cores(obj->children[i]);
    if (!part.empty()) parts.push_back(std::move(part));
  }
  std::vector<int> out;
  for (std::size_t round = 0; !parts.empty(); ++round) {
    bool any = false;
    for (const auto& part : parts)
      if (round < part.size()) {
        out.push_back(part[round]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

std::vector<int> Topology::fill(const std::vector<int>& order, int threads) const {
  std::vector<int> sequence;
  std::size_t widest = 0;
  for (int c : order) widest = std::max(widest, cores_[std::size_t(c)].pus.size());
  for (std::size_t pass = 0; pass < widest; ++pass)
    for (int c : order)
      if (pass < cores_[std::size_t(c)].pus.size()) sequence.push_back(cores_[std::size_t(c)].pus[pass]);
  std::vector<int> out;
  for (int t = 0; t < threads && !sequence.empty(); ++t) out.push_back(sequence[std::size_t(t) % sequence.size()]);
  return out;
}

BindingPlan Topology::plan(int threads, PinPolicy policy) const {
  BindingPlan plan;
  plan.policy = policy;
  plan.threads = threads;
  std::vector<int> all;
  for (std::size_t c = 0; c < cores_.size(); ++c)
    if (!cores_[c].pus.empty()) all.push_back(int(c));
  switch (policy) {
    case PinPolicy::none: return plan;
    case PinPolicy::compact: plan.pus = fill(all, threads); break;
    case PinPolicy::scatter: plan.pus = fill(scatter_cores(hwloc_get_root_obj(topo_)), threads); break;
    case PinPolicy::numa: {
      // Node k's group: a share of the threads proportional to its cores (even on even nodes).
      const int nodes = std::max<int>(1, int(numa_os_.size()));
      std::int64_t before = 0;
      for (int k = 0; k < nodes; ++k) {
        std::vector<int> mine;
        for (int c : all)
          if (std::max(0, cores_[std::size_t(c)].numa) == k) mine.push_back(c);
        const std::int64_t first = before * threads / std::int64_t(all.size());
        before += std::int64_t(mine.size());
        const std::int64_t share = before * threads / std::int64_t(all.size()) - first;
        const auto part = fill(mine, int(share));
        plan.pus.insert(plan.pus.end(), part.begin(), part.end());
      }
      break;
    }
  }
  std::map<int, int> node_of;
  for (const Core& c : cores_)
    for (int pu : c.pus) node_of[pu] = c.numa < 0 ? -1 : numa_os_[std::size_t(c.numa)];
  for (int pu : plan.pus) plan.numa_nodes.push_back(node_of[pu]);
  return plan;
}

std::int64_t Topology::data_cache_bytes(int level) const {
  std::int64_t smallest = 0;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo_, core_type_, c));)
    if (const hwloc_obj_t o = data_cache_above(c, level)) {
      const auto size = std::int64_t(o->attr->cache.size);
      if (size > 0) smallest = smallest == 0 ? size : std::min(smallest, size);
    }
  return smallest;
}

std::int64_t Topology::total_data_cache_bytes(int level) const {
  std::vector<hwloc_obj_t> seen;
  std::int64_t total = 0;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo_, core_type_, c));) {
    const hwloc_obj_t o = data_cache_above(c, level);
    if (o && std::find(seen.begin(), seen.end(), o) == seen.end()) {
      seen.push_back(o);
      total += std::int64_t(o->attr->cache.size);
    }
  }
  return total;
}

bool Topology::bind_this_thread(int pu) const {
  Bitmap set;
  if (pu < 0)
    hwloc_bitmap_copy(set.b, allowed_);
  else
    hwloc_bitmap_only(set.b, unsigned(pu));
  return hwloc_set_cpubind(topo_, set.b, HWLOC_CPUBIND_THREAD) == 0;
}

TopologyInfo Topology::info() const {
  TopologyInfo info;
  info.available = true;
  info.this_system = this_system_;
  info.source = source_;
  auto count = [&](hwloc_obj_type_t type) {
    int n = 0;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_obj_by_type(topo_, type, o));)
      n += hwloc_bitmap_intersects(o->cpuset, allowed_) ? 1 : 0;
    return n;
  };
  info.packages = count(HWLOC_OBJ_PACKAGE);
  info.numa_nodes = int(numa_os_.size());
  for (const Core& c : cores_) {
    info.cores += c.pus.empty() ? 0 : 1;
    info.pus += int(c.pus.size());
  }
  std::map<std::pair<int, std::int64_t>, int> caches;
  const int depth = hwloc_topology_get_depth(topo_);
  for (int d = 0; d < depth; ++d)
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_obj_by_depth(topo_, d, o));)
      if (is_data_cache(o) && hwloc_bitmap_intersects(o->cpuset, allowed_))
        ++caches[{int(o->attr->cache.depth), std::int64_t(o->attr->cache.size)}];
  for (const auto& [key, n] : caches) info.caches.push_back({key.first, key.second, n});
  info.digest = digest();
  return info;
}

std::string Topology::digest() const {
  std::string text;
  serialize(hwloc_get_root_obj(topo_), text);
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  char out[32];
  std::snprintf(out, sizeof out, "hwloc-%016llx", static_cast<unsigned long long>(h));
  return out;
}

namespace {

struct Host {
  std::string failure;
  std::unique_ptr<Topology> topology;
  Host() {
    topology = Topology::discover(failure);
    if (!topology)
      std::fprintf(stderr, "hetkern: warning: no hwloc topology (%s); threads run unpinned\n", failure.c_str());
  }
};

const Host& host() {
  static const Host h;
  return h;
}

}  // namespace

const Topology* host_topology() { return host().topology.get(); }

const std::string& host_topology_failure() { return host().failure; }

std::int64_t host_data_cache_bytes(int level, std::int64_t fallback) {
  const Topology* t = host_topology();
  const std::int64_t bytes = t ? t->data_cache_bytes(level) : 0;
  return bytes > 0 ? bytes : fallback;
}

std::int64_t host_total_data_cache_bytes(int level, std::int64_t fallback) {
  const Topology* t = host_topology();
  const std::int64_t bytes = t ? t->total_data_cache_bytes(level) : 0;
  return bytes > 0 ? bytes : fallback;
}

}  // namespace hk::detail
