// QuantizedLinearMatMul through OpenMP target offload (see qmm_offload.hpp).
//
// Workspace: A' = A (^ 0x80 when int8) as u8 rows of kp bytes, B' = B (^ 0x80 when uint8) as s8
// columns of kp bytes (k contiguous in both), zero-padded to whole 128 x 128 output tiles and to
// kp = K rounded up to 128, plus the int64 row sums of A' and column sums of B' where the zero
// points need them. An operand whose memory already is its packed form (packed_in_place) is read
// where it is, and only summed where needed; with nothing to pack or sum no packing kernel runs. Every
// product kernel computes int32 dot(A', B') over depth slices of at most 65536 (|a'b'| <= 255 *
// 128, so a slice cannot overflow), adds the slices in int64 when the depth is larger, and its
// epilogue folds the zero points back exactly (qmm_pack.hpp) and requantizes with requantize()'s
// semantics.
// On a GPU both products stage slices of a tile's A' rows and B' columns in dynamic team memory
// with cp.async, a slice ahead; the host fallback computes from the workspace directly.
#include "schedules/qmm_offload.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <type_traits>

#include "algorithms/requantize.hpp"
#include "schedules/qmm_pack.hpp"
#include "schedules/scan_offload.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile_rows = 128, tile_cols = 128;  // outputs per team tile
constexpr std::int64_t depth_step = 64;                     // k per transposed or gathered chunk
constexpr std::int64_t depth_align = 128;                   // kp: whole slices and chunks
constexpr std::int64_t int32_depth = 65536;                 // deepest int32-safe slice
constexpr std::int64_t workspace_align = 256;
constexpr int default_dp4a_threads = 256, default_mma_threads = 128;

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

// sum_i (a.byte[i] - 128) * b.byte[i] (signed) + c: a byte of A' less 128 is that byte ^ 0x80 as
// int8 (Kernel::a_centred).
inline i32 dot4_centred(u32 a, u32 b, i32 c) {
  for (int i = 0; i < 4; ++i) c += i32(std::int8_t(u8(a >> (8 * i)) ^ 0x80)) * i32(std::int8_t(u8(b >> (8 * i))));
  return c;
}

// The sum of a word's bytes: unsigned for A', signed for B' (dp4a takes its first operand
// unsigned, so A' bytes times ones, ones times B' bytes).
inline i32 byte_sum(u32 word, bool is_a) { return is_a ? dot4(word, 0x01010101u, 0) : dot4(0x01010101u, word, 0); }

// Everything a kernel reads, passed by value into each target region.
struct Kernel {
  i64 batches = 1, batch1 = 1, M = 0, N = 0, K = 0, kp = 0, Mp = 0, Np = 0;
  i64 tiles_m = 0, tiles_n = 0;
  const u8* ap = nullptr;           // A' rows, [a_batches][Mp][kp]
  const std::int8_t* bp = nullptr;  // B' columns, [b_batches][Np][kp]
  u8* a_pack = nullptr;             // where packing writes A' (ap), null when A is A' in place
  u8* b_pack = nullptr;             // the same for B' (bp)
  i64* row_sums = nullptr;  // [a_batches][M]; null when not needed
  i64* col_sums = nullptr;  // [b_batches][N]; the same
  // Every alpha is 128 and the kernel is mma: it multiplies A' - 128 (A' ^ 0x80 as int8: 16
  // bitwise ops beside a warp's 32 mma per 32-deep step) by B', which folds alpha into the
  // product, so that no column sum is needed; the row sums are then those of A' - 128 (the
  // stored sums less 128 * K) and alpha counts as 0. Measured on the H100 (u8 A za 128 x s8 B,
  // pack + product ms, one process per variant in one run): 4096^3 B column-major, no packing
  // kernel, 0.383-0.399 against 0.437-0.463 (0.426-0.429 with a packing kernel that sums only B),
  // row-major 0.458-0.477 against 0.458-0.516; 8192^3 2.27-2.35 / 2.40-2.50 against 2.32-2.43 /
  // 2.36-2.45. Not dp4a: flipping each A' word once for its eight dp4a.s32.s32 made the 4096^3
  // product 1.417 ms against 1.338 (B column-major call 1.418 against 1.362 with its packing
  // launch), the bitwise ops taking issue slots the dp4a need.
  bool a_centred = false;
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

  // The epilogue's terms, gathered once per tile, per output row and per output column, so that
  // an output costs a few multiplications: acc = dot - beta * row sum - alpha * (column sum -
  // K * beta) folds the zero points back (qmm_pack.hpp), then float32(float32(sa * sb) / sy)
  // requantizes it. (A float product or quotient rounded from double is the correctly rounded
  // float operation, whatever the device's float division does.)
  struct Tile {
    const i64* row_sums;
    const i64* col_sums;
    u8* out;
  };
  struct Row {
    bool inside = false;
    i64 alpha = 0, sum = 0;
    double sa = 0, sy = 1;
    float multiplier = 0;  // the whole multiplier when B has one scale
    i32 zy = 0;
    u8* out = nullptr;
  };
  struct Col {
    bool inside = false;
    i64 beta = 0, term = 0, offset = 0;
    i64 part = 0;  // alpha * term where A has one zero point: the column's part of the correction
    double sb = 0;
  };

  Tile tile(i64 t) const {
    return {row_sums ? row_sums + a_batch(t) * M : nullptr, col_sums ? col_sums + b_batch(t) * N : nullptr,
            out + (t / batch1) * o_bs[0] + (t % batch1) * o_bs[1]};
  }
  Row row(const Tile& tl, i64 m) const {
    Row r;
    if (m >= M) return r;
    r.inside = true;
    r.alpha = a_centred ? 0 : i64(ca) + za[m * za_step];
    r.sum = (tl.row_sums ? tl.row_sums[m] : 0) - (a_centred ? 128 * K : 0);  // 0 if not needed
    r.sa = sa[m * sa_step];
    r.sy = sy[m * sy_step];
    r.multiplier = float(double(float(r.sa * double(sb[0]))) / r.sy);
    r.zy = zy[m * zy_step];
    r.out = tl.out + m * o_rs;
    return r;
  }
  Col col(const Tile& tl, i64 n) const {
    Col c;
    if (n >= N) return c;
    c.inside = true;
    c.beta = i64(zb[n * zb_step]) - cb;
    c.term = (tl.col_sums ? tl.col_sums[n] : 0) - K * c.beta;
    if (za_step == 0) c.part = (a_centred ? 0 : i64(ca) + za[0]) * c.term;
    c.sb = sb[n * sb_step];
    c.offset = n * o_cs;
    return c;
  }
  // The output at (r, c) from its dot(A', B'); rows and columns beyond the matrix are skipped.
  void finish(const Row& r, const Col& c, i64 dot) const {
    if (!r.inside || !c.inside) return;
    const i64 acc = dot - c.beta * r.sum - r.alpha * c.term;
    const float multiplier = sb_step == 0 ? r.multiplier : float(double(float(r.sa * c.sb)) / r.sy);
    r.out[c.offset] = u8(requantize_exact(acc, multiplier, r.zy, qmin, qmax));
  }
};

i64 align_up(i64 v) { return round_up(v, workspace_align); }

struct WorkspaceLayout {
  i64 a_batches, b_batches, Mp, Np, kp, ap, bp, row_sums, col_sums, bytes;
  bool a_in_place, b_in_place;
  bool row_sums_stored, col_sums_stored;  // needed, so in the workspace
  bool a_centred;                         // Kernel::a_centred
};

bool batch_shared(const MatrixView& v) { return v.batch_stride[0] == 0 && v.batch_stride[1] == 0; }

