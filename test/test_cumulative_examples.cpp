// The DirectML documentation examples and every literal case of the specification, under every
// schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "scan_test_util.hpp"

namespace {

using namespace hk;
using hk::test::all_scan_schedules;
using hk::test::float16_t;
using hk::test::label;

template <class T>
std::vector<T> run(bool product, const std::vector<T>& x, std::vector<std::int64_t> sizes,
                   CumulativeOptions o, const Schedule& s, DataType type) {
  std::vector<T> y(x.size());
  const TensorDesc d(type, sizes);
  if (product)
    cumulative_product({d, x.data()}, {d, y.data()}, o, s);
  else
    cumulative_sum({d, x.data()}, {d, y.data()}, o, s);
  return y;
}

struct DocExample {
  int axis;
  Direction direction;
  bool exclusive;
  std::vector<float> sum, product;
};

const std::vector<float> doc_input = {2, 1, 3, 5, 3, 8, 7, 3, 9, 6, 2, 4};

const DocExample doc_examples[] = {
    {3, Direction::increasing, false,
     {2, 3, 6, 11, 3, 11, 18, 21, 9, 15, 17, 21},
     {2, 2, 6, 30, 3, 24, 168, 504, 9, 54, 108, 432}},
    {3, Direction::increasing, true,
     {0, 2, 3, 6, 0, 3, 11, 18, 0, 9, 15, 17},
     {1, 2, 2, 6, 1, 3, 24, 168, 1, 9, 54, 108}},
    {3, Direction::decreasing, false,
     {11, 9, 8, 5, 21, 18, 10, 3, 21, 12, 6, 4},
     {30, 15, 15, 5, 504, 168, 21, 3, 432, 48, 8, 4}},
    {2, Direction::increasing, false,
     {2, 1, 3, 5, 5, 9, 10, 8, 14, 15, 12, 12},
     {2, 1, 3, 5, 6, 8, 21, 15, 54, 48, 42, 60}},
    {3, Direction::decreasing, true,
     {9, 8, 5, 0, 18, 10, 3, 0, 12, 6, 4, 0},
     {15, 15, 5, 1, 168, 21, 3, 1, 48, 8, 4, 1}},
};

TEST(CumulativeExamples, DirectMLDocumentation) {
  for (const auto& s : all_scan_schedules())
    for (const auto& e : doc_examples) {
      const CumulativeOptions o{e.axis, e.direction, e.exclusive};
      EXPECT_EQ(run(false, doc_input, {1, 1, 3, 4}, o, s, DataType::float32), e.sum)
          << label(s) << " axis " << e.axis;
      EXPECT_EQ(run(true, doc_input, {1, 1, 3, 4}, o, s, DataType::float32), e.product)
          << label(s) << " axis " << e.axis;
    }
}

TEST(CumulativeExamples, Int32SumWraps) {
  for (const auto& s : all_scan_schedules())
    EXPECT_EQ(run<std::int32_t>(false, {2147483647, 1}, {2}, {}, s, DataType::int32),
              (std::vector<std::int32_t>{2147483647, std::numeric_limits<std::int32_t>::min()}))
        << label(s);
}

TEST(CumulativeExamples, Uint64SumNeverPassesThroughDouble) {
  const std::uint64_t big = std::uint64_t(1) << 53;
  for (const auto& s : all_scan_schedules())
    EXPECT_EQ(run<std::uint64_t>(false, {big, 1}, {2}, {}, s, DataType::uint64),
              (std::vector<std::uint64_t>{big, big + 1}))
        << label(s);
}

TEST(CumulativeExamples, ExclusiveDecreasingProductWithZero) {
  for (const auto& s : all_scan_schedules())
    EXPECT_EQ(run<float>(true, {2, 0, 3}, {3}, {0, Direction::decreasing, true}, s, DataType::float32),
              (std::vector<float>{0, 3, 1}))
        << label(s);
}

TEST(CumulativeExamples, Float16AccumulatesInFloat32) {
  const std::vector<float16_t> ones(3000, float16_t(1));
  for (const auto& s : all_scan_schedules()) {
    const auto y = run(false, ones, {3000}, {}, s, DataType::float16);
    EXPECT_EQ(float(y.back()), 3000.0f) << label(s);
    EXPECT_EQ(float(y[2047]), 2048.0f) << label(s);
  }
}

// bfloat16 accumulates in float32 (a bfloat16 fold stalls at 256, where 256 + 1 rounds back to
// 256); each output is rounded to nearest even: 3000 lies halfway between 2992 and 3008.
TEST(CumulativeExamples, BFloat16AccumulatesInFloat32) {
  const std::vector<hk::test::bfloat16_t> ones(3000, hk::test::bfloat16_t(1.0f));
  for (const auto& s : all_scan_schedules()) {
    if (hk::test::offload_refuses(DataType::bfloat16, s)) continue;
    const auto y = run(false, ones, {3000}, {}, s, DataType::bfloat16);
    EXPECT_EQ(float(y[299]), 300.0f) << label(s);
    EXPECT_EQ(float(y.back()), 3008.0f) << label(s);
  }
}

// float64 accumulates in double-double: each output is the exact prefix rounded once, where a
// float64 fold loses the ones next to 2^53 and drifts over a million tenths.
TEST(CumulativeExamples, Float64AccumulatesBeyondDouble) {
  const double big = 0x1p53;
  // fl(0.1) = m * 2^-56; the exact sums k * m are integers, rounded once by the conversion.
  const std::int64_t m = 0x1999999999999a;
  const std::vector<double> tenths(1000000, 0.1);
  for (const auto& s : all_scan_schedules()) {
    if (hk::test::offload_refuses(DataType::float64, s)) continue;
    EXPECT_EQ(run<double>(false, {big, 1, 1, -big}, {4}, {}, s, DataType::float64),
              (std::vector<double>{big, big, big + 2, 2}))
        << label(s);
    const auto y = run(false, tenths, {1000000}, {}, s, DataType::float64);
    for (std::int64_t k : {10, 1000, 1000000})
      EXPECT_EQ(y[std::size_t(k - 1)], std::ldexp(double(__int128(m) * k), -56)) << label(s) << " " << k;
  }
}

TEST(CumulativeExamples, ExclusiveLineOfLengthOneIsTheIdentity) {
  for (const auto& s : all_scan_schedules()) {
    EXPECT_EQ(run<float>(false, {7, 8}, {2, 1}, {1, Direction::increasing, true}, s, DataType::float32),
              (std::vector<float>{0, 0}))
        << label(s);
    EXPECT_EQ(run<std::int64_t>(true, {7, 8}, {2, 1}, {1, Direction::decreasing, true}, s, DataType::int64),
              (std::vector<std::int64_t>{1, 1}))
        << label(s);
  }
}

TEST(CumulativeExamples, MillionTenthsSumToOneHundredThousand) {
  const std::vector<float> x(1000000, 0.1f);
  for (const auto& s : all_scan_schedules()) {
    const auto y = run(false, x, {1000000}, {}, s, DataType::float32);
    EXPECT_EQ(y.back(), 100000.0f) << label(s);
  }
}

TEST(CumulativeExamples, SpecialValuesPropagate) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& s : all_scan_schedules()) {
    const auto y = run<float>(false, {inf, -inf, 1}, {3}, {}, s, DataType::float32);
    EXPECT_EQ(y[0], inf) << label(s);
    EXPECT_TRUE(std::isnan(y[1]) && std::isnan(y[2])) << label(s);
    const auto p = run<float>(true, {0, inf, 2}, {3}, {}, s, DataType::float32);
    EXPECT_EQ(p[0], 0.0f) << label(s);
    EXPECT_TRUE(std::isnan(p[1]) && std::isnan(p[2])) << label(s);
  }
}

