// The host side of the offload QuantizedLinearMatMul (schedules/qmm_offload.hpp): the workspace
// layout, the kernels' argument block filled from the problem itself, and the launches of the
// packing and product families (qmm_*_launch.cpp). No target region here.
//
// Workspace: A' = A (^ 0x80 when int8) as u8 rows of kp bytes, B' = B (^ 0x80 when uint8) as s8
// columns of kp bytes (k contiguous in both), zero-padded to whole 128 x 128 output tiles and to
// kp = K rounded up to 128, plus the int64 row sums of A' and column sums of B' where the zero
// points need them, the split tiles' int32 partial products (qmm_offload_split) with their counts
// and the teams' words (Kernel::split_counts), the line tiles' states where the wgmma kernel sums
// lines (Kernel::line_tile_states), and the tensor maps (wgmma). An operand
// whose memory already is its packed form (packed_in_place) is read where it is, and only summed
// where needed; with nothing to pack or sum no packing kernel runs.
// Every product kernel computes int32 dot(A', B') over depth slices of at most 65536 (|a'b'| <=
// 255 * 128, so a slice cannot overflow), adds the slices in int64 when the depth is larger, and
// its epilogue folds the zero points back exactly (qmm_pack.hpp) and requantizes with
// requantize()'s semantics. On a GPU the products stage slices of a tile's A' rows and B'
// columns in dynamic team memory with cp.async, a slice ahead; the host fallback computes from the
// workspace directly.
#include "schedules/qmm_offload.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>

#include "hetkern/error.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/offload/qmm_launch.hpp"
#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

using namespace offload::qmm;

constexpr i64 workspace_align = 256;
static_assert(qmm_offload_tile == tile_rows && qmm_offload_tile == tile_cols && qmm_offload_band_rows == band_rows &&
              qmm_offload_depth_align == depth_align && qmm_offload_int32_depth == int32_depth);

i64 align_up(i64 v) { return round_up(v, workspace_align); }

struct WorkspaceLayout {
  i64 a_batches, b_batches, Mp, Np, kp, ap, bp, row_sums, col_sums, partials, split_counts, team_last, line_tiles,
      maps, bytes;
  OffloadQmmSplit split;  // Kernel::split_tiles and split
  i64 partial_rows;       // Kernel::partial_rows
  bool a_in_place, b_in_place;
  bool row_sums_stored, col_sums_stored;  // needed, so in the workspace
  bool a_centred;                         // Kernel::a_centred
};

bool batch_shared(const MatrixView& v) { return v.batch_stride[0] == 0 && v.batch_stride[1] == 0; }

// Whether an operand's memory is byte for byte its packed form (A' when is_a, B' otherwise):
// lines (rows of A, columns of B) of K contiguous bytes each, K whole slices, whole tiles of lines
// one after another, the batches following each other (or one shared by all), no signedness to
// flip, and 16-byte aligned for the staging copies. One matrix may end in a cut tile, whose
// missing lines the product kernels read as zeros (Kernel::a_lines). Then its lines are only
// summed, where the zero points need it: by the warp-specialized wgmma kernel itself, a tile of
// lines once (Kernel::rows_in_product), or in a packing launch of its own, cheaper than copying
// them and than summing them in the product kernels' tiles (docs/gpu-measurements.md, matmul
// pack).
bool packed_in_place(const MatrixView& v, bool is_a, i64 lines, i64 K, const i64 (&batch)[2]) {
  const i64 line_stride = is_a ? v.row_stride : v.col_stride, k_stride = is_a ? v.col_stride : v.row_stride;
  const bool flips = v.dtype == (is_a ? DataType::int8 : DataType::uint8);
  const i64 matrix = lines * K;
  const bool batches_follow = batch_shared(v) || ((batch[1] == 1 || v.batch_stride[1] == matrix) &&
                                                  (batch[0] == 1 || v.batch_stride[0] == batch[1] * matrix));
  const bool one_matrix = batch_shared(v) || batch[0] * batch[1] == 1;
  return !flips && K > 0 && K % depth_align == 0 && k_stride == 1 && line_stride == K &&
         (lines % (is_a ? tile_rows : tile_cols) == 0 || one_matrix) && batches_follow &&
         reinterpret_cast<std::uintptr_t>(v.data) % 16 == 0;
}

