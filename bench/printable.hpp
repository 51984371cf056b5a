// Text from files and databases made printable for a terminal.
#pragma once

#include <string>
#include <string_view>

namespace hk::bench {

/// `text` with every byte other than printable ASCII as \xHH, so that a NUL or a control byte
/// (an escape sequence that clears the screen or retitles the window) neither cuts a message
/// short nor reaches the terminal.
inline std::string printable(std::string_view text) {
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) out += c;
    else out += {'\\', 'x', hex[byte >> 4], hex[byte & 15]};
  }
  return out;
}

}  // namespace hk::bench
