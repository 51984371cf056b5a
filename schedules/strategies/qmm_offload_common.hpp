// What the two offload strategies of QuantizedLinearMatMul share: one record shape (teams taking
// turns on 128 x 128 output tiles, threads per team), differing in name, help, kernel and default
// team size.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hetkern/device.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"

namespace hk::detail {

/// 128 x 128 output tiles of the problem; more teams than tiles would idle.
std::int64_t qmm_offload_tiles(const QmmProblem& problem);

/// The record of an offload strategy whose plan is `Plan` (teams, team_threads, launch()).
template <class Plan, int default_team_threads>
QmmStrategy offload_qmm_record(const char* name, const char* meaning, const char* threads_help) {
  return {
      .name = name,
      .meaning = meaning,
      .params = {{"teams", 1, 65536, "teams at most (default: one per tile)"}, {"threads", 32, 1024, threads_help}},
      .plan = [](const QmmProblem& problem, const BoundParams& p) -> QmmStrategyPlan {
        const std::int64_t tiles = qmm_offload_tiles(problem);
        return Plan{int(std::min(p.get("teams", tiles), tiles)), int(p.get("threads", default_team_threads))};
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& plan) {
        run_qmm_offload(problem, std::get<Plan>(plan).launch(), offload_device());
      },
      .schedule = [](const QmmStrategyPlan& plan) {
        const auto& o = std::get<Plan>(plan);
        return Schedule(strategy_of(plan).name).set("teams", o.teams).set("threads", o.team_threads);
      },
      .space = [](const QmmProblem&) -> SearchSpace { return offload_team_space(); },
      .available = offload_available,
  };
}

}  // namespace hk::detail