// Whether an operand's memory is byte for byte its packed form (A' when is_a, B' otherwise):
// lines (rows of A, columns of B) of K contiguous bytes each, K whole slices, whole tiles of lines
// one after another, the batches following each other (or one shared by all), no signedness to
// flip, and 16-byte aligned for the staging copies. Then packing only sums its lines, where the
// zero points need them: on the H100 at 4096^3 (u8 A row-major, s8 B column-major) 0.024-0.027 ms
// against 0.041 for the copies, of a 0.35 ms tensor-core call. Summing them in the product's tiles
// instead, as they are staged, so that no packing kernel runs, was slower (each tile sums its
// lines, which 32 or 64 tiles share; measured on the H100, u8 A za 128 x s8 B column-major, B's
// columns summed): for mma, from team memory after each slice's products or before them, 13-15%
// on the product (4096^3 0.423-0.427 against 0.368-0.378 ms, 8192^3 2.60-2.68 against 2.21-2.28:
// its ldmatrix loads nearly fill the team memory's bandwidth; all 256 lines: 0.55 against 0.33);
// for dp4a, four 16-byte loads and 16 dp4a per line and slice, 3% (bench, product 1.396 against
// 1.354 ms beside B row-major at 4096^3, 10.56 against 10.21 at 8192^3), more than the summing
// launch (0.02-0.03 ms; 0.07 at 8192^3). Nor with each 16-line group summed once, from global
// memory, by the first dp4a tile that needs it (claimed through state words kept across calls,
// waited for by the others before their epilogue): 1.508-1.553 ms against 1.319-1.328 at 4096^3,
// B row-major included, where nothing was claimed (the claim and wait code alone cost that).
bool packed_in_place(const MatrixView& v, bool is_a, i64 lines, i64 K, const i64 (&batch)[2]) {
  const i64 line_stride = is_a ? v.row_stride : v.col_stride, k_stride = is_a ? v.col_stride : v.row_stride;
  const bool flips = v.dtype == (is_a ? DataType::int8 : DataType::uint8);
  const i64 matrix = lines * K;
  const bool batches_follow = batch_shared(v) || ((batch[1] == 1 || v.batch_stride[1] == matrix) &&
                                                  (batch[0] == 1 || v.batch_stride[0] == batch[1] * matrix));
  return !flips && K > 0 && K % depth_align == 0 && k_stride == 1 && line_stride == K &&
         lines % (is_a ? tile_rows : tile_cols) == 0 && batches_follow &&
         reinterpret_cast<std::uintptr_t>(v.data) % 16 == 0;
}

WorkspaceLayout workspace_layout(const OffloadQmmArgs& x) {
  WorkspaceLayout w;
  const i64 batches = x.batch[0] * x.batch[1];
  w.a_batches = batch_shared(x.a) ? 1 : batches;
  w.b_batches = batch_shared(x.b) ? 1 : batches;
  w.Mp = round_up(x.M, tile_rows);
  w.Np = round_up(x.N, tile_cols);
  w.kp = round_up(x.K, depth_align);
  w.a_in_place = packed_in_place(x.a, true, x.M, x.K, x.batch);
  w.b_in_place = packed_in_place(x.b, false, x.N, x.K, x.batch);
  w.a_centred = x.every_alpha_128 && x.kernel == OffloadQmmKernel::mma;
  w.row_sums_stored = x.row_sums_needed;
  w.col_sums_stored = x.col_sums_needed && !w.a_centred;
  w.ap = 0;
  w.bp = align_up(w.ap + (w.a_in_place ? 0 : w.a_batches * w.Mp * w.kp));
  w.row_sums = align_up(w.bp + (w.b_in_place ? 0 : w.b_batches * w.Np * w.kp));
  w.col_sums = align_up(w.row_sums + (w.row_sums_stored ? w.a_batches * x.M * i64(sizeof(i64)) : 0));
  w.bytes = align_up(w.col_sums + (w.col_sums_stored ? w.b_batches * x.N * i64(sizeof(i64)) : 0));
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
    sum += byte_sum(word, is_a);
  }
#pragma unroll
  for (int v = 0; v < 4; ++v)
    reinterpret_cast<u32x4*>(dst)[v] = u32x4{words[4 * v], words[4 * v + 1], words[4 * v + 2], words[4 * v + 3]};
  return sum;
}

// One operand as the packing kernels see it: lines (rows of A, columns of B) of depth K, packed
// into dst, or only summed when dst is null (the operand is its packed form in place); their sums
// are stored only where sums is not null.
struct Operand {
  const u8* src;
  i64 bs[2], line_stride, k_stride, lines, padded_lines, batches;
  u8 flip;
  bool is_a;
  u8* dst;
  i64* sums;
};

Operand operand_of(const Kernel& k, bool is_a) {
  if (is_a)
    return {k.a, {k.a_bs[0], k.a_bs[1]}, k.a_rs, k.a_cs, k.M, k.Mp, k.a_shared ? 1 : k.batches, k.a_flip,
            true, k.a_pack, k.row_sums};
  return {k.b, {k.b_bs[0], k.b_bs[1]}, k.b_cs, k.b_rs, k.N, k.Np, k.b_shared ? 1 : k.batches, k.b_flip,
          false, k.b_pack, k.col_sums};
}

bool aligned16(const void* p, i64 a, i64 b, i64 c) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && a % 16 == 0 && b % 16 == 0 && c % 16 == 0;
}

// Depth contiguous, every line and 16-k chunk 16-byte aligned: lines are copied in 16-byte chunks
// (copy_lines).
bool copy_packable(const Operand& o, i64 K) {
  return o.k_stride == 1 && K % 16 == 0 && aligned16(o.src, o.line_stride, o.bs[0], o.bs[1]);
}

// Lines contiguous (the transposed layout) in 16-line groups, read 16 bytes (16 lines) at a time
// and transposed through team memory (transpose_lines_unit).
bool transpose_packable(const Operand& o) {
  return o.line_stride == 1 && o.lines % 16 == 0 && aligned16(o.src, o.k_stride, o.bs[0], o.bs[1]);
}

#ifdef __NVPTX__
// The sum over the calling warp (SPMD kernels only: all 32 lanes call it).
inline i64 warp_sum(i64 v) {
  for (int d = 16; d > 0; d /= 2) {
    u32 lo, hi;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(lo) : "r"(u32(v)), "r"(d));
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(hi) : "r"(u32(std::uint64_t(v) >> 32)), "r"(d));
    v += i64(std::uint64_t(hi) << 32 | lo);
  }
  return v;
}

inline void team_barrier() { asm volatile("bar.sync 0;" ::: "memory"); }

inline u32 shared_address(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
#endif

constexpr int pack_threads = 256;

// Depth contiguous: a unit of copy_unit_lines lines, a warp per line on a GPU (whole warps), each
// lane copying (or, without a destination, only reading) every 32nd 16-byte chunk, four loads in
// flight, and the warp adding the sum up with shuffles, so that the sum is stored, not
// accumulated; a thread per line otherwise (the host fallback).
constexpr i64 copy_unit_lines = 8;

inline void copy_lines(const Operand& o, i64 unit, i64 K, i64 kp, i64 batch1, int tid, int nth) {
#ifdef __NVPTX__
  const int lanes = nth % 32 == 0 ? 32 : 1;
#else
  const int lanes = 1;
#endif
  const i64 per_pass = nth / lanes, first = unit * copy_unit_lines;
  const int chunks = int(kp / 16);
  const u32 flip = u32(o.flip) * 0x01010101u;
  for (i64 index = first + tid / lanes; index < first + copy_unit_lines; index += per_pass) {
    const i64 t = index / o.padded_lines, line = index % o.padded_lines;
    const u8* src = o.src + (t / batch1) * o.bs[0] + (t % batch1) * o.bs[1] + line * o.line_stride;
    u32x4* dst = o.dst ? reinterpret_cast<u32x4*>(o.dst + index * kp) : nullptr;
    const bool inside = line < o.lines;
    const int filled = inside ? int(K / 16) : 0;  // chunks with data; the rest are padding
    i64 sum = 0;
#pragma unroll 1
    for (int c0 = tid % lanes; c0 < chunks; c0 += 4 * lanes) {
      u32x4 w[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = c0 + u * lanes;
        w[u] = c < filled ? *reinterpret_cast<const u32x4*>(src + 16 * c) ^ flip : u32x4{0, 0, 0, 0};
      }
      i32 part = 0;  // at most 64 bytes of 255
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = c0 + u * lanes;
        if (c >= chunks) continue;
        part += byte_sum(w[u].x, o.is_a) + byte_sum(w[u].y, o.is_a) + byte_sum(w[u].z, o.is_a) + byte_sum(w[u].w, o.is_a);
        if (dst) dst[c] = w[u];
      }
      sum += part;
    }
#ifdef __NVPTX__
    if (lanes == 32) sum = warp_sum(sum);
#endif
    if (tid % lanes == 0 && inside && o.sums) o.sums[t * o.lines + line] = sum;
  }
}

