// The QuantizedLinearMatMul macro-kernels: int32 dot products of packed A' (u8) and B' (s8) blocks,
// of A' rows and B's contiguous columns (the dots kernels), or of A' rows and B's contiguous rows
// interleaved as they load (the rows kernels), one implementation per instruction-set level, chosen
// at run time.
#pragma once

#include <cstdint>

#include "hetkern/info.hpp"

namespace hk::detail {

/// One kernel call: C[r][j] (+)= sum over the block's depth of A'[r][k] * B'[k][j].
struct QmmTile {
  const std::uint8_t* a;     // A' at the block's first row and depth; row r at a + r*lda
  std::int64_t lda;          // bytes between rows: packed, a multiple of 64; A read in place, its row stride
  const std::int8_t* b;      // packed B' at the first panel and the depth's first group
  std::int64_t panel_bytes;  // bytes between panels
  std::int64_t rows;         // rows of C
  std::int64_t panels;       // 16-column panels of C
  std::int64_t groups;       // depth / 4, a multiple of 16
  std::int32_t* c;           // C[r][j] at c + r*ldc + j, ldc >= 16*panels, 64-byte aligned rows
  std::int64_t ldc;
  bool accumulate;           // add to C rather than overwrite it
};

using QmmKernel = void (*)(const QmmTile&);

/// Columns of B the widest kernel (AVX-512 VNNI, 4 panels) walks down all the rows of a call
/// before the next: the slice of B a block's row tiles share.
inline constexpr std::int64_t qmm_kernel_pass_cols = 64;

void qmm_kernel_portable(const QmmTile& t);
void qmm_kernel_avx2_maddubs(const QmmTile& t);  // only when no B' pair can saturate int16
void qmm_kernel_avx2_exact(const QmmTile& t);
void qmm_kernel_avx512_vnni(const QmmTile& t);
void qmm_kernel_amx(const QmmTile& t);

/// One call of a dots kernel, for B whose columns are contiguous (PyTorch's weight layout): B is
/// read where it lies, flipped into B' as it is loaded, and never packed.
///   C[r][j] (+)= sum_{k < depth} A'[r][k] * B'[k][j]        col_sums[j] (+)= sum_k B'[k][j]
/// Nothing is read past a row's or a column's `depth` bytes.
struct QmmDotsTile {
  const std::uint8_t* a;  // A' row r at a + r*lda
  std::int64_t lda;
  std::int64_t rows;
  const std::uint8_t* b;  // B's column j at b + j*ldb, its depths contiguous
  std::int64_t ldb;
  std::uint8_t flip;      // B' = B ^ flip: 0x80 for uint8 B, else 0
  std::int64_t cols;
  std::int64_t depth;     // at most qmm_dots_max_depth, so that every sum fits int32
  std::int32_t* c;        // C[r][j] at c + r*ldc + j
  std::int64_t ldc;
  std::int32_t* col_sums;
  bool accumulate;        // add to C and col_sums rather than overwrite them
};

/// |A' B'| <= 255 * 128 per product: 65536 of them stay within int32.
inline constexpr std::int64_t qmm_dots_max_depth = 65536;

using QmmDotsKernel = void (*)(const QmmDotsTile&);

void qmm_dots_portable(const QmmDotsTile& t);
void qmm_dots_avx2(const QmmDotsTile& t);  // products widened to int16, summed by vpmaddwd
void qmm_dots_avx512_vnni(const QmmDotsTile& t);

/// One call of a rows kernel, for a row-major B at few rows of A: B is read where it lies, each
/// quad (AVX2: pair) of its rows interleaved in registers and never packed.
///   C[r][j] (+)= sum_{k < depth} A'[r][k] * B'[k][j]        col_sums[j] (+)= sum_k B'[k][j]
/// Nothing is read past A's rows' `depth` bytes or B's `depth` rows and `cols` columns. Each row
/// of C and col_sums is 64-byte aligned with room for `cols` rounded up to 64, which may be
/// written.
struct QmmRowsTile {
  const std::uint8_t* a;  // A' row r at a + r*lda
  std::int64_t lda;
  std::int64_t rows;      // at most qmm_rows_max_rows
  const std::uint8_t* b;  // B's row k at b + k*ldb, its columns contiguous
  std::int64_t ldb;
  std::uint8_t flip;      // B' = B ^ flip: 0x80 for uint8 B, else 0
  std::int64_t cols;
  std::int64_t depth;     // at most qmm_dots_max_depth
  std::int32_t* c;        // C[r][j] at c + r*ldc + j
  std::int64_t ldc;
  std::int32_t* col_sums;
  bool accumulate;
};

/// The most rows of A a rows kernel takes.
inline constexpr std::int64_t qmm_rows_max_rows = 64;

using QmmRowsKernel = void (*)(const QmmRowsTile&);

void qmm_rows_avx2(const QmmRowsTile& t);  // pairs of products widened to int16, summed by vpmaddwd
void qmm_rows_avx512_vnni(const QmmRowsTile& t);

/// The rows kernel of `isa`, or null for the portable level (where B is packed).
QmmRowsKernel select_qmm_rows(Isa isa);

/// The dots kernel of `isa` (AMX's is the AVX-512 VNNI one: a dot product has no tile shape).
QmmDotsKernel select_qmm_dots(Isa isa);

struct QmmKernelChoice {
  QmmKernel run;
  const char* name;  // e.g. "avx512_vnni vpdpbusd 6x64"
};

/// The fastest exact kernel at `isa` for a packed B whose pairs do (or do not) fit int16.
QmmKernelChoice select_qmm_kernel(Isa isa, bool pairs_fit_int16);

}  // namespace hk::detail
