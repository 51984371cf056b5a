// qmm.offload_mma: qmm.offload's tiles on tensor cores (mma.sync, or wgmma on Hopper GPUs).
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_offload_mma() {
  static const QmmStrategy record = offload_qmm_record<OffloadMmaQmmPlan, 128>(
      "qmm.offload_mma",
      "qmm.offload with tensor cores: slices of depth staged in team-local memory (two to four "
      "stages); with tensor_cores=wgmma on Hopper GPUs wgmma.mma_async m64n128k32 from team memory, "
      "with the launch shim in teams of a producer warp loading 128-deep slices with the tensor "
      "memory accelerator and two warpgroups multiplying the 128 x 128 outputs (persistent, one "
      "team an SM), else one warpgroup per team with cp.async copies; with tensor_cores=mma each "
      "warp 64 x 64 outputs from ldmatrix fragments with mma.sync m16n8k32 (64-deep cp.async "
      "slices); u8 x s8 in SPMD kernels, requantized exactly "
      "in the epilogue; the tiles of a last wave that would leave three quarters of the GPU idle "
      "(all of them when there are few) are cut in depth into parts that fill it, added up by the "
      "parts' own teams",
      "threads per team for mma.sync, rounded down to a power of two (default 128: the tile's four "
      "warps; at most 256 used); wgmma teams are always one or three warpgroups (128 or 384)");
  return record;
}

}  // namespace hk::detail
