// The default schedule choice when a call names none (the autotuner will refine it).
#pragma once

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

ScanStrategyPlan default_scan_plan(const CumulativeCall& call);
QmmStrategyPlan default_qmm_plan(const QmmProblem& problem);

}  // namespace hk::detail
