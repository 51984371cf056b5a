// A host-tensor QuantizedLinearMatMul on a GPU in bands of rows, so that its copies overlap each
// other and the products: B and each band's rows of A go to the GPU one after another through one
// staged copy, a band's product starts once its rows are there, and its outputs come back while
// later bands still arrive. Offload builds only.
#pragma once

#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_offload_plan.hpp"

namespace hk::detail {

/// Whether a host-tensor call runs in bands: no packed B, one matrix, K a whole number of the kernels' slices
/// (B' packed once serves every band), an output without gaps whose bands' spans do not overlap,
/// at least two bands of 128 output tiles and 8 MiB of tensors in all.
bool qmm_host_bands_apply(const QmmProblem& problem);

/// The host-tensor entry of the offload strategies: the call in bands on a GPU where
/// qmm_host_bands_apply, else run_qmm_offload; hk::Error as run_qmm_offload.
void run_qmm_offload_host(const QmmProblem& problem, const QmmPlan& plan, int device);

}  // namespace hk::detail
