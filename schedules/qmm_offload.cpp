// QuantizedLinearMatMul through OpenMP target offload (see qmm_offload.hpp).
//
// Workspace: A' = A (^ 0x80 when int8) as u8 rows of kp bytes, B' = B (^ 0x80 when uint8) as s8
// columns of kp bytes (k contiguous in both), zero-padded to whole 128 x 128 output tiles and to
// kp = K rounded up to 128, plus the int64 row sums of A' and column sums of B'. Every product
// kernel computes int32 dot(A', B') over depth slices of at most 65536 (|a'b'| <= 255 * 128, so a
// slice cannot overflow), adds the slices in int64 when the depth is larger, and its epilogue
// folds the zero points back exactly (qmm_pack.hpp) and requantizes with requantize()'s semantics.
#include "schedules/qmm_offload.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>

#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile_rows = 128, tile_cols = 128;  // outputs per team tile
constexpr std::int64_t depth_step = 64;                     // k per packing chunk / mma pair
constexpr std::int64_t stage_depth = 128;                   // k per dp4a slice in team memory
constexpr std::int64_t int32_depth = 65536;                 // deepest int32-safe slice
constexpr std::int64_t workspace_align = 256;
constexpr int default_threads_per_team = 256;

using u8 = std::uint8_t;
using u32 = std::uint32_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));

// sum_i a.byte[i] (unsigned) * b.byte[i] (signed) + c.
inline i32 dot4(u32 a, u32 b, i32 c) {
#ifdef __NVPTX__
  i32 d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  for (int i = 0; i < 4; ++i) c += i32((a >> (8 * i)) & 0xff) * i32(std::int8_t(u8(b >> (8 * i))));
  return c;
#endif
}

// RNE(acc * multiplier) + zero_point saturated to [qmin, qmax]: requantize() without libm, so it
// compiles for the device too. The multiplier is finite and non-negative (validated).
inline i32 requantize_exact(i64 acc, float multiplier, i32 zero_point, i32 qmin, i32 qmax) {
  constexpr i64 limit = i64(1) << 20;
  i64 rounded;
  if (acc > -(i64(1) << 29) && acc < (i64(1) << 29)) {
    // 29 + 24 significant bits fit a double: the product and its RNE are exact.
    const double v = __builtin_rint(double(acc) * double(multiplier));
    rounded = v < -double(limit) ? -limit : v > double(limit) ? limit : i64(v);
  } else {
    const u32 bits = std::bit_cast<u32>(multiplier);
    const int biased = int(bits >> 23) & 0xff;
    const i64 mantissa = biased == 0 ? i64(bits & 0x7fffff) : i64((bits & 0x7fffff) | 0x800000);
    const int shift = (biased == 0 ? 1 : biased) - 150;  // multiplier = mantissa * 2^shift
    const __int128 product = __int128(acc) * mantissa;
    if (product == 0) {
      rounded = 0;
    } else if (shift >= 0) {
      rounded = product > 0 ? limit : -limit;  // |acc| >= 2^29 and multiplier >= 1
    } else if (-shift >= 90) {
      rounded = 0;  // |product| < 2^88, so |value| < 1/4
    } else {
      const int s = -shift;
      __int128 quotient = product >> s;  // floor
      const __int128 remainder = product - (quotient << s);
      const __int128 half = __int128(1) << (s - 1);
      if (remainder > half || (remainder == half && (quotient & 1))) ++quotient;
      rounded = quotient < -limit ? -limit : quotient > limit ? limit : i64(quotient);
    }
  }
  const i64 v = rounded + zero_point;
  return i32(v < qmin ? qmin : v > qmax ? qmax : v);
}

// Everything a kernel reads, passed by value into each target region.
struct Kernel {
  i64 batches = 1, batch1 = 1, M = 0, N = 0, K = 0, kp = 0, Mp = 0, Np = 0;
  i64 tiles_m = 0, tiles_n = 0;
  u8* ap = nullptr;         // A' rows, [a_batches][Mp][kp]
  std::int8_t* bp = nullptr;  // B' columns, [b_batches][Np][kp]
  i64* row_sums = nullptr;  // [a_batches][M]
  i64* col_sums = nullptr;  // [b_batches][N]
  bool a_shared = false, b_shared = false;
  // The caller's matrices.
  const u8* a = nullptr;
  const u8* b = nullptr;
  i64 a_bs[2] = {0, 0}, a_rs = 0, a_cs = 0, b_bs[2] = {0, 0}, b_rs = 0, b_cs = 0;
  u8 a_flip = 0, b_flip = 0;
  // Epilogue.
  const float *sa = nullptr, *sb = nullptr, *sy = nullptr;
  const i32 *za = nullptr, *zb = nullptr, *zy = nullptr;
  i64 sa_step = 0, sb_step = 0, sy_step = 0, za_step = 0, zb_step = 0, zy_step = 0;
  i32 ca = 0, cb = 0, qmin = 0, qmax = 255;
  u8* out = nullptr;
  i64 o_bs[2] = {0, 0}, o_rs = 0, o_cs = 0;

