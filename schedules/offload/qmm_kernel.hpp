// The argument block of the offload QuantizedLinearMatMul kernels and what all their families
// (pack, dp4a, mma) share: the tile and depth sizes, byte dot products, the epilogue's terms.
#pragma once

#include <sched.h>

#include <cstdint>
#include <type_traits>

#include "algorithms/requantize.hpp"
#include "schedules/offload/device_helpers.hpp"

namespace hk::detail::offload::qmm {

inline constexpr std::int64_t tile_rows = 128, tile_cols = 128;  // outputs per team tile
inline constexpr std::int64_t depth_step = 64;                     // k per transposed or gathered chunk
inline constexpr std::int64_t depth_align = 128;                   // kp: whole slices and chunks
inline constexpr std::int64_t int32_depth = 65536;                 // deepest int32-safe slice
// Tiles are taken in bands of band_rows tile rows, column by column within a band, so that the
// tiles running at once share few A' rows and B' columns: at 8192^3 a wave of 264 teams then reads
// 16 A' and 17 B' tiles' lines rather than 4 and all 64, which overflow the L2.
inline constexpr std::int64_t band_rows = 16;
inline constexpr int tensor_map_bytes = 128;  // a CUtensorMap (Kernel::tensor_maps)
// Split-K's partial tiles are added up by the parts' own teams, sum_rows rows (a chunk) at a
// time, keeping split_count_words(parts) words per tile (Kernel::split_counts).
inline constexpr std::int64_t sum_rows = 16;
inline constexpr std::int64_t split_count_words(std::int64_t parts) { return 2 + parts; }

using u8 = std::uint8_t;
using i32 = std::int32_t;
using i64 = std::int64_t;


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

// Everything a kernel reads but the call's epoch (ProductArgs): copied to the device with each
// launch, or a product launch's kept copy there.
struct Kernel {
  i64 batches = 1, batch1 = 1, M = 0, N = 0, K = 0, kp = 0, Mp = 0, Np = 0;
  i64 tiles_m = 0, tiles_n = 0;
  const u8* ap = nullptr;           // A' rows, [a_batches][a_lines][kp]
  const std::int8_t* bp = nullptr;  // B' columns, [b_batches][b_lines][kp]
  // The lines of A' and of B' that ap and bp hold per matrix: Mp and Np where packed; M (N) where
  // one matrix is read in place with its last tile cut, whose missing lines the staging reads as
  // zeros.
  i64 a_lines = 0, b_lines = 0;
  u8* a_pack = nullptr;             // where packing writes A' (ap), null when A is A' in place
  u8* b_pack = nullptr;             // the same for B' (bp)
  // The tensor memory accelerator's maps of A' and of B' (in that order, 128 bytes each: lines of
  // kp bytes, boxes of a slice of 128 lines) in device memory, for the warp-specialized wgmma
  // kernel (qmm_wgmma_tma_kernel.hpp); null where that kernel does not run.
  const void* tensor_maps = nullptr;
  i64* row_sums = nullptr;  // [a_batches][M]; null when not needed
  i64* col_sums = nullptr;  // [b_batches][N]; the same
  // The warp-specialized wgmma kernel sums A's rows (B's columns), read in place, itself rather
  // than a packing launch (qmm_line_sums.hpp): a state per tile of 128 lines in line_tile_states,
  // of this call's epoch (ProductArgs::epoch).
  bool rows_in_product = false, cols_in_product = false;
  // col_sums were made before the launch (OffloadQmmArrivals::column_sums): nobody sums B' here.
  bool col_sums_given = false;
  // Every alpha is 128 and the kernel is mma: it multiplies A' - 128 (A' ^ 0x80 as int8: 16
  // bitwise ops beside a warp's 32 mma per 32-deep step) by B', which folds alpha into the
  // product, so that no column sum is needed; the row sums are then those of A' - 128 (the
  // stored sums less 128 * K) and alpha counts as 0. Not dp4a: there the bitwise ops take issue
  // slots the dp4a need (docs/gpu-measurements.md, matmul mma).
  bool a_centred = false;
  bool a_shared = false, b_shared = false;
  u8 a_flip = 0, b_flip = 0;  // xor'ed into the caller's A and B bytes: the signedness fold (qmm_pack.hpp)
  std::uint64_t* line_tile_states = nullptr;
  // Split-K (tensor cores, depth within one int32 slice: qmm_offload_split): the last split_tiles
  // tiles in the teams' order are each cut in depth into `split` parts of whole slices, work items
  // after the whole tiles; a part's int32 products go to its tile's slot of partials,
  // [split][split_tiles][partial_rows][tile_cols]. The parts' own teams add them up and
  // requantize them (split_part_done), keeping a tile's progress, its chunks done and its parts'
  // starts in split_counts. Each word holds this call's epoch (ProductArgs::epoch), so that a word
  // left by an earlier call counts as zero and no launch clears them; team_last (one a team) tells
  // a team's threads what its first thread counted.
  i64 split = 1, split_tiles = 0, partial_rows = 0;
  i32* partials = nullptr;
  std::uint64_t* split_counts = nullptr;
  i32* team_last = nullptr;
  // A part whose operands are still arriving (OffloadQmmArrivals): a tile first waits for its row
  // tile's a_ready and its column tile's b_ready to turn non-zero (null: there already), and once
  // its outputs are written counts itself in bands_done[its band] (null: nobody waits for them);
  // the last last_rows tile rows (at most tiles_m) are a band of their own, after the others.
  // Bands are band_rows tile rows.
  i64 band_rows = qmm::band_rows;
  const i32* a_ready = nullptr;
  const i32* b_ready = nullptr;
  i32* bands_done = nullptr;
  i64 last_rows = 0;
  // The caller's matrices.
  const u8* a = nullptr;
  const u8* b = nullptr;
  i64 a_bs[2] = {0, 0}, a_rs = 0, a_cs = 0, b_bs[2] = {0, 0}, b_rs = 0, b_cs = 0;
  // Epilogue.
  const float *sa = nullptr, *sb = nullptr, *sy = nullptr;
  const i32 *za = nullptr, *zb = nullptr, *zy = nullptr;
  i64 sa_step = 0, sb_step = 0, sy_step = 0, za_step = 0, zb_step = 0, zy_step = 0;
  i32 ca = 0, cb = 0, qmin = 0, qmax = 255;
  u8* out = nullptr;
  i64 o_bs[2] = {0, 0}, o_rs = 0, o_cs = 0;

