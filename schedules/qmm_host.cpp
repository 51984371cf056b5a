// Host lowering of QuantizedLinearMatMul: qmm.tiled and qmm.parallel, and the reference from a
// caller's packed B.
//
// A is packed once per call (A' rows with row sums), or read where it lies when it already is A'
// and no row sums are wanted (a_read_in_place). B is either packed by the caller
// (hk::pack_b), or packed here: when there are enough column blocks for every thread, or one row
// block, each thread packs its own block right before using it, so B is read from memory once and
// its packed form stays in cache (with one row block and fewer column blocks than threads, the
// threads split each block's depth); otherwise all of B is packed first and shared. A short block
// of rows over a B whose columns are contiguous packs nothing: the dots kernels read B where it
// lies (strip_dots); nor does a block of a few rows over a row-major B, which the rows kernels
// read where it lies (strip_rows). Every (row block, column block) runs the selected kernel over
// depth blocks into an int32 C block (int64 partial sums when the depth could overflow int32), then
// the epilogue requantizes it into the output.
#include "schedules/qmm_host.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <utility>
#include <vector>

#include <omp.h>

#include "runtime/platform/topology.hpp"
#include "schedules/qmm_epilogue.hpp"
#include "schedules/qmm_kernels.hpp"
#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

// Depth beyond which an int32 block sum could overflow: |A' B'| <= 255 * 128 per product.
constexpr std::int64_t int32_safe_depth = 65536;

struct Blocking {
  std::int64_t mc, nc, kc, m_blocks, n_blocks;
};

Blocking blocking(const QmmProblem& p, const QmmBlocks& plan) {
  Blocking g;
  g.mc = round_up(std::min(plan.mc, p.M), qmm_row_align);
  g.nc = round_up(std::min(plan.nc, p.N), qmm_panel_cols);
  g.kc = round_up(std::min(plan.kc, p.K), qmm_depth_align);
  g.m_blocks = (p.M + g.mc - 1) / g.mc;
  g.n_blocks = (p.N + g.nc - 1) / g.nc;
  return g;
}

bool batch_shared(const MatrixView& v) { return v.batch_stride[0] == 0 && v.batch_stride[1] == 0; }

const void* element(const MatrixView& v, std::int64_t offset) {
  return static_cast<const std::uint8_t*>(v.data) + offset;
}

// Whether the kernels may read A where it lies, a copy being pure cost: uint8 (A' = A), rows of K
// contiguous bytes, K whole 64-byte depth groups (a kernel call then reads only inside rows), and
// no row sums wanted by the epilogue.
bool a_read_in_place(const QmmProblem& p) {
  return p.a.dtype == DataType::uint8 && p.a.col_stride == 1 && p.K % qmm_depth_align == 0 &&
         !qmm_row_sums_wanted(p);
}

// Whether a strip multiplies B where it lies, without packing: B's columns are contiguous (PyTorch's
// weight layout), so the dots kernels read each as a row of depths. Up to some height: they read
// A' once per few columns where the packed kernels broadcast it, so taller blocks pay for packing
// B (past 32 rows against AMX's tiles, 12 with AVX2's widening; with vpdpbusd not up to the 256
// measured; docs/performance.md, "B whose columns are contiguous: no packing").
bool strip_dots(const QmmProblem& p, Isa isa) {
  const std::int64_t max_rows = isa == Isa::amx ? 32 : isa == Isa::avx512_vnni ? 256 : 12;
  return p.b.row_stride == 1 && p.K > 1 && p.M <= max_rows;
}

// Whether a strip multiplies a row-major B where it lies: the rows kernels interleave each quad
// (AVX2: pair) of B's rows in registers, where packing writes B' out and reads it back; but they
// interleave again for every trip of C through the L1, so taller strips pay for packing. On the
// Xeon of the H200 machine the rows kernel won through 6 rows against AMX's tiles and through 8
// against the VNNI kernel, and took 2-3 times packing's time at 12; on the EPYC VM the AVX2 one won
// through 8 rows at `avx2` (at 16 ahead on one thread, behind on two) and 4 at `avx512` (tie at 8)
// (docs/performance.md, "B read by rows").
bool strip_rows(const QmmProblem& p, Isa isa) {
  const std::int64_t max_rows = isa == Isa::amx ? 6 : isa == Isa::avx512_vnni ? 8 : isa == Isa::avx512 ? 4 : 12;
  return p.b.col_stride == 1 && p.M <= max_rows && select_qmm_rows(isa) != nullptr;
}

