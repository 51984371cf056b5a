// The tensor-core product kernel of qmm.offload_mma: 128 x 128 output tiles per team, 64 x 64 per
// warp, from A' and B' slices staged in team memory (ldmatrix, mma.sync m16n8k32 u8 x s8, or s8 x
// s8 on A' - 128), and the epilogue's requantization.
#pragma once

#include <cstdint>
#include <type_traits>

#include "schedules/offload/qmm_four_outputs.hpp"
#include "schedules/offload/qmm_product.hpp"

namespace hk::detail::offload::qmm {

#ifdef __NVPTX__
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

// Tensor cores from team memory: the tile's four 64 x 64 warp blocks (rows 64 * (w / 2), columns
// 64 * (w % 2)), taken by the team's whole warps in rounds, each round over the whole depth. Per
// 32-deep step a warp loads its A fragments (16 rows x 32 bytes each) and B fragments (two 8-column
// groups x 32 bytes each) with ldmatrix: lane l addresses row l % 16, bytes 16 * (l / 16) of an A
// fragment, and column 8 * (l / 16) + l % 8, bytes 16 * ((l / 8) % 2) of a B pair, which gives each
// lane exactly the bytes the m16n8k32 fragment layout assigns to it (the team is whole warps: see
// evenly_staged). The epilogue's row and column terms are gathered once per tile into team memory
// past the stages, a row or column per thread, while the first slices are being copied in.
template <bool Deep, bool Centred, int Stages>
inline void tile_mma(const Kernel& k, const Kernel::Item& item, void* memory, int tid, int nth) {
  constexpr int Slice = mma_slice;
  const i64 t = item.at.t, i0 = item.at.i0, j0 = item.at.j0;
  const u32 shared = team_address(memory);
  const Staging source = staging<Slice>(k, t, i0, j0, tid, nth, item.part, item.parts);
  Kernel::Row* rows = reinterpret_cast<Kernel::Row*>(static_cast<u8*>(memory) + mma_stage_bytes<Stages>);
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
    if (first == 0) gather_terms(k, t, i0, j0, rows, cols, tid, nth);
    for (i64 k0 = source.begin, s = 0; k0 < source.end; k0 += Slice, ++s) {
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
        if (fold_after<Slice>(source.end, k0)) fold_wide(wide, c);
    }
    team_barrier();  // every warp is done with the stages
    // A split tile's part stores its int32 products, as the m16n8 fragments hold them, into its
    // partial (a row of the tile's columns each). Otherwise the epilogue stages
    // 16 rows of the warp's block at a time in team memory (constant register indices: indexing
    // the accumulators in a loop would move them to local memory); then lane l finishes the four
    // neighbouring columns 4 * (l % 16) .. + 3 of rows l / 16, l / 16 + 2, .., and stores them as
    // one 4-byte word where they are contiguous and aligned. The lane's column terms and the
    // kernel's scalars are read once, before any output store.
    if (active && item.partial) {
      i32* partial = item.partial + wc + 2 * q;
#pragma unroll
      for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const i64 r = wr + 16 * m + g + 8 * h;
          if (i0 + r < k.M)
#pragma unroll
            for (int n = 0; n < 8; ++n) stage_pair(partial + r * tile_cols + 8 * n, c[m][n][2 * h], c[m][n][2 * h + 1]);
        }
    } else if (active) {
      using Acc = std::conditional_t<Deep, i64, i32>;
      constexpr int pitch = Deep ? 64 : 72;  // int32: 8-byte stores and 16-byte loads conflict-free
      Acc* staged = reinterpret_cast<Acc*>(memory) + warp * 16 * pitch;
      const EpilogueScalars scalars = epilogue_scalars<Deep>(k);
      const FourColumns four = four_columns(cols + wc + 4 * (lane % 16), scalars);
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
        finish_staged_block<Deep>(staged, pitch, rows + wr + 16 * m, four, scalars, lane);
      }
    }
    team_barrier();  // the next round stages into the memory read above, the next tile its terms
  }
}
#endif

}  // namespace hk::detail::offload::qmm
