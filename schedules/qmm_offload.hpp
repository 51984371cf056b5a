// QuantizedLinearMatMul on an OpenMP target device (offload builds only: HETKERN_OFFLOAD).
//
// The device lowering works on device pointers: the caller's A, B and output stay where they are
// (any strides, batch broadcasting through stride 0), the quantization parameters are device
// arrays of one value or one per row / column. A workspace on the same device receives A and B
// packed as u8 x s8 (signedness folded as in qmm_pack.hpp) with the row and column sums the zero
// points need (an operand already in its packed form, e.g. u8 A row-major and s8 B column-major
// with K a multiple of 128 and M, N of 128, is read in place and only summed; the mma product
// multiplies A' - 128 when every alpha is 128, which needs no column sums, and with nothing to pack
// or sum no packing kernel runs); the product kernel then requantizes each output exactly in its
// epilogue. Two product kernels:
//   dp4a  tiles of 128 x 128 outputs per team, A and B staged through team-local memory, dp4a
//   mma   the same tiles on tensor cores (ldmatrix, mma.sync m16n8k32 u8 x s8), 64 x 64 per warp
// Without a device (or with OMP_TARGET_OFFLOAD=DISABLED) every kernel runs on the host with the
// same results.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_offload_plan.hpp"

namespace hk::detail {

enum class OffloadQmmKernel { dp4a, mma };

/// One call on device data. Matrix views hold device pointers and element strides; parameter
/// arrays hold one value (count 1) or one per row of A / column of B.
struct OffloadQmmArgs {
  int device = 0;  // an OpenMP device number, or omp_get_initial_device() for the host
  std::int64_t batch[2] = {1, 1};
  std::int64_t M = 0, N = 0, K = 0;
  MatrixView a, b;
  DataType out_type = DataType::uint8;
  void* out = nullptr;
  std::int64_t out_batch_stride[2] = {0, 0};
  std::int64_t out_row_stride = 0, out_col_stride = 0;
  const float* a_scale = nullptr;        // 1 or M values
  const float* b_scale = nullptr;        // 1 or N values
  const float* out_scale = nullptr;      // 1 or M values
  const std::int32_t* a_zero = nullptr;  // 1 or M values
  const std::int32_t* b_zero = nullptr;  // 1 or N values
  const std::int32_t* out_zero = nullptr;  // 1 or M values
  bool a_scale_per_row = false, b_scale_per_column = false, out_scale_per_row = false;
  bool a_zero_per_row = false, b_zero_per_column = false, out_zero_per_row = false;
  // Whether the zero-point correction needs the row sums of A' (some beta = zb - cb is not 0) and
  // the column sums of B' (some alpha = ca + za is not 0), in qmm_pack.hpp's terms: a caller that
  // knows the zero points on the host clears them (qmm_sums_needed), and no kernel then sums those
  // lines. Clearing one whose sums are needed gives wrong results.
  bool row_sums_needed = true, col_sums_needed = true;
  // Every alpha is 128 (u8 A with za = 128, int8 A with za = 0): the mma kernel then multiplies
  // A' - 128 as int8, which needs no column sums. Set only when true (qmm_sums_needed).
  bool every_alpha_128 = false;
  OffloadQmmKernel kernel = OffloadQmmKernel::dp4a;
  int teams = 0;    // 0: one team per output tile
  int threads = 0;  // threads per team, rounded down to a power of two (at least 32); 0: the kernel's default
  void* workspace = nullptr;  // device memory of qmm_offload_workspace_bytes(*this) bytes
};

/// Sets args.row_sums_needed, args.col_sums_needed and args.every_alpha_128 from the zero points
/// on the host (one value or one per row of A / column of B) and the operand types in args.a and
/// args.b.
void qmm_sums_needed(OffloadQmmArgs& args, const std::vector<std::int32_t>& a_zero,
                     const std::vector<std::int32_t>& b_zero);

/// Bytes of device workspace a call needs (A and B packed, unless read in place, and their sums).
std::int64_t qmm_offload_workspace_bytes(const OffloadQmmArgs& args);

/// Runs the call on args.device: qmm_offload_pack, then qmm_offload_product. Every pointer must
/// be valid there.
void qmm_offload(const OffloadQmmArgs& args);

/// The two steps of qmm_offload, apart for the benchmark: A' and B' with their sums into the
/// workspace, then the product and requantization from the workspace into the output.
void qmm_offload_pack(const OffloadQmmArgs& args);
void qmm_offload_product(const OffloadQmmArgs& args);

/// A validated problem whose A, B and output are addresses on `device` (an OpenMP device number,
/// or the initial device for the host fallback): the quantization parameters are copied there
/// (counted transfers), the workspace comes from the device scratch cache, and qmm_offload runs.
void run_qmm_offload_on_device(const QmmProblem& problem, const QmmPlan& plan, int device);

/// The host-tensor entry of the qmm.offload / qmm.offload_mma schedules: on a GPU, copies the
/// spans of the inputs to device scratch, runs there and copies the output back (counted
/// transfers); on the host fallback runs on the host memory directly. Throws
/// hk::Error(Errc::invalid_parameter) when device memory runs out (the output is then untouched).
void run_qmm_offload(const QmmProblem& problem, const QmmPlan& plan);

/// The offload plan a call on device tensors gets without a schedule.
QmmPlan default_offload_qmm_plan(const QmmProblem& problem);

}  // namespace hk::detail