// Lines contiguous: a team per unit of 32 lines over the whole depth, so that it owns their sums.
// On a GPU the unit's source rows (32 bytes of each k) are staged 512 k at a time into team memory
// with cp.async, the next stage in flight while the current one is transposed: each thread
// transposes 4-line x 16-k blocks in registers and writes them as four 16-byte pieces, neighbouring
// threads covering neighbouring pieces of a packed line, and adds the blocks' line sums to team
// memory (one thread per block and stage, no atomics); the unit's sums are added up at its end.
// A staged row is 32 bytes, so a warp's reads of one k of its blocks fall in 8 banks (4-way
// conflicts), which the next stage's copies overlap. Without team memory (the host fallback) a
// thread per line gathers its bytes from the source. Units over ranges of 1024 of the depth (with
// partial sums), 512 units rather than 128 for a 4096 x 4096 B row-major, packed no faster on the
// H100 (0.044-0.047 ms against 0.042-0.044 with A summed in place).
constexpr i64 transpose_lines = 32, transpose_depth = 512;
constexpr int transpose_stage_bytes = int(transpose_lines * transpose_depth);
constexpr int transpose_blocks = int(transpose_lines / 4 * (transpose_depth / 16));
constexpr int pack_memory_bytes = 2 * transpose_stage_bytes + 4 * transpose_blocks * int(sizeof(i64));

#ifdef __NVPTX__
// Byte j of each of four words (four k of one line j) as one word.
inline u32 gather_byte(u32 w0, u32 w1, u32 w2, u32 w3, int j) {
  const int s = 8 * j;
  return ((w0 >> s) & 0xff) | ((w1 >> s) & 0xff) << 8 | ((w2 >> s) & 0xff) << 16 | ((w3 >> s) & 0xff) << 24;
}

// Requests step s of a transposing unit (source rows k0 .. k0 + 511, k0 = 512s) into its stage
// (s % 2) as one cp.async group: row r holds the two 16-line halves of k0 + r, zero outside the
// matrix.
inline void stage_rows(const Operand& o, const u8* from, i64 line0, i64 s, i64 K, u32 shared, int tid, int nth) {
  const i64 k0 = s * transpose_depth;
  const u32 at = shared + u32(s % 2) * u32(transpose_stage_bytes);
  for (int e = tid; e < 2 * int(transpose_depth); e += nth) {
    const int r = e / 2, h = e % 2;
    const bool inside = k0 + r < K && line0 + 16 * h < o.lines;
    const u8* src = inside ? from + (k0 + r) * o.k_stride + 16 * h : from;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(at + u32(32 * r + 16 * h)), "l"(src),
                 "r"(inside ? 16 : 0)
                 : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}
#endif

inline void transpose_lines_unit(const Operand& o, i64 unit, i64 K, i64 kp, i64 batch1, [[maybe_unused]] void* memory, int tid,
                                 int nth) {
  const i64 groups = o.padded_lines / transpose_lines;
  const i64 t = unit / groups, line0 = (unit % groups) * transpose_lines;
  const u8* from = o.src + (t / batch1) * o.bs[0] + (t % batch1) * o.bs[1] + line0;
  u8* to = o.dst + (t * o.padded_lines + line0) * kp;
  i64* sums = o.sums ? o.sums + t * o.lines + line0 : nullptr;
#ifdef __NVPTX__
  if (memory) {
    const u32 shared = shared_address(memory);
    const u32* words = static_cast<const u32*>(memory);
    i64* block_sums = reinterpret_cast<i64*>(static_cast<u8*>(memory) + 2 * transpose_stage_bytes);
    for (int e = tid; e < 4 * transpose_blocks; e += nth) block_sums[e] = 0;
    const u32 flips = u32(o.flip) * 0x01010101u;
    const i64 steps = (kp + transpose_depth - 1) / transpose_depth;
    stage_rows(o, from, line0, 0, K, shared, tid, nth);
    for (i64 s = 0; s < steps; ++s) {
      if (s + 1 < steps)
        stage_rows(o, from, line0, s + 1, K, shared, tid, nth);
      else
        asm volatile("cp.async.commit_group;" ::: "memory");  // an empty group keeps the wait count exact
      asm volatile("cp.async.wait_group 1;" ::: "memory");
      team_barrier();
      const u32* staged = words + (s % 2) * (transpose_stage_bytes / 4);
      for (int item = tid; item < transpose_blocks; item += nth) {
        const int g = item % 8, c = item / 8;  // lines 4g .. 4g + 3, k 16c .. 16c + 15 of the stage
        const i64 kk0 = s * transpose_depth + 16 * c;
        if (kk0 >= kp) continue;
        const bool inside = line0 + 4 * g < o.lines;
        u32 w[16];
#pragma unroll
        for (int r = 0; r < 16; ++r) w[r] = staged[(16 * c + r) * 8 + g] ^ (inside && kk0 + r < K ? flips : 0u);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          u32 out[4];
#pragma unroll
          for (int q = 0; q < 4; ++q) out[q] = gather_byte(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3], j);
          block_sums[4 * item + j] +=
              byte_sum(out[0], o.is_a) + byte_sum(out[1], o.is_a) + byte_sum(out[2], o.is_a) + byte_sum(out[3], o.is_a);
          *reinterpret_cast<u32x4*>(to + (4 * g + j) * kp + kk0) = u32x4{out[0], out[1], out[2], out[3]};
        }
      }
      team_barrier();  // the stage read above is refilled by the next step but one
    }
    for (int l = tid; l < int(transpose_lines); l += nth) {
      if (line0 + l >= o.lines || !sums) continue;
      i64 sum = 0;
      for (int c = 0; c < int(transpose_depth / 16); ++c) sum += block_sums[4 * (8 * c + l / 4) + l % 4];
      sums[l] = sum;
    }
    team_barrier();  // the next unit clears the sums read above
    return;
  }
#endif
  for (int l = tid; l < int(transpose_lines); l += nth) {
    const bool inside = line0 + l < o.lines;
    i64 sum = 0;
    for (i64 kk0 = 0; kk0 < kp; kk0 += depth_step)
      sum += pack_chunk(from + l, o.k_stride, kk0, K, inside, o.flip, o.is_a, to + l * kp + kk0);
    if (inside && sums) sums[l] = sum;
  }
}

// The packing kernel's work: the operands that copy or transpose (transposing ones first, their
// units being the longest), and the sums of the gathering ones to zero for pack_gather, which adds
// to them atomically.
struct PackJob {
  Operand operands[2];
  bool transposed[2] = {false, false};
  i64 units[2] = {0, 0};
  i64* zero[2] = {nullptr, nullptr};
  i64 zero_count[2] = {0, 0};
};

