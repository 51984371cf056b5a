// The QuantizedLinearMatMul macro-kernels: int32 dot products of packed A' (u8) and B' (s8) blocks,
// one implementation per instruction-set level, chosen at run time.
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
  std::int64_t rows;         // rows of C (the AMX kernel computes them rounded up to 16, which
                             // the packed A and C buffers provide)
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

struct QmmKernelChoice {
  QmmKernel run;
  const char* name;  // e.g. "avx512_vnni vpdpbusd 6x64"
};

/// The fastest exact kernel at `isa` for a packed B whose pairs do (or do not) fit int16.
QmmKernelChoice select_qmm_kernel(Isa isa, bool pairs_fit_int16);

}  // namespace hk::detail
