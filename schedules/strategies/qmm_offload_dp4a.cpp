// qmm.offload: GPU 128 x 128 tiles with dp4a, requantized exactly in the epilogue.
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_offload() {
  static const QmmStrategy record = offload_qmm_record<OffloadQmmPlan, 256>(
      "qmm.offload",
      "OpenMP target device (the host without one): A and B packed there as u8 x s8, 128 x 128 "
      "output tiles dealt out to teams, 64-deep slices of A and B staged in team-local memory "
      "(cp.async, two stages), dp4a, requantized exactly in the epilogue",
      "threads per team, rounded down to a power of two (default 256: one 8 x 8 block of outputs "
      "each; at most 512 used)");
  return record;
}

}  // namespace hk::detail