// Whether the warp-specialized wgmma kernel would run the product (the sums of its in-place lines
// then in it, no packing launch before it; A' centred in it where every zero point is 128).
bool sums_in_product(const QmmProblem& x, OffloadQmmKernel kernel, const WorkspaceLayout& w, int device) {
  const i64 a_lines = w.a_batches * (w.a_in_place ? x.M : w.Mp), b_lines = w.b_batches * (w.b_in_place ? x.N : w.Np);
  return kernel == OffloadQmmKernel::wgmma && tma_applies(w.kp, a_lines, b_lines, device);
}

WorkspaceLayout workspace_layout(const QmmProblem& x, OffloadQmmKernel kernel, int device) {
  const OffloadQmmSums sums = qmm_sums_needed(x);
  WorkspaceLayout w;
  const i64 batches = x.batch[0] * x.batch[1];
  w.a_batches = batch_shared(x.a) ? 1 : batches;
  w.b_batches = batch_shared(x.b) ? 1 : batches;
  w.Mp = round_up(x.M, tile_rows);
  w.Np = round_up(x.N, tile_cols);
  w.kp = round_up(x.K, depth_align);
  w.a_in_place = packed_in_place(x.a, true, x.M, x.K, x.batch);
  w.b_in_place = packed_in_place(x.b, false, x.N, x.K, x.batch);
  // A' - 128 multiplied as signed bytes where every zero point of A' is 128, so that B's column
  // sums are not needed: mma.sync and the warp-specialized wgmma kernel flip A' in registers (not
  // the one-warpgroup wgmma kernel). The latter's flips cost each slice a little where the sums cost
  // a call about the time its teams take to sum a tile of lines: it centres calls of at most
  // centred_rounds tiles a multiprocessor (docs/performance.md).
  constexpr i64 centred_rounds = 16;
  const auto few_rounds = [&] {
    return qmm_offload_tile_count(x) <= centred_rounds * std::max(1, cuda_multiprocessors(device));
  };
  w.a_centred = sums.every_alpha_128 &&
                (kernel == OffloadQmmKernel::mma || (sums_in_product(x, kernel, w, device) && few_rounds()));
  w.row_sums_stored = sums.rows;
  w.col_sums_stored = sums.columns && !w.a_centred;
  // A centred wgmma call keeps room for the column sums all the same, for the product that runs
  // where the tensor maps cannot be had, which multiplies A' as it is.
  const bool col_sums_room = w.col_sums_stored || (sums.columns && kernel == OffloadQmmKernel::wgmma);
  w.ap = 0;
  w.bp = align_up(w.ap + (w.a_in_place ? 0 : w.a_batches * w.Mp * w.kp));
  w.row_sums = align_up(w.bp + (w.b_in_place ? 0 : w.b_batches * w.Np * w.kp));
  w.col_sums = align_up(w.row_sums + (w.row_sums_stored ? w.a_batches * x.M * i64(sizeof(i64)) : 0));
  w.partials = align_up(w.col_sums + (col_sums_room ? w.b_batches * x.N * i64(sizeof(i64)) : 0));
  w.split = qmm_offload_split(x, kernel, qmm_offload_wave(device));
  w.partial_rows = std::min(x.M, tile_rows);
  const bool split = w.split.parts > 1;
  w.split_counts = align_up(w.partials + w.split.parts * w.split.tiles * w.partial_rows * tile_cols * i64(sizeof(i32)));
  w.team_last = align_up(w.split_counts +
                         (split ? w.split.tiles * split_count_words(w.split.parts) * i64(sizeof(std::uint64_t)) : 0));
  // A team word per work item: a launch runs at most as many teams.
  const i64 items = qmm_offload_tile_count(x) + w.split.tiles * (w.split.parts - 1);
  // The line tiles' states where the warp-specialized wgmma kernel may sum in-place operands itself.
  const bool wgmma = kernel == OffloadQmmKernel::wgmma;
  const i64 line_tiles = (wgmma && w.a_in_place && w.row_sums_stored ? w.a_batches * (w.Mp / tile_rows) : 0) +
                         (wgmma && w.b_in_place && w.col_sums_stored ? w.b_batches * (w.Np / tile_cols) : 0);
  w.line_tiles = align_up(w.team_last + (split ? items * i64(sizeof(i32)) : 0));
  w.maps = align_up(w.line_tiles + line_tiles * i64(sizeof(std::uint64_t)));
  w.bytes = w.maps + (kernel == OffloadQmmKernel::wgmma ? 2 * tensor_map_bytes : 0);
  return w;
}