  i64 a_batch(i64 t) const { return a_shared ? 0 : t; }
  i64 b_batch(i64 t) const { return b_shared ? 0 : t; }
  const u8* a_rows(i64 t, i64 r) const { return ap + (a_batch(t) * Mp + r) * kp; }
  const std::int8_t* b_cols(i64 t, i64 c) const { return bp + (b_batch(t) * Np + c) * kp; }

  // Output (t, m, n) from its dot(A', B'); rows and columns beyond the matrix are skipped.
  void finish(i64 t, i64 m, i64 n, i64 dot) const {
    if (m >= M || n >= N) return;
    const i64 alpha = i64(ca) + za[m * za_step];
    const i64 beta = i64(zb[n * zb_step]) - cb;
    const i64 acc = dot - beta * row_sums[a_batch(t) * M + m] -
                    alpha * (col_sums[b_batch(t) * N + n] - K * beta);
    // float32(float32(sa * sb) / sy): a float product or quotient rounded from double is the
    // correctly rounded float operation, whatever the device's float division does.
    const float product = float(double(sa[m * sa_step]) * double(sb[n * sb_step]));
    const float multiplier = float(double(product) / double(sy[m * sy_step]));
    const i32 v = requantize_exact(acc, multiplier, zy[m * zy_step], qmin, qmax);
    out[(t / batch1) * o_bs[0] + (t % batch1) * o_bs[1] + m * o_rs + n * o_cs] = u8(v);
  }
};

i64 align_up(i64 v) { return round_up(v, workspace_align); }

struct WorkspaceLayout {
  i64 a_batches, b_batches, Mp, Np, kp, ap, bp, row_sums, col_sums, bytes;
};

bool batch_shared(const MatrixView& v) { return v.batch_stride[0] == 0 && v.batch_stride[1] == 0; }

WorkspaceLayout workspace_layout(const OffloadQmmArgs& x) {
  WorkspaceLayout w;
  const i64 batches = x.batch[0] * x.batch[1];
  w.a_batches = batch_shared(x.a) ? 1 : batches;
  w.b_batches = batch_shared(x.b) ? 1 : batches;
  w.Mp = round_up(x.M, tile_rows);
  w.Np = round_up(x.N, tile_cols);
  w.kp = round_up(x.K, stage_depth);
  w.ap = 0;
  w.bp = align_up(w.ap + w.a_batches * w.Mp * w.kp);
  w.row_sums = align_up(w.bp + w.b_batches * w.Np * w.kp);
  w.col_sums = align_up(w.row_sums + w.a_batches * x.M * i64(sizeof(i64)));
  w.bytes = align_up(w.col_sums + w.b_batches * x.N * i64(sizeof(i64)));
  return w;
}

// One 64-deep chunk of a row of A' or a column of B' (r: its row or column, kk0: its first k):
// gathered from the source through its strides, stored as four 16-byte words, its sum returned.
inline i64 pack_chunk(const u8* src, i64 k_stride, i64 kk0, i64 K, bool inside, u8 flip, bool is_a,
                      u8* dst) {
  u32 words[16];
  i64 sum = 0;
#pragma unroll
  for (int w = 0; w < 16; ++w) {
    u32 word = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const i64 kk = kk0 + 4 * w + j;
      if (inside && kk < K) word |= u32(u8(src[kk * k_stride] ^ flip)) << (8 * j);
    }
    words[w] = word;
    // dp4a takes its first operand unsigned: A' bytes times ones, ones times B' bytes.
    sum += is_a ? dot4(word, 0x01010101u, 0) : dot4(0x01010101u, word, 0);
  }
#pragma unroll
  for (int v = 0; v < 4; ++v)
    reinterpret_cast<u32x4*>(dst)[v] = u32x4{words[4 * v], words[4 * v + 1], words[4 * v + 2], words[4 * v + 3]};
  return sum;
}

