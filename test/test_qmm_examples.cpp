// The literal cases of docs/operators.md ("Cases every implementation must pass") for
// QuantizedLinearMatMul, each run under every schedule the library offers (hk::strategies, bare,
// with minimum/maximum/odd parameters, and the empty schedule), plus batched (rank 3 and 4),
// broadcast and strided variants of the uint8 example whose expected values follow from the
// literal 2-D result. The oracle of qmm_test_util.hpp is checked against the same literals, which
// is what entitles the property tests to trust it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "qmm_test_util.hpp"

namespace {

using hk::DataType;
using qmmt::Buffer;
using qmmt::i64;
using qmmt::literal_f;
using qmmt::literal_q;
using qmmt::Problem;

std::mt19937_64& rng() {
  static std::mt19937_64 r(0x51AB5EEDu);
  return r;
}

/// Checks the literal `expected` (row-major over the output, cycled over batches) against the
/// oracle, then against every schedule.
void expect_everywhere(Problem& p, const std::vector<int>& expected) {
  qmmt::Expected e;
  e.acc = qmmt::oracle_accumulators(p);
  for (std::size_t i = 0; i < e.acc.size(); ++i) {
    e.lo.push_back(expected[i % expected.size()]);
    e.hi.push_back(expected[i % expected.size()]);
  }
  // The oracle must reproduce the spec's literal results exactly (no tolerance needed).
  const qmmt::Expected o = qmmt::oracle(p, false);
  EXPECT_EQ(o.lo, e.lo) << "the test oracle disagrees with the spec example";
  const auto schedules = qmmt::test_schedules(rng());
  ASSERT_GE(schedules.size(), 3u);
  qmmt::check_all(p, schedules, e);
}

// ---- uint8 2-D example ----------------------------------------------------------------------

const std::vector<int> ex_a = {208, 236, 0, 238, 3, 214, 255, 29};
const std::vector<int> ex_b = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
const std::vector<int> ex_y = {168, 115, 255, 1, 66, 151};

/// The uint8 example with batch sizes `batch` in front; every batch holds the same matrices.
Problem uint8_example(const std::vector<i64>& batch, std::vector<i64> a_strides = {},
                      std::vector<i64> b_strides = {}, std::vector<i64> y_strides = {}) {
  auto with = [&](std::vector<i64> tail) {
    std::vector<i64> s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  Problem p;
  p.batch = batch;
  p.M = 2, p.K = 4, p.N = 3;
  p.a = literal_q(DataType::uint8, with({2, 4}), ex_a, rng(), std::move(a_strides));
  p.b = literal_q(DataType::uint8, with({4, 3}), ex_b, rng(), std::move(b_strides));
  p.y = Buffer(DataType::uint8, with({2, 3}), std::move(y_strides), rng());
  p.a_scale = literal_f({1}, {0.0066f}, rng());
  p.b_scale = literal_f({1}, {0.00705f}, rng());
  p.y_scale = literal_f({1}, {0.0107f}, rng());
  p.a_zero = literal_q(DataType::uint8, {1}, {113}, rng());
  p.b_zero = literal_q(DataType::uint8, {1}, {114}, rng());
  p.y_zero = literal_q(DataType::uint8, {1}, {118}, rng());
  return p;
}

TEST(QmmExamples, Uint8TwoD) {
  Problem p = uint8_example({});
  expect_everywhere(p, ex_y);
}

TEST(QmmExamples, Uint8Rank3) {
  Problem p = uint8_example({3});
  expect_everywhere(p, ex_y);
}

TEST(QmmExamples, Uint8Rank4) {
  Problem p = uint8_example({2, 3});
  expect_everywhere(p, ex_y);
}

// Batches that differ: batch 1 holds A with its two rows swapped, so its output rows swap too.
TEST(QmmExamples, Uint8Rank3DistinctBatches) {
  Problem p = uint8_example({2});
  std::vector<int> a = ex_a;
  a.insert(a.end(), {3, 214, 255, 29, 208, 236, 0, 238});
  p.a = literal_q(DataType::uint8, {2, 2, 4}, a, rng());
  expect_everywhere(p, {168, 115, 255, 1, 66, 151, 1, 66, 151, 168, 115, 255});
}

// Rank 4 with B broadcast over both batch dimensions through stride 0 (one copy in memory), and
// with A broadcast over the first one only.
TEST(QmmExamples, Uint8Rank4BroadcastBatches) {
  Problem p = uint8_example({2, 3}, {0, 8, 4, 1}, {0, 0, 3, 1});
  expect_everywhere(p, ex_y);
}

// Parameters given at ranks 2 to 4 ({1,1}, {1,1,1}, {1,1,1,1}) mean the same per-tensor values.
TEST(QmmExamples, Uint8Rank4HighRankParameters) {
  Problem p = uint8_example({1, 2});
  p.a_scale = literal_f({1, 1, 1, 1}, {0.0066f}, rng());
  p.b_scale = literal_f({1, 1}, {0.00705f}, rng());
  p.y_scale = literal_f({1, 1, 1}, {0.0107f}, rng());
  p.a_zero = literal_q(DataType::uint8, {1, 1}, {113}, rng());
  p.b_zero = literal_q(DataType::uint8, {1, 1, 1, 1}, {114}, rng());
  p.y_zero = literal_q(DataType::uint8, {1, 1, 1}, {118}, rng());
  expect_everywhere(p, ex_y);
}

// Column-major A and B with padding, and a transposed, padded output.
TEST(QmmExamples, Uint8TransposedAndPadded) {
  Problem p = uint8_example({}, {1, 3}, {1, 5}, {1, 4});
  expect_everywhere(p, ex_y);
}

// ---- ties -------------------------------------------------------------------------------------

Problem ties(int zy, bool explicit_zero_points) {
  Problem p;
  p.M = 4, p.K = 1, p.N = 1;
  p.a = literal_q(DataType::uint8, {4, 1}, {1, 3, 5, 7}, rng());
  p.b = literal_q(DataType::uint8, {1, 1}, {1}, rng());
  p.y = Buffer(DataType::uint8, {4, 1}, {}, rng());
  p.a_scale = literal_f({1}, {0.5f}, rng());
  p.b_scale = literal_f({1}, {1.0f}, rng());
  p.y_scale = literal_f({1}, {1.0f}, rng());
  p.y_zero = literal_q(DataType::uint8, {1}, {zy}, rng());
  if (explicit_zero_points) {  // a present zero point of 0 must mean the same as an absent one
    p.a_zero = literal_q(DataType::uint8, {1}, {0}, rng());
    p.b_zero = literal_q(DataType::uint8, {1}, {0}, rng());
  }
  return p;
}

// 0.5, 1.5, 2.5, 3.5 round half to even: 0, 2, 2, 4; the zero point is added after rounding.
TEST(QmmExamples, TiesZeroPoint0) {
  Problem p = ties(0, false);
  expect_everywhere(p, {0, 2, 2, 4});
}

TEST(QmmExamples, TiesZeroPoint1) {
  Problem p = ties(1, false);
  expect_everywhere(p, {1, 3, 3, 5});
}

TEST(QmmExamples, TiesWithExplicitZeroZeroPoints) {
  Problem p0 = ties(0, true);
  expect_everywhere(p0, {0, 2, 2, 4});
  Problem p1 = ties(1, true);
  expect_everywhere(p1, {1, 3, 3, 5});
}

// Without an output zero point at all (absent = 0).
TEST(QmmExamples, TiesWithoutOutputZeroPoint) {
  Problem p = ties(0, false);
  p.y_zero.reset();
  expect_everywhere(p, {0, 2, 2, 4});
}

// ---- saturation ------------------------------------------------------------------------------

Problem saturation(DataType t, int value) {
  Problem p;
  p.M = 1, p.K = 2, p.N = 1;
  p.a = literal_q(t, {1, 2}, {value, value}, rng());
  p.b = literal_q(t, {2, 1}, {1, 1}, rng());
  p.y = Buffer(t, {1, 1}, {}, rng());
  p.a_scale = literal_f({1}, {1.0f}, rng());
  p.b_scale = literal_f({1}, {1.0f}, rng());
  p.y_scale = literal_f({1}, {1.0f}, rng());
  return p;
}

TEST(QmmExamples, SaturationUint8) {
  Problem p = saturation(DataType::uint8, 200);  // 400 -> 255
  expect_everywhere(p, {255});
}

TEST(QmmExamples, SaturationInt8) {
  Problem p = saturation(DataType::int8, -100);  // -200 -> -128
  expect_everywhere(p, {-128});
}

// ---- per-row A and output, per-column B -----------------------------------------------------

Problem per_row_example() {
  Problem p;
  p.M = 2, p.K = 2, p.N = 2;
  p.a = literal_q(DataType::uint8, {2, 2}, {10, 20, 30, 40}, rng());
  p.a_zero = literal_q(DataType::uint8, {2, 1}, {10, 20}, rng());
  p.a_scale = literal_f({2, 1}, {0.5f, 0.25f}, rng());
  p.b = literal_q(DataType::uint8, {2, 2}, {1, 2, 3, 4}, rng());
  p.b_zero = literal_q(DataType::uint8, {1, 2}, {1, 2}, rng());
  p.b_scale = literal_f({1, 2}, {1.0f, 2.0f}, rng());
  p.y_scale = literal_f({2, 1}, {4.0f, 2.0f}, rng());
  p.y_zero = literal_q(DataType::uint8, {2, 1}, {100, 0}, rng());
  p.y = Buffer(DataType::uint8, {2, 2}, {}, rng());
  return p;
}

TEST(QmmExamples, PerRowAAndOutputPerColumnB) {
  Problem p = per_row_example();
  expect_everywhere(p, {102, 105, 5, 10});
}

// The same values given at other right-aligned ranks: {1,1,M,1}, {1,N} as rank 1 {N}, {1,M,1},
// with padded strides on the parameter tensors.
TEST(QmmExamples, PerRowAAndOutputPerColumnBOtherRanks) {
  Problem p = per_row_example();
  p.a_zero = literal_q(DataType::uint8, {1, 1, 2, 1}, {10, 20}, rng(), {7, 7, 3, 1});
  p.a_scale = literal_f({1, 2, 1}, {0.5f, 0.25f}, rng(), {9, 2, 5});
  p.b_zero = literal_q(DataType::uint8, {2}, {1, 2}, rng(), {2});
  p.b_scale = literal_f({1, 1, 1, 2}, {1.0f, 2.0f}, rng(), {0, 0, 0, 3});
  p.y_scale = literal_f({1, 1, 2, 1}, {4.0f, 2.0f}, rng());
  p.y_zero = literal_q(DataType::uint8, {1, 2, 1}, {100, 0}, rng(), {1, 4, 1});
  expect_everywhere(p, {102, 105, 5, 10});
}

// The strategies the examples ran under are the ones the library documents.
TEST(QmmExamples, StrategiesListed) {
  std::vector<std::string> names;
  for (const auto& s : hk::strategies(hk::Operator::quantized_linear_matmul)) names.push_back(s.name);
  for (const char* expected : {"reference", "qmm.tiled", "qmm.parallel"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

}  // namespace
