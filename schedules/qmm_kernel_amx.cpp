// The AMX-INT8 QuantizedLinearMatMul kernel: tdpbusd on 16x64-byte tiles. Packed A rows are
// tile rows (64 depths each), a packed B panel is a column of tiles (16 groups of 16 columns x 4
// depths), and C is computed in 32x32 blocks of four accumulator tiles.
#include <immintrin.h>

#include <cstdint>

#include "schedules/qmm_kernels.hpp"

#pragma clang attribute push(__attribute__((target("amx-tile,amx-int8,avx512f"))), apply_to = function)

namespace hk::detail {
namespace {

// Palette 1: tiles of 64-byte rows (tmm0-3 C, tmm4-5 A, tmm6-7 B). C and A tiles have `rows`
// rows, 16 but in a last row tile cut short by the end of the block, so that no row past it is
// read: A may be the caller's own matrix (read in place), which ends there.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};

  explicit TileConfig(std::uint8_t c_rows) {
    for (int i = 0; i < 8; ++i) {
      rows[i] = i < 6 ? c_rows : 16;
      bytes_per_row[i] = 64;
    }
  }
};

// RT row tiles (16 rows each) x PT panels of C.
template <int RT, int PT>
void amx_block(const QmmTile& t, std::int64_t r0, std::int64_t p0) {
  std::int32_t* c = t.c + r0 * t.ldc + p0 * 16;
  const std::int64_t c_stride = t.ldc * 4;
  const std::int64_t c_down = 16 * t.ldc;
  if (t.accumulate) {
    _tile_loadd(0, c, c_stride);
    if constexpr (PT > 1) _tile_loadd(1, c + 16, c_stride);
    if constexpr (RT > 1) _tile_loadd(2, c + c_down, c_stride);
    if constexpr (RT > 1 && PT > 1) _tile_loadd(3, c + c_down + 16, c_stride);
  } else {
    _tile_zero(0);
    if constexpr (PT > 1) _tile_zero(1);
    if constexpr (RT > 1) _tile_zero(2);
    if constexpr (RT > 1 && PT > 1) _tile_zero(3);
  }
  const std::uint8_t* a = t.a + r0 * t.lda;
  const std::int8_t* b = t.b + p0 * t.panel_bytes;
  for (std::int64_t g = 0; g < t.groups; g += 16) {
    _tile_loadd(4, a + g * 4, t.lda);
    if constexpr (RT > 1) _tile_loadd(5, a + 16 * t.lda + g * 4, t.lda);
    _tile_loadd(6, b + g * 64, 64);
    if constexpr (PT > 1) _tile_loadd(7, b + t.panel_bytes + g * 64, 64);
    _tile_dpbusd(0, 4, 6);
    if constexpr (PT > 1) _tile_dpbusd(1, 4, 7);
    if constexpr (RT > 1) _tile_dpbusd(2, 5, 6);
    if constexpr (RT > 1 && PT > 1) _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, c, c_stride);
  if constexpr (PT > 1) _tile_stored(1, c + 16, c_stride);
  if constexpr (RT > 1) _tile_stored(2, c + c_down, c_stride);
  if constexpr (RT > 1 && PT > 1) _tile_stored(3, c + c_down + 16, c_stride);
}

// One row of C blocks: RT row tiles at row r0, across every panel.
template <int RT>
void amx_row(const QmmTile& t, std::int64_t r0) {
  std::int64_t p = 0;
  for (; p + 2 <= t.panels; p += 2) amx_block<RT, 2>(t, r0, p);
  if (p < t.panels) amx_block<RT, 1>(t, r0, p);
}

}  // namespace

void qmm_kernel_amx(const QmmTile& t) {
  // The configuration is per thread and cheap to load; loading it per call keeps the kernel
  // independent of whatever else the thread ran.
  const TileConfig whole(16);
  _tile_loadconfig(&whole);
  const std::int64_t whole_tiles = t.rows / 16, tail = t.rows % 16;
  std::int64_t rt = 0;
  for (; rt + 2 <= whole_tiles; rt += 2) amx_row<2>(t, rt * 16);
  if (rt < whole_tiles) amx_row<1>(t, rt * 16);
  if (tail > 0) {
    const TileConfig cut(static_cast<std::uint8_t>(tail));
    _tile_loadconfig(&cut);
    amx_row<1>(t, whole_tiles * 16);
  }
  _tile_release();
}

}  // namespace hk::detail

#pragma clang attribute pop
