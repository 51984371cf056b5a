// The packed operand layouts every QuantizedLinearMatMul host kernel reads.
//
// The kernels compute dot products of u8 by s8 (the operand types of vpdpbusd, vpmaddubsw and
// tdpbusd). Other signedness is shifted into that form while packing, and the zero points are
// folded in afterwards through row and column sums:
//   A' = A ^ 0x80 when A is int8 (A' = A + 128), else A        A  = A' - ca,  ca in {0, 128}
//   B' = B ^ 0x80 when B is uint8 (B' = B - 128), else B       B  = B' + cb,  cb in {0, 128}
//   sum_k (A - za)(B - zb) = dot(A', B') - beta * rowsum(A') - alpha * colsum(B') + K * alpha * beta
// with alpha = ca + za per row and beta = zb - cb per column, all exact in 64-bit integers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/quantized_matmul.hpp"

namespace hk::detail {

inline constexpr std::int64_t qmm_panel_cols = 16;  // columns of B per panel
inline constexpr std::int64_t qmm_group_depth = 4;  // consecutive k packed together per column
inline constexpr std::int64_t qmm_depth_align = 64;  // packed depth is a multiple (an AMX tile row)
inline constexpr std::int64_t qmm_row_align = 16;    // packed A rows come in multiples (AMX tile)

/// Bytes aligned for any vector or tile load. Throws std::bad_alloc.
struct AlignedBytes {
  std::unique_ptr<std::byte[], void (*)(std::byte*)> data{nullptr, nullptr};
  std::int64_t size = 0;

  AlignedBytes() = default;
  /// Exactly `bytes`, zero-initialized.
  explicit AlignedBytes(std::int64_t bytes);
  /// At least `bytes`, reusing the current allocation when it is large enough (contents
  /// unspecified): scratch that lives across calls touches no fresh pages on the hot path.
  void ensure(std::int64_t bytes);
  template <class T> T* as() { return reinterpret_cast<T*>(data.get()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.get()); }
};

/// ca and cb above: what A' adds to A, what B' takes from B.
inline std::int32_t a_shift(const MatrixView& a) { return a.dtype == DataType::int8 ? 128 : 0; }
inline std::int32_t b_shift(const MatrixView& b) { return b.dtype == DataType::uint8 ? 128 : 0; }

/// Whether some column's beta is not 0: only then do the zero points need A's row sums.
inline bool qmm_row_sums_wanted(const QmmProblem& p) {
  const std::int32_t cb = b_shift(p.b);
  return std::any_of(p.q.b_zero.begin(), p.q.b_zero.end(), [&](std::int32_t z) { return z != cb; });
}

inline std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

/// Largest packed form hetkern attempts to allocate: the 47-bit user address space of x86-64
/// Linux. Operands whose packed form is larger could never be allocated; sizes at this bound also
/// keep every offset computed while packing far from 64-bit overflow.
inline constexpr std::int64_t max_packed_bytes = std::int64_t(1) << 47;

/// Refuses, before anything is allocated, operands whose packed form would exceed
/// max_packed_bytes: B' for `b_batches` matrices of K x N and A' (with its spare ones row) for
/// `a_batches` matrices of M x K; a count of 0 leaves that operand out. Throws
/// hk::Error(Errc::invalid_shape, op, "a" or "b").
void check_packed_sizes(const char* op, std::int64_t a_batches, std::int64_t M,
                        std::int64_t b_batches, std::int64_t K, std::int64_t N);

/// Depth after padding: what the kernels loop over.
inline std::int64_t packed_depth(std::int64_t K) { return round_up(K, qmm_depth_align); }

/// B' as column panels. Panel p holds columns [16p, 16p+16); inside it, group g holds
/// k = 4g..4g+3 as 16 columns x 4 bytes (64 bytes: one zmm, one AMX tile row). Padding is zero.
/// Byte (k, n) of panel block `batch` is at data + batch*batch_bytes + (n/16)*panel_bytes
///   + (k/4)*64 + (n%16)*4 + k%4, with panel_bytes = kp*16 + 64.
struct PackedPanels {
  std::int64_t batches = 0, K = 0, N = 0, kp = 0, panels = 0;
  std::int64_t panel_bytes = 0, batch_bytes = 0;
  DataType source = DataType::int8;  // B's type before the shift
  AlignedBytes bytes;
  AlignedBytes col_sums;  // int64 per (batch, padded column): sum_k B'[k][n]
  /// True when every |B'| <= 64: a pair of u8 x s8 products then stays within 2 * 255 * 64 <
  /// 32767 and vpmaddubsw cannot saturate.
  bool pairs_fit_int16 = true;

