// Checking schedules against strategy tables.
#include "schedules/strategy.hpp"

#include <charconv>

#include "hetkern/error.hpp"

namespace hk::detail {

int bind_schedule(const std::string& op, const Schedule& schedule,
                  std::span<const StrategySpec> specs, BoundParams& out) {
  out = {};
  for (std::size_t s = 0; s < specs.size(); ++s) {
    const StrategySpec& spec = specs[s];
    if (schedule.strategy() != spec.name) continue;
    for (const auto& p : schedule.params()) {
      int index = -1;
      for (std::size_t i = 0; i < spec.params.size(); ++i)
        if (p.key == spec.params[i].key) index = int(i);
      if (index < 0) {
        std::string known;
        for (const auto& ps : spec.params) known += (known.empty() ? "" : ", ") + std::string(ps.key);
        throw Error(Errc::invalid_schedule, op, schedule.to_string(),
                    "strategy " + std::string(spec.name) + " has no parameter '" + p.key + "'" +
                        (known.empty() ? " (it takes none)" : " (it takes " + known + ")"));
      }
      const ParamSpec& ps = spec.params[index];
      if (!ps.choices.empty()) {
        std::string names;
        for (std::size_t c = 0; c < ps.choices.size(); ++c) {
          if (p.value == ps.choices[c]) {
            out.value[index] = std::int64_t(c);
            out.given[index] = true;
          }
          names += (c ? ", " : "") + std::string(ps.choices[c]);
        }
        if (!out.given[index])
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
                    "parameter " + p.key + "=" + p.value + " is outside " +
                        std::to_string(ps.min) + " to " + std::to_string(ps.max));
      out.value[index] = v;
      out.given[index] = true;
    }
    return int(s);
  }
  std::string known;
  for (const auto& spec : specs) known += (known.empty() ? "" : ", ") + std::string(spec.name);
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

std::vector<StrategyInfo> describe(std::span<const StrategySpec> specs) {
  std::vector<StrategyInfo> out;
  for (const auto& spec : specs) {
    StrategyInfo info{spec.name, spec.meaning, {}};
    for (const auto& p : spec.params)
      info.params.push_back({p.key, p.min, p.max, p.meaning, {p.choices.begin(), p.choices.end()}});
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace hk::detail
