// QuantizedLinearMatMul through OpenMP target offload (see qmm_offload.hpp).
//
// Workspace: A' = A (^ 0x80 when int8) as u8 rows of kp bytes, B' = B (^ 0x80 when uint8) as s8
// columns of kp bytes (k contiguous in both), zero-padded to whole 128 x 128 output tiles and to
// kp = K rounded up to 64, plus the int64 row sums of A' and column sums of B'. Every product
// kernel computes int32 dot(A', B') over depth slices of at most 65536 (|a'b'| <= 255 * 128, so a
// slice cannot overflow), adds the slices in int64 when the depth is larger, and its epilogue
// folds the zero points back exactly (qmm_pack.hpp) and requantizes with requantize()'s semantics.
//
// On a GPU the product kernels are SPMD target regions that stage depth slices of a 128 x 128
// tile's A' rows and B' columns in team memory (the kernel's dynamic shared memory, 32 KiB) with
// cp.async, the copies of the next slices running while the team computes on this one, and read
// 16-byte fragments from there. On the host fallback, or with a thread count the staged code is not
// written for, the same regions run a plain per-output loop.
#include "schedules/qmm_offload.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>

#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile_rows = 128, tile_cols = 128;  // outputs per team tile
constexpr std::int64_t depth_step = 64;                     // k per packing chunk and per stage
constexpr std::int64_t int32_depth = 65536;                 // deepest int32-safe slice
constexpr std::int64_t workspace_align = 256;
constexpr int default_threads_per_team = 256;

using u8 = std::uint8_t;
using u32 = std::uint32_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));
typedef i32 i32x4 __attribute__((ext_vector_type(4)));
typedef u32 u32x2 __attribute__((ext_vector_type(2)));

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

constexpr i64 requantize_limit = i64(1) << 20;

// RNE(acc * multiplier) clamped to +-2^20 for |acc| >= 2^29, in integers. Out of line: rare, and
// kept out of the product kernels' unrolled epilogues, which must stay small enough to unroll
// (else their accumulator arrays move to local memory).
[[gnu::noinline]] i64 round_wide(i64 acc, float multiplier) {
  const u32 bits = std::bit_cast<u32>(multiplier);
  const int biased = int(bits >> 23) & 0xff;
  const i64 mantissa = biased == 0 ? i64(bits & 0x7fffff) : i64((bits & 0x7fffff) | 0x800000);
  const int shift = (biased == 0 ? 1 : biased) - 150;  // multiplier = mantissa * 2^shift
  const __int128 product = __int128(acc) * mantissa;
  if (product == 0) return 0;
  if (shift >= 0) return product > 0 ? requantize_limit : -requantize_limit;  // |acc| >= 2^29, multiplier >= 1
  if (-shift >= 90) return 0;  // |product| < 2^88, so |value| < 1/4
  const int s = -shift;
  __int128 quotient = product >> s;  // floor
  const __int128 remainder = product - (quotient << s);
  const __int128 half = __int128(1) << (s - 1);
  if (remainder > half || (remainder == half && (quotient & 1))) ++quotient;
  return quotient < -requantize_limit ? -requantize_limit : quotient > requantize_limit ? requantize_limit : i64(quotient);
}

