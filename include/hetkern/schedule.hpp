// Schedules: how an operator runs, as a value with a stable text form.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hk {

/// A strategy name and named parameters, for example `scan.parallel(threads=4, tile=256)` or
/// `reference`. parse() checks only the grammar; whether the strategy exists and its parameters are
/// legal for a given operator and shape is checked by the operator call, which throws
/// hk::Error(Errc::invalid_schedule) before running anything. Parameters left out take values the
/// library derives from the shape and the machine.
///
/// Grammar: name [ '(' [ key '=' value { ',' key '=' value } ] ')' ], where name is a dotted
/// identifier, key an identifier and value an identifier or a non-negative integer; identifiers
/// are ASCII lower-case letters, digits and '_', not starting with a digit. Spaces are allowed
/// around tokens. to_string() prints the canonical form: no spaces except one after each comma,
/// parameters in the order given. The constructor and set() take names and values as given,
/// unchecked: one outside the grammar, or a parameter given twice, makes a schedule that every
/// operator call refuses (Errc::invalid_schedule) and whose to_string() parse() refuses.
class Schedule {
 public:
  struct Param {
    std::string key;
    std::string value;
    bool operator==(const Param&) const = default;
  };

  /// The empty schedule: let the library choose.
  Schedule() = default;
  explicit Schedule(std::string strategy, std::vector<Param> params = {});

  /// Throws hk::Error(Errc::invalid_schedule) when the text does not follow the grammar.
  static Schedule parse(std::string_view text);

  bool empty() const noexcept { return strategy_.empty(); }
  const std::string& strategy() const noexcept { return strategy_; }
  std::span<const Param> params() const noexcept { return params_; }
  /// The value of a parameter, if present.
  std::optional<std::string_view> find(std::string_view key) const;
  /// Sets (or adds) a parameter.
  Schedule& set(std::string_view key, std::string value);
  Schedule& set(std::string_view key, std::int64_t value) { return set(key, std::to_string(value)); }

  std::string to_string() const;
  /// {"strategy": "...", "params": {"key": value, ...}}, integers unquoted.
  std::string to_json() const;

  bool operator==(const Schedule&) const = default;

 private:
  std::string strategy_;
  std::vector<Param> params_;
};

/// The operators hetkern implements.
enum class Operator { cumulative_sum, cumulative_product, quantized_linear_matmul };

/// "cumulative_sum", "cumulative_product", "quantized_linear_matmul".
std::string_view name_of(Operator op);

/// One parameter of a strategy, for documentation and the tuner.
struct ParamInfo {
  std::string key;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::string meaning;
  /// Non-empty: the parameter takes one of these names (e.g. pin = none|compact|scatter|numa)
  /// and min..max are their positions in this list; empty: an integer in min..max.
  std::vector<std::string> choices = {};
};

/// One strategy an operator offers.
struct StrategyInfo {
  std::string name;
  std::string meaning;
  std::vector<ParamInfo> params;
  /// Empty where the strategy runs here on what it was written for; else why not (e.g. no GPU:
  /// the offload kernels run on the host fallback). A schedule naming it still runs.
  std::string unavailable = {};
};

/// The strategies an operator offers, in the order `hetkern info` lists them. Throws
/// hk::Error(Errc::invalid_parameter) for a value that is not an Operator.
std::vector<StrategyInfo> strategies(Operator op);

}  // namespace hk
