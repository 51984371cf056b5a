// The check the dots and rows kernel tests share: every output of a kernel call against plain sums.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "hetkern/info.hpp"

namespace hk::test {

// The case's description in failure messages.
inline std::string dots_case(std::int64_t rows, std::int64_t cols, std::int64_t depth, std::uint8_t flip,
                             bool accumulate) {
  return "rows " + std::to_string(rows) + ", cols " + std::to_string(cols) + ", depth " + std::to_string(depth) +
         ", flip " + std::to_string(flip) + (accumulate ? ", accumulating" : "") + ", isa " +
         hk::name_of(hk::active_isa());
}

// C[r][j] == (C before, when accumulating) + sum_k A'[r][k] * B'[k][j], and col_sums[j] likewise
// with sum_k B'[k][j], for every row and column; B'[k][j] is b_at(k, j). Reports at most three
// wrong outputs.
template <class BAt>
void expect_dots_and_sums(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, std::int64_t cols,
                          std::int64_t depth, BAt b_at, const std::int32_t* c, const std::int32_t* c_before,
                          std::int64_t ldc, const std::int32_t* sums, const std::int32_t* sums_before,
                          bool accumulate, const std::string& where) {
  int wrong = 0;
  for (std::int64_t j = 0; j < cols && wrong < 3; ++j) {
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < depth; ++k) sum += b_at(k, j);
    const std::int32_t want_sum = (accumulate ? sums_before[j] : 0) + sum;
    if (sums[j] != want_sum && ++wrong)
      ADD_FAILURE() << "column " << j << " sum " << sums[j] << ", expected " << want_sum << "; " << where;
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int32_t dot = 0;
      for (std::int64_t k = 0; k < depth; ++k) dot += std::int32_t(a[r * lda + k]) * b_at(k, j);
      const std::int64_t e = r * ldc + j;
      const std::int32_t want = (accumulate ? c_before[e] : 0) + dot;
      if (c[e] != want && ++wrong < 3)
        ADD_FAILURE() << "C[" << r << "][" << j << "] = " << c[e] << ", expected " << want << "; " << where;
    }
  }
}

}  // namespace hk::test