// RNE(acc * multiplier) + zero_point saturated to [qmin, qmax]: requantize() without libm, so it
// compiles for the device too. The multiplier is finite and non-negative (validated).
inline i32 requantize_exact(i64 acc, float multiplier, i32 zero_point, i32 qmin, i32 qmax) {
  i64 rounded;
  if (acc > -(i64(1) << 29) && acc < (i64(1) << 29)) {
    // 29 + 24 significant bits fit a double: the product and its RNE are exact.
    const double v = __builtin_rint(double(acc) * double(multiplier));
    constexpr double limit = double(requantize_limit);
    rounded = v < -limit ? -requantize_limit : v > limit ? requantize_limit : i64(v);
  } else {
    rounded = round_wide(acc, multiplier);
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
  // Tile number -> batch and first row and column.
  void tile_origin(i64 tile, i64& t, i64& i0, i64& j0) const {
    t = tile / (tiles_m * tiles_n);
    i0 = (tile / tiles_n % tiles_m) * tile_rows;
    j0 = (tile % tiles_n) * tile_cols;
  }

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
  w.kp = round_up(x.K, depth_step);
  w.ap = 0;
  w.bp = align_up(w.ap + w.a_batches * w.Mp * w.kp);
  w.row_sums = align_up(w.bp + w.b_batches * w.Np * w.kp);
  w.col_sums = align_up(w.row_sums + w.a_batches * x.M * i64(sizeof(i64)));
  w.bytes = align_up(w.col_sums + w.b_batches * x.N * i64(sizeof(i64)));
  return w;
}

// One 64-deep chunk of a row of A' or a column of B' (r: its row or column, kk0: its first k):
// gathered from the source through its strides (as four 16-byte loads when the chunk is whole,
// contiguous and aligned), stored as four 16-byte words, its sum returned.
inline i64 pack_chunk(const u8* src, i64 k_stride, i64 kk0, i64 K, bool inside, u8 flip, bool is_a,
                      u8* dst) {
  u32 words[16];
  i64 sum = 0;
  const u8* first = src + kk0 * k_stride;
  const bool whole = inside && k_stride == 1 && kk0 + depth_step <= K &&
                     reinterpret_cast<std::uintptr_t>(first) % 16 == 0;
  const u32 flip4 = u32(flip) * 0x01010101u;
  if (whole) {
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const u32x4 q = reinterpret_cast<const u32x4*>(first)[v] ^ flip4;
      words[4 * v] = q.x, words[4 * v + 1] = q.y, words[4 * v + 2] = q.z, words[4 * v + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int w = 0; w < 16; ++w) {
      u32 word = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const i64 kk = kk0 + 4 * w + j;
        if (inside && kk < K) word |= u32(u8(src[kk * k_stride] ^ flip)) << (8 * j);
      }
      words[w] = word;
    }
  }
#pragma unroll
  for (int w = 0; w < 16; ++w)
    // dp4a takes its first operand unsigned: A' bytes times ones, ones times B' bytes.
    sum += is_a ? dot4(words[w], 0x01010101u, 0) : dot4(0x01010101u, words[w], 0);
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

// Outputs of one 64 x 32 block computed by one worker without team memory or warp instructions:
// the host fallback, and a device team with a thread count the staged kernels are not written for.
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

// Bytes of team memory of the staged kernels: Stages stages of D-deep slices of 128 rows of A'
// and 128 columns of B'.
constexpr int staged_bytes(int D, int Stages) { return Stages * 2 * int(tile_rows) * D; }

#ifdef __NVPTX__
// The staged kernels. Each keeps its locals in registers: no lambda captures and no addresses of
// locals passed on, since OpenMP would move such locals to a per-thread heap allocation
// (__kmpc_alloc_shared, which falls back to the device's malloc heap). Their team memory is the
// kernel's dynamic shared memory (ompx_dyn_cgroup_mem), as in the scan kernels: a function-local
// static array with omp_pteam_mem_alloc, the other way to get team memory, faulted on the H100
// even in a kernel that only copied through it (an invalid 8-byte read near address 0 in the
// threads past the first warp), and so did every kernel holding one.
[[gnu::always_inline]] inline void team_barrier() {
#pragma omp barrier
}

[[gnu::always_inline]] inline u32 shared_address(const void* p) {
  u32 address;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(address) : "l"(p));
  return address;
}

// 16 bytes from global to team memory without passing through registers (completes at
// copy_wait; a barrier then publishes them to the team).
[[gnu::always_inline]] inline void copy16(u32 shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(global) : "memory");
}
[[gnu::always_inline]] inline void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most Pending of the committed copy groups are still in flight.
template <int Pending>
[[gnu::always_inline]] inline void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

[[gnu::always_inline]] inline u32x4 load16(const u8* p) { return *reinterpret_cast<const u32x4*>(p); }
[[gnu::always_inline]] inline u32x2 load8(const u8* p) { return *reinterpret_cast<const u32x2*>(p); }

