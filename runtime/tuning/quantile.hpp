// Order statistics of timing samples, shared by the tuner and the benchmarks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hk::detail {

/// Linear interpolation between the order statistics around fraction q of the sorted samples
/// (`sorted` non-empty, ascending; q in [0, 1]).
inline double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const auto lo = std::size_t(pos);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace hk::detail