// Transposes: whether an operand transposes; without, the kernel holds no transposing code and
// asks for no team memory.
template <bool Transposes>
void pack_lines(const PackJob job, i64 K, i64 kp, i64 batch1, int device) {
  const i64 units = job.units[0] + job.units[1];
  const i64 zeros = job.zero_count[0] + job.zero_count[1];
  const i64 wanted = units > 0 ? units : (zeros + pack_threads - 1) / pack_threads;
  const int teams = int(wanted < 1 ? 1 : wanted > 65536 ? 65536 : wanted);
#pragma omp target teams num_teams(teams) thread_limit(pack_threads) device(device) firstprivate(job) \
    ompx_dyn_cgroup_mem(Transposes ? pack_memory_bytes : 0) ompx_attribute(__attribute__((launch_bounds(pack_threads))))
#pragma omp parallel
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    for (int z = 0; z < 2; ++z)
      for (i64 i = team * nth + tid; i < job.zero_count[z]; i += team_count * nth) job.zero[z][i] = 0;
    for (i64 u = team; u < units; u += team_count) {
      const int which = u < job.units[0] ? 0 : 1;
      const i64 unit = which == 0 ? u : u - job.units[0];
      if constexpr (Transposes) {
        if (job.transposed[which]) {
#ifdef __NVPTX__
          void* memory = llvm_omp_target_dynamic_shared_alloc();
#else
          void* memory = nullptr;
#endif
          transpose_lines_unit(job.operands[which], unit, K, kp, batch1, memory, tid, nth);
          continue;
        }
      }
      copy_lines(job.operands[which], unit, K, kp, batch1, tid, nth);
    }
  }
}

// Any other layout: a thread per 64-deep chunk, bytes gathered through the strides. Neighbouring
// threads take neighbouring chunks when the source's k stride is the smaller one, neighbouring
// lines otherwise, so that they read neighbouring bytes.
void pack_gather(const Operand o, i64 K, i64 kp, i64 batch1, int device) {
  const i64 chunks = kp / depth_step, count = o.batches * o.padded_lines * chunks;
  const bool chunk_inner = o.k_stride <= o.line_stride;
#pragma omp target teams distribute parallel for device(device) firstprivate(o)
  for (i64 i = 0; i < count; ++i) {
    const i64 t = i / (o.padded_lines * chunks), rest = i % (o.padded_lines * chunks);
    const i64 r = chunk_inner ? rest / chunks : rest % o.padded_lines;
    const i64 c = chunk_inner ? rest % chunks : rest / o.padded_lines;
    const u8* src = o.src + (t / batch1) * o.bs[0] + (t % batch1) * o.bs[1] + r * o.line_stride;
    u8* dst = o.dst + (t * o.padded_lines + r) * kp + c * depth_step;
    const i64 sum = pack_chunk(src, o.k_stride, c * depth_step, K, r < o.lines, o.flip, o.is_a, dst);
    if (r < o.lines && o.sums) {
#pragma omp atomic update
      o.sums[t * o.lines + r] += sum;
    }
  }
}

// A' and B' into the workspace with the sums stored there: one launch copies or transposes every
// operand whose layout allows it, sums those read in place whose sums it stores (and zeroes the
// others' sums), then each other operand is gathered. Nothing to pack or store launches nothing.
void pack(const Kernel k, int device) {
  const Operand a = operand_of(k, true), b = operand_of(k, false);
  PackJob job;
  int count = 0, gathered = 0;
  Operand gather[2];
  for (int pass = 0; pass < 2; ++pass)  // transposing operands first
    for (const Operand& o : {a, b}) {
      if (!o.dst && !o.sums) continue;  // read in place, its sums not stored
      const bool copy = !o.dst || copy_packable(o, k.K), transpose = !copy && transpose_packable(o);
      if (pass == 0 && transpose) {
        job.operands[count] = o, job.transposed[count] = true;
        job.units[count++] = o.batches * (o.padded_lines / transpose_lines);
      } else if (pass == 1 && copy) {
        job.operands[count] = o;
        job.units[count++] = o.batches * (o.padded_lines / copy_unit_lines);
      } else if (pass == 1 && !transpose) {
        if (o.sums) job.zero[gathered] = o.sums, job.zero_count[gathered] = o.batches * o.lines;
        gather[gathered++] = o;
      }
    }
  if (count == 0 && gathered == 0) return;
  if (job.transposed[0])
    pack_lines<true>(job, k.K, k.kp, k.batch1, device);
  else
    pack_lines<false>(job, k.K, k.kp, k.batch1, device);
  for (int g = 0; g < gathered; ++g) pack_gather(gather[g], k.K, k.kp, k.batch1, device);
}

// A 64 x 32 block of a tile computed by one worker without team memory or warp instructions: the
// host fallback, and a device team without the staged kernels' conditions.
inline void block_scalar(const Kernel& k, i64 t, i64 r0, i64 c0) {
  const i64 words = k.kp / 4;
  const Kernel::Tile tl = k.tile(t);
  for (i64 r = r0; r < r0 + 64 && r < k.M; ++r) {
    const Kernel::Row rw = k.row(tl, r);
    for (i64 c = c0; c < c0 + 32 && c < k.N; ++c) {
      const u32* x = reinterpret_cast<const u32*>(k.a_rows(t, r));
      const u32* y = reinterpret_cast<const u32*>(k.b_cols(t, c));
      i64 dot = 0;
      if (k.a_centred)
        for (i64 w = 0; w < words; ++w) dot += dot4_centred(x[w], y[w], 0);
      else
        for (i64 w = 0; w < words; ++w) dot += dot4(x[w], y[w], 0);
      k.finish(rw, k.col(tl, c), dot);
    }
  }
}

// Team memory of the staged kernels: Stages stages, each a Slice-deep slice of the tile's 128 rows
// of A' then of its 128 columns of B', Slice bytes per line. Chunk c (16 bytes) of line r lies at
// chunk c ^ ((r / (8 / chunks)) % chunks) of the line, so that eight consecutive lines' chunk c fall
// in eight distinct 16-byte bank groups (ldmatrix phases, 16-byte loads and the copies' stores are
// all conflict-free).
// Measured on the H100 (see README "GPU offload"): with the staging sources in registers, 64-deep
// mma slices in two stages (two k-steps per barrier) beat 32 x 4 and 32 x 5 by 9-13% (4096^3 and
// 8192^3); for dp4a, 32 x 4 lost to 64 x 2. The cp.async L2::128B prefetch hint did not help.
// Also no faster for mma, timed beside this kernel: 32-deep slices in 5 stages (40 KB, one or two
// slices per barrier), and eight warps of 64 x 32 under a 128-register bound even with fixed-place
// copies (0.466 against 0.437 ms at 4096^3). Without its epilogue the 4096^3 product ran a third
// faster (0.28-0.33 ms), so the epilogue was rewritten (tile_mma): terms gathered as the tile
// starts, four neighbouring columns per lane stored as one word, its row loop rolled. Timed beside
// the former epilogue (row terms shuffled from lane to lane, two columns per lane): 0.384 / 0.392
// against 0.436 / 0.459 ms at 4096^3 (B row- / column-major), 2.34 against 2.58 at 8192^3.
// Slower at 4096^3: two rows per batch (0.402 / 0.396), the stage loop rolled too (0.402 / 0.396,
// though 2.29 at 8192^3; 255 registers, and the deep kernel spills 21 KB), every
// epilogue loop unrolled (0.54-0.61: 17.5k instructions against 10.5k, each fetched once per
// tile), and finishing each lane's outputs straight from its registers (0.545; 240 registers).
// For dp4a, gathering the epilogue's terms beside the stages while the first slices load (one
// barrier a tile, not three) was no faster at 4096^3 or 8192^3. Its 256 B of spills under the
// 128-register bound stay the same with x loaded in halves, 8-byte loads or the chunk loop rolled
// (206 registers unbounded); x in halves also ran slower (4096^3 product 1.317 / 1.318 and 1.357 /
// 1.335 ms against 1.292 / 1.293 and 1.286 / 1.296, B row- / column-major). Also no faster for dp4a
// (4096^3 pack + product 1.402 / 1.394 ms, B row- / column-major, against 1.406 / 1.386; 8192^3
// product 10.47 against 10.31 beside this kernel): its epilogue with the column terms read once and
// each row's terms read before its eight byte stores (spills 544 B against 312), the same
// re-reading the column terms per row, and either with the bytes exchanged by shuffles so that a
// lane stores eight neighbouring columns as one word. Giving a thread eight neighbouring columns
// outright would break the swizzle: lines 8c + j of eight threads share one 16-byte bank group
// (8-way conflicts on the B' loads).
// A clock64 breakdown of the mma kernel at 4096^3 (warp 0, per tile): 39% waiting in next_slice
// (copies and barrier), 24% in the epilogue. Timed beside it (product ms, B row / column-major
// 4096^3, 8192^3, standalone; medians moved by up to 7% between runs of one binary), none faster:
// requesting the next tile's first slice before the epilogue, with the epilogue staged in 8-row
// halves within the last stage, in 264 persistent teams (0.481 / 0.466 / 2.446 against 0.481 /
// 0.436 / 2.397 at 264 teams); three teams per SM under a 384 bound (168 registers, 0.8 KB of
// spills even with A fragments loaded per m); both 32-deep steps' fragments loaded before their
// mma; A fragments loaded per m; fixed-place copies as first written (Staging's are faster).
// Faster: the epilogue's requantize_narrow and per-row and per-column parts of the correction
// (tile_mma), 0.315 / 0.312 ms against 0.325 / 0.325 (bench, same run), 2.113 / 2.096 against 2.152
// / 2.157 at 8192^3; no faster with two rows per batch, slower with the rounding done in integers
// (0.399 against 0.391).
constexpr int mma_slice = 64, mma_stages = 2;
constexpr int dp4a_slice = 64, dp4a_stages = 2;
static_assert(mma_slice == dp4a_slice, "evenly_staged serves both kernels");

