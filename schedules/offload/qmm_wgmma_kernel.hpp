// The warpgroup-MMA product kernel of qmm.offload_mma on sm_90 GPUs: 128 x 128 output tiles per
// team of one warpgroup, which multiplies each half of 64 rows by the tile's 128 columns with
// wgmma.mma_async m64n128k32 (u8 x s8) straight from the staged slices in team memory, int32
// accumulators in registers, and the epilogue's requantization.
#pragma once

#include <cstdint>

#include "schedules/offload/qmm_four_outputs.hpp"
#include "schedules/offload/qmm_product.hpp"

namespace hk::detail::offload::qmm {

// The epilogue's staging blocks: int32, 8-byte stores and 16-byte loads conflict-free.
inline constexpr int wgmma_epilogue_pitch = 72;

#ifdef __NVPTX__
using u64 = std::uint64_t;

// wgmma's descriptor of a K-major operand in the staging's layout (qmm_product.hpp) with Slice-byte
// lines: 16-byte chunks lie as the swizzle mode of that width puts them (chunk c of line r at
// c ^ (r / (8 / chunks)) % chunks: see swizzled), groups of eight lines 8 * Slice bytes apart (the
// stride offset). The leading offset is unused for swizzled K-major operands; 1 by convention.
template <int Slice> inline u64 wgmma_descriptor(u32 address) {
  static_assert(Slice == 32 || Slice == 64 || Slice == 128, "the swizzle modes are 32, 64 and 128 bytes wide");
  constexpr u64 mode = Slice == 128 ? 1 : Slice == 64 ? 2 : 3, group_bytes = 8 * Slice;
  return u64((address & 0x3ffff) >> 4) | (u64(1) << 16) | (u64(group_bytes >> 4) << 32) | (mode << 62);
}

inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most Pending of this warp's committed product groups are still running.
template <int Pending> inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
}
inline void wgmma_wait_all() { wgmma_wait<0>(); }

// The 64 accumulators of an m64n128 product as asm operands 0-63, and their list in its text.
#define HK_WGMMA_D_LIST                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "   \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define HK_WGMMA_D_OPERANDS                                                                                        \
  "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),     \
      "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),      \
      "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),     \
      "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),     \
      "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),     \
      "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),     \
      "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),     \
      "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])

// d += a x b over 32 of the depth: a 64 x 32 bytes of A' (unsigned), b 128 columns x 32 bytes of
// B' (signed). Asynchronous: d is not to be touched before wgmma_wait_all.
inline void wgmma_m64n128k32(i32 (&d)[64], u64 a, u64 b) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8 " HK_WGMMA_D_LIST ", %64, %65, p; }"
               : HK_WGMMA_D_OPERANDS
               : "l"(a), "l"(b), "r"(1));
}

// The same with A' - 128 from registers (Centred kernels, every zero point of A' 128): a holds this
// thread's words of its warp's 16 rows x 32 bytes, as mma.sync's m16n8k32 fragments hold them
// (A' ^ 0x80, signed). They are read asynchronously too: not to be written before wgmma_wait_all.
inline void wgmma_m64n128k32_centred(i32 (&d)[64], const u32 (&a)[4], u64 b) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " HK_WGMMA_D_LIST ", {%64, %65, %66, %67}, %68, p; }"
               : HK_WGMMA_D_OPERANDS
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}
#undef HK_WGMMA_D_OPERANDS
#undef HK_WGMMA_D_LIST

// Keeps the compiler from moving reads or writes of the accumulators across the asynchronous
// products (ptxas would otherwise serialize them).
inline void wgmma_hold(i32 (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// A warp's accumulators d of one m64n128 product, at rows 64 h + 16 warp + g and + 8 of the tile
// (lanes 4g + q: columns 8j + 2q, + 1), into a split tile's partial, rows in the matrix only.
[[gnu::always_inline]] inline void store_partial_rows(const Kernel& k, const Kernel::Item& item, const i32 (&d)[64],
                                                      int h, int warp, int lane) {
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const i64 r = 64 * h + 16 * warp + g;
    i32* at = item.partial + r * tile_cols + 8 * j + 2 * q;
    if (item.at.i0 + r < k.M) stage_pair(at, d[4 * j], d[4 * j + 1]);
    if (item.at.i0 + r + 8 < k.M) stage_pair(at + 8 * tile_cols, d[4 * j + 2], d[4 * j + 3]);
  }
}

// The same accumulators finished as mma.sync's epilogue finishes them, 16 x 64 outputs at a time
// through `staged`, the warp's own block of 16 x wgmma_epilogue_pitch int32; rows and cols: the
// tile's terms.
[[gnu::always_inline]] inline void finish_rows(const i32 (&d)[64], int h, int warp, int lane, i32* staged,
                                               const Kernel::Row* rows, const Kernel::Col* cols,
                                               const EpilogueScalars& scalars) {
  constexpr int pitch = wgmma_epilogue_pitch;
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const int j = 8 * half + n;
      stage_pair(staged + g * pitch + 8 * n + 2 * q, d[4 * j], d[4 * j + 1]);
      stage_pair(staged + (g + 8) * pitch + 8 * n + 2 * q, d[4 * j + 2], d[4 * j + 3]);
    }
    finish_staged_block<false>(staged, pitch, rows + 64 * h + 16 * warp,
                               four_columns(cols + 64 * half + 4 * (lane % 16), scalars), scalars, lane);
  }
}