TEST(CumulativeExamples, NegativeZeroSurvivesInclusiveSums) {
  const std::vector<float> x(40, -0.0f);  // long enough to span several blocks of 16
  for (const auto& s : all_scan_schedules()) {
    const auto y = run(false, x, {40}, {}, s, DataType::float32);
    for (float v : y) EXPECT_TRUE(v == 0.0f && std::signbit(v)) << label(s);
    const auto e = run(false, x, {40}, {0, Direction::increasing, true}, s, DataType::float32);
    for (float v : e) EXPECT_TRUE(v == 0.0f && !std::signbit(v)) << label(s);
  }
}

TEST(CumulativeExamples, Rank8WithAxisFirstAndLast) {
  const std::vector<std::int64_t> sizes = {2, 1, 3, 1, 2, 1, 1, 3};
  std::vector<std::int32_t> x(36);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(i + 1);
  for (const auto& s : all_scan_schedules()) {
    const auto last = run(false, x, sizes, {7}, s, DataType::int32);
    const auto first = run(false, x, sizes, {0}, s, DataType::int32);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t q = i % 3;  // position along the last axis
      std::int32_t expect_last = 0;
      for (std::size_t k = 0; k <= q; ++k) expect_last += x[i - q + k];
      EXPECT_EQ(last[i], expect_last) << label(s) << " at " << i;
      const std::int32_t expect_first = i < 18 ? x[i] : x[i] + x[i - 18];
      EXPECT_EQ(first[i], expect_first) << label(s) << " at " << i;
    }
  }
}

}  // namespace
