// The last steps of both tensor-core epilogues (mma.sync and wgmma): a warp's 16 x 64 block of
// accumulators staged in team memory, then four neighbouring outputs of one row at a time, from
// their int32 or int64 products to requantized bytes stored as one word where they are contiguous
// and aligned.
#pragma once

#include <cstdint>

#include "schedules/offload/qmm_kernel.hpp"

namespace hk::detail::offload::qmm {

#ifdef __NVPTX__
// The kernel's scalars the epilogue needs, read once per tile: a load from the argument block after
// an output's store would wait for it (the compiler cannot tell the two apart).
struct EpilogueScalars {
  i32 qmin, qmax;
  i64 column_step;
  bool per_column_scales;
  // Per-tensor zero points: beta and alpha are the same for every output, so beta * row sum is a
  // row's part of the correction and Col::part a column's. (The deep kernels keep the general forms
  // and requantize_exact: with these ptxas gave the mma kernel 30 KB of spills, against 8 KB.)
  bool separable;
};

template <bool Deep> inline EpilogueScalars epilogue_scalars(const Kernel& k) {
  return {k.qmin, k.qmax, k.o_cs, k.sb_step != 0, !Deep && k.za_step == 0 && k.zb_step == 0};
}

// Columns c .. c + 3 of a tile: their terms, read from the tile's terms in team memory.
struct FourColumns {
  const Kernel::Col* col;
  i64 beta[4], term[4], part[4];
  i64 offset;
  int inside;  // how many lie inside the matrix (the first ones)
  bool whole;  // all four, contiguous in the output
};

[[gnu::always_inline]] inline FourColumns four_columns(const Kernel::Col* col, const EpilogueScalars& e) {
  FourColumns f;
  f.col = col;
  f.inside = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f.beta[i] = col[i].beta, f.term[i] = col[i].term, f.part[i] = col[i].part;
    f.inside += col[i].inside;
  }
  f.offset = col[0].offset;
  f.whole = f.inside == 4 && e.column_step == 1;
  return f;
}

// Stores the four output bytes of row rw in columns f that lie inside the matrix: one word where
// they are contiguous and aligned.
[[gnu::always_inline]] inline void store_four(const Kernel::Row& rw, const FourColumns& f, u32 bytes,
                                             const EpilogueScalars& e) {
  u8* at = rw.out + f.offset;
  if (f.whole && reinterpret_cast<std::uintptr_t>(at) % 4 == 0)
    *reinterpret_cast<u32*>(at) = bytes;
  else
    for (int i = 0; i < f.inside; ++i) at[i * e.column_step] = u8(bytes >> (8 * i));
}

// Requantizes the products v of row rw's four outputs in columns f and stores those inside.
template <bool Deep>
[[gnu::always_inline]] inline void finish_four(const Kernel::Row& rw, const FourColumns& f, const i64 (&v)[4],
                                               const EpilogueScalars& e) {
  if (!rw.inside) return;
  u32 bytes = 0;
  if (e.separable && !e.per_column_scales) {
    // The common case in float64 alone: acc = v - (row part + column part), exact (integers below
    // 2^53), requantized by one fused multiply-add (requantize_biased), whose low byte is the
    // output. No int64 arithmetic and no test of the accumulator's width.
    const double row_part = double(f.beta[0] * rw.sum), multiplier = rw.multiplier, zy = rw.zy;
    const double low = round_bias + e.qmin, high = round_bias + e.qmax;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const double acc = double(v[i]) - (row_part + double(f.part[i]));
      const double y = requantize_biased(acc, multiplier, zy, low, high);
      bytes |= u32(u8(__builtin_bit_cast(std::uint64_t, y))) << (8 * i);
    }
    store_four(rw, f, bytes, e);
    return;
  }
  i64 acc[4];
  if (e.separable) {
    const i64 row_part = f.beta[0] * rw.sum;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[i] = v[i] - row_part - f.part[i];
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[i] = v[i] - f.beta[i] * rw.sum - rw.alpha * f.term[i];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float multiplier = e.per_column_scales ? float(double(float(rw.sa * f.col[i].sb)) / rw.sy) : rw.multiplier;
    const bool narrow = !Deep && acc[i] > -(i64(1) << 29) && acc[i] < (i64(1) << 29);
    // Deep or not, the wider outputs are few; without int64 slices they stay below 2^36 and take
    // the inline form, so that the wgmma kernel calls no function.
    const i32 out = narrow ? requantize_narrow(i32(acc[i]), double(multiplier), rw.zy, e.qmin, e.qmax)
                    : Deep ? requantize_exact(acc[i], multiplier, rw.zy, e.qmin, e.qmax)
                           : requantize_below_2_39(acc[i], multiplier, rw.zy, e.qmin, e.qmax);
    bytes |= u32(u8(out)) << (8 * i);
  }
  store_four(rw, f, bytes, e);
}

using i32x2 = i32 __attribute__((ext_vector_type(2)));
using i32x4 = i32 __attribute__((ext_vector_type(4)));
using i64x2 = i64 __attribute__((ext_vector_type(2)));

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

// A warp's block of 16 rows x 64 columns, its accumulators staged in team memory `pitch` apart
// (by stage_pair, from the m16n8 fragments' lanes), finished by the lanes that hold the block's
// columns 4 (l % 16) .. + 3 (`four`): rows l / 16, l / 16 + 2, .. of `rows`. A rolled loop: the
// epilogue runs once per tile, and unrolled its code overflows the instruction cache.
template <bool Deep, class Acc>
[[gnu::always_inline]] inline void finish_staged_block(const Acc* staged, int pitch, const Kernel::Row* rows,
                                                       const FourColumns& four, const EpilogueScalars& e, int lane) {
  warp_sync();
#pragma unroll 1
  for (int i = 0; i < 8; ++i) {
    const int r = 2 * i + lane / 16;
    i64 v[4];
    staged_four(staged + r * pitch + 4 * (lane % 16), v);
    finish_four<Deep>(rows[r], four, v, e);
  }
  warp_sync();
}
#endif

}  // namespace hk::detail::offload::qmm