// A' and B' into the workspace with their sums: a thread per 64-deep chunk of a row of A' (a
// column of B'), its sum added atomically. Neighbouring threads take neighbouring chunks when the
// source's k stride is the smaller one, neighbouring rows (columns) otherwise, so that they read
// neighbouring bytes.
void pack(const Kernel k, int device) {
  const i64 chunks = k.kp / depth_step;
  const i64 a_batches = k.a_shared ? 1 : k.batches, b_batches = k.b_shared ? 1 : k.batches;
  const i64 a_rows = a_batches * k.M, b_cols = b_batches * k.N;
#pragma omp target teams distribute parallel for device(device) firstprivate(k)
  for (i64 i = 0; i < a_rows + b_cols; ++i) (i < a_rows ? k.row_sums[i] : k.col_sums[i - a_rows]) = 0;

  const bool a_chunk_inner = k.a_cs <= k.a_rs, b_chunk_inner = k.b_rs <= k.b_cs;
  const i64 a_count = a_batches * k.Mp * chunks, b_count = b_batches * k.Np * chunks;
#pragma omp target teams distribute parallel for device(device) firstprivate(k)
  for (i64 i = 0; i < a_count + b_count; ++i) {
    const bool is_a = i < a_count;
    const i64 j = is_a ? i : i - a_count, lines = is_a ? k.Mp : k.Np, count = is_a ? k.M : k.N;
    const bool chunk_inner = is_a ? a_chunk_inner : b_chunk_inner;
    const i64 t = j / (lines * chunks), rest = j % (lines * chunks);
    const i64 r = chunk_inner ? rest / chunks : rest % lines, c = chunk_inner ? rest % chunks : rest / lines;
    const i64 b0 = t / k.batch1, b1 = t % k.batch1;
    const u8* src = is_a ? k.a + b0 * k.a_bs[0] + b1 * k.a_bs[1] + r * k.a_rs
                         : k.b + b0 * k.b_bs[0] + b1 * k.b_bs[1] + r * k.b_cs;
    u8* dst = (is_a ? k.ap : reinterpret_cast<u8*>(k.bp)) + (t * lines + r) * k.kp + c * depth_step;
    const i64 sum = pack_chunk(src, is_a ? k.a_cs : k.b_rs, c * depth_step, k.K, r < count,
                               is_a ? k.a_flip : k.b_flip, is_a, dst);
    if (r < count) {
      i64& total = is_a ? k.row_sums[t * k.M + r] : k.col_sums[t * k.N + r];
#pragma omp atomic update
      total += sum;
    }
  }
}

// dp4a product: one 128 x 128 tile per team at a time, depth slices of 128 staged in team-local
// memory, each thread an 8 x 8 block of outputs (rows tr + 16i, columns tc + 16j). With fewer
// threads than the 256 blocks, the threads take the blocks in rounds; blocks wholly past the
// matrix's edge only help staging.
template <bool Deep>
void product_dp4a(const Kernel k, int device, int teams, int threads) {
  constexpr int words = int(stage_depth / 4), blocks = 256;
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
#pragma omp target teams distribute num_teams(teams) thread_limit(threads) device(device) firstprivate(k)
  for (i64 tile = 0; tile < tiles; ++tile) {
    u32 sa[words][tile_rows + 1];  // team-local: [k word][row], padded against bank conflicts
    u32 sb[words][tile_cols + 1];
    const i64 t = tile / (k.tiles_m * k.tiles_n), i0 = (tile / k.tiles_n % k.tiles_m) * tile_rows,
              j0 = (tile % k.tiles_n) * tile_cols;
    const u32* a_src = reinterpret_cast<const u32*>(k.a_rows(t, i0));
    const u32* b_src = reinterpret_cast<const u32*>(k.b_cols(t, j0));
    const i64 row_words = k.kp / 4;
#pragma omp parallel
    {
      const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
      for (int first = 0; first < blocks; first += nth) {
        const int block = first + tid;
        const int tr = block / 16, tc = block % 16;
        // A block whose first row or column lies past the matrix holds no output.
        const bool active = block < blocks && i0 + tr < k.M && j0 + tc < k.N;
        i32 acc[8][8] = {};
        i64 wide[Deep ? 8 : 1][Deep ? 8 : 1] = {};
        for (i64 k0 = 0; k0 < k.kp; k0 += stage_depth) {
          for (int e = tid; e < int(tile_rows) * words; e += nth) {
            const int r = e / words, w = e % words;
            sa[w][r] = a_src[r * row_words + k0 / 4 + w];
            sb[w][r] = b_src[r * row_words + k0 / 4 + w];
          }
#pragma omp barrier
          if (active) {
            for (int w = 0; w < words; ++w) {
              u32 x[8], y[8];
#pragma unroll
              for (int i = 0; i < 8; ++i) x[i] = sa[w][tr + 16 * i];
#pragma unroll
              for (int j = 0; j < 8; ++j) y[j] = sb[w][tc + 16 * j];
#pragma unroll
              for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = dot4(x[i], y[j], acc[i][j]);
            }
          }
#pragma omp barrier
          if constexpr (Deep) {
            if ((k0 + stage_depth) % int32_depth == 0 || k0 + stage_depth == k.kp)
#pragma unroll
              for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) wide[i][j] += acc[i][j], acc[i][j] = 0;
          }
        }
        if (active)
#pragma unroll
          for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
              k.finish(t, i0 + tr + 16 * i, j0 + tc + 16 * j, Deep ? wide[i][j] : acc[i][j]);
      }
    }
  }
}

