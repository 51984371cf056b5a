// The dots kernels (A' rows against B's contiguous columns, no packing) at every instruction-set
// level: every dot product and column sum exact against plain sums, both overwritten and added
// to, over tile edges in rows, columns and depth (the vector widths, their tails); nothing read past
// A's last row or B's last column (each ends just before an inaccessible page); nothing written
// outside the tile's outputs.
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

void check_dots(i64 rows, i64 cols, i64 depth, std::uint8_t flip, bool accumulate, std::mt19937_64& rng) {
  // Rows and columns a few bytes apart beyond their depth, so that a read past the depth would
  // pick up a neighbour's bytes; the last one ends at the fence.
  const i64 lda = depth + 3, ldb = depth + 5;
  FencedBytes a_bytes((rows - 1) * lda + depth), b_bytes((cols - 1) * ldb + depth);
  std::uint8_t* const a = a_bytes.data();
  std::uint8_t* const b = b_bytes.data();
  for (i64 i = 0; i < (rows - 1) * lda + depth; ++i) a[i] = std::uint8_t(rng());
  for (i64 i = 0; i < (cols - 1) * ldb + depth; ++i) b[i] = std::uint8_t(rng());

  const i64 ldc = cols + 2;
  std::vector<std::int32_t> c(std::size_t(rows * ldc), untouched), sums(std::size_t(cols + 1), untouched);
  std::vector<std::int32_t> c_before(c.size()), sums_before(sums.size());
  for (i64 r = 0; r < rows; ++r)
    for (i64 j = 0; j < cols; ++j) c[std::size_t(r * ldc + j)] = accumulate ? std::int32_t(rng() % 2001) - 1000 : untouched;
  for (i64 j = 0; j < cols; ++j) sums[std::size_t(j)] = accumulate ? std::int32_t(rng() % 2001) - 1000 : untouched;
  c_before = c;
  sums_before = sums;

  const hk::detail::QmmDotsTile tile{a, lda, rows, b, ldb, flip, cols, depth, c.data(), ldc, sums.data(), accumulate};
  hk::detail::select_qmm_dots(hk::active_isa())(tile);

  const std::string where = hk::test::dots_case(rows, cols, depth, flip, accumulate);
  const auto b_at = [&](i64 k, i64 j) { return std::int8_t(b[j * ldb + k] ^ flip); };
  hk::test::expect_dots_and_sums(a, lda, rows, cols, depth, b_at, c.data(), c_before.data(), ldc, sums.data(),
                                 sums_before.data(), accumulate, where);
  for (i64 r = 0; r < rows; ++r)
    for (i64 j = cols; j < ldc; ++j) EXPECT_EQ(c[std::size_t(r * ldc + j)], untouched) << "C padding written; " << where;
  EXPECT_EQ(sums[std::size_t(cols)], untouched) << "a sum past the columns written; " << where;
}

TEST(QmmDots, EveryDotAndColumnSumExactAndNothingReadPastTheOperands) {
  std::mt19937_64 rng(1729);
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (i64 rows : {1, 2, 4, 5, 6, 7, 11, 12, 13})
      for (i64 cols : {1, 2, 3, 4, 5, 9})
        for (i64 depth : {1, 15, 16, 17, 63, 64, 65, 130})
          for (std::uint8_t flip : {0x00, 0x80}) check_dots(rows, cols, depth, flip, (rows + cols + depth) % 2, rng);
  }
}

// Extremes at the depth bound: every product at +-255 * 128 (and the column sums at +-128 per
// depth) stays within int32 over qmm_dots_max_depth.
TEST(QmmDots, ExtremeProductsAtTheDepthBound) {
  const i64 depth = hk::detail::qmm_dots_max_depth;
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    std::vector<std::uint8_t> a(std::size_t(depth), 255), b(std::size_t(2 * depth));
    for (i64 k = 0; k < depth; ++k) b[std::size_t(k)] = 0x80, b[std::size_t(depth + k)] = 0x7F;  // B' -128 and 127
    std::int32_t c[2] = {}, sums[2] = {};
    hk::detail::select_qmm_dots(isa)({a.data(), depth, 1, b.data(), depth, 0, 2, depth, c, 2, sums, false});
    EXPECT_EQ(c[0], -255 * 128 * depth) << hk::name_of(isa);
    EXPECT_EQ(c[1], 255 * 127 * depth) << hk::name_of(isa);
    EXPECT_EQ(sums[0], -128 * depth) << hk::name_of(isa);
    EXPECT_EQ(sums[1], 127 * depth) << hk::name_of(isa);
  }
}

}  // namespace
