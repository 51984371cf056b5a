// What the two offload strategies of QuantizedLinearMatMul share: one record shape (teams taking
// turns on 128 x 128 output tiles, threads per team), differing in name, help, kernel and default
// team size; qmm.offload_mma also chooses its tensor-core instructions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "hetkern/device.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/qmm_host_bands.hpp"

namespace hk::detail {

/// qmm.offload_mma's `tensor_cores`, in the order of its choices.
inline constexpr OffloadQmmKernel tensor_core_kernels[] = {OffloadQmmKernel::mma, OffloadQmmKernel::wgmma};

/// qmm.offload_mma's default `tensor_cores` (an index into tensor_core_kernels): wgmma for calls of
/// at least a tile per multiprocessor (half a wave), which its warp-specialized kernel runs
/// fastest; mma.sync for fewer, cut in depth into parts, which it runs faster, unless wgmma would
/// centre A' (every zero point of A' 128, the warp-specialized kernel on Hopper): it then
/// multiplies A' - 128 without B's column sums, faster than mma.sync at 128 rows and as fast at 16
/// (docs/performance.md, A' centred in the warp-specialized wgmma kernel).
inline std::int64_t default_tensor_cores(const QmmProblem& problem) {
  const int device = offload_device();
  if (2 * qmm_offload_tile_count(problem) >= qmm_offload_wave(device)) return 1;
  return qmm_offload_a_centred(problem, OffloadQmmKernel::wgmma, device) ? 1 : 0;
}

/// The record of an offload strategy whose plan is `Plan` (teams, team_threads, launch(); and
/// tensor_cores for OffloadMmaQmmPlan).
template <class Plan, int default_team_threads>
QmmStrategy offload_qmm_record(const char* name, const char* meaning, const char* threads_help) {
  constexpr bool tensor_cores = std::is_same_v<Plan, OffloadMmaQmmPlan>;
  std::vector<ParamSpec> params = {
      {"teams", 1, 65536, "teams at most (default: one per work item: a tile, or a split-K part of one)"},
      {"threads", 32, 1024, threads_help}};
  if constexpr (tensor_cores)
    params.push_back({"tensor_cores", 0, 1,
                      "wgmma: warpgroup MMA on Hopper GPUs (sm_90) when K <= 65536, mma.sync "
                      "elsewhere; mma: mma.sync (default: wgmma for calls of at least a tile per "
                      "multiprocessor, and with the launch shim on Hopper for fewer where A's zero "
                      "point is 128 for uint8 A or 0 for int8 A; mma for the other calls of fewer, "
                      "whose depth is split)",
                      {"mma", "wgmma"}});
  if constexpr (tensor_cores)
    params.push_back({"stages", 2, qmm_offload_max_stages,
                      "depth slices of A and B held in team memory at once (default 4); more than 2 "
                      "need more than 48 KB a team, which the GPU grants through hetkern's launch shim "
                      "(docs/gpu.md), else the most that fit run; products deeper than 65536 keep 2"});
  return {
      .name = name,
      .meaning = meaning,
      .params = std::move(params),
      .plan = [](const QmmProblem& problem, const BoundParams& p) -> QmmStrategyPlan {
        Plan plan{0, int(p.get("threads", default_team_threads))};
        if constexpr (tensor_cores) {
          plan.tensor_cores = tensor_core_kernels[p.get("tensor_cores", default_tensor_cores(problem))];
          plan.stages = int(p.get("stages", qmm_offload_max_stages));
        }
        // More teams than work items would idle.
        const std::int64_t items =
            qmm_offload_work_items(problem, plan.launch().kernel, qmm_offload_wave(offload_device()));
        plan.teams = int(std::min(p.get("teams", items), items));
        return plan;
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& plan) {
        run_qmm_offload_host(problem, std::get<Plan>(plan).launch(), offload_device());
      },
      .schedule = [](const QmmStrategyPlan& plan) {
        const auto& o = std::get<Plan>(plan);
        Schedule s(strategy_of(plan).name);
        s.set("teams", o.teams).set("threads", o.team_threads);
        if constexpr (tensor_cores)
          s.set("tensor_cores", o.tensor_cores == OffloadQmmKernel::wgmma ? "wgmma" : "mma").set("stages", o.stages);
        return s;
      },
      .space = [](const QmmProblem&) -> SearchSpace {
        std::vector<SpaceAxis> space = offload_team_space();
        if constexpr (tensor_cores) {
          if (cuda_has_wgmma(offload_device())) space.push_back({"tensor_cores", {"mma", "wgmma"}});
          if (cuda_team_memory_limit(offload_device()) > 48 * 1024) space.push_back({"stages", {"2", "3", "4"}});
        }
        return space;
      },
      .available = offload_available,
  };
}

}  // namespace hk::detail