  i64 a_batch(i64 t) const { return a_shared ? 0 : t; }
  i64 b_batch(i64 t) const { return b_shared ? 0 : t; }
  const u8* a_rows(i64 t, i64 r) const { return ap + (a_batch(t) * a_lines + r) * kp; }
  // Where depth part `part` of `parts` begins, in whole `slice`-byte slices.
  i64 depth_begin(i64 part, i64 parts, i64 slice) const { return kp / slice * part / parts * slice; }
  const std::int8_t* b_cols(i64 t, i64 c) const { return bp + (b_batch(t) * b_lines + c) * kp; }

  // The teams' order: matrix by matrix, each in bands of band_rows tile rows (the last last_rows
  // tile rows a band of their own, last), column by column within a band.
  i64 tiles() const { return batches * tiles_m * tiles_n; }
  i64 bands() const { return (tiles_m - last_rows + band_rows - 1) / band_rows + (last_rows > 0 ? 1 : 0); }
  struct Place {
    i64 t, band, i0, j0;  // matrix, band, first row and column
  };
  // The count of the band of the tile at `at` in bands_done, or null where nobody waits for bands.
  i32* band_count(const Place& at) const { return bands_done ? bands_done + at.t * bands() + at.band : nullptr; }
  Place place(i64 tile) const {
    const i64 per_batch = tiles_m * tiles_n, t = tile / per_batch, in_batch = tile % per_batch;
    const i64 banded = tiles_m - last_rows;
    if (in_batch >= banded * tiles_n) {
      const i64 in_band = in_batch - banded * tiles_n;
      return {t, bands() - 1, (banded + in_band % last_rows) * tile_rows, (in_band / last_rows) * tile_cols};
    }
    const i64 band = in_batch / (band_rows * tiles_n), band_first = band * band_rows, rows_left = banded - band_first;
    const i64 band_height = rows_left < band_rows ? rows_left : band_rows;
    const i64 in_band = in_batch - band_first * tiles_n;
    return {t, band, (band_first + in_band % band_height) * tile_rows, (in_band / band_height) * tile_cols};
  }
  // A team's work item: a whole tile, or split tile `slot`'s depth part `part` of `parts`, whose
  // products go to `partial` (its place in partials; null for a whole tile).
  struct Item {
    Place at;
    i64 part, parts, slot;
    i32* partial;
  };
  i64 items() const { return tiles() + split_tiles * (split - 1); }
  // Split tile `slot`'s place: the split tiles are the last in the teams' order.
  Place split_place(i64 slot) const { return place(tiles() - split_tiles + slot); }
  Item item(i64 index) const {
    const i64 whole = tiles() - split_tiles;
    if (index < whole) return {place(index), 0, 1, 0, nullptr};
    const i64 slot = (index - whole) % split_tiles, part = (index - whole) / split_tiles;
    return {split_place(slot), part, split, slot, partials + (part * split_tiles + slot) * partial_rows * tile_cols};
  }

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
  // Unless Deep (depth past one int32 slice), acc stays below 2^36, and requantizes without a call.
  template <bool Deep> void finish(const Row& r, const Col& c, i64 dot) const {
    if (!r.inside || !c.inside) return;
    const i64 acc = dot - c.beta * r.sum - r.alpha * c.term;
    const float multiplier = sb_step == 0 ? r.multiplier : float(double(float(r.sa * c.sb)) / r.sy);
    r.out[c.offset] = u8(Deep ? requantize_exact(acc, multiplier, r.zy, qmin, qmax)
                              : requantize_below_2_39(acc, multiplier, r.zy, qmin, qmax));
  }
};
// No padding: a kept copy is found by its bytes (ProductArgs), which must then be the fields' alone.
static_assert(std::has_unique_object_representations_v<Kernel>);

// Whether an operand's tile that may still be arriving (Kernel::a_ready, b_ready) is there: a host
// thread's copy has marked it (ready null: it is), read by an acquiring load, so that the calling
// thread's reads of it come after. LLVM 19's NVPTX back end cannot select an acquiring atomic
// load, hence the PTX.
[[gnu::always_inline]] inline bool arrived_now(const i32* ready, i64 index) {
  if (!ready) return true;
#ifdef __NVPTX__
  u32 there = 0;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(there) : "l"(ready + index) : "memory");
  return there != 0;
#else
  return __atomic_load_n(ready + index, __ATOMIC_ACQUIRE) != 0;
#endif
}

// Before a thread reads such a tile: waits until it has arrived, each thread for itself.
[[gnu::always_inline]] inline void await_ready(const i32* ready, i64 index) {
  while (!arrived_now(ready, index)) {
#ifdef __NVPTX__
    // Every thread of every waiting team polling without pause slowed the very copies they waited for.
    asm volatile("nanosleep.u32 1000;");
#else
    sched_yield();  // the copying thread may need this core
#endif
  }
}

}  // namespace hk::detail::offload::qmm