// The team sizes whose threads split a slice's copies evenly in whole swizzle periods (Staging):
// multiples of 8 * chunks dividing 128 * chunks, with 64-deep slices 32, 64, 128, 256 and 512.
constexpr bool evenly_staged(int nth) {
  constexpr int chunks = dp4a_slice / 16;
  return nth > 0 && nth % (8 * chunks) == 0 && int(tile_rows) * chunks % nth == 0;
}
// The mma kernel's team memory: the stages, which its epilogue reuses to stage up to four warps'
// 16 x 64 accumulators (int64 at most), then the tile's row and column terms, gathered as the tile
// starts. The dp4a epilogue holds a tile's row and column terms where its stages were.
constexpr int tile_terms_bytes = int(tile_rows * sizeof(Kernel::Row) + tile_cols * sizeof(Kernel::Col));
constexpr int mma_stage_bytes = std::max(mma_slice * 256 * mma_stages, 4 * 16 * 64 * 8);
constexpr int team_memory_bytes = mma_stage_bytes + tile_terms_bytes;
constexpr int dp4a_memory_bytes = std::max(dp4a_slice * 256 * dp4a_stages, tile_terms_bytes);
static_assert(team_memory_bytes <= offload_team_memory_bytes && dp4a_memory_bytes <= offload_team_memory_bytes,
              "a team gets at most 48 KB of team memory, the runtime's share included");

#ifdef __NVPTX__
template <int Slice> inline int swizzled(int r, int c) {
  constexpr int chunks = Slice / 16;
  return r * Slice + ((c ^ ((r / (8 / chunks)) % chunks)) << 4);
}

inline void warp_sync() { asm volatile("bar.warp.sync -1;" ::: "memory"); }

inline void copy_async16(u32 to, const u8* from) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(from) : "memory");
}

// A tile's staging: 16-byte cp.async copies of its slices, spread over the team. Lines 0-127 of a
// stage are the tile's rows of A', lines 128-255 its columns of B' (the swizzle repeats every 128
// lines). The staged kernels run teams whose threads split a slice's copies evenly in whole
// swizzle periods (evenly_staged: a multiple of 8 * chunks threads dividing 128 * chunks), so that
// thread tid copies chunk tid % chunks of the lines tid / chunks + r * nth / chunks of A' and of B'
// in every slice: its sources and places are worked out once per tile, from the kernel's
// parameters (which live in global memory, and the copies' memory clobbers would reload them for
// every copy). Measured on the H100 at 4096^3 against a loop over copies tid + r * nth (product
// ms, B row- / column-major, alternating in one run): dp4a, where that loop took 121 of the 1,355
// instructions a warp ran per slice, 28 of them on the pipe dp4a issue to, 1.312 / 1.313 and
// 1.303 / 1.301 against 1.320 / 1.393 and 1.337 / 1.327 (on another machine 1.317 / 1.321 and
// 1.330 / 1.332 against 1.337 / 1.348 and 1.339 / 1.348); mma (128 threads, eight rounds of that
// loop a slice) 0.291 / 0.288 and 0.293 / 0.287 against 0.324 / 0.321 and 0.327 / 0.324.
struct Staging {
  const u8* a;      // this thread's first A' chunk at depth 0
  const u8* b;      // and B' chunk
  i64 kp, step;     // step: bytes from one of its lines to the next
  u32 to, to_step;  // its first copy's offset in a stage, and from one line to the next

