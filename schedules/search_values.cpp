// Shared value rules of the search spaces.
#include "schedules/search_values.hpp"

#include <algorithm>
#include <set>

#include "hetkern/info.hpp"
#include "hetkern/topology.hpp"

namespace hk::detail {

std::vector<std::string> host_thread_values() {
  const int threads = default_threads();
  std::vector<std::string> v;
  for (int t = 2; t < threads; t *= 2) v.push_back(std::to_string(t));
  if (threads >= 2) v.push_back(std::to_string(threads));
  return v;
}

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

std::vector<std::string> geometric_values(std::int64_t lo, std::int64_t limit, std::int64_t factor,
                                          const ParamSpec& param) {
  std::set<std::int64_t> out;
  for (std::int64_t v = lo; v < limit; v *= factor) out.insert(v);
  out.insert(std::max(lo, limit));
  std::vector<std::string> values;
  for (const auto v : out)
    if (v >= param.min && v <= param.max) values.push_back(std::to_string(v));
  return values;
}

std::int64_t ceil_pow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

void add_axis(std::vector<SpaceAxis>& axes, const char* key, std::vector<std::string> values) {
  if (!values.empty()) axes.push_back({key, std::move(values)});
}

}  // namespace hk::detail
