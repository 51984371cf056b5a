// The settings the offload QuantizedLinearMatMul code takes (qmm_offload.hpp): one struct for the
// offload strategies, `kernel` saying which product kernel runs. Each offload strategy's
// record converts its own plan (qmm_strategies.hpp) into it.
#pragma once

namespace hk::detail {

// mma: mma.sync; wgmma: warpgroup MMA on a Hopper GPU when the depth fits int32 accumulators,
// mma.sync otherwise.
enum class OffloadQmmKernel { dp4a, mma, wgmma };

struct QmmPlan {
  OffloadQmmKernel kernel = OffloadQmmKernel::dp4a;
  int team_threads = 0;  // threads per team
  int teams = 0;         // teams at most
  int stages = 0;        // stages of team memory of the tensor-core kernels (0: two)
};

}  // namespace hk::detail
