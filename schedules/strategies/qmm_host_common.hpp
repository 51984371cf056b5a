// What the host strategies of QuantizedLinearMatMul share: their block parameters and the values
// the tuner tries for them.
#pragma once

#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_host.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// mc, nc and kc, in that order.
std::vector<ParamSpec> qmm_block_params();

/// The blocks a schedule gives, `defaults` for the sizes it leaves out.
QmmBlocks bound_blocks(const BoundParams& params, const QmmBlocks& defaults);

/// Sets the block sizes of a schedule.
Schedule& set_blocks(Schedule& schedule, const QmmBlocks& blocks);

/// The tuner's axes of mc, nc and kc: geometric series up to the problem's sizes.
void add_block_axes(std::vector<SpaceAxis>& axes, const QmmProblem& problem);

}  // namespace hk::detail
