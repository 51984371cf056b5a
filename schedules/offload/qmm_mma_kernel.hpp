// The tensor-core product kernel of qmm.offload_mma: 128 x 128 output tiles per team, 64 x 64 per
// warp, from A' and B' slices staged in team memory (ldmatrix, mma.sync m16n8k32 u8 x s8, or s8 x
// s8 on A' - 128), and the epilogue's requantization.
#pragma once

#include <cstdint>
#include <type_traits>

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

inline void ldmatrix_x4(u32 (&d)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(address));
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

// Rows of the mma epilogue whose team-memory loads are all issued before any of their outputs is
// stored (the compiler cannot tell the byte stores from team memory, so a load after a store
// waits for it): one, in a rolled loop, measured fastest (docs/gpu-measurements.md, matmul mma).
inline constexpr int mma_epilogue_rows = 1;

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
  const u32 shared = team_address(memory);
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

}  // namespace hk::detail::offload::qmm
