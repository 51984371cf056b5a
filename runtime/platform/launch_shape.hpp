// The teams and threads per team that a target region launches with on its device.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace hk::detail {

struct LaunchShape {
  int teams, threads;
};

// On a GPU: as asked. On the host fallback: what libomp forms there, at most one team a processor
// and the processors shared among the teams' threads; asked for more, it forms these anyway and
// prints "Cannot form a team" on standard error for every such launch. The kernels take their
// work by the team and thread counts they run with, so the results are the same.
inline LaunchShape launch_shape(int device, std::int64_t teams, int threads) {
  if (device != omp_get_initial_device()) return {int(teams), threads};
  const int processors = std::max(1, std::min(omp_get_num_procs(), omp_get_thread_limit()));
  const int formed = int(std::clamp<std::int64_t>(teams, 1, processors));
  return {formed, std::clamp(processors / formed, 1, std::max(threads, 1))};
}

}  // namespace hk::detail
