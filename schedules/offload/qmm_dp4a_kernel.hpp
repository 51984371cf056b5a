// The dp4a product kernel of qmm.offload: 128 x 128 output tiles per team from A' and B' slices
// staged in team memory, four byte products per dp4a, and the epilogue's requantization.
#pragma once

#include "schedules/offload/qmm_product.hpp"

namespace hk::detail::offload::qmm {

#ifdef __NVPTX__
// dp4a from team memory: thread block b (of 256) holds the 8 x 8 outputs at rows b / 16 + 16i and
// columns b % 16 + 16j of the tile; with fewer than 256 threads the blocks are taken in rounds,
// each round over the whole depth. The epilogue's row and column terms are gathered once per tile
// into team memory (free after the last slice), a row or column per thread: gathered per output,
// each output's loads of the parameters waited behind the previous output's store, which may alias
// them. (No lambdas here: device code moves arrays that lambdas capture out of registers.) A
// thread does not take eight neighbouring columns: lines 8c + j of eight threads would then share
// one 16-byte bank group of the swizzle.
template <bool Deep>
inline void tile_dp4a(const Kernel& k, i64 t, i64 i0, i64 j0, void* memory, int tid, int nth) {
  constexpr int Slice = dp4a_slice, Stages = dp4a_stages;
  const u32 shared = team_address(memory);
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
    // swizzled offsets in registers across the depth loop and spilled the accumulators.)
    const int x_swizzle = swizzled<Slice>(tr, 0) - tr * Slice, y_swizzle = swizzled<Slice>(tc, 0) - tc * Slice;
    first_slices<Slice, Stages>(source, shared);
    for (i64 k0 = source.begin, s = 0; k0 < source.end; k0 += Slice, ++s) {
      const u32 stage = next_slice<Slice, Stages>(source, k0, s, shared);
      if (active) {
#pragma unroll
        for (int c = 0; c < Slice / 16; ++c) {
          const u32 x_at = stage + u32(tr * Slice + ((16 * c) ^ x_swizzle));
          const u32 y_at = stage + u32((int(tile_rows) + tc) * Slice + ((16 * c) ^ y_swizzle));
          u32x4 x[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) x[i] = load_team16(x_at + u32(16 * i * Slice));
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const u32x4 y = load_team16(y_at + u32(16 * j * Slice));
#pragma unroll
            for (int i = 0; i < 8; ++i)
              acc[i][j] = dot4(x[i].w, y.w, dot4(x[i].z, y.z, dot4(x[i].y, y.y, dot4(x[i].x, y.x, acc[i][j]))));
          }
        }
      }
      if constexpr (Deep)
        if (fold_after<Slice>(source.end, k0)) fold_wide(wide, acc);
    }
    team_barrier();  // every thread is done with the stages
    gather_terms(k, t, i0, j0, rows, cols, tid, nth);
    team_barrier();
    if (active) {
      // The kernel's scalars are read before any output store, which might alias them. With
      // per-tensor zero points the correction is a row's part plus a column's, and within
      // +-2^29 an output requantizes through requantize_narrow (as in tile_mma), which is faster
      // than Kernel::finish for every output.
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
#endif

}  // namespace hk::detail::offload::qmm
