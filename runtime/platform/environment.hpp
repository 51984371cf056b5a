// Settings read from environment variables: a bad value warns on stderr and is ignored, so that a
// typo in the environment never stops a program that calls the library.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

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

/// Calls f(item) for each item of the comma-separated list `value` (HETKERN_LOG's), empty ones
/// included, until f returns true; returns whether one did.
template <class F> bool any_log_item(const char* value, F f) {
  if (!value) return false;
  const std::string_view v = value;
  for (std::size_t start = 0; start <= v.size();) {
    const std::size_t end = std::min(v.find(',', start), v.size());
    if (f(v.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

/// Whether the comma-separated list `value` (HETKERN_LOG's) names `channel` or "all".
inline bool log_requested(const char* value, std::string_view channel) {
  return any_log_item(value, [&](std::string_view item) { return item == channel || item == "all"; });
}

/// HETKERN_LOG's items that name no channel, each warned of on stderr (the first time the variable is
/// read): a typo would otherwise silence the log it asked for.
inline void warn_of_unknown_log_channels(const char* value) {
  any_log_item(value, [](std::string_view item) {
    if (!item.empty() && item != "dispatch" && item != "devices" && item != "all")
      std::fprintf(stderr, "hetkern: warning: HETKERN_LOG item '%.*s' ignored: expected dispatch, devices or all\n",
                   int(item.size()), item.data());
    return false;
  });
}

/// Whether HETKERN_LOG asks for `channel`.
inline bool log_requested(std::string_view channel) {
  static const bool warned = (warn_of_unknown_log_channels(std::getenv("HETKERN_LOG")), true);
  (void)warned;
  return log_requested(std::getenv("HETKERN_LOG"), channel);
}

/// HETKERN_GPU_WAIT: spin (the default) or block, read once. Whether the host's threads that wait
/// for GPUs may spin (the CUDA driver's wait, and the kept threads of a call spread over GPUs
/// between calls) rather than sleep, for hosts whose cores are all busy with other work.
inline bool gpu_waits_spin() {
  static const bool spin = [] {
    const char* text = std::getenv("HETKERN_GPU_WAIT");
    if (!text || !*text || std::string_view(text) == "spin") return true;
    if (std::string_view(text) == "block") return false;
    std::fprintf(stderr, "hetkern: warning: HETKERN_GPU_WAIT=%s ignored: expected spin or block\n", text);
    return true;
  }();
  return spin;
}

}  // namespace hk::detail
