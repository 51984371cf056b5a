// Validation of QuantizedLinearMatMul: one test per rule of docs/operators.md (and the rules marked
// "ours"). Each starts from a valid call (checked in SetUp), breaks exactly one thing, and checks
// the hk::Error: its code, that op() and what() name "quantized_linear_matmul", the subject (the
// tensor or schedule at fault) and a key phrase of the rule. Every byte of every buffer, the
// sentinel-filled output above all, must be unchanged afterwards: nothing is written on an error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hetkern/hetkern.hpp"

namespace {

using hk::DataType;
using hk::Errc;
using hk::TensorDesc;
using i64 = std::int64_t;

constexpr const char* op_name = "quantized_linear_matmul";
constexpr DataType all_types[] = {DataType::float16, DataType::float32, DataType::int8,   DataType::uint8,
                                  DataType::int32,   DataType::uint32,  DataType::int64,  DataType::uint64};

class QmmValidation : public ::testing::Test {
 protected:
  static constexpr i64 M = 2, K = 3, N = 4;
  static constexpr unsigned char sentinel = 0xA5;

  // Generous storage so that descriptors made larger by a test still describe owned memory.
  std::vector<unsigned char> a_mem, b_mem, zero_mem, out_mem;
  std::vector<float> float_mem;

  hk::QuantizedMatMulArgs args;
  hk::Tensor out;

  float* a_scale_data() { return &float_mem[0]; }
  float* b_scale_data() { return &float_mem[64]; }
  float* y_scale_data() { return &float_mem[128]; }

  /// Fresh memory and a valid call; tests call it again to start over with another mutation.
  void SetUp() override {
    a_mem.assign(512, 7);
    b_mem.assign(512, 9);
    zero_mem.assign(256, 3);
    float_mem.assign(256, 0.5f);
    out_mem.assign(512, sentinel);
    args.a = {TensorDesc(DataType::uint8, {M, K}), a_mem.data()};
    args.b = {TensorDesc(DataType::uint8, {K, N}), b_mem.data()};
    args.a_scale = {TensorDesc(DataType::float32, {1}), a_scale_data()};
    args.b_scale = {TensorDesc(DataType::float32, {1}), b_scale_data()};
    args.output_scale = {TensorDesc(DataType::float32, {1}), y_scale_data()};
    args.a_zero_point = hk::ConstTensor{TensorDesc(DataType::uint8, {1}), &zero_mem[0]};
    args.b_zero_point = hk::ConstTensor{TensorDesc(DataType::uint8, {1}), &zero_mem[64]};
    args.output_zero_point = hk::ConstTensor{TensorDesc(DataType::uint8, {1}), &zero_mem[128]};
    out = {TensorDesc(DataType::uint8, {M, N}), out_mem.data() + 64};
    // The unbroken call is valid (into a separate buffer, so out_mem keeps its sentinel).
    std::vector<unsigned char> scratch(M * N);
    ASSERT_NO_THROW(hk::quantized_linear_matmul(args, {out.desc, scratch.data()}));
    ASSERT_NO_THROW(hk::quantized_linear_matmul(args, {out.desc, scratch.data()}, hk::Schedule("qmm.tiled")));
  }

  std::vector<std::vector<unsigned char>> snapshot() const {
    std::vector<unsigned char> floats(float_mem.size() * sizeof(float));
    std::memcpy(floats.data(), float_mem.data(), floats.size());
    return {a_mem, b_mem, zero_mem, floats, out_mem};
  }

  /// The call must throw hk::Error(code) naming `subject` and containing `phrase`, and change nothing.
  void expect_rejected(Errc code, const std::string& subject, const std::string& phrase,
                       const hk::Schedule& schedule = {}) {
    const auto before = snapshot();
    try {
      hk::quantized_linear_matmul(args, out, schedule);
      ADD_FAILURE() << "accepted; expected an error on " << subject << " (" << phrase << ")";
    } catch (const hk::Error& e) {
      EXPECT_EQ(int(e.code()), int(code)) << e.what();
      EXPECT_EQ(e.op(), op_name) << e.what();
      EXPECT_EQ(e.subject(), subject) << e.what();
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(op_name) + ": " + subject + ": "), std::string::npos) << what;
      EXPECT_NE(e.rule().find(phrase), std::string::npos) << "rule '" << e.rule() << "' lacks '" << phrase << "'";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw something other than hk::Error: " << e.what();
    }
    const auto after = snapshot();
    EXPECT_TRUE(after[4] == before[4]) << "the output buffer was written";
    EXPECT_TRUE(after == before) << "an input buffer was written";
  }

  /// The call must succeed (positive controls next to a rule's boundary).
  void expect_accepted(const hk::Schedule& schedule = {}) {
    EXPECT_NO_THROW(hk::quantized_linear_matmul(args, out, schedule));
  }
};