  // Asks for the tile's slice at depth k0 into the stage at `stage` (a shared address), as one
  // commit group.
  template <int Slice> void request(i64 k0, u32 stage) const {
    const u8 *x = a + k0, *y = b + k0;
    for (u32 at = stage + to, end = at + u32(tile_rows * Slice); at < end; x += step, y += step, at += to_step) {
      copy_async16(at, x);
      copy_async16(at + u32(tile_rows * Slice), y);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
};

template <int Slice> inline Staging staging(const Kernel& k, i64 t, i64 i0, i64 j0, int tid, int nth) {
  constexpr int chunks = Slice / 16;
  const int line = tid / chunks, c = tid % chunks, apart = nth / chunks;
  const u8* b = reinterpret_cast<const u8*>(k.b_cols(t, j0));
  return {k.a_rows(t, i0) + line * k.kp + 16 * c, b + line * k.kp + 16 * c, k.kp, apart * k.kp,
          u32(swizzled<Slice>(line, c)), u32(apart * Slice)};
}

inline u32x4 load_shared16(u32 address) {
  u32x4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}

// The staged pipeline, Stages - 1 slices ahead: first_slices requests slices 0 .. Stages - 2; before
// slice s is used, next_slice waits for this thread's copies of it, then for the team's (after
// which no thread still reads slice s - 1), and requests slice s + Stages - 1 into the stage slice
// s - 1 used. Returns slice s's stage. A tile ends with team_barrier(), so that the next one may
// refill every stage.
template <int Slice, int Stages>
inline void first_slices(const Staging& g, u32 shared) {
  for (int s = 0; s < Stages - 1; ++s) {
    if (s * Slice < g.kp)
      g.template request<Slice>(s * Slice, shared + u32(s * 2 * int(tile_rows) * Slice));
    else
      asm volatile("cp.async.commit_group;" ::: "memory");  // empty groups keep the wait counts exact
  }
}

template <int Slice, int Stages>
inline u32 next_slice(const Staging& g, i64 k0, i64 s, u32 shared) {
  constexpr u32 stage_bytes = 2 * u32(tile_rows) * Slice;
  asm volatile("cp.async.wait_group %0;" ::"n"(Stages - 2) : "memory");
  team_barrier();
  const i64 ahead = k0 + (Stages - 1) * Slice;
  if (ahead < g.kp)
    g.template request<Slice>(ahead, shared + u32((s + Stages - 1) % Stages) * stage_bytes);
  else
    asm volatile("cp.async.commit_group;" ::: "memory");
  return shared + u32(s % Stages) * stage_bytes;
}

// Whether the int32 accumulators end a depth slice of at most int32_depth after the slice at k0.
template <int Slice> inline bool fold_after(i64 kp, i64 k0) {
  return (k0 + Slice) % int32_depth == 0 || k0 + Slice == kp;
}

// Adds int32 accumulators into their int64 twins and clears them: one element, or arrays of any
// shape element by element (the kernels' register blocks; unrolled, so indices stay constant).
inline void fold_wide(i64& wide, i32& acc) {
  wide += acc;
  acc = 0;
}
template <class W, class A, std::size_t N> inline void fold_wide(W (&wide)[N], A (&acc)[N]) {
#pragma unroll
  for (std::size_t i = 0; i < N; ++i) fold_wide(wide[i], acc[i]);
}

// dp4a from team memory: thread block b (of 256) holds the 8 x 8 outputs at rows b / 16 + 16i and
// columns b % 16 + 16j of the tile; with fewer than 256 threads the blocks are taken in rounds,
// each round over the whole depth. The epilogue's row and column terms are gathered once per tile
// into team memory (free after the last slice), a row or column per thread: gathered per output,
// each output's loads of the parameters waited behind the previous output's store, which may alias
// them. (No lambdas here: device code moves arrays that lambdas capture out of registers.)
template <bool Deep>
inline void tile_dp4a(const Kernel& k, i64 t, i64 i0, i64 j0, void* memory, int tid, int nth) {
  constexpr int Slice = dp4a_slice, Stages = dp4a_stages;
  const u32 shared = shared_address(memory);
  const Staging source = staging<Slice>(k, t, i0, j0, tid, nth);
  Kernel::Row* rows = static_cast<Kernel::Row*>(memory);
  Kernel::Col* cols = reinterpret_cast<Kernel::Col*>(rows + tile_rows);
  for (int first = 0; first < 256; first += nth) {
    const int block = first + tid, tr = block / 16, tc = block % 16;
    const bool active = block < 256 && i0 + tr < k.M && j0 + tc < k.N;
    i32 acc[8][8] = {};
    i64 wide[Deep ? 8 : 1][Deep ? 8 : 1] = {};
    // The swizzle repeats every 8 lines, so lines tr + 16i (tc + 16j) share line tr's (tc's): a
    // chunk's eight loads differ by constant offsets. (Written out: the compiler kept the 64
    // swizzled offsets in registers across the depth loop and spilled the accumulators. Taking
    // the chunks in the order they lie in the x lines, the y chunk found by flipping bits 4-5 of
    // its address, halved the spills within a slice, yet ran slower: 4096^3 product 1.317 /
    // 1.322 and 1.320 / 1.320 ms against 1.312 / 1.313 and 1.303 / 1.301, B row- / column-major.)
    const int x_swizzle = swizzled<Slice>(tr, 0) - tr * Slice, y_swizzle = swizzled<Slice>(tc, 0) - tc * Slice;
    first_slices<Slice, Stages>(source, shared);
    for (i64 k0 = 0, s = 0; k0 < source.kp; k0 += Slice, ++s) {
      const u32 stage = next_slice<Slice, Stages>(source, k0, s, shared);
      if (active) {
#pragma unroll
        for (int c = 0; c < Slice / 16; ++c) {
          const u32 x_at = stage + u32(tr * Slice + ((16 * c) ^ x_swizzle));
          const u32 y_at = stage + u32((int(tile_rows) + tc) * Slice + ((16 * c) ^ y_swizzle));
          u32x4 x[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) x[i] = load_shared16(x_at + u32(16 * i * Slice));
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const u32x4 y = load_shared16(y_at + u32(16 * j * Slice));
#pragma unroll
            for (int i = 0; i < 8; ++i)
              acc[i][j] = dot4(x[i].w, y.w, dot4(x[i].z, y.z, dot4(x[i].y, y.y, dot4(x[i].x, y.x, acc[i][j]))));
          }
        }
      }
      if constexpr (Deep)
        if (fold_after<Slice>(source.kp, k0)) fold_wide(wide, acc);
    }
    team_barrier();  // every thread is done with the stages
    const Kernel::Tile tl = k.tile(t);
    for (int e = tid; e < int(tile_rows + tile_cols); e += nth) {
      if (e < int(tile_rows))
        rows[e] = k.row(tl, i0 + e);
      else
        cols[e - tile_rows] = k.col(tl, j0 + e - tile_rows);
    }
    team_barrier();
    if (active) {
      // The kernel's scalars are read before any output store, which might alias them. With
      // per-tensor zero points the correction is a row's part plus a column's, and within
      // +-2^29 an output requantizes through requantize_narrow (as in tile_mma). Measured at
      // 4096^3 beside Kernel::finish for every output (product ms, B row- / column-major):
      // 1.312 / 1.321 and 1.326 / 1.304 against 1.317 / 1.321 and 1.330 / 1.332.
      const i32 qmin = k.qmin, qmax = k.qmax;
      const bool per_column_scales = k.sb_step != 0, separable = k.za_step == 0 && k.zb_step == 0;
      const i64 beta = i64(k.zb[0]) - k.cb;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const Kernel::Row rw = rows[tr + 16 * i];
        const i64 row_part = beta * rw.sum;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const Kernel::Col& cl = cols[tc + 16 * j];
          if (!rw.inside || !cl.inside) continue;
          const i64 dot = Deep ? wide[i][j] : acc[i][j];
          const i64 v = separable ? dot - row_part - cl.part : dot - cl.beta * rw.sum - rw.alpha * cl.term;
          const float multiplier = per_column_scales ? float(double(float(rw.sa * cl.sb)) / rw.sy) : rw.multiplier;
          const bool narrow = v > -(i64(1) << 29) && v < (i64(1) << 29);
          rw.out[cl.offset] = u8(narrow ? requantize_narrow(i32(v), double(multiplier), rw.zy, qmin, qmax)
                                        : requantize_exact(v, multiplier, rw.zy, qmin, qmax));
        }
      }
    }
    team_barrier();  // the next round stages into the terms read above
  }
}

