// qmm.tiled: one thread, packed blocks through the CPU's fastest exact kernel.
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/qmm_host_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_tiled() {
  static const QmmStrategy record{
      .name = "qmm.tiled",
      .meaning =
          "single thread; A and B packed as u8 x s8 with row and column sums, the fastest exact "
          "kernel of the CPU (AMX, AVX-512 VNNI, AVX2, portable) over mc x nc x kc blocks, "
          "requantized per block; mc and nc are rounded up to multiples of 16, kc to 64",
      .params = qmm_block_params(),
      .plan = [](const QmmProblem& problem, const BoundParams& p) -> QmmStrategyPlan {
        return TiledQmmPlan{bound_blocks(p, default_qmm_blocks(problem, 1))};
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& plan) {
        run_qmm_blocks(problem, std::get<TiledQmmPlan>(plan).blocks, 1);
      },
      .schedule = [](const QmmStrategyPlan& plan) {
        Schedule s("qmm.tiled");
        return set_blocks(s, std::get<TiledQmmPlan>(plan).blocks);
      },
      .space = [](const QmmProblem& problem) -> SearchSpace {
        std::vector<SpaceAxis> axes;
        add_block_axes(axes, problem);
        return axes;
      },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