  const std::int8_t* panel(std::int64_t batch, std::int64_t p) const {
    return bytes.as<std::int8_t>() + batch * batch_bytes + p * panel_bytes;
  }
  const std::int64_t* sums(std::int64_t batch) const {
    return col_sums.as<std::int64_t>() + batch * panels * qmm_panel_cols;
  }
};

/// Shapes `out` for `batches` matrices of K x N. With `zeroed`, fresh zero-filled storage (every
/// padding byte zero); otherwise the current storage is reused when large enough, and only what
/// the kernels read is written by pack_panels (the depth padding included).
void shape_panels(PackedPanels& out, std::int64_t batches, std::int64_t K, std::int64_t N,
                  DataType source, bool zeroed);

/// B back in its source type from packed panels: [batches][K][N], row-major.
std::vector<std::uint8_t> unpack_panels(const PackedPanels& b);

/// Packs panels [p0, p1) of matrix `batch`, whose element (k, n) is element
/// k*row_stride + n*col_stride of `data`. Returns whether every pair fits int16 (see above).
/// Without `with_sums` the column sums of a contiguous-row B may be left unwritten (a caller that
/// gets them from the kernel instead, see PackedRows::ones_row).
bool pack_panels(PackedPanels& out, std::int64_t batch, const void* data, std::int64_t row_stride,
                 std::int64_t col_stride, std::int64_t p0, std::int64_t p1, bool with_sums = true);

/// Full panels [0, 4 * quads) of a B whose rows are contiguous (element (k, n) at src + k *
/// row_stride + n), each flipped by `flip` into B', four panels at a time with AVX-512BW (the
/// caller checks that the CPU has it); panel p lands at dst + p * panel_bytes. Adds the column
/// sums into `sums` unless it is null. Returns whether every |B'| <= 64.
bool pack_panel_quads_avx512(std::int8_t* dst, std::int64_t panel_bytes, const std::uint8_t* src, std::int64_t K,
                             std::int64_t row_stride, std::uint8_t flip, std::int64_t quads, std::int64_t* sums);

/// Copies a contiguous row of K bytes flipped by `flip` (A' from A) with AVX-512BW (the caller
/// checks that the CPU has it) and returns the sum of the copied bytes.
std::int64_t copy_row_summed_avx512(std::uint8_t* dst, const std::uint8_t* src, std::int64_t K, std::uint8_t flip);

/// A' rows: row r at data + r*kp; row_sums[r] = sum_k A'[r][k] (int64). Rows are padded to a
/// multiple of 16 and depths to kp; padding holds arbitrary bytes, which is harmless because the
/// packed B' is zero over the depth padding and rows beyond M are never stored.
struct PackedRows {
  std::int64_t rows = 0, kp = 0;
  AlignedBytes bytes;
  AlignedBytes row_sums;

  /// Shapes for `rows` rows of depth kp, reusing the storage when large enough.
  void shape(std::int64_t rows, std::int64_t kp);
  /// Fills row r with ones: its product with B' is B's column sums, computed by the kernel.
  void ones_row(std::int64_t r);
  std::uint8_t* row(std::int64_t r) { return bytes.as<std::uint8_t>() + r * kp; }
  const std::uint8_t* row(std::int64_t r) const { return bytes.as<std::uint8_t>() + r * kp; }
  const std::int64_t* sums() const { return row_sums.as<std::int64_t>(); }
};

/// Packs rows [r0, r1) of the M x K matrix whose element (m, k) is m*row_stride + k*col_stride
/// elements from `data`, into rows [r0, r1) of `out`.
void pack_rows(PackedRows& out, const void* data, DataType type, std::int64_t K,
               std::int64_t row_stride, std::int64_t col_stride, std::int64_t r0, std::int64_t r1);

}  // namespace hk::detail
