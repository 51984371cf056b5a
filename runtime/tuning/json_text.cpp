// JSON string literals for everything hetkern writes as JSON (json_text.hpp).
#include "runtime/tuning/json_text.hpp"

#include <cstdio>

namespace hk::detail {

std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace hk::detail
