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
// same results. The kernels live in schedules/offload/ (qmm_*_kernel.hpp, launched by
// qmm_*_launch.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/qmm_offload_plan.hpp"

namespace hk::detail {

/// A part of a spread call whose operands are still arriving on the device while its product runs:
/// each tile waits until the int32 flag of its row tile in a_ready and of its column tile in
/// b_ready is non-zero (a null array: that operand is all there), and once its outputs are written
/// adds one to bands_done[its band], a band being band_rows tile rows (0: qmm_offload_band_rows;
/// null bands_done: nobody counts). The last last_rows tile rows (at most all) are a band of their
/// own, whose tiles run after all the others, column by column: the outputs that go back after
/// the launch ends are then those rows' alone (a split tile is counted once its parts are added
/// up). Only operands that qmm_offload_streamable names may still be arriving. With column_sums
/// (on the launch's device, made by qmm_offload_column_sums from the same B'), the kernels read
/// B's column sums there and sum no column themselves.
struct OffloadQmmArrivals {
  const std::int32_t* a_ready = nullptr;
  const std::int32_t* b_ready = nullptr;
  std::int32_t* bands_done = nullptr;
  std::int64_t last_rows = 0;
  std::int64_t band_rows = 0;
  const std::int64_t* column_sums = nullptr;
  bool any() const { return a_ready || b_ready || bands_done || last_rows > 0; }
};

/// How the kernels run one problem (a QmmProblem whose A, B and output hold device pointers and
/// element strides, its packed_b null; its quantization parameters stay on the host, where they
/// tell the kernels' parameter counts and which zero-point sums are needed).
struct OffloadQmmLaunch {
  int device = 0;  // an OpenMP device number, or omp_get_initial_device() for the host
  OffloadQmmKernel kernel = OffloadQmmKernel::dp4a;
  int teams = 0;    // 0: one team per work item (qmm_offload_work_items)
  int team_threads = 0;  // rounded down to a power of two (at least 32); 0: the kernel's default
  int stages = 0;        // the tensor-core kernels' stages of team memory (launch_mma); 0: 2
  const void* parameters = nullptr;  // device copy of qmm_parameter_block(problem.q)
  void* workspace = nullptr;         // device memory of qmm_offload_workspace_bytes(problem, kernel, device) bytes
  OffloadQmmArrivals arrivals;
};

/// The quantization parameters in one array, as the kernels read them: the floats (sa, sb, sy),
/// then the int32 zero points (za, zb, zy), each of one value or one per row / column.
std::vector<std::byte> qmm_parameter_block(const QuantParams& q);

/// Which zero-point corrections a problem's kernels need, in qmm_pack.hpp's terms: the row sums
/// of A' (some beta = zb - cb is not 0) and the column sums of B' (some alpha = ca + za is not
/// 0), and whether every alpha is 128 (u8 A with za = 128, int8 A with za = 0: the mma kernel
/// then multiplies A' - 128 as int8, which needs no column sums). No kernel sums lines whose sums
/// are not needed.
struct OffloadQmmSums {
  bool rows = false, columns = false, every_alpha_128 = false;
};
OffloadQmmSums qmm_sums_needed(const QmmProblem& problem);

/// Whether `kernel` multiplies A' - 128 as signed bytes on `device`, so that B's column sums are
/// not made: every alpha is 128 and the kernel centres A' (mma.sync always; wgmma in its
/// warp-specialized kernel, for calls of few tiles a multiprocessor).
bool qmm_offload_a_centred(const QmmProblem& problem, OffloadQmmKernel kernel, int device);

/// Bytes of device workspace a problem needs on `device` (A and B packed, unless read in place,
/// their sums, and the split tiles' partial products).
std::int64_t qmm_offload_workspace_bytes(const QmmProblem& problem, OffloadQmmKernel kernel, int device);

/// Runs the problem on launch.device: qmm_offload_pack, then qmm_offload_product. Every pointer
/// must be valid there.
void qmm_offload(const QmmProblem& problem, const OffloadQmmLaunch& launch);

/// B's column sums as the product kernels use them (OffloadQmmArrivals::column_sums), into `sums`
/// (N int64 on `device`): one launch reading B, which must be B' columns (one int8 matrix,
/// column-major, columns of K bytes, qmm_b_columns_fit), in place.
void qmm_offload_column_sums(const QmmProblem& problem, std::int64_t* sums, int device);

/// The two steps of qmm_offload, apart for the benchmark: A' and B' with their sums into the
/// workspace, then the product and requantization from the workspace into the output.
void qmm_offload_pack(const QmmProblem& problem, const OffloadQmmLaunch& launch);
void qmm_offload_product(const QmmProblem& problem, const OffloadQmmLaunch& launch);

/// The product kernels' output tile, rows and columns: a part of whole tiles computes no partial
/// tile and reads its rows of A (or columns of B') in place.
inline constexpr std::int64_t qmm_offload_tile = 128;
/// Tiles (rows or columns of them) that `lines` rows or columns take, the last one possibly cut.
inline constexpr std::int64_t qmm_offload_tiles_of(std::int64_t lines) { return (lines + qmm_offload_tile - 1) / qmm_offload_tile; }
/// Tile rows per band: the product kernels take a band's tiles before the next band's.
inline constexpr std::int64_t qmm_offload_band_rows = 16;
/// The packed depth's multiple, and the deepest slice whose products add up in int32.
inline constexpr std::int64_t qmm_offload_depth_align = 128, qmm_offload_int32_depth = 65536;
/// The most stages of team memory the tensor-core kernels take (QmmPlan::stages).
inline constexpr int qmm_offload_max_stages = 4;

/// Output tiles of all the problem's matrices.
inline std::int64_t qmm_offload_tile_count(const QmmProblem& x) {
  return x.batch[0] * x.batch[1] * qmm_offload_tiles_of(x.M) * qmm_offload_tiles_of(x.N);
}

/// Teams of the product kernels that run at once on `device`, a wave of tiles: two per
/// multiprocessor of a GPU (their occupancy at the default team sizes); 8 on the host fallback,
/// so that small calls there cut their last wave as large ones do on a GPU (its tests).
inline std::int64_t qmm_offload_wave(int device) {
  const int multiprocessors = cuda_multiprocessors(device);
  return multiprocessors > 0 ? 2 * std::int64_t(multiprocessors) : 8;
}

/// Split-K on tensor cores (mma, wgmma), depth within one int32 slice (the parts then add up in
/// int32 exactly): the tiles of the last wave, all of them when there are fewer than a wave, are
/// cut in depth into as many parts as fill the wave, each of at least eight 64-deep slices, where
/// that makes four parts or more (the tiles would leave at least three quarters of the wave idle;
/// fewer parts were measured no faster when a launch of its own added them up, and have not been
/// measured since the parts' teams add them up). wgmma's wave is half the others': its
/// warp-specialized kernel runs a team per multiprocessor, and the parts' teams add a tile up
/// together only in their last round. The split tiles are the last `tiles` in the teams' order;
/// no split: 0 tiles in 1 part.
struct OffloadQmmSplit {
  std::int64_t tiles = 0, parts = 1;
};
inline OffloadQmmSplit qmm_offload_split(const QmmProblem& x, OffloadQmmKernel kernel, std::int64_t wave) {
  const std::int64_t tiles = qmm_offload_tile_count(x);
  const std::int64_t kp = (x.K + qmm_offload_depth_align - 1) / qmm_offload_depth_align * qmm_offload_depth_align;
  if (kernel == OffloadQmmKernel::wgmma) wave /= 2;
  if (kernel == OffloadQmmKernel::dp4a || kp > qmm_offload_int32_depth || tiles == 0 || wave < 2) return {};
  const std::int64_t last = tiles % wave == 0 ? wave : tiles % wave;
  const std::int64_t parts = std::min(wave / last, kp / (8 * 64));
  if (parts < 4) return {};
  return {last, parts};
}

/// The product's work items: its tiles, a split tile counting once per part.
inline std::int64_t qmm_offload_work_items(const QmmProblem& x, OffloadQmmKernel kernel, std::int64_t wave) {
  const OffloadQmmSplit split = qmm_offload_split(x, kernel, wave);
  return qmm_offload_tile_count(x) + split.tiles * (split.parts - 1);
}

/// Which operands the product on `device` reads where they lie, neither packed nor summed before
/// it starts (A or B' already in its packed form, with no sums the zero points need, or with sums
/// that the warp-specialized wgmma kernel takes itself once each tile of lines is there): only
/// these may still be arriving when it starts (OffloadQmmArrivals).
struct OffloadQmmStreamable {
  bool a = false, b = false;
};
OffloadQmmStreamable qmm_offload_streamable(const QmmProblem& problem, OffloadQmmKernel kernel, int device);

/// B' alone, for spreading one call's columns: a problem of one B matrix whose K is a whole number
/// of the kernels' 128-deep slices (qmm_b_columns_fit) has its B packed as qmm_pack.hpp's s8 B'
/// into `dst` on `device`, column n at dst + n * K, zero columns up to a whole output tile after
/// the last (qmm_b_columns_bytes in all). B' is then an int8 column-major B of the same product
/// (B's zero points less 128 where B is uint8), which the product reads in place. With
/// `column_sums` (N int64 on `device`), the same launch also writes B''s column sums there, as
/// qmm_offload_column_sums would.
bool qmm_b_columns_fit(const QmmProblem& problem);
std::size_t qmm_b_columns_bytes(const QmmProblem& problem);
void qmm_offload_pack_b_columns(const QmmProblem& problem, void* dst, int device, std::int64_t* column_sums);

/// Bytes from the first element to the last of A, B and the output (what a copy of each takes),
/// and the output's element count.
struct QmmSpans {
  std::size_t a = 0, b = 0, out = 0;
  std::int64_t outputs = 0;
  /// Whether the output's span holds bytes that are not outputs (which a copy must keep).
  bool out_has_gaps() const { return std::int64_t(out) != outputs; }
};
QmmSpans qmm_spans(const QmmProblem& problem);

/// A validated problem whose A, B and output are addresses on `device` (an OpenMP device number,
/// or the initial device for the host fallback): the quantization parameters are copied there
/// (counted transfers), the workspace comes from the device scratch cache, and qmm_offload runs.
void run_qmm_offload_on_device(const QmmProblem& problem, const QmmPlan& plan, int device);
/// The same with operands that may still be arriving (OffloadQmmArrivals, device arrays).
void run_qmm_offload_arriving(const QmmProblem& problem, const QmmPlan& plan, int device,
                              const OffloadQmmArrivals& arrivals);

/// The host-tensor entry of the qmm.offload / qmm.offload_mma schedules, on `device` (an OpenMP
/// device number; on the host fallback, offload_device()): on a GPU, copies the spans of the
/// inputs to device scratch, runs there and copies the output back (counted transfers); on the
/// host fallback runs on the host memory directly. Throws hk::Error(Errc::invalid_parameter) when
/// device memory runs out (the output is then untouched).
void run_qmm_offload(const QmmProblem& problem, const QmmPlan& plan, int device);

}  // namespace hk::detail
