// The schedule space the tuner searches, generated from the strategy tables: each parameter the
// space has a rule for is enumerated over values derived from the shape, the caches and the
// thread count; any other parameter (and any strategy added later) keeps its library default,
// so a new strategy competes from the day it is registered.
#include "runtime/tuning/schedule_space.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "hetkern/error.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif
#include "hetkern/info.hpp"
#include "hetkern/topology.hpp"
#include "schedules/qmm_pack.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

// Below this size an output stays in the last-level cache, where non-temporal stores only hurt.
constexpr std::int64_t stream_min_output_bytes = std::int64_t(4) << 20;

std::int64_t ceil_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Powers of `factor` from lo while below `limit`, then `limit` itself, clipped to [min, max].
std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t limit, std::int64_t factor,
                                    const ParamSpec& spec) {
  std::set<std::int64_t> out;
  for (std::int64_t v = lo; v < limit; v *= factor) out.insert(v);
  out.insert(std::max(lo, limit));
  std::vector<std::int64_t> values;
  for (const auto v : out)
    if (v >= spec.min && v <= spec.max) values.push_back(v);
  return values;
}

struct Context {
  int threads = 1;
  // scans
  std::int64_t lines = 1, length = 1, side_by_side = 1;
  bool in_place = false;
  std::int64_t output_bytes = 0;
  // matmul
  std::int64_t M = 1, N = 1, K = 1;
};

// The pinning policies worth timing: none of them (the default stays) where threads cannot be
// bound; compact against
// none elsewhere, and scatter and numa where there are packages or NUMA nodes to spread over.
std::vector<std::string> pin_values(int threads) {
  if (!binding_plan(threads, PinPolicy::compact).applied) return {};
  std::vector<std::string> v = {name_of(PinPolicy::none), name_of(PinPolicy::compact)};
  const TopologyInfo t = topology_info();
  if (t.packages > 1 || t.numa_nodes > 1) {
    v.push_back(name_of(PinPolicy::scatter));
    v.push_back(name_of(PinPolicy::numa));
  }
  return v;
}

// The values a parameter takes in the space; empty: no rule, leave it to the library.
std::vector<std::int64_t> values_for(const ParamSpec& p, const Context& c) {
  const std::string key = p.key;
  if (key == "threads") {
    // One thread is what the single-thread strategy of the same family does.
    std::vector<std::int64_t> v;
    for (std::int64_t t = 2; t < c.threads; t *= 2) v.push_back(t);
    if (c.threads >= 2) v.push_back(c.threads);
    return v;
  }
  if (key == "stream") {
    if (c.in_place || c.output_bytes < stream_min_output_bytes) return {0};
    return {0, 1};
  }
  if (key == "tile") {
    // Lines across the contiguous axis are walked a vector of lines per accumulator: fewer than
    // 8 side by side waste the vector. Whole lines (rows) are cut into tasks of `tile` lines.
    if (c.side_by_side > 1) return geometric(8, std::min(ceil_pow2(c.side_by_side), p.max), 2, p);
    return geometric(1, std::min(ceil_pow2(c.lines), std::int64_t(1024)), 4, p);
  }
  if (key == "block") return geometric(1024, std::min(ceil_pow2(c.length), std::int64_t(1) << 22), 4, p);
  if (key == "mc") return geometric(16, round_up(c.M, qmm_row_align), 2, p);
  if (key == "nc") return geometric(16, round_up(c.N, 16), 4, p);
  if (key == "kc") return geometric(64, round_up(c.K, qmm_depth_align), 4, p);
  return {};
}

bool is_offload_strategy(std::string_view name) { return name.find(".offload") != std::string_view::npos; }

bool gpu_present() {
#ifdef HETKERN_OFFLOAD
  return !offload_on_host();
#else
  return false;
#endif
}

}  // namespace

std::vector<SpacePoint> enumerate_space(const TuneWorkload& w, std::span<const StrategySpec> specs) {
  Context c;
  c.threads = default_threads();
  if (w.is_scan()) {
    const ScanLayout s = make_scan_layout(w.scan_call());
    c.lines = s.lines();
    c.length = s.length;
    c.side_by_side = s.lines_are_rows() ? 1 : s.inner_size();
    c.in_place = w.scan_call().in_place();
    c.output_bytes = w.output_bytes();
  } else {
    c.M = w.qmm_problem().M;
    c.N = w.qmm_problem().N;
    c.K = w.qmm_problem().K;
  }
  std::vector<SpacePoint> out;
  std::set<std::string> seen;
  auto add = [&](const Schedule& s, int strategy) {
    try {
      const Schedule planned = w.planned(s);
      if (seen.insert(planned.to_string()).second) out.push_back({planned, strategy});
    } catch (const Error&) {
      // Illegal for this shape: not part of its space.
    }
  };
  for (std::size_t si = 0; si < specs.size(); ++si) {
    const StrategySpec& spec = specs[si];
    if (std::string(spec.name) == "reference") continue;
    const bool on_device = is_offload_strategy(spec.name);
    // Offload strategies on host tensors are timed with their transfers, which is what decides
    // between the GPU and the host; without a GPU they are host code in disguise: left out.
    if (on_device && !gpu_present()) continue;
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    bool strategy_possible = true;
    for (const auto& p : spec.params) {
      std::vector<std::string> v;
      if (std::string(p.key) == "pin") {
        v = pin_values(c.threads);
      } else if (on_device) {
        // Team sizes of whole warps around the best measured on an H100; teams, items and chunks
        // keep the library's shape-derived defaults.
        if (std::string(p.key) == "threads") v = {"64", "128", "256"};
      } else {
        for (const auto n : values_for(p, c)) v.push_back(std::to_string(n));
      }
      if (std::string(p.key) == "threads" && v.empty()) strategy_possible = false;
      if (!v.empty()) axes.emplace_back(p.key, std::move(v));
    }
    if (!strategy_possible) continue;
    // The cartesian product, odometer style.
    std::vector<int> index(axes.size(), 0);
    for (;;) {
      Schedule s(spec.name);
      for (std::size_t a = 0; a < axes.size(); ++a) s.set(axes[a].first, axes[a].second[index[a]]);
      add(s, int(si));
      std::size_t a = 0;
      while (a < axes.size() && ++index[a] == int(axes[a].second.size())) index[a++] = 0;
      if (a == axes.size()) break;
    }
  }
  return out;
}

}  // namespace hk::detail
