// What a strategy is: one record holding its name, its parameter table, how it fills its plan from
// the call and the machine, how it runs, the space the tuner searches and whether it runs here.
// Each operator keeps one ordered list of its records (scan_strategies.hpp, qmm_strategies.hpp);
// schedule text, the heuristic, the tuner and `hetkern info` all read from that list.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "hetkern/schedule.hpp"

namespace hk::detail {

inline constexpr int max_strategy_params = 6;

/// One parameter of a strategy: its key in schedule text, its range, its one-line help.
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

/// The parameter values a schedule gives, checked against a strategy's table and read by key.
class BoundParams {
 public:
  BoundParams(const Schedule& schedule, std::span<const ParamSpec> params)
      : schedule_(&schedule), params_(params) {}

  /// The value of `key` when the schedule gives it, else `fallback`. `key` must be in the table.
  std::int64_t get(std::string_view key, std::int64_t fallback) const;
  /// The schedule bound, for error messages.
  const Schedule& schedule() const { return *schedule_; }

 private:
  friend void bind_params(const std::string& op, const char* strategy, BoundParams& out);
  int index_of(std::string_view key) const;

  const Schedule* schedule_;
  std::span<const ParamSpec> params_;
  std::array<std::int64_t, max_strategy_params> value_{};
  std::array<bool, max_strategy_params> given_{};
};

/// Checks every parameter of out.schedule() against the table: a known key, an integer within
/// range or one of the parameter's choices. Throws hk::Error(Errc::invalid_schedule) naming `op`.
void bind_params(const std::string& op, const char* strategy, BoundParams& out);

/// Whether a strategy runs here on what it was written for (its instruction set, a GPU), and
/// why not. The heuristic and the tuner consider only available strategies; a schedule that
/// names an unavailable one still runs where the strategy can (offload: on the host fallback).
struct Availability {
  bool available = true;
  std::string why_not;
};

/// One parameter's values in a search space; the tuner times the product of the axes.
struct SpaceAxis {
  std::string key;
  std::vector<std::string> values;
};

/// The axes a strategy is searched over for a call; nullopt: not worth timing here (e.g. a
/// parallel strategy with one thread). A parameter without an axis keeps its planned default.
using SearchSpace = std::optional<std::vector<SpaceAxis>>;

/// The schedules of strategy `name` over the product of `axes`, the first axis turning fastest:
/// the bare schedule when there are no axes, none when an axis has no values.
std::vector<Schedule> space_points(const std::string& name, const std::vector<SpaceAxis>& axes);

/// A strategy of the operator whose validated call is `Call` and whose plans are `Plan` (a
/// std::variant with one alternative per strategy, in the order of the operator's list).
template <class Call, class Plan> struct Strategy {
  const char* name;
  const char* meaning;
  std::vector<ParamSpec> params;
  /// Every parameter the schedule leaves out, from the shape and the machine. Throws
  /// hk::Error(Errc::invalid_schedule) for values illegal for the call.
  Plan (*plan)(const Call& call, const BoundParams& params);
  /// Runs a validated call; `plan` holds this strategy's alternative.
  void (*run)(const Call& call, const Plan& plan);
  /// The schedule of a plan of this strategy, every parameter explicit, in table order.
  Schedule (*schedule)(const Plan& plan);
  SearchSpace (*space)(const Call& call);
  Availability (*available)();
};

/// Where a call's tensors lie: host memory, or device memory (hetkern/device.hpp), which only the
/// offload strategies can read.
enum class DataHome : std::int8_t { host, device };

/// Whether the strategy at `index` of an operator's list is an offload strategy: its plan, the
/// alternative at the same index of `Plan` (the operator's plan variant), has launch() (one
/// device) or `spread` (several). Offload strategies run on offload devices and so can take
/// tensors in device memory; host ones cannot.
template <class Plan> bool is_offload_strategy(std::size_t index) {
  return [index]<std::size_t... I>(std::index_sequence<I...>) {
    constexpr bool offload[] = {(requires(const std::variant_alternative_t<I, Plan>& p) { p.launch(); } ||
                                 requires(const std::variant_alternative_t<I, Plan>& p) { p.spread; })...};
    return offload[index];
  }(std::make_index_sequence<std::variant_size_v<Plan>>{});
}
template <class Plan> bool is_offload_plan(const Plan& plan) { return is_offload_strategy<Plan>(plan.index()); }

/// The `reference` record of an operator: the specification (`run_reference`) as a strategy
/// without parameters, never a tuning candidate. Its plan is the variant's first alternative.
template <class Call, class Plan, void (*run_reference)(const Call&)>
Strategy<Call, Plan> reference_record(const char* meaning) {
  return {
      .name = "reference",
      .meaning = meaning,
      .params = {},
      .plan = [](const Call&, const BoundParams&) { return Plan{}; },
      .run = [](const Call& call, const Plan&) { run_reference(call); },
      .schedule = [](const Plan&) { return Schedule("reference"); },
      .space = [](const Call&) -> SearchSpace { return std::nullopt; },
      .available = [] { return Availability{}; },
  };
}

/// A list holds its records or pointers to them.
template <class Record> const Record& record_ref(const Record& r) { return r; }
template <class Record> const Record& record_ref(const Record* r) { return *r; }

/// Throws the error for a strategy name that no record of `names` has.
[[noreturn]] void unknown_strategy(const std::string& op, const Schedule& schedule,
                                   const std::vector<const char*>& names);

/// The record out.schedule() names among `list`, its parameters bound into `out` (rebound to
/// the record's table). Throws hk::Error(Errc::invalid_schedule) naming `op` for an unknown
/// strategy or a bad parameter.
template <class List> const auto& find_strategy(const std::string& op, const List& list, BoundParams& out) {
  std::vector<const char*> names;
  for (const auto& item : list) {
    const auto& r = record_ref(item);
    if (out.schedule().strategy() == r.name) {
      out = BoundParams(out.schedule(), r.params);
      bind_params(op, r.name, out);
      return r;
    }
    names.push_back(r.name);
  }
  unknown_strategy(op, out.schedule(), names);
}

/// The public description of a list of records.
template <class List> std::vector<StrategyInfo> describe(const List& list) {
  std::vector<StrategyInfo> out;
  for (const auto& item : list) {
    const auto& r = record_ref(item);
    StrategyInfo info{r.name, r.meaning, {}, r.available().why_not};
    for (const auto& p : r.params)
      info.params.push_back({p.key, p.min, p.max, p.meaning, {p.choices.begin(), p.choices.end()}});
    out.push_back(std::move(info));
  }
  return out;
}

/// The offload settings of a plan whose alternative has launch() (an offload strategy's);
/// nullopt for the others.
template <class Launch, class Plan> std::optional<Launch> launch_of(const Plan& plan) {
  return std::visit(
      [](const auto& p) -> std::optional<Launch> {
        if constexpr (requires { p.launch(); })
          return p.launch();
        else
          return std::nullopt;
      },
      plan);
}

}  // namespace hk::detail