// ---- types -----------------------------------------------------------------------------------

TEST_F(QmmValidation, AMustBeInt8OrUint8) {
  for (DataType t : all_types) {
    if (t == DataType::int8 || t == DataType::uint8) continue;
    args.a.desc = TensorDesc(t, {M, K});
    expect_rejected(Errc::invalid_type, "a", "is not int8 or uint8");
  }
}

TEST_F(QmmValidation, BMustBeInt8OrUint8) {
  for (DataType t : all_types) {
    if (t == DataType::int8 || t == DataType::uint8) continue;
    args.b.desc = TensorDesc(t, {K, N});
    expect_rejected(Errc::invalid_type, "b", "is not int8 or uint8");
  }
}

TEST_F(QmmValidation, OutputMustBeInt8OrUint8) {
  for (DataType t : all_types) {
    if (t == DataType::int8 || t == DataType::uint8) continue;
    out.desc = TensorDesc(t, {M, N});
    expect_rejected(Errc::invalid_type, "output", "is not int8 or uint8");
  }
}

// A zero point has its tensor's type: int8 beside uint8 (or anything else) is an error.
TEST_F(QmmValidation, ZeroPointTypeMustMatchItsTensor) {
  for (DataType t : all_types) {
    if (t == DataType::uint8) continue;
    SCOPED_TRACE(std::string(hk::name_of(t)));
    SetUp();
    args.a_zero_point->desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "a_zero_point", "differs from a's uint8");
    SetUp();
    args.b_zero_point->desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "b_zero_point", "differs from b's uint8");
    SetUp();
    args.output_zero_point->desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "output_zero_point", "differs from output's uint8");
  }
  // And the other way round: an int8 tensor with a uint8 zero point.
  SetUp();
  args.b.desc = TensorDesc(DataType::int8, {K, N});
  expect_rejected(Errc::invalid_type, "b_zero_point", "differs from b's int8");
}

TEST_F(QmmValidation, ScalesMustBeFloat32OrFloat16) {
  for (DataType t : all_types) {
    if (t == DataType::float32 || t == DataType::float16) continue;
    SCOPED_TRACE(std::string(hk::name_of(t)));
    SetUp();
    args.a_scale.desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "a_scale", "is not float32 or float16");
    SetUp();
    args.b_scale.desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "b_scale", "is not float32 or float16");
    SetUp();
    args.output_scale.desc = TensorDesc(t, {1});
    expect_rejected(Errc::invalid_type, "output_scale", "is not float32 or float16");
  }
}