// A call's epoch for the counts and states its kernels keep in the workspace (ProductArgs::epoch):
// 1 to 2^48 - 2 (neither all zeros nor all ones), in turn from a random start, so that a word a
// call finds in reused workspace, from this process or another, is of its own epoch only by a
// 2^-48 chance.
std::uint64_t next_epoch() {
  static std::atomic<std::uint64_t> next{std::random_device{}() * 0x9e3779b97f4a7c15ull};
  return next.fetch_add(1, std::memory_order_relaxed) % ((std::uint64_t(1) << 48) - 2) + 1;
}

Kernel make_kernel(const QmmProblem& x, const OffloadQmmLaunch& launch, const WorkspaceLayout& w) {
  const QuantParams& q = x.q;
  Kernel k;
  k.batches = x.batch[0] * x.batch[1];
  k.batch1 = x.batch[1];
  k.M = x.M, k.N = x.N, k.K = x.K, k.kp = w.kp, k.Mp = w.Mp, k.Np = w.Np;
  k.tiles_m = w.Mp / tile_rows, k.tiles_n = w.Np / tile_cols;
  u8* base = static_cast<u8*>(launch.workspace);
  k.a_pack = w.a_in_place ? nullptr : base + w.ap;
  k.b_pack = w.b_in_place ? nullptr : base + w.bp;
  k.a_lines = w.a_in_place ? x.M : w.Mp, k.b_lines = w.b_in_place ? x.N : w.Np;
  k.ap = w.a_in_place ? static_cast<const u8*>(x.a.data) : k.a_pack;
  k.bp = reinterpret_cast<const std::int8_t*>(w.b_in_place ? static_cast<const u8*>(x.b.data) : k.b_pack);
  k.row_sums = w.row_sums_stored ? reinterpret_cast<i64*>(base + w.row_sums) : nullptr;
  k.col_sums_given = w.col_sums_stored && launch.arrivals.column_sums;
  k.col_sums = k.col_sums_given            ? const_cast<i64*>(launch.arrivals.column_sums)
               : w.col_sums_stored ? reinterpret_cast<i64*>(base + w.col_sums)
                                   : nullptr;
  k.a_centred = w.a_centred;
  k.split = w.split.parts;
  k.split_tiles = w.split.tiles;
  k.partial_rows = w.partial_rows;
  k.partials = k.split > 1 ? reinterpret_cast<i32*>(base + w.partials) : nullptr;
  k.split_counts = k.split > 1 ? reinterpret_cast<std::uint64_t*>(base + w.split_counts) : nullptr;
  k.team_last = k.split > 1 ? reinterpret_cast<i32*>(base + w.team_last) : nullptr;
  k.a_ready = launch.arrivals.a_ready;
  k.b_ready = launch.arrivals.b_ready;
  k.bands_done = launch.arrivals.bands_done;
  k.last_rows = std::min<i64>(launch.arrivals.last_rows, k.tiles_m);
  if (launch.arrivals.band_rows > 0) k.band_rows = launch.arrivals.band_rows;
  k.a_shared = w.a_batches == 1, k.b_shared = w.b_batches == 1;
  k.a = static_cast<const u8*>(x.a.data), k.b = static_cast<const u8*>(x.b.data);
  for (int d = 0; d < 2; ++d) k.a_bs[d] = x.a.batch_stride[d], k.b_bs[d] = x.b.batch_stride[d];
  k.a_rs = x.a.row_stride, k.a_cs = x.a.col_stride, k.b_rs = x.b.row_stride, k.b_cs = x.b.col_stride;
  k.a_flip = x.a.dtype == DataType::int8 ? 0x80 : 0;
  k.b_flip = x.b.dtype == DataType::uint8 ? 0x80 : 0;
  k.ca = a_shift(x.a);
  k.cb = b_shift(x.b);
  // The parameters as qmm_parameter_block lays them out, each of one value or one per row / column.
  const auto* f = static_cast<const float*>(launch.parameters);
  k.sa = f, k.sb = k.sa + q.a_scale.size(), k.sy = k.sb + q.b_scale.size();
  const auto* z = reinterpret_cast<const i32*>(k.sy + q.out_scale.size());
  k.za = z, k.zb = k.za + q.a_zero.size(), k.zy = k.zb + q.b_zero.size();
  k.sa_step = q.a_scale.size() > 1, k.sb_step = q.b_scale.size() > 1, k.sy_step = q.out_scale.size() > 1;
  k.za_step = q.a_zero.size() > 1, k.zb_step = q.b_zero.size() > 1, k.zy_step = q.out_zero.size() > 1;
  k.qmin = x.out_type == DataType::uint8 ? 0 : -128;
  k.qmax = x.out_type == DataType::uint8 ? 255 : 127;
  k.out = static_cast<u8*>(x.out);
  for (int d = 0; d < 2; ++d) k.o_bs[d] = x.out_batch_stride[d];
  k.o_rs = x.out_row_stride, k.o_cs = x.out_col_stride;
  if (sums_in_product(x, launch.kernel, w, launch.device)) {
    k.rows_in_product = w.a_in_place && w.row_sums_stored;
    k.cols_in_product = w.b_in_place && w.col_sums_stored && !k.col_sums_given;
    if (k.rows_in_product || k.cols_in_product)
      k.line_tile_states = reinterpret_cast<std::uint64_t*>(base + w.line_tiles);
  }
  return k;
}

}  // namespace