// A read in place by the dots or rows kernels: uint8 rows of contiguous bytes with no row sums
// wanted; their masked loads read nothing past a row's K bytes, so any K will do.
bool a_read_in_place_by_dots(const QmmProblem& p) {
  return p.a.dtype == DataType::uint8 && p.a.col_stride == 1 && !qmm_row_sums_wanted(p);
}

// Where B's column sums come from in strips. A copy of A can end with a row of ones, whose
// products with B' are the sums, at the cost of one row more for the kernel; packing can sum the
// columns instead, which pays where A is then read in place (no copy at all) and the packing sums
// at one vpdpbusd per 64 bytes (whole 64-column passes at the VNNI level); narrower panels sum
// through SSE2, which lost to the row of ones (docs/performance.md, "Strips").
bool strip_sums_from_packing(const QmmProblem& p, const Blocking& g, Isa isa) {
  return a_read_in_place(p) && isa >= Isa::avx512_vnni && p.b.col_stride == 1 &&
         g.nc % qmm_kernel_pass_cols == 0 && p.N % qmm_kernel_pass_cols == 0;
}

// Buffers of one thread, kept across calls (thread_local, and OpenMP keeps its threads) so that a
// call allocates and faults in nothing once a thread has seen a problem of that size. The calling
// thread's `a` and `shared_b` are read by the whole team; the rest is private to each worker.
struct Scratch {
  std::vector<PackedRows> a;
  PackedPanels shared_b;
  PackedPanels own_b;  // this thread's column block of B when packing on the fly
  AlignedBytes c;
  std::vector<std::int64_t> wide;
  std::vector<std::int64_t> strip_sums;  // column sums over the slices of a strip
  std::vector<std::int64_t> part_sums;   // the caller's: every strip's depth parts' sums
  QmmEpilogueScratch epilogue;

  static Scratch& of_this_thread() {
    thread_local Scratch s;
    return s;
  }

  void prepare_worker(const QmmProblem& p, const Blocking& g, std::int64_t c_rows, bool deep,
                      bool packs_b) {
    c.ensure(c_rows * g.nc * std::int64_t(sizeof(std::int32_t)));
    if (deep && wide.size() < std::size_t(c_rows * g.nc)) wide.resize(std::size_t(c_rows * g.nc));
    epilogue.reserve(c_rows, g.nc);
    if (packs_b) shape_panels(own_b, 1, g.m_blocks == 1 ? std::min(p.K, g.kc) : p.K, g.nc, p.b.dtype, false);
    if (strip_sums.size() < std::size_t(g.nc)) strip_sums.resize(std::size_t(g.nc));
  }
};

struct Job {
  const QmmProblem& p;
  const Blocking& g;
  const std::vector<PackedRows>& a;  // one per batch of A, or one when A is broadcast
  const bool a_shared;
  const Isa isa;
  const bool deep;
  const bool a_in_place;     // a_read_in_place: `a` holds only (zero) row sums
  const bool packing_sums;   // strip_sums_from_packing; otherwise A' ends with a row of ones
  const bool dots;           // strip_dots: strips from B where it lies, by the dots kernels
  const bool b_by_rows;      // strip_rows: strips from B where it lies, by the rows kernels
  const std::int64_t in_place_depth;  // depth per dots or rows kernel call

  const PackedRows& rows_of(std::int64_t t) const { return a[std::size_t(a_shared ? 0 : t)]; }

  // Batch t's A' as the kernels read it: its first row, and the bytes from a row to the next.
  std::pair<const std::uint8_t*, std::int64_t> a_rows(std::int64_t t) const {
    if (a_in_place)
      return {static_cast<const std::uint8_t*>(element(p.a, p.a.batch_offset(t, p.batch[1]))), p.a.row_stride};
    return {rows_of(t).row(0), rows_of(t).kp};
  }

