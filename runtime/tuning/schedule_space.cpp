// The schedule space the tuner searches. Each strategy's record declares its axes next to its
// plan (space()); this file takes their product, plans every candidate against the call and drops
// the illegal and the duplicates. A strategy that is not available here (an offload strategy
// without a GPU: host code in disguise) is left out.
#include "runtime/tuning/schedule_space.hpp"

#include <set>
#include <string>

#include "hetkern/error.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

namespace hk::detail {
namespace {

class SpaceBuilder {
 public:
  explicit SpaceBuilder(const TuneWorkload& w) : w_(w) {}

  // Every available strategy of `list` over its axes for `call`.
  template <class List, class Call> void strategies(const List& list, const Call& call) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i]->available().available) continue;
      if (const SearchSpace axes = list[i]->space(call)) product(list[i]->name, *axes, int(i), list[i]->params);
    }
  }

  std::vector<SpacePoint> take() { return std::move(out_); }

 private:
  // Adds the product of `axes`.
  void product(const char* name, const std::vector<SpaceAxis>& axes, int index, std::span<const ParamSpec> params) {
    for (const Schedule& s : space_points(name, axes)) add(s, index, params);
  }

  void add(const Schedule& s, int index, std::span<const ParamSpec> params) {
    try {
      Schedule planned = w_.planned(s);
      if (seen_.insert(planned.to_string()).second) out_.push_back({std::move(planned), index, params});
    } catch (const Error&) {
      // Illegal for this shape: not part of its space.
    }
  }

  const TuneWorkload& w_;
  std::vector<SpacePoint> out_;
  std::set<std::string> seen_;
};

template <class List> SpacePoint point_in(const List& list, const Schedule& planned) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (planned.strategy() == list[i]->name) return {planned, int(i), list[i]->params};
  return {planned, 0, {}};
}

}  // namespace

std::vector<SpacePoint> enumerate_space(const TuneWorkload& w) {
  SpaceBuilder space(w);
  if (w.is_scan())
    space.strategies(scan_strategies(), w.scan_call());
  else
    space.strategies(qmm_strategies(), w.qmm_problem());
  return space.take();
}

SpacePoint space_point(const TuneWorkload& w, const Schedule& planned) {
  return w.is_scan() ? point_in(scan_strategies(), planned) : point_in(qmm_strategies(), planned);
}

}  // namespace hk::detail
