// Order statistics of timing samples, shared by the tuner and the benchmarks.
#pragma once

#include <algorithm>
#include <chrono>
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

/// The wall time of one call of run(), in seconds.
template <class F> double wall_seconds(F&& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The median wall time of `repetitions` calls of run() (at least one), in seconds: the middle
/// sample, one call at a time (for code whose calls are ordered anyway, such as GPU calls).
template <class F> double median_seconds(int repetitions, F&& run) {
  std::vector<double> t;
  for (int i = 0; i < std::max(repetitions, 1); ++i) t.push_back(wall_seconds(run));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// median_seconds after one untimed call, which pays what only a first call does (first touch,
/// scratch and staging allocations, caches filled).
template <class F> double median_after_warm_up(int repetitions, F&& run) {
  run();
  return median_seconds(repetitions, run);
}

/// The fastest of `repetitions` calls of run() after one untimed call, in seconds: for a tiny
/// call's fixed cost, to which a busy machine only adds (a median can then be all noise).
template <class F> double fastest_after_warm_up(int repetitions, F&& run) {
  run();
  double best = wall_seconds(run);
  for (int i = 1; i < repetitions; ++i) best = std::min(best, wall_seconds(run));
  return best;
}

}  // namespace hk::detail
