// Settings read from environment variables: a bad value warns on stderr and is ignored, so that a
// typo in the environment never stops a program that calls the library.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "hetkern/error.hpp"

namespace hk::detail {

/// The value of environment variable `name` as `parse` reads it; nullopt when it is unset, empty,
/// or not a value `parse` takes (which throws hk::Error; the warning names the variable).
template <class Parse>
auto setting_from_environment(const char* name, Parse parse) -> std::optional<decltype(parse(name))> {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  try {
    return parse(text);
  } catch (const Error& e) {
    std::fprintf(stderr, "hetkern: warning: %s ignored: %s\n", name, e.what());
    return std::nullopt;
  }
}

}  // namespace hk::detail
