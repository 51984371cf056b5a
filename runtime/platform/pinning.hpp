// Binding the OpenMP team of a host-parallel schedule to the PUs its pinning policy plans.
#pragma once

#include <sched.h>

#include "hetkern/topology.hpp"

namespace hk::detail {

/// Binds the team that the calling thread's next `#pragma omp parallel num_threads(threads)`
/// uses (the calling thread is its thread 0) as `policy` plans, unless the team is already bound
/// that way. libomp keeps a team's threads between parallel regions, so binding happens once per
/// (threads, policy) and each call after that costs a comparison. PinPolicy::none after a pinned
/// call unbinds the team (back to the allowed cpuset). Without a usable topology, on a synthetic
/// or XML one, or when OpenMP binds its threads itself, nothing is bound.
void bind_team(int threads, PinPolicy policy);

/// One host-parallel call: bind_team(threads, policy) for the workers, and the calling thread on
/// its planned PU only while the call runs. The caller's own affinity comes back afterwards, so
/// that threads it starts later do not inherit a single PU. Costs three system calls per call
/// when the team is pinned, none otherwise.
class PinnedCall {
 public:
  PinnedCall(int threads, PinPolicy policy);
  ~PinnedCall();
  PinnedCall(const PinnedCall&) = delete;
  PinnedCall& operator=(const PinnedCall&) = delete;

 private:
  cpu_set_t callers_ = {};
  bool restore_ = false;
};

}  // namespace hk::detail