  // C (+)= rows [i0, i0+mcb) of A' (rows apart by lda from a0) times the B' panels at `panels`
  // over packed depths [k0, k1), cut into kernel calls of at most kc. `first` starts C afresh.
  void multiply(Scratch& w, const std::uint8_t* a0, std::int64_t lda, std::int64_t i0, std::int64_t mcb,
                std::int64_t ncb, std::int64_t k0, std::int64_t k1, const std::int8_t* panels,
                std::int64_t panel_bytes, bool pairs_fit, bool first) const {
    const QmmKernelChoice kernel = select_qmm_kernel(isa, pairs_fit);
    auto* c = w.c.as<std::int32_t>();
    if (deep && first) std::fill_n(w.wide.begin(), mcb * g.nc, 0);
    for (std::int64_t k = k0; k < k1; k += g.kc) {
      const std::int64_t kcb = std::min(g.kc, k1 - k);
      const bool accumulate = !deep && !(first && k == k0);
      const QmmTile tile{a0 + i0 * lda + k, lda, panels + ((k - k0) / qmm_group_depth) * 64,
                         panel_bytes, mcb, (ncb + qmm_panel_cols - 1) / qmm_panel_cols,
                         kcb / qmm_group_depth, c, g.nc, accumulate};
      kernel.run(tile);
      if (deep)
        for (std::int64_t e = 0; e < mcb * g.nc; ++e) w.wide[std::size_t(e)] += c[e];
    }
  }

  // Requantizes C (rows [i0, i0+mcb), columns [j0, j0+ncb) of batch t) into the output.
  void finish(Scratch& w, std::int64_t t, std::int64_t i0, std::int64_t mcb, std::int64_t j0,
              std::int64_t ncb, const std::int64_t* col_sums) const {
    QmmBlockResult r;
    r.i0 = i0;
    r.rows = mcb;
    r.j0 = j0;
    r.cols = ncb;
    r.dots = deep ? nullptr : w.c.as<std::int32_t>();
    r.wide = deep ? w.wide.data() : nullptr;
    r.ld = g.nc;
    r.row_sums = rows_of(t).sums() + i0;
    r.col_sums = col_sums;
    r.out_offset = (t / p.batch[1]) * p.out_batch_stride[0] + (t % p.batch[1]) * p.out_batch_stride[1];
    requantize_block(p, r, w.epilogue);
  }

  // Row block ib x column block jb of batch t over the whole depth, B' packed at `panels` with
  // column sums `col_sums` (both at the block's first column).
  void block(Scratch& w, std::int64_t t, std::int64_t ib, std::int64_t jb, const std::int8_t* panels,
             std::int64_t panel_bytes, const std::int64_t* col_sums, bool pairs_fit) const {
    const auto [a0, lda] = a_rows(t);
    const std::int64_t i0 = ib * g.mc, mcb = std::min(g.mc, p.M - i0);
    const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
    multiply(w, a0, lda, i0, mcb, ncb, 0, packed_depth(p.K), panels, panel_bytes, pairs_fit, true);
    finish(w, t, i0, mcb, j0, ncb, col_sums);
  }

  // Column block jb of batch t when all rows fit one row block, over depths [k_begin, k_end)
  // (multiples of kc but the last): B is packed kc depths at a time into this thread's buffer,
  // each slice used at once while it is in cache, so B is read once and never written back to
  // memory. The dot products are left in w.c (w.wide when deep), B's column sums over the depths
  // in w.strip_sums.
  void strip_depths(Scratch& w, std::int64_t t, std::int64_t jb, std::int64_t k_begin, std::int64_t k_end) const {
    if (dots || b_by_rows) {
      strip_in_place(w, t, jb, k_begin, k_end);
      return;
    }
    const auto [a0, lda] = a_rows(t);
    const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
    const std::int64_t panels = (ncb + qmm_panel_cols - 1) / qmm_panel_cols;
    std::fill_n(w.strip_sums.begin(), ncb, 0);
    for (std::int64_t k0 = k_begin; k0 < k_end; k0 += g.kc) {
      const std::int64_t kcb = std::min(g.kc, k_end - k0);
      shape_panels(w.own_b, 1, kcb, ncb, p.b.dtype, false);
      const bool fits = pack_panels(w.own_b, 0, element(p.b, p.b.batch_offset(t, p.batch[1]) + k0 * p.b.row_stride + j0 * p.b.col_stride),
                                    p.b.row_stride, p.b.col_stride, 0, panels, packing_sums);
      if (packing_sums)
        for (std::int64_t j = 0; j < ncb; ++j) w.strip_sums[std::size_t(j)] += w.own_b.sums(0)[j];
      multiply(w, a0, lda, 0, packing_sums ? p.M : p.M + 1, ncb, k0, k0 + w.own_b.kp, w.own_b.panel(0, 0),
               w.own_b.panel_bytes, fits, k0 == k_begin);
    }
    if (packing_sums) return;
    const std::size_t row = std::size_t(p.M * g.nc);
    for (std::int64_t j = 0; j < ncb; ++j)
      w.strip_sums[std::size_t(j)] = deep ? w.wide[row + std::size_t(j)] : w.c.as<std::int32_t>()[row + std::size_t(j)];
  }