// A stage: D-deep slices (D = 32 or 64) of the tile's 128 A' rows, then of its 128 B' columns,
// each line D bytes = D / 16 chunks of 16 bytes. The chunk index is XORed with the line's bits
// above the lines that share 128 bytes (bits 1-2 when D = 64, bit 2 when D = 32), so that eight
// consecutive lines' chunk c (the dp4a reads) and consecutive lines' chunks (the mma fragments,
// the copies) fall in distinct banks.
template <int D>
struct Stage {
  static constexpr int chunks = D / 16;                   // per line
  static constexpr int panel = int(tile_rows) * D;        // bytes of A' (of B') in a stage
  static constexpr int bytes = 2 * panel;
  [[gnu::always_inline]] static u32 offset(int r, int c) {
    return u32(r * D + ((c ^ ((r / (8 / chunks)) & (chunks - 1))) << 4));
  }
};

// Copies of one stage (16 D chunks of 16 bytes) by Threads threads; chunk e = tid + l * Threads is
// chunk e % (D / 16) of line e % (8 D) / (D / 16) of A' (e < 8 D) or B' (consecutive threads,
// consecutive bytes of a line).
template <int Threads, int D>
struct StageCopy {
  using S = Stage<D>;
  static constexpr int copies = 16 * D / Threads;
  const u8* a_src;  // the thread's first chunk of A' (lines tid / chunks + l * Threads / chunks)
  const u8* b_src;
  i64 line_step;    // bytes between the lines of consecutive copies
  u32 dst[copies];  // team-memory offsets within a stage

  [[gnu::always_inline]] StageCopy(const Kernel& k, i64 t, i64 i0, i64 j0, int tid) {
    a_src = k.a_rows(t, i0 + tid / S::chunks) + 16 * (tid % S::chunks);
    b_src = reinterpret_cast<const u8*>(k.b_cols(t, j0 + tid / S::chunks)) + 16 * (tid % S::chunks);
    line_step = (Threads / S::chunks) * k.kp;
#pragma unroll
    for (int l = 0; l < copies; ++l) {
      const int e = tid + l * Threads, r = e % (8 * D) / S::chunks;
      dst[l] = (e < 8 * D ? 0 : S::panel) + S::offset(r, e % S::chunks);
    }
  }
  // Starts the copies of the stage at depth k0 into team memory at `stage` (a shared address)
  // as one commit group.
  [[gnu::always_inline]] void start(u32 stage, i64 k0) const {
#pragma unroll
    for (int l = 0; l < copies; ++l) {
      const int half = copies / 2;  // the first half of the copies is A', the second B'
      const u8* src = l < half ? a_src + l * line_step : b_src + (l - half) * line_step;
      copy16(stage + dst[l], src + k0);
    }
    copy_commit();
  }
};

// The depth loop of one tile through Stages buffers: stages s + 1 .. s + Stages - 1 are in flight
// while the team computes stage s (compute(stage_pointer, s)); one barrier per stage. Groups past
// the last stage are committed empty, so that the wait counts stay fixed.
template <int Threads, int D, int Stages>
struct StagedLoop {
  const StageCopy<Threads, D>& copy;
  u32 shared;
  const u8* tiles;
  i64 steps;
  template <class Compute>
  [[gnu::always_inline]] void run(Compute& compute) const {
#pragma unroll
    for (int p = 0; p < Stages - 1; ++p) {
      if (p < steps)
        copy.start(shared + u32(p * Stage<D>::bytes), p * D);
      else
        copy_commit();
    }
    for (i64 s = 0; s < steps; ++s) {
      copy_wait<Stages - 2>();
      team_barrier();  // stage s is in; every thread is done with stage s - 1, whose buffer is next
      const i64 next = s + Stages - 1;
      if (next < steps)
        copy.start(shared + u32(next % Stages * Stage<D>::bytes), next * D);
      else
        copy_commit();
      compute.step(tiles + s % Stages * Stage<D>::bytes, s);
    }
    copy_wait<0>();
    team_barrier();  // the next tile's first copies overwrite the buffers
  }
};

