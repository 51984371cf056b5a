// A host-tensor QuantizedLinearMatMul on a GPU as one launch fed and drained while it runs, so
// that its copies overlap each other and the product: B and then A, in groups of tile rows, go to
// the GPU in one staged copy; the product's tiles wait on the device for their rows of A where it
// reads A in place (else the launch waits for all of A); each band of outputs comes back as soon
// as the launch counts it finished. Offload builds only.
#pragma once

#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_offload_plan.hpp"

namespace hk::detail {

/// Whether a host-tensor call runs so: no packed B, one matrix of more than one tile row, an output
/// without gaps whose bands' spans do not overlap, and 32 MiB of tensors in all.
bool qmm_host_bands_apply(const QmmProblem& problem);

/// The host-tensor entry of the offload strategies: the call in bands on a GPU where
/// qmm_host_bands_apply, else run_qmm_offload; hk::Error as run_qmm_offload.
void run_qmm_offload_host(const QmmProblem& problem, const QmmPlan& plan, int device);

}  // namespace hk::detail