  // strip_depths for B read where it lies: the dots kernel (contiguous columns) or the rows kernel
  // (contiguous rows) over depth chunks. The column sums go through row M of w.c (int32 like the
  // dots), as the ones row's would.
  void strip_in_place(Scratch& w, std::int64_t t, std::int64_t jb, std::int64_t k_begin, std::int64_t k_end) const {
    const auto [a0, lda] = a_rows(t);
    const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
    const auto* b = static_cast<const std::uint8_t*>(element(p.b, p.b.batch_offset(t, p.batch[1]) + j0 * p.b.col_stride));
    const std::uint8_t flip = b_shift(p.b) ? 0x80 : 0;
    std::int32_t* c = w.c.as<std::int32_t>();
    const std::size_t sums_row = std::size_t(p.M * g.nc);
    if (deep) std::fill_n(w.wide.begin(), sums_row + std::size_t(g.nc), 0);
    for (std::int64_t k = k_begin; k < k_end; k += in_place_depth) {
      const std::int64_t depth = std::min(in_place_depth, k_end - k);
      const bool accumulate = !deep && k != k_begin;
      if (dots)
        select_qmm_dots(isa)(
            {a0 + k, lda, p.M, b + k, p.b.col_stride, flip, ncb, depth, c, g.nc, c + sums_row, accumulate});
      else
        select_qmm_rows(isa)({a0 + k, lda, p.M, b + k * p.b.row_stride, p.b.row_stride, flip, ncb, depth, c, g.nc,
                              c + sums_row, accumulate});
      if (deep)
        for (std::int64_t r = 0; r <= p.M; ++r)
          for (std::int64_t e = r * g.nc; e < r * g.nc + ncb; ++e) w.wide[std::size_t(e)] += c[e];
    }
    for (std::int64_t j = 0; j < ncb; ++j)
      w.strip_sums[std::size_t(j)] = deep ? w.wide[sums_row + std::size_t(j)] : c[sums_row + std::size_t(j)];
  }

  // Requantizes the strip whose sums strip_depths left in w.
  void finish_strip(Scratch& w, std::int64_t t, std::int64_t jb) const {
    const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
    finish(w, t, 0, p.M, j0, ncb, w.strip_sums.data());
  }

  // Depth part `part` of `parts` of a strip: its share of the kc slices, its sums stored at `to`
  // ((M + 1) x nc, exact: int64).
  void strip_part(Scratch& w, std::int64_t t, std::int64_t jb, std::int64_t part, std::int64_t parts,
                  std::int64_t* to) const {
    const std::int64_t slices = (p.K + g.kc - 1) / g.kc;
    strip_depths(w, t, jb, slices * part / parts * g.kc, std::min(p.K, slices * (part + 1) / parts * g.kc));
    const std::int32_t* c = w.c.as<std::int32_t>();
    const std::int64_t ncb = std::min(g.nc, p.N - jb * g.nc);
    for (std::int64_t r = 0; r < p.M; ++r)
      for (std::int64_t e = r * g.nc; e < r * g.nc + ncb; ++e) to[e] = deep ? w.wide[std::size_t(e)] : c[e];
    std::copy_n(w.strip_sums.begin(), ncb, to + p.M * g.nc);
  }