// Whether the int32 accumulators end a depth slice after the stage at k0.
template <int D>
[[gnu::always_inline]] inline bool slice_ends(const Kernel& k, i64 k0) {
  return (k0 + D) % int32_depth == 0 || k0 + D == k.kp;
}

// dp4a product, 256 threads: each an 8 x 8 block of the tile's outputs (rows tr + 16i, columns
// tc + 16j), four k words at a time from 16-byte team-memory reads. The accumulators are members
// of a struct the depth loop calls (not a lambda's captures, which OpenMP would globalize).
template <int D, bool Deep>
struct Dp4aTile {
  const Kernel& k;
  int tr, tc;
  i32 acc[8][8];
  i64 wide[Deep ? 8 : 1][Deep ? 8 : 1];
  [[gnu::always_inline]] void step(const u8* stage, i64 s) {
#pragma unroll
    for (int c = 0; c < Stage<D>::chunks; ++c) {
      u32x4 x[8], y[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = load16(stage + Stage<D>::offset(tr + 16 * i, c));
#pragma unroll
      for (int j = 0; j < 8; ++j) y[j] = load16(stage + Stage<D>::panel + Stage<D>::offset(tc + 16 * j, c));
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          acc[i][j] = dot4(x[i].x, y[j].x, acc[i][j]);
          acc[i][j] = dot4(x[i].y, y[j].y, acc[i][j]);
          acc[i][j] = dot4(x[i].z, y[j].z, acc[i][j]);
          acc[i][j] = dot4(x[i].w, y[j].w, acc[i][j]);
        }
    }
    if constexpr (Deep) {
      if (slice_ends<D>(k, s * D))
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j) wide[i][j] += acc[i][j], acc[i][j] = 0;
    }
  }
};

template <int D, int Stages, bool Deep>
[[gnu::always_inline]] inline void tiles_dp4a(const Kernel& k, u8* team_tiles, int tid, i64 team, i64 team_count) {
  const u32 shared = shared_address(team_tiles);
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  for (i64 tile = team; tile < tiles; tile += team_count) {
    i64 t, i0, j0;
    k.tile_origin(tile, t, i0, j0);
    const StageCopy<256, D> copy(k, t, i0, j0, tid);
    Dp4aTile<D, Deep> work{k, tid / 16, tid % 16, {}, {}};
    StagedLoop<256, D, Stages>{copy, shared, team_tiles, k.kp / D}.run(work);
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        k.finish(t, i0 + work.tr + 16 * i, j0 + work.tc + 16 * j, Deep ? work.wide[i][j] : work.acc[i][j]);
  }
}

// One m16n8k32 u8 x s8 product added to the lane's four accumulators. The accumulators travel
// as one vector value: an array of scalars of this many elements would exceed the slices that
// SROA keeps in registers and move to local memory.
[[gnu::always_inline]] inline i32x4 mma_u8s8(i32x4 c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  i32 c0 = c.x, c1 = c.y, c2 = c.z, c3 = c.w;
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+r"(c0), "+r"(c1), "+r"(c2), "+r"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  return i32x4{c0, c1, c2, c3};
}

// The outputs of one 16-row strip of a warp's mma tiles: rows m and m + 8, columns n + 8j and
// n + 8j + 1 (the lane's accumulators c[j], or their int64 sums when Deep).
template <int NJ, bool Deep, class Wide>
[[gnu::always_inline]] inline void finish_strip(const Kernel& k, i64 t, i64 m, i64 n, const i32x4 (&c)[NJ],
                                                const Wide& wide) {
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (Deep)
        k.finish(t, m + 8 * (e / 2), n + 8 * j + e % 2, wide[j][e]);
      else
        k.finish(t, m + 8 * (e / 2), n + 8 * j + e % 2, c[j][e]);
    }
}

