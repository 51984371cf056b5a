// Checking a schedule's parameters against a strategy's table.
#include "schedules/strategy.hpp"

#include <charconv>
#include <stdexcept>
#include <utility>

#include "hetkern/error.hpp"

namespace hk::detail {

int BoundParams::index_of(std::string_view key) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (key == params_[i].key) return int(i);
  return -1;
}

std::int64_t BoundParams::get(std::string_view key, std::int64_t fallback) const {
  const int i = index_of(key);
  if (i < 0)
    throw std::logic_error("strategy " + schedule_->strategy() + " reads '" + std::string(key) +
                           "', which its table lacks");
  return given_[std::size_t(i)] ? value_[std::size_t(i)] : fallback;
}

void bind_params(const std::string& op, const char* strategy, BoundParams& out) {
  const Schedule& schedule = *out.schedule_;
  for (const auto& p : schedule.params()) {
    const int index = out.index_of(p.key);
    if (index < 0) {
      std::string known;
      for (const auto& ps : out.params_) known += (known.empty() ? "" : ", ") + std::string(ps.key);
      throw Error(Errc::invalid_schedule, op, schedule.to_string(),
                  "strategy " + std::string(strategy) + " has no parameter '" + p.key + "'" +
                      (known.empty() ? " (it takes none)" : " (it takes " + known + ")"));
    }
    const auto i = std::size_t(index);
    // As parse() refuses it: the constructor takes its list unchecked.
    if (out.given_[i])
      throw Error(Errc::invalid_schedule, op, schedule.to_string(), "parameter " + p.key + " is given twice");
    const ParamSpec& ps = out.params_[i];
    if (!ps.choices.empty()) {
      std::string names;
      for (std::size_t c = 0; c < ps.choices.size(); ++c) {
        if (p.value == ps.choices[c]) {
          out.value_[i] = std::int64_t(c);
          out.given_[i] = true;
        }
        names += (c ? ", " : "") + std::string(ps.choices[c]);
      }
      if (!out.given_[i])
        throw Error(Errc::invalid_schedule, op, schedule.to_string(),
                    "parameter " + p.key + " must be one of " + names + ", not '" + p.value + "'");
      continue;
    }
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(p.value.data(), p.value.data() + p.value.size(), v);
    if (ec != std::errc() || end != p.value.data() + p.value.size())
      throw Error(Errc::invalid_schedule, op, schedule.to_string(),
                  "parameter " + p.key + " must be an integer, not '" + p.value + "'");
    if (v < ps.min || v > ps.max)
      throw Error(Errc::invalid_schedule, op, schedule.to_string(),
                  "parameter " + p.key + "=" + p.value + " is outside " + std::to_string(ps.min) + " to " +
                      std::to_string(ps.max));
    out.value_[i] = v;
    out.given_[i] = true;
  }
}

void unknown_strategy(const std::string& op, const Schedule& schedule, const std::vector<const char*>& names) {
  std::string known;
  for (const char* n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  throw Error(Errc::invalid_schedule, op, schedule.to_string(),
              "unknown strategy '" + schedule.strategy() + "' (this operator offers " + known + ")");
}

ParamSpec pin_param() {
  return {"pin", 0, 3,
          "where the threads run: compact (fill the cores of one cache/NUMA domain first), "
          "scatter (alternate packages, NUMA nodes and caches), numa (a contiguous group of "
          "threads per NUMA node), none (unbound); default: hk::default_pin_policy()",
          {"none", "compact", "scatter", "numa"}};
}

std::vector<Schedule> space_points(const std::string& name, const std::vector<SpaceAxis>& axes) {
  std::vector<Schedule> points;
  for (const SpaceAxis& axis : axes)
    if (axis.values.empty()) return points;
  std::vector<std::size_t> at(axes.size(), 0);
  for (;;) {
    Schedule s(name);
    for (std::size_t a = 0; a < axes.size(); ++a) s.set(axes[a].key, axes[a].values[at[a]]);
    points.push_back(std::move(s));
    std::size_t a = 0;
    while (a < axes.size() && ++at[a] == axes[a].values.size()) at[a++] = 0;
    if (a == axes.size()) return points;
  }
}

}  // namespace hk::detail
