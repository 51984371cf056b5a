// Text forms used by the tuning database and its JSON export.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hk::detail {

/// "4096,1024".
std::string shape_to_text(const std::vector<std::int64_t>& shape);
/// The inverse of shape_to_text; nullopt unless it is 1 to 8 positive integers.
std::optional<std::vector<std::int64_t>> shape_from_text(const std::string& text);

}  // namespace hk::detail
