// How a schedule's text is checked against the strategies an operator offers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetkern/schedule.hpp"

namespace hk::detail {

inline constexpr int max_strategy_params = 6;

struct ParamSpec {
  const char* key;
  std::int64_t min;
  std::int64_t max;
  const char* meaning;
  /// Non-empty: the value is one of these names, bound as its index (min 0, max size - 1).
  std::vector<const char*> choices = {};
};

/// `pin`, the pinning policy of a host-parallel strategy; bound as the hk::PinPolicy value.
ParamSpec pin_param();

struct StrategySpec {
  const char* name;
  const char* meaning;
  std::vector<ParamSpec> params;
};

/// Parameter values in the order of StrategySpec::params; `given` says which the schedule set.
struct BoundParams {
  std::array<std::int64_t, max_strategy_params> value{};
  std::array<bool, max_strategy_params> given{};

  std::int64_t get(int i, std::int64_t fallback) const { return given[i] ? value[i] : fallback; }
};

/// Finds the schedule's strategy among `specs` and checks every parameter: a known key, an
/// integer within range or one of the parameter's choices. Throws hk::Error(Errc::invalid_schedule) naming `op` otherwise.
/// Returns the index of the strategy in `specs`.
int bind_schedule(const std::string& op, const Schedule& schedule,
                  std::span<const StrategySpec> specs, BoundParams& out);

/// The public description of a strategy table.
std::vector<StrategyInfo> describe(std::span<const StrategySpec> specs);

}  // namespace hk::detail
