// QuantizedLinearMatMul through OpenMP target offload (see qmm_offload.hpp).
//
// Workspace: A' = A (^ 0x80 when int8) as u8 rows of kp bytes, B' = B (^ 0x80 when uint8) as s8
// columns of kp bytes (k contiguous in both), zero-padded to whole 128 x 128 output tiles and to
// kp = K rounded up to 64, plus the int64 row sums of A' and column sums of B'. Every product
// kernel computes int32 dot(A', B') over depth slices of at most 65536 (|a'b'| <= 255 * 128, so a
// slice cannot overflow), adds the slices in int64 when the depth is larger, and its epilogue
// folds the zero points back exactly (qmm_pack.hpp) and requantizes with requantize()'s semantics.
//
// On a GPU the kernels are SPMD target regions with static team memory: the product kernels copy
// each 64-deep slice of a 128 x 128 tile's A' rows and B' columns into team memory (fetched into
// registers while the team computes on the previous slice; double buffering, 32 KiB), then read
// 16-byte fragments from there. On the host fallback, or with a thread count the staged code is
// not written for, the same regions run a plain per-output loop.
#include "schedules/qmm_offload.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <vector>

#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile_rows = 128, tile_cols = 128;  // outputs per team tile
constexpr std::int64_t depth_step = 64;                     // k per packing block and per stage
constexpr std::int64_t int32_depth = 65536;                 // deepest int32-safe slice
constexpr std::int64_t workspace_align = 256;
constexpr int default_threads_per_team = 256;
constexpr int panel_bytes = int(tile_rows * depth_step);  // one stage of A' rows (or B' columns)
constexpr int stage_bytes = 2 * panel_bytes;               // A' and B' of one stage
[[maybe_unused]] constexpr int staged_bytes = 2 * stage_bytes;              // double buffer: 32 KiB of team memory
[[maybe_unused]] constexpr int pack_pitch = int(depth_step) + 4;            // team-memory row of the packing kernel
constexpr int pack_threads = 256;

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

#ifdef __NVPTX__
// A barrier of the team's threads (the kernels are SPMD: every thread of the block runs the region).
inline void team_barrier() { asm volatile("bar.sync 0;" ::: "memory"); }
#endif

// Packing: blocks of 64 lines (rows of A', columns of B') x 64 k. A GPU team of 256 threads reads
// a block from the source in the order of its smaller stride (neighbouring threads, neighbouring
// bytes) into team memory, then writes it as 16-byte words, each thread adding its words' sum to
// the line's atomically. The host fallback packs line by line.
struct PackBlocks {
  i64 a_count, b_count;  // blocks of A' then of B'
  i64 chunks;            // 64-deep chunks per line
};

PackBlocks pack_blocks(const Kernel& k) {
  const i64 chunks = k.kp / depth_step;
  const i64 a_batches = k.a_shared ? 1 : k.batches, b_batches = k.b_shared ? 1 : k.batches;
  return {a_batches * (k.Mp / 64) * chunks, b_batches * (k.Np / 64) * chunks, chunks};
}

// Where packing block blk reads (the source matrix, its strides along lines and along k, its first
// line and k) and writes (the packed block and the sums of its lines).
struct PackBlock {
  const u8* src;
  i64 line_stride, k_stride, line0, k0, lines_valid;
  u8* dst;  // the block's first line, k0 included
  i64* sums;
  u8 flip;
  bool is_a;
};

inline PackBlock pack_block(const Kernel& k, const PackBlocks& pb, i64 blk) {
  PackBlock p;
  p.is_a = blk < pb.a_count;
  const i64 j = p.is_a ? blk : blk - pb.a_count;
  const i64 line_blocks = (p.is_a ? k.Mp : k.Np) / 64;
  const i64 t = j / (line_blocks * pb.chunks), rest = j % (line_blocks * pb.chunks);
  p.line0 = rest / pb.chunks * 64;
  p.k0 = rest % pb.chunks * depth_step;
  const i64 b0 = t / k.batch1, b1 = t % k.batch1;
  const i64 count = p.is_a ? k.M : k.N;
  p.lines_valid = std::min<i64>(64, std::max<i64>(0, count - p.line0));
  if (p.is_a) {
    p.src = k.a + b0 * k.a_bs[0] + b1 * k.a_bs[1];
    p.line_stride = k.a_rs, p.k_stride = k.a_cs;
    p.dst = k.ap + (t * k.Mp + p.line0) * k.kp + p.k0;
    p.sums = k.row_sums + t * k.M + p.line0;
    p.flip = k.a_flip;
  } else {
    p.src = k.b + b0 * k.b_bs[0] + b1 * k.b_bs[1];
    p.line_stride = k.b_cs, p.k_stride = k.b_rs;
    p.dst = reinterpret_cast<u8*>(k.bp) + (t * k.Np + p.line0) * k.kp + p.k0;
    p.sums = k.col_sums + t * k.N + p.line0;
    p.flip = k.b_flip;
  }
  return p;
}

