// qmm.offload_mma: qmm.offload's tiles on tensor cores (mma.sync u8 x s8).
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_offload_mma() {
  static const QmmStrategy record = offload_qmm_record<OffloadMmaQmmPlan, 128>(
      "qmm.offload_mma",
      "qmm.offload with tensor cores: 64-deep slices staged in team-local memory (cp.async, two "
      "stages), each warp 64 x 64 outputs from ldmatrix fragments with mma.sync m16n8k32 u8 x s8 "
      "in an SPMD kernel, requantized exactly in the epilogue",
      "threads per team, rounded down to a power of two (default 128: the tile's four warps; at most "
      "256 used)");
  return record;
}

}  // namespace hk::detail