std::vector<std::byte> qmm_parameter_block(const QuantParams& q) {
  const std::size_t floats = q.a_scale.size() + q.b_scale.size() + q.out_scale.size();
  const std::size_t ints = q.a_zero.size() + q.b_zero.size() + q.out_zero.size();
  std::vector<std::byte> block((floats + ints) * 4);
  std::byte* cursor = block.data();
  for (const auto* v : {&q.a_scale, &q.b_scale, &q.out_scale})
    cursor = static_cast<std::byte*>(std::memcpy(cursor, v->data(), v->size() * 4)) + v->size() * 4;
  for (const auto* v : {&q.a_zero, &q.b_zero, &q.out_zero})
    cursor = static_cast<std::byte*>(std::memcpy(cursor, v->data(), v->size() * 4)) + v->size() * 4;
  return block;
}

OffloadQmmSums qmm_sums_needed(const QmmProblem& problem) {
  const std::vector<std::int32_t>& a_zero = problem.q.a_zero;
  const std::int32_t ca = a_shift(problem.a);
  OffloadQmmSums sums;
  sums.rows = qmm_row_sums_wanted(problem);
  sums.columns = std::any_of(a_zero.begin(), a_zero.end(), [&](std::int32_t z) { return z != -ca; });
  sums.every_alpha_128 = std::all_of(a_zero.begin(), a_zero.end(), [&](std::int32_t z) { return z == 128 - ca; });
  return sums;
}

OffloadQmmStreamable qmm_offload_streamable(const QmmProblem& problem, OffloadQmmKernel kernel, int device) {
  const WorkspaceLayout w = workspace_layout(problem, kernel, device);
  // The warp-specialized wgmma kernel sums in-place lines itself, each tile of them once it is there.
  const bool sums_wait = sums_in_product(problem, kernel, w, device);
  return {w.a_in_place && (!w.row_sums_stored || sums_wait), w.b_in_place && (!w.col_sums_stored || sums_wait)};
}

bool qmm_offload_a_centred(const QmmProblem& problem, OffloadQmmKernel kernel, int device) {
  return workspace_layout(problem, kernel, device).a_centred;
}

std::int64_t qmm_offload_workspace_bytes(const QmmProblem& problem, OffloadQmmKernel kernel, int device) {
  return workspace_layout(problem, kernel, device).bytes;
}

void qmm_offload_pack(const QmmProblem& x, const OffloadQmmLaunch& launch) {
  if (x.M == 0 || x.N == 0 || x.batch[0] * x.batch[1] == 0) return;
  launch_pack(make_kernel(x, launch, workspace_layout(x, launch.kernel, launch.device)), launch.device);
}

