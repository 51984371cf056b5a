// JSON string literals, shared by everything hetkern writes as JSON (tuning exports, `hetkern info
// --json`, benchmark records).
#pragma once

#include <string>
#include <string_view>

namespace hk::detail {

/// `s` as a JSON string literal: quotes and backslashes escaped, control characters as \uXXXX,
/// bytes that are not UTF-8 as \ufffd (JSON is UTF-8 text).
std::string json_quoted(std::string_view s);

}  // namespace hk::detail