// The team, one warpgroup, multiplies the tile's two halves of 64 rows by its 128 columns, two
// m64n128k32 steps per half and 64-deep slice, the stages filled by the same cp.async pipeline as
// mma.sync's (their layout is the 64-byte swizzle mode's). With two stages a slice's products run
// while the team waits for the next slice's copies, and are waited for before the barrier after
// which their stage is refilled. With more, the products of one slice stay in flight across that
// barrier, so that the tensor cores always have the next slice's products queued: the copies run
// Stages - 2 slices ahead, and a stage is refilled once the products two slices back are done.
// The tile's terms are gathered after its last slice, into the stages.
// In the epilogue, warp w holds rows 16 w .. + 15 of each half, as mma.sync's m16n8 blocks do
// (lanes 4g + q: columns 8j + 2q, + 1 of rows g and g + 8), and finishes them as mma.sync's
// epilogue does, 16 x 64 outputs at a time; a split tile's part stores them as they are into its
// partial instead. Inlined, and calling no function, nor under a condition: ptxas serializes
// wgmma whose pipeline crosses a call or a divergent path (even one the whole warpgroup takes
// alike), so a tile's second half is multiplied even when no row of it
// lies in the matrix.
template <int Stages>
[[gnu::always_inline]] inline void tile_wgmma(const Kernel& k, const Kernel::Item& item, void* memory, int tid,
                                             int nth) {
  constexpr int Slice = wgmma_slice, InFlight = Stages > 2 ? 1 : 0, Ahead = Stages - 1 - InFlight;
  const i64 t = item.at.t, i0 = item.at.i0, j0 = item.at.j0;
  const u32 shared = team_address(memory);
  const Staging source = staging<Slice>(k, t, i0, j0, tid, nth, item.part, item.parts);
  Kernel::Row* rows = static_cast<Kernel::Row*>(memory);
  Kernel::Col* cols = reinterpret_cast<Kernel::Col*>(rows + tile_rows);
  const int warp = tid / 32, lane = tid % 32;
  i32 d[2][64] = {};
  first_slices<Slice, Stages, Ahead>(source, shared);
  for (i64 k0 = source.begin, s = 0; k0 < source.end; k0 += Slice, ++s) {
    slice_copied<Ahead>();
    fence_proxy_async();
    wgmma_wait<InFlight>();
    const u32 stage = refill<Slice, Stages, Ahead>(source, k0, s, shared);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Slice / 32; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wgmma_m64n128k32(d[h], wgmma_descriptor<Slice>(stage + u32(64 * h * Slice) + 32 * ks),
                         wgmma_descriptor<Slice>(stage + u32(tile_rows * Slice) + 32 * ks));
    wgmma_commit();
  }
  wgmma_wait_all();
  wgmma_hold(d[0]);
  wgmma_hold(d[1]);
  if (item.partial) {
    store_partial_rows(k, item, d[0], 0, warp, lane);
    store_partial_rows(k, item, d[1], 1, warp, lane);
    team_barrier();  // the next tile stages into the memory the products read
    return;
  }
  team_barrier();  // every warp is done with the stages, where the tile's terms go
  gather_terms(k, t, i0, j0, rows, cols, tid, nth);
  team_barrier();
  static_assert(tile_terms_bytes + wgmma_team_threads / 32 * 16 * wgmma_epilogue_pitch * int(sizeof(i32)) <=
                wgmma_stage_bytes<Stages>);
  i32* staged = reinterpret_cast<i32*>(static_cast<u8*>(memory) + tile_terms_bytes) + warp * 16 * wgmma_epilogue_pitch;
  const EpilogueScalars scalars = epilogue_scalars<false>(k);
  finish_rows(d[0], 0, warp, lane, staged, rows, cols, scalars);
  finish_rows(d[1], 1, warp, lane, staged, rows, cols, scalars);
  team_barrier();  // the next tile stages into the memory read above, and gathers its terms
}
#endif

}  // namespace hk::detail::offload::qmm