// A float16 scale is its value widened to float32: negative, zero, infinite and NaN ones are
// refused like float32 ones, the index named.
TEST_F(QmmValidation, Float16ScaleValuesMustBePositiveAndFinite) {
  for (const float bad : {-0.5f, 0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(std::to_string(bad));
    SetUp();
    const _Float16 values[N] = {_Float16(0.5f), _Float16(bad), _Float16(0.5f), _Float16(0.5f)};
    std::memcpy(b_scale_data(), values, sizeof values);
    args.b_scale.desc = TensorDesc(DataType::float16, {1, N});
    expect_rejected(Errc::invalid_parameter, "b_scale", "at index 1");
  }
}

// ---- ranks and sizes -------------------------------------------------------------------------

TEST_F(QmmValidation, RankOutsideTwoToFour) {
  args.a.desc = TensorDesc(DataType::uint8, {K});
  expect_rejected(Errc::invalid_shape, "a", "outside the allowed 2 to 4");
  SetUp();
  args.a.desc = TensorDesc(DataType::uint8, {1, 1, 1, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {1, 1, 1, K, N});
  out.desc = TensorDesc(DataType::uint8, {1, 1, 1, M, N});
  expect_rejected(Errc::invalid_shape, "a", "outside the allowed 2 to 4");
  SetUp();
  args.b.desc = TensorDesc(DataType::uint8, {N});
  expect_rejected(Errc::invalid_shape, "b", "outside the allowed 2 to 4");
  SetUp();
  out.desc = TensorDesc(DataType::uint8, {1, 1, 1, 1, M * N});
  expect_rejected(Errc::invalid_shape, "output", "outside the allowed 2 to 4");
}

// The output's rank is the larger of A's and B's, as numpy.matmul's.
TEST_F(QmmValidation, OutputHasTheLargerRank) {
  args.b.desc = TensorDesc(DataType::uint8, {1, K, N});
  expect_rejected(Errc::invalid_shape, "output", "differs from the larger of a's 2 and b's 3");
  out.desc = TensorDesc(DataType::uint8, {1, M, N});
  expect_accepted();
  SetUp();
  out.desc = TensorDesc(DataType::uint8, {1, M, N});
  expect_rejected(Errc::invalid_shape, "output", "differs from the larger of a's 2 and b's 2");
}

// Batch sizes broadcast as in numpy.matmul: right-aligned, each pair equal or one of them 1.
TEST_F(QmmValidation, BatchSizesBroadcastAsInNumpy) {
  args.a.desc = TensorDesc(DataType::uint8, {2, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {3, K, N});
  out.desc = TensorDesc(DataType::uint8, {2, M, N});
  expect_rejected(Errc::invalid_shape, "b", "do not broadcast against a's");
  args.b.desc = TensorDesc(DataType::uint8, {1, K, N});
  expect_accepted();
  args.b.desc = TensorDesc(DataType::uint8, {K, N});
  expect_accepted();
  args.b.desc = TensorDesc(DataType::uint8, {2, K, N});
  out.desc = TensorDesc(DataType::uint8, {3, M, N});
  expect_rejected(Errc::invalid_shape, "output", "broadcast together");
  out.desc = TensorDesc(DataType::uint8, {1, M, N});
  expect_rejected(Errc::invalid_shape, "output", "broadcast together");
  // Rank 4, second batch dimension.
  args.a.desc = TensorDesc(DataType::uint8, {2, 2, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {2, 3, K, N});
  out.desc = TensorDesc(DataType::uint8, {2, 2, M, N});
  expect_rejected(Errc::invalid_shape, "b", "do not broadcast against a's");
  // Each operand broadcast along a different dimension, and B of lower rank.
  args.a.desc = TensorDesc(DataType::uint8, {2, 1, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {3, K, N});
  out.desc = TensorDesc(DataType::uint8, {2, 3, M, N});
  expect_accepted();
  out.desc = TensorDesc(DataType::uint8, {2, 1, M, N});
  expect_rejected(Errc::invalid_shape, "output", "broadcast together");
  // The same with B broadcast by stride 0 is fine too.
  args.a.desc = TensorDesc(DataType::uint8, {2, 2, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {2, 2, K, N}, {0, 0, N, 1});
  out.desc = TensorDesc(DataType::uint8, {2, 2, M, N});
  expect_accepted();
}

// A packed B is one matrix for every batch, or one per output batch: a B packed with batches
// that broadcast against A's cannot be indexed by the output's batches.
TEST_F(QmmValidation, PackedBBroadcastsOnlyAsAWhole) {
  args.a.desc = TensorDesc(DataType::uint8, {2, 1, M, K});
  out.desc = TensorDesc(DataType::uint8, {2, 3, M, N});
  const hk::PackedB per_batch = hk::pack_b({TensorDesc(DataType::uint8, {3, K, N}), b_mem.data()});
  args.b = {};
  args.packed_b = &per_batch;
  expect_rejected(Errc::invalid_shape, "packed_b", "pass b unpacked");
  const hk::PackedB shared = hk::pack_b({TensorDesc(DataType::uint8, {3, K, N}, {0, N, 1}), b_mem.data()});
  args.packed_b = &shared;
  expect_accepted();
  args.a.desc = TensorDesc(DataType::uint8, {2, 3, M, K});
  const hk::PackedB one = hk::pack_b({TensorDesc(DataType::uint8, {1, K, N}), b_mem.data()});
  args.packed_b = &one;
  expect_accepted();
  const hk::PackedB full = hk::pack_b({TensorDesc(DataType::uint8, {2, 3, K, N}), b_mem.data()});
  args.packed_b = &full;
  expect_accepted();
}

TEST_F(QmmValidation, InnerDimensionsMustAgree) {
  args.b.desc = TensorDesc(DataType::uint8, {K + 1, N});
  expect_rejected(Errc::invalid_shape, "b", "need K = 3");
}

TEST_F(QmmValidation, OutputSizesMustBeMByN) {
  for (auto sizes : {std::vector<i64>{M, N + 1}, std::vector<i64>{M + 1, N}, std::vector<i64>{N, M}}) {
    out.desc = TensorDesc(DataType::uint8, sizes);
    expect_rejected(Errc::invalid_shape, "output", "differ from {..., M, N}");
  }
}

TEST_F(QmmValidation, SizesMustBePositive) {
  args.a.desc = TensorDesc(DataType::uint8, {0, K});
  expect_rejected(Errc::invalid_shape, "a", "is not positive");
  SetUp();
  args.b.desc = TensorDesc(DataType::uint8, {K, 0});
  expect_rejected(Errc::invalid_shape, "b", "is not positive");
  SetUp();
  args.b_scale.desc = TensorDesc(DataType::float32, {0});
  expect_rejected(Errc::invalid_shape, "b_scale", "is not positive");
}

// ---- parameter shapes ------------------------------------------------------------------------

// Per-row parameters are {M,1} (not {1,M} nor {M}); per-column are {1,N} or {N} (not {N,1}).
TEST_F(QmmValidation, ParameterShapeNeitherPerTensorNorPerRowOrColumn) {
  struct Case {
    const char* subject;
    std::vector<i64> sizes;
  };
  for (const Case& c : {Case{"a_scale", {1, M}}, Case{"a_scale", {M}}, Case{"a_scale", {M + 1, 1}},
                        Case{"a_scale", {M, 2}}, Case{"b_scale", {N, 1}}, Case{"b_scale", {N + 1}},
                        Case{"b_scale", {2, N}}, Case{"output_scale", {1, N}}, Case{"output_scale", {M + 1, 1}},
                        Case{"a_zero_point", {1, M}}, Case{"b_zero_point", {1, 1, N, 1}},
                        Case{"output_zero_point", {M, 2}}}) {
    SCOPED_TRACE(std::string(c.subject) + " " + std::to_string(c.sizes.size()));
    SetUp();
    const std::string s = c.subject;
    if (s == "a_scale") args.a_scale.desc = TensorDesc(DataType::float32, c.sizes);
    if (s == "b_scale") args.b_scale.desc = TensorDesc(DataType::float32, c.sizes);
    if (s == "output_scale") args.output_scale.desc = TensorDesc(DataType::float32, c.sizes);
    if (s == "a_zero_point") args.a_zero_point->desc = TensorDesc(DataType::uint8, c.sizes);
    if (s == "b_zero_point") args.b_zero_point->desc = TensorDesc(DataType::uint8, c.sizes);
    if (s == "output_zero_point") args.output_zero_point->desc = TensorDesc(DataType::uint8, c.sizes);
    expect_rejected(Errc::invalid_shape, s, "neither per-tensor");
  }
}

TEST_F(QmmValidation, ParameterLeadingDimensionsMustBeOne) {
  args.a_scale.desc = TensorDesc(DataType::float32, {2, M, 1});
  expect_rejected(Errc::invalid_shape, "a_scale", "leading dimension other than 1");
  SetUp();
  args.b_zero_point->desc = TensorDesc(DataType::uint8, {2, 1, N});
  expect_rejected(Errc::invalid_shape, "b_zero_point", "leading dimension other than 1");
  SetUp();
  args.output_scale.desc = TensorDesc(DataType::float32, {1, 2, 1, 1});
  expect_rejected(Errc::invalid_shape, "output_scale", "leading dimension other than 1");
}

TEST_F(QmmValidation, ParameterRankOutsideOneToFour) {
  args.a_scale.desc = TensorDesc(DataType::float32, {1, 1, 1, 1, 1});
  expect_rejected(Errc::invalid_shape, "a_scale", "outside the allowed 1 to 4");
  SetUp();
  args.output_zero_point->desc = TensorDesc(DataType::uint8, std::span<const i64>{});
  expect_rejected(Errc::invalid_shape, "output_zero_point", "outside the allowed 1 to 4");
}

// ---- scale values ----------------------------------------------------------------------------

// Scales are positive and finite (ours): 0, -0, negatives, NaN and infinities are errors.
TEST_F(QmmValidation, ScaleValuesMustBePositiveAndFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -0.0f, -1.0f, -std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::quiet_NaN(), inf, -inf}) {
    SCOPED_TRACE(std::to_string(bad));
    SetUp();
    *a_scale_data() = bad;
    expect_rejected(Errc::invalid_parameter, "a_scale", "is not a positive finite number");
    SetUp();
    *b_scale_data() = bad;
    expect_rejected(Errc::invalid_parameter, "b_scale", "is not a positive finite number");
    SetUp();
    *y_scale_data() = bad;
    expect_rejected(Errc::invalid_parameter, "output_scale", "is not a positive finite number");
  }
}

// Every value of a per-row / per-column scale is checked, not only the first.
TEST_F(QmmValidation, EveryScaleValueIsChecked) {
  args.a_scale.desc = TensorDesc(DataType::float32, {M, 1});
  a_scale_data()[M - 1] = std::numeric_limits<float>::quiet_NaN();
  expect_rejected(Errc::invalid_parameter, "a_scale", "at index 1");
  SetUp();
  args.b_scale.desc = TensorDesc(DataType::float32, {1, N}, {N, 2});  // strided: values at 0, 2, 4, 6
  b_scale_data()[1] = -1.0f;                                          // padding: ignored
  expect_accepted();
  b_scale_data()[6] = -1.0f;                                          // column 3
  expect_rejected(Errc::invalid_parameter, "b_scale", "at index 3");
}

// A subnormal scale is positive and finite, hence legal.
TEST_F(QmmValidation, SubnormalScaleIsAccepted) {
  *a_scale_data() = std::numeric_limits<float>::denorm_min();
  expect_accepted();
}

// float32(float32(sa*sb)/sy) must be finite (overflow in the product or in the quotient).
TEST_F(QmmValidation, MultiplierOverflow) {
  *a_scale_data() = 1e30f;
  *b_scale_data() = 1e30f;
  *y_scale_data() = 1e30f;  // the real ratio 1e30 is finite, but float32(sa*sb) is not
  expect_rejected(Errc::invalid_parameter, "output_scale", "overflows float32");
  SetUp();
  *a_scale_data() = 1e19f;
  *b_scale_data() = 1e19f;
  *y_scale_data() = 0.1f;
  expect_rejected(Errc::invalid_parameter, "output_scale", "overflows float32");
  SetUp();
  *y_scale_data() = std::numeric_limits<float>::denorm_min();  // 0.25 / 1.4e-45
  expect_rejected(Errc::invalid_parameter, "output_scale", "overflows float32");
  // Per column: only the last column overflows, and per row only row 1 does.
  SetUp();
  args.b_scale.desc = TensorDesc(DataType::float32, {N});
  b_scale_data()[N - 1] = 3e38f;
  args.output_scale.desc = TensorDesc(DataType::float32, {M, 1});
  y_scale_data()[0] = 1.0f;  // 0.5 * 3e38 / 1: finite
  y_scale_data()[1] = 0.1f;  // 1.5e38 / 0.1: overflows
  expect_rejected(Errc::invalid_parameter, "output_scale", "at row 1");
  // The largest finite multipliers are legal.
  y_scale_data()[1] = 0.5f;
  expect_accepted();
}

// ---- pointers and strides ----------------------------------------------------------------------

TEST_F(QmmValidation, NullDataPointers) {
  const auto check = [&](auto mutate, const char* subject) {
    SetUp();
    mutate();
    expect_rejected(Errc::invalid_parameter, subject, "data pointer is null");
  };
  check([&] { args.a.data = nullptr; }, "a");
  check([&] { args.b.data = nullptr; }, "b");
  check([&] { args.a_scale.data = nullptr; }, "a_scale");
  check([&] { args.b_scale.data = nullptr; }, "b_scale");
  check([&] { args.output_scale.data = nullptr; }, "output_scale");
  check([&] { args.a_zero_point->data = nullptr; }, "a_zero_point");
  check([&] { args.b_zero_point->data = nullptr; }, "b_zero_point");
  check([&] { args.output_zero_point->data = nullptr; }, "output_zero_point");
  check([&] { out.data = nullptr; }, "output");
}

TEST_F(QmmValidation, NegativeStrides) {
  const auto check = [&](auto mutate, const char* subject) {
    SetUp();
    mutate();
    expect_rejected(Errc::invalid_stride, subject, "is negative");
  };
  check([&] { args.a = {TensorDesc(DataType::uint8, {M, K}, {-K, 1}), a_mem.data() + 100}; }, "a");
  check([&] { args.b = {TensorDesc(DataType::uint8, {K, N}, {N, -1}), b_mem.data() + 100}; }, "b");
  check([&] { out = {TensorDesc(DataType::uint8, {M, N}, {-N, 1}), out_mem.data() + 100}; }, "output");
  check([&] { args.a_scale = {TensorDesc(DataType::float32, {M, 1}, {-1, 1}), a_scale_data() + 8}; }, "a_scale");
  check([&] { args.b_zero_point = hk::ConstTensor{TensorDesc(DataType::uint8, {N}, {-1}), &zero_mem[80]}; },
        "b_zero_point");
}

// An output must not overlap itself: stride 0, equal strides, or rows closer than a row's width.
TEST_F(QmmValidation, SelfOverlappingOutput) {
  for (auto strides : {std::vector<i64>{0, 1}, std::vector<i64>{1, 0}, std::vector<i64>{1, 1},
                       std::vector<i64>{N - 1, 1}}) {
    const std::vector<i64> sizes = {M, N};
    out.desc = TensorDesc(DataType::uint8, sizes, strides);
    expect_rejected(Errc::invalid_stride, "output", "make elements overlap");
  }
  SetUp();
  args.a.desc = TensorDesc(DataType::uint8, {2, M, K});
  args.b.desc = TensorDesc(DataType::uint8, {2, K, N});
  out.desc = TensorDesc(DataType::uint8, {2, M, N}, {0, N, 1});  // batches written to one place
  expect_rejected(Errc::invalid_stride, "output", "make elements overlap");
  // Inputs may broadcast through stride 0, and a size-1 output dimension's stride is irrelevant.
  args.a.desc = TensorDesc(DataType::uint8, {2, M, K}, {0, K, 1});
  out.desc = TensorDesc(DataType::uint8, {2, M, N}, {M * N, N, 1});
  expect_accepted();
}

// QuantizedLinearMatMul never runs in place: the output may not share a byte with any input.
TEST_F(QmmValidation, OutputOverlappingAnInput) {
  struct Case {
    const char* subject;
    unsigned char* where;
  };
  auto* f = reinterpret_cast<unsigned char*>(float_mem.data());
  for (const Case& c : {Case{"a", a_mem.data()}, Case{"a", a_mem.data() + M * K - 1},
                        Case{"b", b_mem.data() + 3}, Case{"a_scale", f + 2},
                        Case{"b_scale", f + 64 * 4 - M * N + 1}, Case{"output_scale", f + 128 * 4 + 3},
                        Case{"a_zero_point", &zero_mem[0]}, Case{"b_zero_point", &zero_mem[64 - M * N + 1]},
                        Case{"output_zero_point", &zero_mem[128]}}) {
    SCOPED_TRACE(c.subject);
    SetUp();
    out.data = c.where;
    expect_rejected(Errc::overlap, "output", std::string("overlaps ") + c.subject);
  }
  // Adjacent but disjoint is fine: the output starts right after A's last byte.
  SetUp();
  out.data = a_mem.data() + M * K;
  expect_accepted();
}

// ---- schedules -------------------------------------------------------------------------------

// Schedule text is checked by hk::Schedule::parse, which names the component "schedule"; a
// malformed text never reaches the operator, so the output stays untouched.
TEST_F(QmmValidation, MalformedScheduleText) {
  for (const char* text : {"qmm.tiled(mc=", "qmm.tiled(mc=1,,kc=2)", "qmm tiled", "QMM.tiled",
                           "qmm.tiled(mc=1x)", "qmm.tiled(mc=1, mc=2)", "qmm.tiled)", "(mc=1)"}) {
    SCOPED_TRACE(text);
    const auto before = snapshot();
    try {
      hk::quantized_linear_matmul(args, out, hk::Schedule::parse(text));
      ADD_FAILURE() << "accepted";
    } catch (const hk::Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_schedule);
      EXPECT_EQ(e.op(), "schedule");
      EXPECT_NE(e.subject().find(text), std::string::npos) << e.what();
    }
    EXPECT_TRUE(snapshot() == before);
  }
}

TEST_F(QmmValidation, UnknownStrategy) {
  expect_rejected(Errc::invalid_schedule, "qmm.fast", "unknown strategy 'qmm.fast'", hk::Schedule("qmm.fast"));
  expect_rejected(Errc::invalid_schedule, "tiled", "unknown strategy", hk::Schedule("tiled"));
}

// The cumulative operators' strategies (other than the shared "reference") are not qmm's.
TEST_F(QmmValidation, ScanScheduleRejected) {
  int checked = 0;
  for (const auto& s : hk::strategies(hk::Operator::cumulative_sum)) {
    if (s.name == "reference") continue;
    hk::Schedule sc(s.name);
    if (!s.params.empty()) sc.set(s.params[0].key, s.params[0].min);
    expect_rejected(Errc::invalid_schedule, sc.to_string(), "unknown strategy", sc);
    ++checked;
  }
  EXPECT_GT(checked, 0);
  const auto sc = hk::Schedule::parse("scan.tiled(tile=256)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "unknown strategy", sc);
}

TEST_F(QmmValidation, UnknownParameter) {
  auto sc = hk::Schedule::parse("qmm.tiled(tile=4)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "has no parameter 'tile'", sc);
  sc = hk::Schedule::parse("qmm.tiled(mc=4, threads=2)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "has no parameter 'threads'", sc);
  sc = hk::Schedule::parse("reference(mc=1)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "takes none", sc);
}

TEST_F(QmmValidation, NonIntegerParameter) {
  const auto sc = hk::Schedule::parse("qmm.tiled(mc=big)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "must be an integer", sc);
}

// kc beyond the int32-exact depth, and every parameter of every strategy one past each end of
// the range hk::strategies publishes.
TEST_F(QmmValidation, ParameterOutOfRange) {
  auto sc = hk::Schedule::parse("qmm.tiled(kc=70000)");
  expect_rejected(Errc::invalid_schedule, sc.to_string(), "kc=70000 is outside 1 to 65536", sc);
  int checked = 0;
  for (const auto& s : hk::strategies(hk::Operator::quantized_linear_matmul))
    for (const auto& p : s.params) {
      if (!p.choices.empty()) {
        // A named parameter takes its names, not their positions, nor other names.
        for (const auto& name : p.choices) expect_accepted(hk::Schedule(s.name).set(p.key, name));
        for (const char* bad : {"0", "fastest"}) {
          sc = hk::Schedule(s.name).set(p.key, bad);
          expect_rejected(Errc::invalid_schedule, sc.to_string(), "must be one of", sc);
        }
        continue;
      }
      for (i64 v : {p.min - 1, p.max + 1}) {
        if (v < 0) continue;  // the grammar has no negative numbers
        sc = hk::Schedule(s.name).set(p.key, v);
        expect_rejected(Errc::invalid_schedule, sc.to_string(), "is outside", sc);
        ++checked;
        sc = hk::Schedule(s.name).set(p.key, v == p.min - 1 ? p.min : p.max);  // the ends themselves
        // Not the most threads, nor more devices than are visible, which a split refuses.
        if ((p.key != "threads" && p.key != "devices") || v == p.min - 1) expect_accepted(sc);
      }
    }
  EXPECT_GE(checked, 7);
}

}  // namespace