// c += a x b, a unsigned (A') or, Centred, signed (A' ^ 0x80 = A' - 128).
template <bool Centred> inline void mma_s8(i32 (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if constexpr (Centred)
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

inline void ldmatrix_x4(u32 (&d)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(address));
}

typedef i32 i32x2 __attribute__((ext_vector_type(2)));
typedef i32 i32x4 __attribute__((ext_vector_type(4)));
typedef i64 i64x2 __attribute__((ext_vector_type(2)));

// Two neighbouring accumulators into team memory as one store, four back as one or two loads.
inline void stage_pair(i32* at, i32 x, i32 y) { *reinterpret_cast<i32x2*>(at) = i32x2{x, y}; }
inline void stage_pair(i64* at, i64 x, i64 y) { *reinterpret_cast<i64x2*>(at) = i64x2{x, y}; }
inline void staged_four(const i32* at, i64 (&v)[4]) {
  const i32x4 x = *reinterpret_cast<const i32x4*>(at);
  v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}
inline void staged_four(const i64* at, i64 (&v)[4]) {
  const i64x2 x = *reinterpret_cast<const i64x2*>(at), y = *reinterpret_cast<const i64x2*>(at + 2);
  v[0] = x.x, v[1] = x.y, v[2] = y.x, v[3] = y.y;
}

// Rows of the mma epilogue whose team-memory loads are all issued before any of their outputs is
// stored (the compiler cannot tell the byte stores from team memory, so a load after a store
// waits for it): one, in a rolled loop, measured fastest (see mma_slice).
constexpr int mma_epilogue_rows = 1;

// Tensor cores from team memory: the tile's four 64 x 64 warp blocks (rows 64 * (w / 2), columns
// 64 * (w % 2)), taken by the team's whole warps in rounds, each round over the whole depth. Per
// 32-deep step a warp loads its A fragments (16 rows x 32 bytes each) and B fragments (two 8-column
// groups x 32 bytes each) with ldmatrix: lane l addresses row l % 16, bytes 16 * (l / 16) of an A
// fragment, and column 8 * (l / 16) + l % 8, bytes 16 * ((l / 8) % 2) of a B pair, which gives each
// lane exactly the bytes the m16n8k32 fragment layout assigns to it (the team is whole warps: see
// evenly_staged). The epilogue's row and column terms are gathered once per tile into team memory
// past the stages, a row or column per thread, while the first slices are being copied in.
template <bool Deep, bool Centred>
inline void tile_mma(const Kernel& k, i64 t, i64 i0, i64 j0, void* memory, int tid, int nth) {
  constexpr int Slice = mma_slice, Stages = mma_stages;
  const u32 shared = shared_address(memory);
  const Staging source = staging<Slice>(k, t, i0, j0, tid, nth);
  Kernel::Row* rows = reinterpret_cast<Kernel::Row*>(static_cast<u8*>(memory) + mma_stage_bytes);
  Kernel::Col* cols = reinterpret_cast<Kernel::Col*>(rows + tile_rows);
  const int warps = nth / 32, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  for (int first = 0; first < 4; first += warps) {
    const int w = first + warp, wr = (w / 2) * 64, wc = (w % 2) * 64;
    const bool active = w < 4 && i0 + wr < k.M && j0 + wc < k.N;
    i32 c[4][8][4] = {};
    i64 wide[Deep ? 4 : 1][Deep ? 8 : 1][Deep ? 4 : 1] = {};
    // The lane's ldmatrix addresses in a stage, fixed over the depth; the swizzle repeats every 16
    // lines, so fragment m (n) lies 16 * m (16 * n) lines after fragment 0.
    u32 a_at[Slice / 32], b_at[Slice / 32];
#pragma unroll
    for (int ks = 0; ks < Slice / 32; ++ks) {
      a_at[ks] = u32(swizzled<Slice>(wr + lane % 16, 2 * ks + lane / 16));
      b_at[ks] = u32(int(tile_rows) * Slice + swizzled<Slice>(wc + 8 * (lane / 16) + lane % 8, 2 * ks + (lane / 8) % 2));
    }
    first_slices<Slice, Stages>(source, shared);
    if (first == 0) {
      const Kernel::Tile tl = k.tile(t);
      for (int e = tid; e < int(tile_rows + tile_cols); e += nth)
        if (e < int(tile_rows))
          rows[e] = k.row(tl, i0 + e);
        else
          cols[e - int(tile_rows)] = k.col(tl, j0 + e - tile_rows);
    }
    for (i64 k0 = 0, s = 0; k0 < source.kp; k0 += Slice, ++s) {
      const u32 stage = next_slice<Slice, Stages>(source, k0, s, shared);
      if (active) {
#pragma unroll
        for (int ks = 0; ks < Slice / 32; ++ks) {
          u32 a[4][4], b[4][4];
#pragma unroll
          for (int m = 0; m < 4; ++m) ldmatrix_x4(a[m], stage + a_at[ks] + u32(16 * m * Slice));
#pragma unroll
          for (int n = 0; n < 4; ++n) ldmatrix_x4(b[n], stage + b_at[ks] + u32(16 * n * Slice));
          if constexpr (Centred) {
#pragma unroll
            for (int m = 0; m < 4; ++m)
#pragma unroll
              for (int r = 0; r < 4; ++r) a[m][r] ^= 0x80808080u;
          }
#pragma unroll
          for (int m = 0; m < 4; ++m)
#pragma unroll
            for (int n = 0; n < 8; ++n)
              mma_s8<Centred>(c[m][n], a[m], b[n / 2][2 * (n % 2)], b[n / 2][2 * (n % 2) + 1]);
        }
      }
      if constexpr (Deep)
        if (fold_after<Slice>(source.kp, k0)) fold_wide(wide, c);
    }
    team_barrier();  // every warp is done with the stages
    // The epilogue stages 16 rows of the warp's block at a time in team memory (constant register
    // indices: indexing the accumulators in a loop would move them to local memory); then lane l
    // finishes the four neighbouring columns 4 * (l % 16) .. + 3 of rows l / 16, l / 16 + 2, ..,
    // and stores them as one 4-byte word where they are contiguous and aligned. The lane's column
    // terms and the kernel's scalars are read once, before any output store.
    if (active) {
      using Acc = std::conditional_t<Deep, i64, i32>;
      constexpr int pitch = Deep ? 64 : 72;  // int32: 8-byte stores and 16-byte loads conflict-free
      Acc* staged = reinterpret_cast<Acc*>(memory) + warp * 16 * pitch;
      const bool per_column_scales = k.sb_step != 0;
      const i32 qmin = k.qmin, qmax = k.qmax;
      const i64 column_step = k.o_cs;
      const int half = lane / 16, c0 = wc + 4 * (lane % 16);
      i64 beta[4], term[4];
      int columns = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) beta[e] = cols[c0 + e].beta, term[e] = cols[c0 + e].term, columns += cols[c0 + e].inside;
      const i64 offset = cols[c0].offset;
      const bool whole = columns == 4 && column_step == 1;
      // With per-tensor zero points beta and alpha are the same for every output: beta * row sum
      // is then a row's part of the correction, alpha * column term a column's. (The deep kernel
      // keeps the general forms and requantize_exact: with these ptxas gave it 32 registers and
      // 30 KB of spills, against 8 KB.)
      const bool separable = !Deep && k.za_step == 0 && k.zb_step == 0;
      i64 column_part[4];
      const i64 alpha = k.a_centred ? 0 : i64(k.ca) + k.za[0];
#pragma unroll
      for (int e = 0; e < 4; ++e) column_part[e] = alpha * term[e];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            Acc* at = staged + (g + 8 * h) * pitch + 8 * n + 2 * q;
            if constexpr (Deep)
              stage_pair(at, wide[m][n][2 * h], wide[m][n][2 * h + 1]);
            else
              stage_pair(at, c[m][n][2 * h], c[m][n][2 * h + 1]);
          }
        warp_sync();
#pragma unroll 1
        for (int i = 0; i < 8; i += mma_epilogue_rows) {
          Kernel::Row rw[mma_epilogue_rows];
          i64 v[mma_epilogue_rows][4];
          u32 bytes[mma_epilogue_rows];
#pragma unroll
          for (int b = 0; b < mma_epilogue_rows; ++b) {
            const int r = 2 * (i + b) + half;
            rw[b] = rows[wr + 16 * m + r];
            staged_four(staged + r * pitch + 4 * (lane % 16), v[b]);
          }
#pragma unroll
          for (int b = 0; b < mma_epilogue_rows; ++b) {
            i64 acc[4];
            if (separable) {
              const i64 row_part = beta[0] * rw[b].sum;
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[e] = v[b][e] - row_part - column_part[e];
            } else {
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[e] = v[b][e] - beta[e] * rw[b].sum - rw[b].alpha * term[e];
            }
            const double row_multiplier = rw[b].multiplier;
            bytes[b] = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float multiplier =
                  per_column_scales ? float(double(float(rw[b].sa * cols[c0 + e].sb)) / rw[b].sy) : rw[b].multiplier;
              const bool narrow = !Deep && acc[e] > -(i64(1) << 29) && acc[e] < (i64(1) << 29);
              const i32 out = narrow ? requantize_narrow(i32(acc[e]), per_column_scales ? double(multiplier) : row_multiplier,
                                                         rw[b].zy, qmin, qmax)
                                     : requantize_exact(acc[e], multiplier, rw[b].zy, qmin, qmax);
              bytes[b] |= u32(u8(out)) << (8 * e);
            }
          }
#pragma unroll
          for (int b = 0; b < mma_epilogue_rows; ++b) {
            if (!rw[b].inside) continue;
            u8* at = rw[b].out + offset;
            if (whole && reinterpret_cast<std::uintptr_t>(at) % 4 == 0)
              *reinterpret_cast<u32*>(at) = bytes[b];
            else
              for (int e = 0; e < columns; ++e) at[e * column_step] = u8(bytes[b] >> (8 * e));
          }
        }
        warp_sync();
      }
    }
    team_barrier();  // the next round stages into the memory read above, the next tile its terms
  }
}
#endif

