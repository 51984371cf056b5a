// qmm.parallel: qmm.tiled's blocks spread over OpenMP threads.
#include "hetkern/info.hpp"
#include "runtime/platform/pinning.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/search_values.hpp"
#include "schedules/strategies/qmm_host_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_parallel() {
  static const QmmStrategy record{
      .name = "qmm.parallel",
      .meaning =
          "qmm.tiled with blocks spread over OpenMP threads; each thread packs the columns of B it "
          "uses when there are enough column blocks or one row block (with fewer column blocks than threads, "
          "the threads share each block's depth and add their parts up), otherwise B is packed first and shared",
      .params =
          [] {
            std::vector<ParamSpec> params = qmm_block_params();
            params.push_back({"threads", 1, max_threads, "OpenMP threads"});
            params.push_back(pin_param());
            return params;
          }(),
      .plan = [](const QmmProblem& problem, const BoundParams& p) -> QmmStrategyPlan {
        const int threads = int(p.get("threads", default_threads()));
        return ParallelQmmPlan{bound_blocks(p, default_qmm_blocks(problem, threads)), threads,
                               PinPolicy(p.get("pin", std::int64_t(default_pin_policy())))};
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& plan) {
        const auto& q = std::get<ParallelQmmPlan>(plan);
        const PinnedCall pinned(q.threads, q.pin);
        run_qmm_blocks(problem, q.blocks, q.threads);
      },
      .schedule = [](const QmmStrategyPlan& plan) {
        const auto& q = std::get<ParallelQmmPlan>(plan);
        Schedule s("qmm.parallel");
        return set_blocks(s, q.blocks).set("threads", q.threads).set("pin", name_of(q.pin));
      },
      .space = [](const QmmProblem& problem) -> SearchSpace {
        std::vector<std::string> threads = host_thread_values();
        if (threads.empty()) return std::nullopt;
        std::vector<SpaceAxis> axes;
        add_block_axes(axes, problem);
        add_axis(axes, "threads", std::move(threads));
        add_axis(axes, "pin", pin_values(default_threads()));
        return axes;
      },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
