// One benchmark result: named fields in a fixed order, written as one line of JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace hk::bench {

class Record {
 public:
  /// null, a boolean, an integer, a number (non-finite ones are written as null), a string, or
  /// a list of integers (shapes).
  using Value = std::variant<std::nullptr_t, bool, std::int64_t, double, std::string,
                             std::vector<std::int64_t>>;

  /// Sets a field; a new key goes after the existing ones.
  Record& set(std::string_view key, Value value);

  /// The field's value, or nullptr when the record has no such key.
  const Value* find(std::string_view key) const;

  /// The fields in order.
  const std::vector<std::pair<std::string, Value>>& fields() const noexcept { return fields_; }

  /// {"key": value, ...} on one line.
  std::string to_json() const;

 private:
  std::vector<std::pair<std::string, Value>> fields_;
};

}  // namespace hk::bench
