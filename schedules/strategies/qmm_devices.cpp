// qmm.devices: one matmul spread over several GPUs, each multiplying its part with qmm.offload_mma.
#include <functional>
#include <vector>

#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_devices() {
  static const QmmStrategy record{
      .name = "qmm.devices",
      .meaning =
          "several GPUs on one call: tensors in device memory cut into contiguous groups of "
          "batch matrices (when there are at least as many as devices) or else of rows of A in "
          "whole 128-row tiles, home_share per mille of them to the home device (where they lie; "
          "it reads them in place) and the rest to the others, by their measured speeds at the "
          "matmul (evenly before calibration), which copy their part of A, "
          "B (one matrix: packed once on the home device and passed from device to device in "
          "column groups while each multiplies in one launch whose tiles wait for their operands, "
          "B's column sums, where the zero points need them, made there once and sent ahead; "
          "B packed by pack_b is kept on each device from its first call there) "
          "and back their outputs (peer to peer where the devices allow); host tensors cut by "
          "rows of A, each device copying its part from the "
          "host; each device multiplies its part with qmm.offload_mma (tensor cores and stages "
          "by its defaults for that part), driven by a host thread of its own",
      .params = {device_count_param("GPUs used, the home device first (default: every visible one)"),
                 {"home_share", 0, 1000,
                  "per mille of the work the home device keeps (default: an even share and 25 more, "
                  "since the others also wait for their operands and send their outputs back)"},
                 {"threads", 32, 1024, "threads per team of each device's qmm.offload_mma (default 128)"}},
      .plan = [](const QmmProblem&, const BoundParams& p) -> QmmStrategyPlan {
        const int devices = bound_device_count("quantized_linear_matmul", p);
        const int even = (1000 + devices / 2) / devices;
        return DevicesQmmPlan{{devices, int(p.get("home_share", devices == 1 ? 1000 : even + 25))},
                              int(p.get("threads", 128))};
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& p) {
        const auto& plan = std::get<DevicesQmmPlan>(p);
        const std::vector<int> devices = spread_devices(plan.spread.devices);
        const std::vector<SplitRange> ranges =
            qmm_spread_ranges({-1, problem.M}, int(devices.size()), plan.spread.home_share,
                              other_devices_speeds(devices, SpreadWork::matmul));
        std::vector<std::function<void()>> parts;
        for (std::size_t i = 0; i < devices.size(); ++i)
          if (ranges[i].size() > 0)
            parts.push_back([&, i] {
              const QmmProblem part = qmm_part(problem, {-1, problem.M}, ranges[i]);
              multiply_host_rows_on_device(problem, ranges[i], devices_part_launch(plan, part), devices[i]);
            });
        run_parts(parts);
      },
      .schedule = [](const QmmStrategyPlan& p) {
        const auto& o = std::get<DevicesQmmPlan>(p);
        return Schedule("qmm.devices")
            .set("devices", o.spread.devices)
            .set("home_share", o.spread.home_share)
            .set("threads", o.team_threads);
      },
      .space = [](const QmmProblem&) -> SearchSpace { return spread_space(); },
      .available = offload_available,
  };
  return record;
}

QmmPlan devices_part_launch(const DevicesQmmPlan& plan, const QmmProblem& part) {
  return *offload_launch(plan_qmm(part, Schedule("qmm.offload_mma").set("threads", plan.team_threads)));
}

}  // namespace hk::detail
