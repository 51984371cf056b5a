// The cost model applied to a call: its candidates (the heuristic's host plan and the offload
// records' default plans), priced with the machine's rates, the fastest chosen; and the
// conservative rule for a machine with a GPU whose rates are not known.
#pragma once

#include <optional>
#include <string>

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "hetkern/tuning.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

template <class Plan> struct ModelDecision {
  Plan plan;
  std::string reason;  // for the dispatch log: the winner's and the runner-up's predicted times
};

/// The predicted fastest plan for a validated call whose tensors lie at `home`, with a GPU
/// present. Host tensors: the heuristic's host plan against the GPU's default plan (the scan
/// family of the layout; the matmul on the tensor cores), priced with the transfers. Device
/// tensors: that GPU plan alone (each scan family's rate was measured on its own layout, so
/// comparing them on another would be a guess). nullopt when the heuristic's plan cannot be
/// priced.
std::optional<ModelDecision<ScanStrategyPlan>> model_scan_plan(const CumulativeCall& call, DataHome home,
                                                              const MachineRates& rates);
std::optional<ModelDecision<QmmStrategyPlan>> model_qmm_plan(const QmmProblem& problem, DataHome home,
                                                            const MachineRates& rates);

/// With a GPU but no rates: the GPU only for a host-tensor matmul so large that the transfers
/// cannot outweigh it; nullopt (the heuristic) for everything else.
std::optional<ModelDecision<QmmStrategyPlan>> conservative_qmm_plan(const QmmProblem& problem, DataHome home);

/// Whether every host tensor of a call lies in page-locked memory, which a GPU copies unstaged (at
/// the page-locked rates); asked of the CUDA driver (a few calls) only for a call large enough for
/// the GPU to matter (worth_calibrating), false for any other and without offload.
bool host_tensors_page_locked(const CumulativeCall& call);
bool host_tensors_page_locked(const QmmProblem& problem);

/// Whether a host-tensor call is large enough that the GPU might win it: the first such call
/// without rates measures them (dispatch.cpp).
bool worth_calibrating(const CumulativeCall& call);
bool worth_calibrating(const QmmProblem& problem);

}  // namespace hk::detail
