// Value rules that several strategies' search spaces share: host thread counts, pinning
// policies, geometric series of sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/strategy.hpp"

namespace hk::detail {

/// Thread counts worth timing: powers of two from 2 below hk::default_threads(), then it; empty
/// with one thread (the single-thread strategy of the same family covers that).
std::vector<std::string> host_thread_values();

/// The pinning policies worth timing for `threads` threads: none where threads cannot be bound
/// (the default stays); compact against none elsewhere, and scatter and numa where there are
/// packages or NUMA nodes to spread over.
std::vector<std::string> pin_values(int threads);

/// Powers of `factor` from lo while below `limit`, then `limit` itself, within the parameter's range.
std::vector<std::string> geometric_values(std::int64_t lo, std::int64_t limit, std::int64_t factor,
                                          const ParamSpec& param);

std::int64_t ceil_pow2(std::int64_t v);

/// Appends an axis for `key` unless `values` is empty (then the parameter keeps its default).
void add_axis(std::vector<SpaceAxis>& axes, const char* key, std::vector<std::string> values);

}  // namespace hk::detail
