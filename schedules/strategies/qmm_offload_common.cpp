// Output tiles of the offload QuantizedLinearMatMul strategies.
#include "schedules/strategies/qmm_offload_common.hpp"

namespace hk::detail {

std::int64_t qmm_offload_tiles(const QmmProblem& p) {
  return p.batch[0] * p.batch[1] * ((p.M + 127) / 128) * ((p.N + 127) / 128);
}

}  // namespace hk::detail