// Word w of line l of a block, gathered straight from the source.
inline u32 source_word(const Kernel& k, const PackBlock& p, i64 l, int w) {
  u32 word = 0;
  for (int j = 0; j < 4; ++j) {
    const i64 kk = p.k0 + 4 * w + j;
    if (l < p.lines_valid && kk < k.K)
      word |= u32(u8(p.src[(p.line0 + l) * p.line_stride + kk * p.k_stride] ^ p.flip)) << (8 * j);
  }
  return word;
}

// dp4a takes its first operand unsigned: A' bytes times ones, ones times B' bytes.
inline i32 word_sum(u32 word, bool is_a) { return is_a ? dot4(word, 0x01010101u, 0) : dot4(0x01010101u, word, 0); }

void pack(const Kernel k, int device) {
  const PackBlocks pb = pack_blocks(k);
  const i64 a_batches = k.a_shared ? 1 : k.batches, b_batches = k.b_shared ? 1 : k.batches;
  const i64 a_rows = a_batches * k.M, b_cols = b_batches * k.N;
#pragma omp target teams distribute parallel for device(device) firstprivate(k)
  for (i64 i = 0; i < a_rows + b_cols; ++i) (i < a_rows ? k.row_sums[i] : k.col_sums[i - a_rows]) = 0;

  const i64 blocks = pb.a_count + pb.b_count;
  // The host fallback runs one team of the host's threads; a GPU a team per block, up to 2^16.
  const int teams = device == omp_get_initial_device() ? 1 : int(std::min<i64>(blocks, 1 << 16));
#pragma omp target teams num_teams(teams) thread_limit(pack_threads) device(device) firstprivate(k, pb)
#pragma omp parallel
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    bool staged = false;
#ifdef __NVPTX__
    if (nth == pack_threads) {
      static u32x4 team_block[64 * pack_pitch / 16];
#pragma omp allocate(team_block) allocator(omp_pteam_mem_alloc)
      staged = true;
      u8* block = reinterpret_cast<u8*>(team_block);
      const int line = tid / 4, first = tid % 4 * 16;  // the 16 bytes this thread writes
      for (i64 blk = team; blk < blocks; blk += team_count) {
        const PackBlock p = pack_block(k, pb, blk);
        const bool k_inner = p.k_stride <= p.line_stride;
#pragma unroll
        for (int e = 0; e < 16; ++e) {
          const int idx = tid + pack_threads * e;
          const int l = k_inner ? idx / 64 : idx % 64, kk = k_inner ? idx % 64 : idx / 64;
          const i64 kg = p.k0 + kk;
          block[l * pack_pitch + kk] = l < p.lines_valid && kg < k.K
                                           ? u8(p.src[(p.line0 + l) * p.line_stride + kg * p.k_stride] ^ p.flip)
                                           : u8(0);
        }
        team_barrier();
        const u32* row = reinterpret_cast<const u32*>(block + line * pack_pitch + first);
        const u32x4 words = {row[0], row[1], row[2], row[3]};
        *reinterpret_cast<u32x4*>(p.dst + line * k.kp + first) = words;
        if (line < p.lines_valid) {
          const i64 sum = word_sum(words.x, p.is_a) + word_sum(words.y, p.is_a) + word_sum(words.z, p.is_a) +
                          word_sum(words.w, p.is_a);
          i64& total = p.sums[line];
#pragma omp atomic update
          total += sum;
        }
        team_barrier();  // the next block overwrites team memory
      }
    }
#endif
    if (!staged) {
      // A thread per line of a block: four 16-byte words and one atomic sum.
      for (i64 i = team * nth + tid; i < blocks * 64; i += team_count * nth) {
        const PackBlock p = pack_block(k, pb, i / 64);
        const i64 l = i % 64;
        i64 sum = 0;
        for (int v = 0; v < 4; ++v) {
          u32x4 words;
          words.x = source_word(k, p, l, 4 * v), words.y = source_word(k, p, l, 4 * v + 1);
          words.z = source_word(k, p, l, 4 * v + 2), words.w = source_word(k, p, l, 4 * v + 3);
          sum += word_sum(words.x, p.is_a) + word_sum(words.y, p.is_a) + word_sum(words.z, p.is_a) +
                 word_sum(words.w, p.is_a);
          reinterpret_cast<u32x4*>(p.dst + l * k.kp)[v] = words;
        }
        if (l < p.lines_valid) {
          i64& total = p.sums[l];
#pragma omp atomic update
          total += sum;
        }
      }
    }
  }
}