void qmm_offload_product(const QmmProblem& x, const OffloadQmmLaunch& launch) {
  if (x.M == 0 || x.N == 0 || x.batch[0] * x.batch[1] == 0) return;
  const WorkspaceLayout w = workspace_layout(x, launch.kernel, launch.device);
  Kernel k = make_kernel(x, launch, w);
  KeptDeviceCopy kept;  // held until the product's launch has ended
  if (launch.kernel == OffloadQmmKernel::wgmma)
    prepare_tensor_maps(k, launch.device, static_cast<u8*>(launch.workspace) + w.maps, kept);
  const bool uncentre = launch.kernel == OffloadQmmKernel::wgmma && k.a_centred && !k.tensor_maps;
  if ((k.line_tile_states || uncentre) && !k.tensor_maps) {
    // The maps could not be had: the other kernels read the sums, which a launch makes first, and
    // multiply A' as it is. It cannot wait for lines still arriving, which qmm_offload_streamable
    // let in for this kernel.
    if (k.a_ready || k.b_ready)
      throw Error(Errc::unavailable, "quantized_linear_matmul", "GPU " + std::to_string(launch.device),
                  "the tensor maps of a product whose operands are still arriving could not be made");
    k.rows_in_product = k.cols_in_product = false;
    k.line_tile_states = nullptr;
    if (uncentre) {
      k.a_centred = false;
      k.col_sums_given = launch.arrivals.column_sums != nullptr;
      k.col_sums = k.col_sums_given ? const_cast<i64*>(launch.arrivals.column_sums)
                                    : reinterpret_cast<i64*>(static_cast<u8*>(launch.workspace) + w.col_sums);
    }
    launch_pack(k, launch.device);
  }
  const i64 items = k.items();
  const int teams = int(std::min<i64>(launch.teams > 0 ? launch.teams : items, items));
  // A repeated call (the same buffers, shapes and parameters) launches with the block it kept; a
  // call seen once has its launch copy the block, which is sooner than a copy of its own.
  KeptDeviceCopy kept_kernel;  // held until the product's launch has ended
  const void* kept_block =
      kept_kernel.keep(launch.device, "qmm kernels", &k, sizeof k, KeptDeviceCopy::Fill::when_repeated);
  const ProductArgs args{k, static_cast<const Kernel*>(kept_block),
                         k.split_counts || k.line_tile_states ? next_epoch() : 0};
  if (launch.kernel != OffloadQmmKernel::dp4a)
    launch_mma(args, launch.device, teams, launch.team_threads, launch.kernel == OffloadQmmKernel::wgmma,
               launch.stages);
  else
    launch_dp4a(args, launch.device, teams, launch.team_threads);
}

bool qmm_b_columns_fit(const QmmProblem& x) {
  return x.batch[0] * x.batch[1] == 1 && x.K > 0 && x.K % depth_align == 0;
}

std::size_t qmm_b_columns_bytes(const QmmProblem& x) { return std::size_t(round_up(x.N, tile_cols) * x.K); }

// A launch of B's operand alone: A counts as read in place with no sums to store, which
// launch_pack skips.
Kernel b_alone(const QmmProblem& x) {
  Kernel k;
  k.batches = k.batch1 = 1;
  k.N = x.N, k.K = x.K, k.kp = round_up(x.K, depth_align), k.Np = round_up(x.N, tile_cols);
  k.b_shared = true;
  k.b = static_cast<const u8*>(x.b.data);
  k.b_rs = x.b.row_stride, k.b_cs = x.b.col_stride;
  k.b_flip = x.b.dtype == DataType::uint8 ? 0x80 : 0;
  return k;
}

void qmm_offload_pack_b_columns(const QmmProblem& x, void* dst, int device, std::int64_t* column_sums) {
  Kernel k = b_alone(x);
  k.kp = x.K;
  k.b_pack = static_cast<u8*>(dst);
  k.col_sums = column_sums;
  launch_pack(k, device);
}

void qmm_offload_column_sums(const QmmProblem& x, std::int64_t* sums, int device) {
  if (x.N == 0) return;
  Kernel k = b_alone(x);
  k.col_sums = sums;
  launch_pack(k, device);
}

void qmm_offload(const QmmProblem& problem, const OffloadQmmLaunch& launch) {
  qmm_offload_pack(problem, launch);
  qmm_offload_product(problem, launch);
}

}  // namespace hk::detail