  // The strip's sums from its parts' (exact: a total within int32 when not deep, as every part's
  // is), then its outputs.
  void add_up_strip(Scratch& w, std::int64_t t, std::int64_t jb, const std::int64_t* parts_sums,
                    std::int64_t parts) const {
    const std::int64_t size = (p.M + 1) * g.nc, ncb = std::min(g.nc, p.N - jb * g.nc);
    std::int32_t* c = w.c.as<std::int32_t>();
    for (std::int64_t r = 0; r <= p.M; ++r)
      for (std::int64_t e = r * g.nc; e < r * g.nc + ncb; ++e) {
        std::int64_t total = 0;
        for (std::int64_t q = 0; q < parts; ++q) total += parts_sums[q * size + e];
        if (r == p.M)
          w.strip_sums[std::size_t(e - r * g.nc)] = total;
        else if (deep)
          w.wide[std::size_t(e)] = total;
        else
          c[e] = std::int32_t(total);
      }
    finish_strip(w, t, jb);
  }
};

// Depth parts per strip where the strips are fewer than the threads: the idle threads take
// shares of each strip's kc slices (K = 1e8 with M = N = 2 ran on one thread), each at least
// min_part_depth deep so that adding the parts up stays small beside the products.
constexpr std::int64_t min_part_depth = 4096;
std::int64_t strip_depth_parts(std::int64_t strips, std::int64_t K, std::int64_t kc, int threads) {
  if (strips >= threads) return 1;
  const std::int64_t slices = (K + kc - 1) / kc;
  return std::clamp<std::int64_t>(std::min({threads / strips, K / min_part_depth, slices}), 1, threads);
}

}  // namespace

