// The plans of the split strategies: one call on host tensors shared between the host cores and
// the offload devices (scan.split, qmm.split; both operators' plan variants hold it), and one
// call spread over several offload devices (qmm.devices).
#pragma once

namespace hk::detail {

struct SplitPlan {
  int gpu_share = 0;  // per mille of the call's work units that the devices take, evenly
  int devices = 1;    // offload devices used: OpenMP devices 0 to devices - 1 (the host fallback: 1)
  int threads = 1;    // OpenMP threads of the host part
};

/// The plan of a call spread over several offload devices (qmm.devices): the home device (where
/// device tensors lie) keeps home_share per mille of the work units, the others share the rest.
struct SpreadPlan {
  int devices = 1;
  int home_share = 1000;
};

}  // namespace hk::detail
