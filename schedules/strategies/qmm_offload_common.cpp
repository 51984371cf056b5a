// Work items of the offload QuantizedLinearMatMul strategies.
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

std::int64_t qmm_offload_work_items(const QmmProblem& p, OffloadQmmKernel kernel) {
  return p.batch[0] * p.batch[1] * qmm_offload_tiles_of(p.M) * qmm_offload_tiles_of(p.N) * qmm_offload_split_parts(p, kernel);
}

}  // namespace hk::detail