// Outputs of one 64 x 32 block computed by one worker without team memory or warp instructions.
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
[[gnu::always_inline]] inline u32x4 load16(const u8* p) { return *reinterpret_cast<const u32x4*>(p); }

// Byte offset of the 16-byte chunk c (0-3) of row r in a staged panel [128 rows][64 bytes]: the
// chunk index is XORed with bits 1-2 of the row, so that eight consecutive rows' chunk c (the
// dp4a kernel's reads) and two rows' four chunks (the mma fragments) fall in distinct banks.
[[gnu::always_inline]] inline u32 swizzled(int r, int c) { return u32(r * 64 + ((c ^ ((r >> 1) & 3)) << 4)); }

// Copies of one stage: Threads threads move the 1024 16-byte chunks of 128 rows of A' and 128
// columns of B', 64 deep, through registers (fetch while the team computes, store after).
template <int Threads>
struct Stager {
  static constexpr int copies = 1024 / Threads;
  const u8* src[copies];
  u32 dst[copies];
  u32x4 held[copies];
  [[gnu::always_inline]] Stager(const Kernel& k, i64 t, i64 i0, i64 j0, int tid) {
#pragma unroll
    for (int l = 0; l < copies; ++l) {
      const int e = tid + l * Threads, r = e % 512 / 4, c = e % 4;
      src[l] = (e < 512 ? k.a_rows(t, i0 + r) : reinterpret_cast<const u8*>(k.b_cols(t, j0 + r))) + 16 * c;
      dst[l] = (e < 512 ? 0 : panel_bytes) + swizzled(r, c);
    }
  }
  [[gnu::always_inline]] void fetch(i64 k0) {
#pragma unroll
    for (int l = 0; l < copies; ++l) held[l] = *reinterpret_cast<const u32x4*>(src[l] + k0);
  }
  [[gnu::always_inline]] void store(u8* stage) const {
#pragma unroll
    for (int l = 0; l < copies; ++l) *reinterpret_cast<u32x4*>(stage + dst[l]) = held[l];
  }
};

// The k loop of one tile, double-buffered: stage s + 1 is fetched from global memory into
// registers while stage s is computed (compute(stage, k0)), then stored to the other buffer.
template <int Threads, class Compute>
[[gnu::always_inline]] inline void staged_depth(const Kernel& k, u8* tiles, Stager<Threads>& stager,
                                                Compute&& compute) {
  const i64 steps = k.kp / depth_step;
  stager.fetch(0);
  stager.store(tiles);
  team_barrier();
  for (i64 s = 0; s < steps; ++s) {
    const bool more = s + 1 < steps;
    if (more) stager.fetch((s + 1) * depth_step);
    compute(tiles + (s & 1) * stage_bytes, s * depth_step);
    // Buffer (s + 1) & 1 was last read in step s - 1, which every thread has finished.
    if (more) stager.store(tiles + ((s + 1) & 1) * stage_bytes);
    team_barrier();
  }
}

// Whether the int32 accumulators end a slice after the stage at k0.
[[gnu::always_inline]] inline bool slice_ends(const Kernel& k, i64 k0) {
  return (k0 + depth_step) % int32_depth == 0 || k0 + depth_step == k.kp;
}

// dp4a product, 256 threads: each an 8 x 8 block of the tile's outputs (rows tr + 16i, columns
// tc + 16j), four k words at a time from 16-byte team-memory reads.
template <bool Deep>
[[gnu::always_inline]] inline void tiles_dp4a(const Kernel& k, u8* team_tiles, int tid, i64 team, i64 team_count) {
  const int tr = tid / 16, tc = tid % 16;
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  for (i64 tile = team; tile < tiles; tile += team_count) {
    i64 t, i0, j0;
    k.tile_origin(tile, t, i0, j0);
    Stager<256> stager(k, t, i0, j0, tid);
    i32 acc[8][8] = {};
    i64 wide[Deep ? 8 : 1][Deep ? 8 : 1] = {};
    staged_depth(k, team_tiles, stager, [&](const u8* stage, i64 k0) __attribute__((always_inline)) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        u32x4 x[8], y[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) x[i] = load16(stage + swizzled(tr + 16 * i, c));
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = load16(stage + panel_bytes + swizzled(tc + 16 * j, c));
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
        if (slice_ends(k, k0))
#pragma unroll
          for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) wide[i][j] += acc[i][j], acc[i][j] = 0;
      }
    });
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        k.finish(t, i0 + tr + 16 * i, j0 + tc + 16 * j, Deep ? wide[i][j] : acc[i][j]);
  }
}

