// The settings the offload QuantizedLinearMatMul code takes (qmm_offload.hpp): one struct for the
// two offload strategies, `kind` saying which. Each offload strategy's record converts its own
// plan (qmm_strategies.hpp) into it.
#pragma once

namespace hk::detail {

struct QmmPlan {
  // In the order of the strategy list; only the offload kinds reach the offload code.
  enum class Kind { reference, tiled, parallel, offload, offload_mma };
  Kind kind = Kind::reference;
  int threads = 0;  // threads per team
  int teams = 0;    // teams at most
};

}  // namespace hk::detail