// Tiles are taken in bands of band_rows tile rows, column by column within a band, so that the
// tiles running at once share few A' rows and B' columns: at 8192^3 a wave of 264 teams then reads
// 16 A' and 17 B' tiles' lines rather than 4 and all 64, which overflow the L2. Measured on the
// H100: mma 8192^3 products 2.5% faster (2.52 against 2.59 ms beside the row-by-row order, 2.35
// in the bench), dp4a and 4096^3 unchanged.
constexpr i64 band_rows = 16;

// The body of both product kernels (SPMD: warp-collective instructions need one): teams take
// 128 x 128 tiles in turn, in bands; on a GPU with team memory and a team the staging splits
// evenly (qmm_offload_product launches such teams), the staged tile kernel, otherwise (the host
// fallback) 64 x 32 blocks thread by thread.
template <OffloadQmmKernel Which, bool Deep>
inline void product_team(const Kernel& k) {
  const i64 per_batch = k.tiles_m * k.tiles_n, tiles = k.batches * per_batch;
  const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
  const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#ifdef __NVPTX__
  void* memory = llvm_omp_target_dynamic_shared_alloc();
  const bool staged = memory && evenly_staged(nth);
#endif
  for (i64 tile = team; tile < tiles; tile += team_count) {
    const i64 t = tile / per_batch, in_batch = tile % per_batch, band = in_batch / (band_rows * k.tiles_n);
    const i64 band_first = band * band_rows, rows_left = k.tiles_m - band_first;
    const i64 band_height = rows_left < band_rows ? rows_left : band_rows;
    const i64 in_band = in_batch - band_first * k.tiles_n;
    const i64 i0 = (band_first + in_band % band_height) * tile_rows, j0 = (in_band / band_height) * tile_cols;
#ifdef __NVPTX__
    if (staged) {
      if constexpr (Which == OffloadQmmKernel::mma) {
        if (k.a_centred)
          tile_mma<Deep, true>(k, t, i0, j0, memory, tid, nth);
        else
          tile_mma<Deep, false>(k, t, i0, j0, memory, tid, nth);
      } else
        tile_dp4a<Deep>(k, t, i0, j0, memory, tid, nth);
      continue;
    }
#endif
    for (int w = tid; w < 8; w += nth) block_scalar(k, t, i0 + (w / 4) * 64, j0 + (w % 4) * 32);
  }
}

// Launch bounds. dp4a's 512 caps ptxas at 128 registers, so that two 256-thread teams share an SM
// (80 TOPS against 63 with 224 registers and one team; with launch_bounds(256, 2) ptxas took 233
// registers, no spills, and one team: 4096^3 product 1.370-1.388 ms against 1.286-1.296). (Two
// kernels rather than one template: clang 19 crashes on a launch bound that depends on a template
// parameter.)
constexpr int dp4a_bound = 512, mma_bound = 256;

template <bool Deep>
void product_dp4a(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(dp4a_memory_bytes) ompx_attribute(__attribute__((launch_bounds(dp4a_bound))))
#pragma omp parallel
  product_team<OffloadQmmKernel::dp4a, Deep>(k);
}

template <bool Deep>
void product_mma(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(team_memory_bytes) ompx_attribute(__attribute__((launch_bounds(mma_bound))))
#pragma omp parallel
  product_team<OffloadQmmKernel::mma, Deep>(k);
}

// ca and cb of qmm_pack.hpp: what A' adds to A, what B' takes from B.
i32 a_shift(const MatrixView& a) { return a.dtype == DataType::int8 ? 128 : 0; }
i32 b_shift(const MatrixView& b) { return b.dtype == DataType::uint8 ? 128 : 0; }

Kernel make_kernel(const OffloadQmmArgs& x, const WorkspaceLayout& w) {
  Kernel k;
  k.batches = x.batch[0] * x.batch[1];
  k.batch1 = x.batch[1];
  k.M = x.M, k.N = x.N, k.K = x.K, k.kp = w.kp, k.Mp = w.Mp, k.Np = w.Np;
  k.tiles_m = w.Mp / tile_rows, k.tiles_n = w.Np / tile_cols;
  u8* base = static_cast<u8*>(x.workspace);
  k.a_pack = w.a_in_place ? nullptr : base + w.ap;
  k.b_pack = w.b_in_place ? nullptr : base + w.bp;
  k.ap = w.a_in_place ? static_cast<const u8*>(x.a.data) : k.a_pack;
  k.bp = reinterpret_cast<const std::int8_t*>(w.b_in_place ? static_cast<const u8*>(x.b.data) : k.b_pack);
  k.row_sums = w.row_sums_stored ? reinterpret_cast<i64*>(base + w.row_sums) : nullptr;
  k.col_sums = w.col_sums_stored ? reinterpret_cast<i64*>(base + w.col_sums) : nullptr;
  k.a_centred = w.a_centred;
  k.a_shared = w.a_batches == 1, k.b_shared = w.b_batches == 1;
  k.a = static_cast<const u8*>(x.a.data), k.b = static_cast<const u8*>(x.b.data);
  for (int d = 0; d < 2; ++d) k.a_bs[d] = x.a.batch_stride[d], k.b_bs[d] = x.b.batch_stride[d];
  k.a_rs = x.a.row_stride, k.a_cs = x.a.col_stride, k.b_rs = x.b.row_stride, k.b_cs = x.b.col_stride;
  k.a_flip = x.a.dtype == DataType::int8 ? 0x80 : 0;
  k.b_flip = x.b.dtype == DataType::uint8 ? 0x80 : 0;
  k.ca = a_shift(x.a);
  k.cb = b_shift(x.b);
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

void qmm_sums_needed(OffloadQmmArgs& args, const std::vector<std::int32_t>& a_zero,
                     const std::vector<std::int32_t>& b_zero) {
  const std::int32_t ca = a_shift(args.a), cb = b_shift(args.b);
  args.row_sums_needed = std::any_of(b_zero.begin(), b_zero.end(), [&](std::int32_t z) { return z != cb; });
  args.col_sums_needed = std::any_of(a_zero.begin(), a_zero.end(), [&](std::int32_t z) { return z != -ca; });
  args.every_alpha_128 = std::all_of(a_zero.begin(), a_zero.end(), [&](std::int32_t z) { return z == 128 - ca; });
}

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
  const bool use_mma = x.kernel == OffloadQmmKernel::mma;
  // The staged kernels need a team that their staging splits evenly: the largest one not above
  // the request (the schedule allows 32 to 1024 threads).
  int threads = std::min(x.threads > 0 ? x.threads : use_mma ? default_mma_threads : default_dp4a_threads,
                         use_mma ? mma_bound : dp4a_bound);
  while (threads > 32 && !evenly_staged(threads)) --threads;
  threads = std::max(threads, 32);
  if (w.kp > int32_depth)
    use_mma ? product_mma<true>(k, x.device, teams, threads) : product_dp4a<true>(k, x.device, teams, threads);
  else
    use_mma ? product_mma<false>(k, x.device, teams, threads) : product_dp4a<false>(k, x.device, teams, threads);
}

void qmm_offload(const OffloadQmmArgs& x) {
  qmm_offload_pack(x);
  qmm_offload_product(x);
}

}  // namespace hk::detail