// Tensor-core product: Threads / 32 warps, each 64 rows x (8 * NJ) columns of the tile as 4 x NJ
// mma tiles of 16 x 8 (256 threads: 64 x 32 per warp; 128 threads: 64 x 64). Lane (g, q) reads
// D / 4 consecutive bytes of rows g and g + 8 of each mma tile (of column g for B'), its quarter
// of the stage's depth; since a dot product may take its k in any order, those bytes play the k
// that the fragment layout assigns to the lane (bytes 0-7 in the first mma of a 64-deep stage,
// 8-15 in the second), identically for A' and B'.
template <int Threads, int D, bool Deep>
struct MmaTile {
  static constexpr int NJ = Threads == 256 ? 4 : 8;
  const Kernel& k;
  u32 a_lane, b_lane;  // the lane's bytes of its first row of A' and column of B' in a stage
  i32x4 c[4][NJ];
  i64 wide[Deep ? 4 : 1][Deep ? NJ : 1][Deep ? 4 : 1];
  [[gnu::always_inline]] void step(const u8* stage, i64 s) {
    if constexpr (D == 64) {
      // B' fragments for the whole stage, A' fragments row tile by row tile (fewer live registers).
      u32x4 bw[NJ];
#pragma unroll
      for (int j = 0; j < NJ; ++j) bw[j] = load16(stage + b_lane + 8 * j * D);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const u32x4 lo = load16(stage + a_lane + 16 * i * D);
        const u32x4 hi = load16(stage + a_lane + (16 * i + 8) * D);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          c[i][j] = mma_u8s8(c[i][j], lo.x, hi.x, lo.y, hi.y, bw[j].x, bw[j].y);
          c[i][j] = mma_u8s8(c[i][j], lo.z, hi.z, lo.w, hi.w, bw[j].z, bw[j].w);
        }
      }
    } else {
      u32x2 bw[NJ];
#pragma unroll
      for (int j = 0; j < NJ; ++j) bw[j] = load8(stage + b_lane + 8 * j * D);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const u32x2 lo = load8(stage + a_lane + 16 * i * D);
        const u32x2 hi = load8(stage + a_lane + (16 * i + 8) * D);
#pragma unroll
        for (int j = 0; j < NJ; ++j) c[i][j] = mma_u8s8(c[i][j], lo.x, hi.x, lo.y, hi.y, bw[j].x, bw[j].y);
      }
    }
    if constexpr (Deep) {
      if (slice_ends<D>(k, s * D)) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < NJ; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) wide[i][j][e] += c[i][j][e];
            c[i][j] = i32x4{0, 0, 0, 0};
          }
      }
    }
  }
};

// Where lane quarter q of line r starts in a stage: 16 bytes at chunk q (D = 64), 8 bytes at byte
// 8q (D = 32).
template <int D>
[[gnu::always_inline]] inline u32 lane_offset(int r, int q) {
  return D == 64 ? Stage<D>::offset(r, q) : Stage<D>::offset(r, q / 2) + u32(8 * (q % 2));
}

template <int Threads, int D, int Stages, bool Deep>
[[gnu::always_inline]] inline void tiles_mma(const Kernel& k, u8* team_tiles, int tid, i64 team, i64 team_count) {
  using Tile = MmaTile<Threads, D, Deep>;
  constexpr int warps_n = int(tile_cols) / (8 * Tile::NJ);
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int wr = warp / warps_n * 64, wc = warp % warps_n * 8 * Tile::NJ;
  // Rows wr + 16i + g (+ 8) and columns wc + 8j + g share their swizzle bits with g: one offset
  // per lane. D = 64: 16 bytes at chunk q; D = 32: 8 bytes at byte 8q.
  const u32 a_lane = lane_offset<D>(wr + g, q), b_lane = u32(Stage<D>::panel) + lane_offset<D>(wc + g, q);
  const u32 shared = shared_address(team_tiles);
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  for (i64 tile = team; tile < tiles; tile += team_count) {
    i64 t, i0, j0;
    k.tile_origin(tile, t, i0, j0);
    const StageCopy<Threads, D> copy(k, t, i0, j0, tid);
    Tile work{k, a_lane, b_lane, {}, {}};
    StagedLoop<Threads, D, Stages>{copy, shared, team_tiles, k.kp / D}.run(work);
    // Strip by strip with constant indices: one loop over all of them is too long to unroll.
    const i64 m = i0 + wr + g, n = j0 + wc + 2 * q;
    finish_strip<Tile::NJ, Deep>(k, t, m, n, work.c[0], work.wide[0]);
    finish_strip<Tile::NJ, Deep>(k, t, m + 16, n, work.c[1], work.wide[Deep ? 1 : 0]);
    finish_strip<Tile::NJ, Deep>(k, t, m + 32, n, work.c[2], work.wide[Deep ? 2 : 0]);
    finish_strip<Tile::NJ, Deep>(k, t, m + 48, n, work.c[3], work.wide[Deep ? 3 : 0]);
  }
}
#endif

