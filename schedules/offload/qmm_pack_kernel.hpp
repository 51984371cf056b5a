// The packing kernels' bodies of the offload QuantizedLinearMatMul: A and B into A' and B' (the
// workspace's u8 x s8 lines of kp bytes, qmm_pack.hpp's signedness) with their line sums, by
// copying lines whose depth is contiguous, transposing lines that are contiguous, or gathering
// bytes through any strides.
#pragma once

#include <cstdint>

#include "schedules/offload/qmm_kernel.hpp"

namespace hk::detail::offload::qmm {

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
// are stored only where sums is not null (nor summed by the product: Kernel::rows_in_product).
struct Operand {
  const u8* src;
  i64 bs[2], line_stride, k_stride, lines, padded_lines, batches;
  u8 flip;
  bool is_a;
  u8* dst;
  i64* sums;
};

inline Operand operand_of(const Kernel& k, bool is_a) {
  if (is_a)
    return {k.a, {k.a_bs[0], k.a_bs[1]}, k.a_rs, k.a_cs, k.M, k.Mp, k.a_shared ? 1 : k.batches, k.a_flip,
            true, k.a_pack, k.rows_in_product ? nullptr : k.row_sums};
  return {k.b, {k.b_bs[0], k.b_bs[1]}, k.b_cs, k.b_rs, k.N, k.Np, k.b_shared ? 1 : k.batches, k.b_flip,
          false, k.b_pack, k.cols_in_product || k.col_sums_given ? nullptr : k.col_sums};
}

inline bool aligned16(const void* p, i64 a, i64 b, i64 c) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && a % 16 == 0 && b % 16 == 0 && c % 16 == 0;
}

// Depth contiguous, every line and 16-k chunk 16-byte aligned: lines are copied in 16-byte chunks
// (copy_lines).
inline bool copy_packable(const Operand& o, i64 K) {
  return o.k_stride == 1 && K % 16 == 0 && aligned16(o.src, o.line_stride, o.bs[0], o.bs[1]);
}

// Lines contiguous (the transposed layout) in 16-line groups, read 16 bytes (16 lines) at a time
// and transposed through team memory (transpose_lines_unit).
inline bool transpose_packable(const Operand& o) {
  return o.line_stride == 1 && o.lines % 16 == 0 && aligned16(o.src, o.k_stride, o.bs[0], o.bs[1]);
}

// Depth contiguous: a unit of copy_unit_lines lines, a warp per line on a GPU (whole warps), each
// lane copying (or, without a destination, only reading) every 32nd 16-byte chunk, four loads in
// flight, and the warp adding the sum up with shuffles, so that the sum is stored, not
// accumulated; a thread per line otherwise (the host fallback).
inline constexpr i64 copy_unit_lines = 8;

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
// thread per line gathers its bytes from the source.
inline constexpr i64 transpose_lines = 32, transpose_depth = 512;
inline constexpr int transpose_stage_bytes = int(transpose_lines * transpose_depth);
inline constexpr int transpose_blocks = int(transpose_lines / 4 * (transpose_depth / 16));
inline constexpr int pack_memory_bytes = 2 * transpose_stage_bytes + 4 * transpose_blocks * int(sizeof(i64));

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
    copy_async_16_fill(at + u32(32 * r + 16 * h), src, inside ? 16 : 0);
  }
  copy_async_commit();
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
    const u32 shared = team_address(memory);
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
        copy_async_commit();  // an empty group keeps the wait count exact
      copy_async_wait<1>();
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

}  // namespace hk::detail::offload::qmm
