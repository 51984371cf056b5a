// Work items of the offload QuantizedLinearMatMul strategies.
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

std::int64_t qmm_offload_work_items(const QmmProblem& p, OffloadQmmKernel kernel) {
  const std::int64_t tile = qmm_offload_tile;
  return p.batch[0] * p.batch[1] * ((p.M + tile - 1) / tile) * ((p.N + tile - 1) / tile) * qmm_offload_split_parts(p, kernel);
}

}  // namespace hk::detail