// The product kernels (SPMD: warp-collective mma needs it): teams take 128 x 128 tiles in turn.
// On a GPU whose team got exactly Threads threads, the staged code of Kind runs with Stages
// D-deep stages in dynamic team memory; otherwise (the host fallback, another thread count) every
// thread computes whole 64 x 32 blocks of a tile output by output. Each staged variant is a
// kernel of its own, so that its register allocation is its own.
enum class Staged { none, dp4a, mma };

template <Staged Kind, int Threads, int D, int Stages, bool Deep>
void product(const Kernel k, int device, int teams, int threads) {
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  constexpr int team_bytes = Kind == Staged::none ? 0 : staged_bytes(D, Stages);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(team_bytes)
#pragma omp parallel
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    bool staged = false;
#ifdef __NVPTX__
    if constexpr (Kind != Staged::none) {
      // Null on the host fallback.
      u8* team_tiles = static_cast<u8*>(llvm_omp_target_dynamic_shared_alloc());
      if (team_tiles && nth == Threads) {
        staged = true;
        if constexpr (Kind == Staged::dp4a)
          tiles_dp4a<D, Stages, Deep>(k, team_tiles, tid, team, team_count);
        else
          tiles_mma<Threads, D, Stages, Deep>(k, team_tiles, tid, team, team_count);
      }
    }
#endif
    if (!staged)
      for (i64 tile = team; tile < tiles; tile += team_count) {
        i64 t, i0, j0;
        k.tile_origin(tile, t, i0, j0);
        for (int w = tid; w < 8; w += nth) block_scalar(k, t, i0 + (w / 4) * 64, j0 + (w % 4) * 32);
      }
  }
}

template <bool Deep>
void product(const Kernel& k, int device, const OffloadQmmArgs& x, int teams, int threads) {
  const bool shallow = x.stage_depth == 32;  // 32-deep stages, four of them; else two of 64
  if (x.kernel == OffloadQmmKernel::dp4a && threads == 256)
    shallow ? product<Staged::dp4a, 256, 32, 4, Deep>(k, device, teams, threads)
            : product<Staged::dp4a, 256, 64, 2, Deep>(k, device, teams, threads);
  else if (x.kernel == OffloadQmmKernel::mma && threads == 256)
    shallow ? product<Staged::mma, 256, 32, 4, Deep>(k, device, teams, threads)
            : product<Staged::mma, 256, 64, 2, Deep>(k, device, teams, threads);
  else if (x.kernel == OffloadQmmKernel::mma && threads == 128)
    shallow ? product<Staged::mma, 128, 32, 4, Deep>(k, device, teams, threads)
            : product<Staged::mma, 128, 64, 2, Deep>(k, device, teams, threads);
  else
    product<Staged::none, 0, 64, 2, Deep>(k, device, teams, threads);
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
  const Kernel k = make_kernel(x, workspace_layout(x));
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  const int teams = int(std::min<i64>(x.teams > 0 ? x.teams : tiles, tiles));
  const int threads = x.threads > 0 ? x.threads : default_threads_per_team;
  if (k.kp > int32_depth)
    product<true>(k, x.device, x, teams, threads);
  else
    product<false>(k, x.device, x, teams, threads);
}

void qmm_offload(const OffloadQmmArgs& x) {
  qmm_offload_pack(x);
  qmm_offload_product(x);
}

}  // namespace hk::detail