// A 64 x 32 block of a tile computed by one worker without warp instructions: the host fallback,
// and a device team that got fewer than 32 threads.
inline void block_scalar(const Kernel& k, i64 t, i64 r0, i64 c0) {
  const i64 words = k.kp / 4;
  for (i64 r = r0; r < r0 + 64 && r < k.M; ++r)
    for (i64 c = c0; c < c0 + 32 && c < k.N; ++c) {
      const u32* x = reinterpret_cast<const u32*>(k.a_rows(t, r));
      const u32* y = reinterpret_cast<const u32*>(k.b_cols(t, c));
      i64 dot = 0;
      for (i64 w = 0; w < words; ++w) dot += dot4(x[w], y[w], 0);
      k.finish(t, r, c, dot);
    }
}

#ifdef __NVPTX__
inline void mma_u8s8(i32 (&c)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A 64 x 32 block by one warp: 4 x 4 mma tiles of 16 x 8. Each lane loads 16 consecutive bytes
// of a row (a column of B') per 64-deep slice; since a dot product may take its k in any order,
// lane q's bytes 16q..16q+15 play the k that the mma fragment layout assigns to it (bytes 0-7 in
// the first mma, 8-15 in the second), identically for A' and B'.
template <bool Deep>
inline void block_mma(const Kernel& k, i64 t, i64 r0, i64 c0, int lane) {
  const int g = lane / 4, q = lane % 4;
  i32 c[4][4][4] = {};
  i64 wide[Deep ? 4 : 1][Deep ? 4 : 1][Deep ? 4 : 1] = {};
  const u8* a_base = k.a_rows(t, r0 + g) + 16 * q;
  const u8* b_base = reinterpret_cast<const u8*>(k.b_cols(t, c0 + g)) + 16 * q;
  // The next slice's fragments are loaded before this slice's mma run, hiding their latency.
  const auto load = [&](i64 k0, u32x4(&lo)[4], u32x4(&hi)[4], u32x4(&bw)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = *reinterpret_cast<const u32x4*>(a_base + (16 * i) * k.kp + k0);
      hi[i] = *reinterpret_cast<const u32x4*>(a_base + (16 * i + 8) * k.kp + k0);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) bw[j] = *reinterpret_cast<const u32x4*>(b_base + (8 * j) * k.kp + k0);
  };
  u32x4 lo[4], hi[4], bw[4];
  load(0, lo, hi, bw);
  for (i64 k0 = 0; k0 < k.kp; k0 += depth_step) {
    u32x4 next_lo[4], next_hi[4], next_bw[4];
    load(k0 + depth_step < k.kp ? k0 + depth_step : k0, next_lo, next_hi, next_bw);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        mma_u8s8(c[i][j], lo[i].x, hi[i].x, lo[i].y, hi[i].y, bw[j].x, bw[j].y);
        mma_u8s8(c[i][j], lo[i].z, hi[i].z, lo[i].w, hi[i].w, bw[j].z, bw[j].w);
      }
#pragma unroll
    for (int i = 0; i < 4; ++i) lo[i] = next_lo[i], hi[i] = next_hi[i], bw[i] = next_bw[i];
    if constexpr (Deep) {
      if ((k0 + depth_step) % int32_depth == 0 || k0 + depth_step == k.kp)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) wide[i][j][e] += c[i][j][e], c[i][j][e] = 0;
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        k.finish(t, r0 + 16 * i + g + 8 * (e / 2), c0 + 8 * j + 2 * q + e % 2,
                 Deep ? wide[i][j][e] : c[i][j][e]);
}
#endif