void run_qmm_blocks(const QmmProblem& p, const QmmBlocks& blocks, int threads) {
  const PackedPanels* prepacked = p.packed_b;
  const std::int64_t batches = p.batch[0] * p.batch[1];
  const bool a_shared = batch_shared(p.a);
  const bool b_shared = prepacked ? prepacked->batches == 1 : batch_shared(p.b);
  check_packed_sizes("quantized_linear_matmul", a_shared ? 1 : batches, p.M,
                     prepacked ? 0 : b_shared ? 1 : batches, p.K, p.N);
  Blocking g = blocking(p, blocks);
  const std::int64_t kp = packed_depth(p.K);
  Scratch& caller = Scratch::of_this_thread();
  std::vector<PackedRows>& a = caller.a;
  if (a.size() < std::size_t(a_shared ? 1 : batches)) a.resize(std::size_t(a_shared ? 1 : batches));
  const std::int64_t b_batches = b_shared ? 1 : batches;
  // Packing on the fly needs a column block per thread, or one row block: then the blocks are the
  // column blocks either way, and packing each as it is used keeps B's packed form to a slice of
  // its depth (all of a 3e8-deep B padded to 16 columns took 4.8 GB where B has 0.6). Otherwise B
  // is packed up front.
  const bool pack_on_the_fly = !prepacked && (batches * g.n_blocks >= threads || g.m_blocks == 1);
  const bool pack_shared = !prepacked && !pack_on_the_fly;
  const bool strips = pack_on_the_fly && g.m_blocks == 1;
  const bool dots = strips && strip_dots(p, active_isa());
  const bool b_by_rows = strips && !dots && strip_rows(p, active_isa());
  if (b_by_rows) {
    // The rows kernels write C 64 columns at a time.
    g.nc = round_up(g.nc, qmm_kernel_pass_cols);
    g.n_blocks = (p.N + g.nc - 1) / g.nc;
  }
  const std::int64_t depth_parts = strips ? strip_depth_parts(batches * g.n_blocks, p.K, g.kc, threads) : 1;
  const std::int64_t part_size = (p.M + 1) * g.nc;
  std::vector<std::int64_t>& part_sums = caller.part_sums;
  if (depth_parts > 1) part_sums.resize(std::size_t(batches * g.n_blocks * depth_parts * part_size));
  const bool packing_sums = strips && !dots && !b_by_rows && strip_sums_from_packing(p, g, active_isa());
  const bool ones_row = strips && !dots && !b_by_rows && !packing_sums;
  const bool a_in_place =
      (dots || b_by_rows ? a_read_in_place_by_dots(p) : a_read_in_place(p)) && !ones_row;
  for (std::int64_t t = 0; t < (a_shared ? 1 : batches); ++t) {
    PackedRows& rows = a[std::size_t(t)];
    rows.shape(ones_row ? p.M + 1 : p.M, a_in_place ? 0 : kp);
    if (ones_row) rows.ones_row(p.M);
    if (a_in_place) std::fill_n(rows.row_sums.as<std::int64_t>(), rows.rows, 0);
  }
  if (pack_shared) shape_panels(caller.shared_b, b_batches, p.K, p.N, p.b.dtype, false);
  const PackedPanels* b = prepacked ? prepacked : pack_shared ? &caller.shared_b : nullptr;
  // The dots kernels' depth per call: all of it (to int32's bound) where one tile holds every row
  // (up to 4 at every level); for more rows, an eighth of the L1 per column, so that a tile's four
  // or six columns stay in the L1 while every row tile reads them. The rows kernels' C stays in the
  // L1 at any depth.
  const std::int64_t in_place_depth =
      p.M <= 4 || b_by_rows ? qmm_dots_max_depth
                            : std::max<std::int64_t>(host_data_cache_bytes(1, 32 * 1024) / 8 / 64 * 64, 1024);
  const Job job{p, g, a, a_shared, active_isa(), kp > int32_safe_depth, a_in_place, packing_sums, dots, b_by_rows,
                in_place_depth};
  std::atomic<bool> all_pairs_fit{true}, out_of_memory{false};
  // Packing tasks of up to 64 rows of A or 16 panels of B, smaller where that leaves threads idle:
  // 16 threads packed a 1024-column B in four tasks of 16 panels.
  const std::int64_t rows_per_task = std::clamp<std::int64_t>(round_up((p.M + threads - 1) / threads, 16), 16, 64);
  const std::int64_t panels_per_task =
      std::clamp<std::int64_t>((p.N + qmm_panel_cols * threads - 1) / (qmm_panel_cols * threads), 1, 16);
  const std::int64_t row_tasks = (p.M + rows_per_task - 1) / rows_per_task;
  const std::int64_t panel_tasks = (p.N + panels_per_task * qmm_panel_cols - 1) / (panels_per_task * qmm_panel_cols);

  // A thread's share of a loop's iterations, as a static schedule hands them out. Written out
  // rather than `omp for`, so that one thread runs no OpenMP construct at all: LLVM 19's libomp
  // formats a string in every loop set-up (docs/performance.md, small calls).
  const auto share = [](std::int64_t count, int thread, int team) {
    return std::pair(count * thread / team, count * (thread + 1) / team);
  };
  const auto work = [&](int thread, int team) {
    Scratch& w = Scratch::of_this_thread();
    try {
      w.prepare_worker(p, g, strips ? round_up(p.M + 1, qmm_row_align) : g.mc, job.deep,
                       pack_on_the_fly && !dots && !b_by_rows);
    } catch (const std::bad_alloc&) {
      out_of_memory.store(true);
    }
    const auto [row_begin, row_end] = share((a_shared ? 1 : batches) * row_tasks, thread, team);
    for (std::int64_t i = row_begin; i < row_end && !a_in_place; ++i) {
      const std::int64_t t = i / row_tasks, r0 = (i % row_tasks) * rows_per_task;
      pack_rows(a[std::size_t(t)], element(p.a, p.a.batch_offset(t, p.batch[1])), p.a.dtype, p.K,
                p.a.row_stride, p.a.col_stride, r0, std::min(p.M, r0 + rows_per_task));
    }
    if (pack_shared) {
      const auto [panel_begin, panel_end] = share(b_batches * panel_tasks, thread, team);
      for (std::int64_t i = panel_begin; i < panel_end; ++i) {
        const std::int64_t t = i / panel_tasks, q0 = (i % panel_tasks) * panels_per_task;
        if (!pack_panels(caller.shared_b, t, element(p.b, p.b.batch_offset(t, p.batch[1])), p.b.row_stride,
                         p.b.col_stride, q0, std::min(caller.shared_b.panels, q0 + panels_per_task)))
          all_pairs_fit.store(false, std::memory_order_relaxed);
      }
    }
    if (team > 1) {
#pragma omp barrier
    }
    if (out_of_memory.load()) return;
    if (depth_parts > 1) {
      const auto [begin, end] = share(batches * g.n_blocks * depth_parts, thread, team);
      for (std::int64_t item = begin; item < end; ++item) {
        const std::int64_t strip = item / depth_parts;
        job.strip_part(w, strip / g.n_blocks, strip % g.n_blocks, item % depth_parts, depth_parts,
                       part_sums.data() + item * part_size);
      }
#pragma omp barrier
      const auto [first, last] = share(batches * g.n_blocks, thread, team);
      for (std::int64_t strip = first; strip < last; ++strip)
        job.add_up_strip(w, strip / g.n_blocks, strip % g.n_blocks,
                         part_sums.data() + strip * depth_parts * part_size, depth_parts);
    } else if (pack_on_the_fly) {
      const std::int64_t block_panels = g.nc / qmm_panel_cols;
      const auto [begin, end] = share(batches * g.n_blocks, thread, team);
      for (std::int64_t item = begin; item < end; ++item) {
        const std::int64_t t = item / g.n_blocks, jb = item % g.n_blocks;
        if (strips) {
          job.strip_depths(w, t, jb, 0, p.K);
          job.finish_strip(w, t, jb);
          continue;
        }
        const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
        PackedPanels& own = w.own_b;
        shape_panels(own, 1, p.K, ncb, p.b.dtype, false);
        const bool fits = pack_panels(own, 0, element(p.b, p.b.batch_offset(t, p.batch[1]) + j0 * p.b.col_stride),
                                      p.b.row_stride, p.b.col_stride, 0, std::min(block_panels, own.panels));
        for (std::int64_t ib = 0; ib < g.m_blocks; ++ib)
          job.block(w, t, ib, jb, own.panel(0, 0), own.panel_bytes, own.sums(0), fits);
      }
    } else {
      const bool fits = prepacked ? prepacked->pairs_fit_int16 : all_pairs_fit.load();
      const std::int64_t per_batch = g.m_blocks * g.n_blocks;
      const auto [begin, end] = share(batches * per_batch, thread, team);
      for (std::int64_t item = begin; item < end; ++item) {
        const std::int64_t t = item / per_batch, ib = (item % per_batch) / g.n_blocks, jb = item % g.n_blocks;
        const std::int64_t bt = b_shared ? 0 : t, first_panel = jb * (g.nc / qmm_panel_cols);
        job.block(w, t, ib, jb, b->panel(bt, first_panel), b->panel_bytes,
                  b->sums(bt) + first_panel * qmm_panel_cols, fits);
      }
    }
  };
  if (threads <= 1) {
    work(0, 1);
  } else {
#pragma omp parallel num_threads(threads)
    work(omp_get_thread_num(), omp_get_num_threads());
  }
  if (out_of_memory.load()) throw std::bad_alloc();
}

