// The median wall time of repeated calls, for the offload benchmarks, which time one call at a
// time (the GPU's own queue orders them) rather than interleaving baselines (timing.hpp).
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

namespace hk::bench {

/// The median of `reps` timings of call(), in seconds (at least one).
template <class F> double median_seconds(int reps, F&& call) {
  std::vector<double> t;
  for (int r = 0; r < std::max(1, reps); ++r) {
    const double t0 = omp_get_wtime();
    call();
    t.push_back(omp_get_wtime() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace hk::bench