// Tensor-core product in an SPMD kernel (warp-collective mma needs one): teams take 128 x 128
// tiles in turn, the warps of a team its eight 64 x 32 blocks. Threads past the last whole warp
// idle; a team without a whole warp computes its blocks thread by thread.
template <bool Deep>
void product_mma(const Kernel k, int device, int teams, int threads) {
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k)
#pragma omp parallel
  {
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    for (i64 tile = team; tile < tiles; tile += team_count) {
      const i64 t = tile / (k.tiles_m * k.tiles_n), i0 = (tile / k.tiles_n % k.tiles_m) * tile_rows,
                j0 = (tile % k.tiles_n) * tile_cols;
#ifdef __NVPTX__
      if (nth >= 32) {
        if (tid < nth / 32 * 32)
          for (int w = tid / 32; w < 8; w += nth / 32)
            block_mma<Deep>(k, t, i0 + (w / 4) * 64, j0 + (w % 4) * 32, tid % 32);
        continue;
      }
#endif
      for (int w = tid; w < 8; w += nth) block_scalar(k, t, i0 + (w / 4) * 64, j0 + (w % 4) * 32);
    }
  }
}

Kernel make_kernel(const OffloadQmmArgs& x, const WorkspaceLayout& w) {
  Kernel k;
  k.batches = x.batch[0] * x.batch[1];
  k.batch1 = x.batch[1];
  k.M = x.M, k.N = x.N, k.K = x.K, k.kp = w.kp, k.Mp = w.Mp, k.Np = w.Np;
  k.tiles_m = w.Mp / tile_rows, k.tiles_n = w.Np / tile_cols;
  u8* base = static_cast<u8*>(x.workspace);
  k.ap = base + w.ap;
  k.bp = reinterpret_cast<std::int8_t*>(base + w.bp);
  k.row_sums = reinterpret_cast<i64*>(base + w.row_sums);
  k.col_sums = reinterpret_cast<i64*>(base + w.col_sums);
  k.a_shared = w.a_batches == 1, k.b_shared = w.b_batches == 1;
  k.a = static_cast<const u8*>(x.a.data), k.b = static_cast<const u8*>(x.b.data);
  for (int d = 0; d < 2; ++d) k.a_bs[d] = x.a.batch_stride[d], k.b_bs[d] = x.b.batch_stride[d];
  k.a_rs = x.a.row_stride, k.a_cs = x.a.col_stride, k.b_rs = x.b.row_stride, k.b_cs = x.b.col_stride;
  k.a_flip = x.a.dtype == DataType::int8 ? 0x80 : 0;
  k.b_flip = x.b.dtype == DataType::uint8 ? 0x80 : 0;
  k.ca = x.a.dtype == DataType::int8 ? 128 : 0;
  k.cb = x.b.dtype == DataType::uint8 ? 128 : 0;
  k.sa = x.a_scale, k.sb = x.b_scale, k.sy = x.out_scale;
  k.za = x.a_zero, k.zb = x.b_zero, k.zy = x.out_zero;
  k.sa_step = x.a_scale_per_row, k.sb_step = x.b_scale_per_column, k.sy_step = x.out_scale_per_row;
  k.za_step = x.a_zero_per_row, k.zb_step = x.b_zero_per_column, k.zy_step = x.out_zero_per_row;
  k.qmin = x.out_type == DataType::uint8 ? 0 : -128;
  k.qmax = x.out_type == DataType::uint8 ? 255 : 127;
  k.out = static_cast<u8*>(x.out);
  for (int d = 0; d < 2; ++d) k.o_bs[d] = x.out_batch_stride[d];
  k.o_rs = x.out_row_stride, k.o_cs = x.out_col_stride;
  return k;
}

}  // namespace

std::int64_t qmm_offload_workspace_bytes(const OffloadQmmArgs& args) {
  return workspace_layout(args).bytes;
}

void qmm_offload_pack(const OffloadQmmArgs& x) {
  if (x.M == 0 || x.N == 0 || x.batch[0] * x.batch[1] == 0) return;
  pack(make_kernel(x, workspace_layout(x)), x.device);
}

void qmm_offload_product(const OffloadQmmArgs& x) {
  if (x.M == 0 || x.N == 0 || x.batch[0] * x.batch[1] == 0) return;
  const WorkspaceLayout w = workspace_layout(x);
  const Kernel k = make_kernel(x, w);
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  const int teams = int(std::min<i64>(x.teams > 0 ? x.teams : tiles, tiles));
  const int threads = x.threads > 0 ? x.threads : default_threads_per_team;
  const bool deep = w.kp > int32_depth;
  if (x.kernel == OffloadQmmKernel::mma)
    deep ? product_mma<true>(k, x.device, teams, threads) : product_mma<false>(k, x.device, teams, threads);
  else
    deep ? product_dp4a<true>(k, x.device, teams, threads) : product_dp4a<false>(k, x.device, teams, threads);
}

void qmm_offload(const OffloadQmmArgs& x) {
  qmm_offload_pack(x);
  qmm_offload_product(x);
}

}  // namespace hk::detail