void run_qmm_reference(const QmmProblem& problem) {
  if (!problem.packed_b) {
    reference_qmm(problem);
    return;
  }
  // The reference reads B element by element: recover it from the caller's packed copy.
  const PackedPanels& b = *problem.packed_b;
  const std::vector<std::uint8_t> plain = unpack_panels(b);
  QmmProblem p = problem;
  p.b.data = plain.data();
  p.b.row_stride = b.N;
  p.b.col_stride = 1;
  p.b.batch_stride[0] = b.batches == 1 ? 0 : problem.batch[1] * b.K * b.N;
  p.b.batch_stride[1] = b.batches == 1 ? 0 : b.K * b.N;
  reference_qmm(p);
}

namespace {

// Blocks of at most 256 rows for `parts` blocks of one batch per thread team. The row parts
// divide `parts`, so every thread gets as many blocks; of the splits that give every thread a
// block (else the most blocks), the one with the squarest blocks is kept: a block reads mc + nc
// packed lines for mc x nc dot products, so square blocks read the least per multiply-add and
// give the kernel columns of its full width (cutting only the columns left 256^3 on 16 threads
// with 16-column blocks, a quarter of the AVX-512 kernel's pass; docs/performance.md).
// Depth: nc is bounded so that a slice of B up to 1024 deep fills at most half the L2. A block
// of one 16-row group uses each slice once and takes that depth; a taller block runs every row
// tile over the kernel pass's slice of B, which a shorter kc keeps in half the L1 (the L2 then
// also holds the block's int32 sums, which every slice updates).
QmmBlocks few_row_blocks(const QmmProblem& p, std::int64_t parts, std::int64_t l2_bytes) {
  const std::int64_t slice_depth = std::min<std::int64_t>(round_up(p.K, qmm_depth_align), 1024);
  const std::int64_t by_cache = l2_bytes / 2 / slice_depth / 16 * 16;
  const std::int64_t l1_bytes = host_data_cache_bytes(1, 32 * 1024);
  const std::int64_t l1_depth = std::max<std::int64_t>(
      l1_bytes / 2 / qmm_kernel_pass_cols / qmm_depth_align * qmm_depth_align, qmm_depth_align);
  const std::int64_t pass_width = std::min(round_up(p.N, qmm_panel_cols), qmm_kernel_pass_cols);
  QmmBlocks best;
  std::pair<std::int64_t, double> best_key{0, 0.0};  // blocks the team can use, dot products per byte
  for (std::int64_t row_parts = 1; row_parts <= parts; ++row_parts) {
    if (parts % row_parts != 0) continue;
    const std::int64_t mc = round_up((p.M + row_parts - 1) / row_parts, qmm_row_align);
    if ((row_parts - 1) * mc >= p.M) continue;  // the last row part would be empty
    const std::int64_t col_parts = parts / row_parts;
    const std::int64_t by_parts = round_up((p.N + col_parts - 1) / col_parts, qmm_panel_cols);
    std::int64_t nc = std::clamp<std::int64_t>(std::min(by_parts, by_cache), 16, 4096);
    const std::int64_t kc = mc > qmm_row_align ? std::min(slice_depth, l1_depth) : slice_depth;
    // One row block whose columns would be cut narrower than the kernel's pass: its strips of a
    // full pass split their depth among the threads instead (as run_qmm_blocks will), where it is
    // deep enough to feed them (docs/performance.md, "Strips").
    std::int64_t depth_parts = 1;
    if (row_parts == 1 && nc < pass_width) {
      depth_parts = strip_depth_parts((p.N + pass_width - 1) / pass_width, p.K, kc, int(parts));
      if (depth_parts > 1) nc = pass_width;
    }
    const std::int64_t blocks = row_parts * ((p.N + nc - 1) / nc);
    const std::pair<std::int64_t, double> key{std::min(blocks * depth_parts, parts), double(mc) * double(nc) / double(mc + nc)};
    if (key > best_key) {  // ties keep fewer row parts: one row block packs B as it goes
      best = {mc, nc, kc};
      best_key = key;
    }
  }
  return best;
}

}  // namespace

