// The rows kernels (A' rows against a row-major B read where it lies, no packing) at every
// instruction-set level that has one: every dot product and column sum exact against plain sums,
// both overwritten and added to, over edges in rows, columns (16, 64 and their tails) and depth
// (pairs, quads, eights, their tails); nothing read past A's last row or B's last row and column
// (each ends just before an inaccessible page); nothing written past the tile's columns rounded
// up to 64.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fenced_bytes_test_util.hpp"
#include "isa_test_util.hpp"
#include "qmm_dots_check_test_util.hpp"
#include "schedules/qmm_kernels.hpp"

namespace {

using hk::test::FencedBytes;
using i64 = std::int64_t;

constexpr std::int32_t untouched = 0x5A5A5A5A;

// int32 rows 64-byte aligned, as the kernels require.
struct AlignedInts {
  explicit AlignedInts(i64 n) : bytes(std::size_t(n + 16)) {}
  std::int32_t* data() {
    const auto at = reinterpret_cast<std::uintptr_t>(bytes.data());
    return bytes.data() + (64 - at % 64) % 64 / 4;
  }
  std::vector<std::int32_t> bytes;
};

void check_rows(hk::detail::QmmRowsKernel kernel, i64 rows, i64 cols, i64 depth, std::uint8_t flip, bool accumulate,
                std::mt19937_64& rng) {
  // Rows of A and B a few bytes apart beyond their extent, so that a read past it would pick up a
  // neighbour's bytes; the last one ends at the fence.
  const i64 lda = depth + 3, ldb = cols + 5;
  FencedBytes a_bytes((rows - 1) * lda + depth), b_bytes((depth - 1) * ldb + cols);
  std::uint8_t* const a = a_bytes.data();
  std::uint8_t* const b = b_bytes.data();
  for (i64 i = 0; i < (rows - 1) * lda + depth; ++i) a[i] = std::uint8_t(rng());
  for (i64 i = 0; i < (depth - 1) * ldb + cols; ++i) b[i] = std::uint8_t(rng());

  const i64 written = (cols + 63) / 64 * 64, ldc = written + 64;
  AlignedInts c_ints(rows * ldc), sums_ints(ldc);
  std::int32_t* const c = c_ints.data();
  std::int32_t* const sums = sums_ints.data();
  std::vector<std::int32_t> c_before, sums_before;
  for (i64 e = 0; e < rows * ldc; ++e)
    c[e] = e % ldc < cols && accumulate ? std::int32_t(rng() % 2001) - 1000 : untouched;
  for (i64 j = 0; j < ldc; ++j) sums[j] = j < cols && accumulate ? std::int32_t(rng() % 2001) - 1000 : untouched;
  c_before.assign(c, c + rows * ldc);
  sums_before.assign(sums, sums + ldc);

  kernel({a, lda, rows, b, ldb, flip, cols, depth, c, ldc, sums, accumulate});

  const std::string where = hk::test::dots_case(rows, cols, depth, flip, accumulate);
  const auto b_at = [&](i64 k, i64 j) { return std::int8_t(b[k * ldb + j] ^ flip); };
  hk::test::expect_dots_and_sums(a, lda, rows, cols, depth, b_at, c, c_before.data(), ldc, sums,
                                 sums_before.data(), accumulate, where);
  for (i64 r = 0; r < rows; ++r)
    for (i64 j = written; j < ldc; ++j) EXPECT_EQ(c[r * ldc + j], untouched) << "C written past 64s; " << where;
  for (i64 j = written; j < ldc; ++j) EXPECT_EQ(sums[j], untouched) << "a sum written past 64s; " << where;
}

TEST(QmmRows, EveryDotAndColumnSumExactAndNothingReadPastTheOperands) {
  std::mt19937_64 rng(4242);
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    const hk::detail::QmmRowsKernel kernel = hk::detail::select_qmm_rows(isa);
    // At the portable level strips pack B instead (QmmProperties covers that side).
    EXPECT_EQ(kernel == nullptr, isa == hk::Isa::portable) << hk::name_of(isa);
    if (!kernel) continue;
    for (i64 rows : {1, 2, 3, 5, 12})
      for (i64 cols : {1, 15, 16, 17, 63, 64, 65, 130})
        for (i64 depth : {1, 2, 3, 4, 7, 8, 9, 16, 23, 64})
          for (std::uint8_t flip : {0x00, 0x80})
            check_rows(kernel, rows, cols, depth, flip, (rows + cols + depth) % 2, rng);
  }
}

// Extremes at the depth bound: every product at +-255 * 128 (and the column sums at +-128 per
// depth) stays within int32 over qmm_dots_max_depth.
TEST(QmmRows, ExtremeProductsAtTheDepthBound) {
  const i64 depth = hk::detail::qmm_dots_max_depth;
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    const hk::detail::QmmRowsKernel kernel = hk::detail::select_qmm_rows(isa);
    if (!kernel) continue;
    std::vector<std::uint8_t> a(std::size_t(depth), 255), b(std::size_t(2 * depth));
    for (i64 k = 0; k < depth; ++k) b[std::size_t(2 * k)] = 0x80, b[std::size_t(2 * k + 1)] = 0x7F;  // B' -128 and 127
    AlignedInts c(64), sums(64);
    kernel({a.data(), depth, 1, b.data(), 2, 0, 2, depth, c.data(), 64, sums.data(), false});
    EXPECT_EQ(c.data()[0], -255 * 128 * depth) << hk::name_of(isa);
    EXPECT_EQ(c.data()[1], 255 * 127 * depth) << hk::name_of(isa);
    EXPECT_EQ(sums.data()[0], -128 * depth) << hk::name_of(isa);
    EXPECT_EQ(sums.data()[1], 127 * depth) << hk::name_of(isa);
  }
}

}  // namespace
