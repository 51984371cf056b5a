// The plan of the split strategies (scan.split, qmm.split): one call on host tensors shared
// between the host cores and the offload devices. Both operators' plan variants hold it.
#pragma once

namespace hk::detail {

struct SplitPlan {
  int gpu_share = 0;  // per mille of the call's work units that the devices take, evenly
  int devices = 1;    // offload devices used: OpenMP devices 0 to devices - 1 (the host fallback: 1)
  int threads = 1;    // OpenMP threads of the host part
};

}  // namespace hk::detail