// The side of the square blocks that many threads share a large output in.
constexpr std::int64_t square_block = 256;

QmmBlocks default_qmm_blocks(const QmmProblem& problem, int threads) {
  // Sizes from the caches of a core, blocks for every thread. With one block of rows, B is
  // packed a depth slice at a time and the slice (kc x nc bytes) stays in the L2; with several,
  // a thread's whole column block of B (K x nc) should.
  const std::int64_t l2_bytes = host_data_cache_bytes(2, std::int64_t(1) << 20);
  const std::int64_t batches = problem.batch[0] * problem.batch[1];
  const std::int64_t blocks_wanted = (threads + batches - 1) / batches;
  if (problem.M <= 256) return few_row_blocks(problem, blocks_wanted, l2_bytes);
  const std::int64_t by_threads = round_up((problem.N + blocks_wanted - 1) / blocks_wanted, 16);
  if (by_threads < square_block) {
    // Column slices thinner than a square block each re-read all of A: squares of up to 256 a
    // side, as many as it takes, measured faster on 16 Xeon threads (docs/performance.md).
    const std::int64_t row_blocks = (problem.M + square_block - 1) / square_block;
    const std::int64_t col_blocks = (problem.N + square_block - 1) / square_block;
    if (row_blocks * col_blocks < blocks_wanted) return few_row_blocks(problem, blocks_wanted, l2_bytes);
    QmmBlocks square;
    square.mc = round_up((problem.M + row_blocks - 1) / row_blocks, qmm_row_align);
    square.nc = round_up((problem.N + col_blocks - 1) / col_blocks, qmm_panel_cols);
    square.kc = std::min<std::int64_t>(round_up(problem.K, qmm_depth_align), 2048);
    return square;
  }
  QmmBlocks plan;
  plan.mc = 96;
  plan.kc = std::min<std::int64_t>(round_up(problem.K, qmm_depth_align), 2048);
  const std::int64_t by_cache = std::max<std::int64_t>(16, l2_bytes / 2 / plan.kc / 16 * 16);
  plan.nc = std::clamp<std::int64_t>(std::min(by_cache, by_threads), 16, 512);
  return plan;
}

}  // namespace hk::detail
