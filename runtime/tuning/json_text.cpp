// JSON string literals for everything hetkern writes as JSON (json_text.hpp).
#include "runtime/tuning/json_text.hpp"

#include <cstdio>

namespace hk::detail {
namespace {

// The length of the UTF-8 sequence at s[i] (RFC 3629: no overlong forms, surrogates or code
// points past U+10FFFF), or 0 where the bytes there are not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const auto continues = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continues(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const bool second = lead == 0xE0 ? continues(1, 0xA0) : lead == 0xED ? continues(1, 0x80, 0x9F) : continues(1);
    return second && continues(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const bool second = lead == 0xF0 ? continues(1, 0x90) : lead == 0xF4 ? continues(1, 0x80, 0x8F) : continues(1);
    return second && continues(2) && continues(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::size_t length = utf8_sequence(s, i);
    if (length == 0) {
      out += "\\ufffd";  // a byte that is not UTF-8 (from an environment variable, a file name)
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out.append(s.substr(i, length));
    }
    i += length;
  }
  return out + "\"";
}

}  // namespace hk::detail