[[gnu::always_inline]] inline void mma_u8s8(i32 (&c)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Tensor-core product: Threads / 32 warps, each 64 rows x (8 * NJ) columns of the tile as 4 x NJ
// mma tiles of 16 x 8 (256 threads: 64 x 32 per warp; 128 threads: 64 x 64). Lane (g, q) reads
// the 16 bytes q of rows g and g + 8 of each mma tile (of column g for B'); since a dot product
// may take its k in any order, those bytes play the k that the fragment layout assigns to the
// lane (bytes 0-7 in the first mma of a stage's 32-deep halves, 8-15 in the second), identically
// for A' and B'.
template <int Threads, bool Deep>
[[gnu::always_inline]] inline void tiles_mma(const Kernel& k, u8* team_tiles, int tid, i64 team, i64 team_count) {
  constexpr int NJ = Threads == 256 ? 4 : 8;
  constexpr int warps_n = int(tile_cols) / (8 * NJ);
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int wr = warp / warps_n * 64, wc = warp % warps_n * 8 * NJ;
  // Rows wr + 16i + g (+ 8) and wc + 8j + g share bits 1-2 with g: one swizzled chunk per lane.
  const u32 a_lane = swizzled(wr + g, q), b_lane = panel_bytes + swizzled(wc + g, q);
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
  for (i64 tile = team; tile < tiles; tile += team_count) {
    i64 t, i0, j0;
    k.tile_origin(tile, t, i0, j0);
    Stager<Threads> stager(k, t, i0, j0, tid);
    i32 c[4][NJ][4] = {};
    i64 wide[Deep ? 4 : 1][Deep ? NJ : 1][Deep ? 4 : 1] = {};
    staged_depth(k, team_tiles, stager, [&](const u8* stage, i64 k0) __attribute__((always_inline)) {
      // B' fragments for the whole stage, A' fragments row tile by row tile (fewer live registers).
      u32x4 bw[NJ];
#pragma unroll
      for (int j = 0; j < NJ; ++j) bw[j] = load16(stage + b_lane + 8 * j * 64);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const u32x4 lo = load16(stage + a_lane + 16 * i * 64);
        const u32x4 hi = load16(stage + a_lane + (16 * i + 8) * 64);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          mma_u8s8(c[i][j], lo.x, hi.x, lo.y, hi.y, bw[j].x, bw[j].y);
          mma_u8s8(c[i][j], lo.z, hi.z, lo.w, hi.w, bw[j].z, bw[j].w);
        }
      }
      if constexpr (Deep) {
        if (slice_ends(k, k0))
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < NJ; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e) wide[i][j][e] += c[i][j][e], c[i][j][e] = 0;
      }
    });
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          k.finish(t, i0 + wr + 16 * i + g + 8 * (e / 2), j0 + wc + 8 * j + 2 * q + e % 2,
                   Deep ? wide[i][j][e] : c[i][j][e]);
  }
}
#endif

// The product kernels: teams take 128 x 128 tiles in turn. Staged (Threads 0: none) is the
// staged code of this kernel, which runs on a GPU with team memory and Threads threads per team;
// otherwise every thread computes whole 64 x 32 blocks of a tile output by output. Each staged
// variant is a kernel of its own, so that its register allocation is its own.
enum class Staged { none, dp4a, mma };

template <Staged Kind, int Threads, bool Deep>
void product(const Kernel k, int device, int teams, int threads) {
  const i64 tiles = k.batches * k.tiles_m * k.tiles_n;
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k)
#pragma omp parallel
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    bool staged = false;
#ifdef __NVPTX__
    if constexpr (Kind != Staged::none) {
      if (nth == Threads) {
        static u32x4 team_tiles[staged_bytes / 16];
#pragma omp allocate(team_tiles) allocator(omp_pteam_mem_alloc)
        staged = true;
        if constexpr (Kind == Staged::dp4a)
          tiles_dp4a<Deep>(k, reinterpret_cast<u8*>(team_tiles), tid, team, team_count);
        else
          tiles_mma<Threads, Deep>(k, reinterpret_cast<u8*>(team_tiles), tid, team, team_count);
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
void product(const Kernel& k, int device, OffloadQmmKernel kind, int teams, int threads) {
  if (kind == OffloadQmmKernel::dp4a && threads == 256)
    product<Staged::dp4a, 256, Deep>(k, device, teams, threads);
  else if (kind == OffloadQmmKernel::mma && threads == 256)
    product<Staged::mma, 256, Deep>(k, device, teams, threads);
  else if (kind == OffloadQmmKernel::mma && threads == 128)
    product<Staged::mma, 128, Deep>(k, device, teams, threads);
  else
    product<Staged::none, 0, Deep>(k, device, teams, threads);
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
  if (w.kp > int32_depth)
    product<true>(k, x.device, x.kernel, teams, threads);
  else
    product<false>(k, x.device, x.kernel, teams, threads);
}

void qmm_offload(const OffloadQmmArgs& x) {
  qmm_offload_pack(x);
  qmm_offload_product(x);
}

}  // namespace hk::detail
