// The default schedule choice when a call names none (the autotuner will refine it).
#pragma once

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_schedules.hpp"
#include "schedules/scan_schedules.hpp"

namespace hk::detail {

ScanPlan default_scan_plan(const CumulativeCall& call);
QmmPlan default_qmm_plan(const QmmProblem& problem);

}  // namespace hk::detail
