// One test per validation rule of the cumulative operators: the error's code, operator, subject
// and rule, and an output left exactly as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "scan_test_util.hpp"

namespace {

using namespace hk;

constexpr std::size_t buffer_elements = 64;

struct Fixture {
  std::vector<float> in = std::vector<float>(buffer_elements, 1.0f);
  std::vector<float> out = std::vector<float>(buffer_elements, -5.0f);
  TensorDesc desc{DataType::float32, {2, 3}};
  CumulativeOptions options{1, Direction::increasing, false};
};

// Runs `call`, expects hk::Error with the given code, subject and phrase, and an untouched output.
template <class Call>
void expect_rejected(Call call, Errc code, const std::string& subject, const std::string& phrase,
                     const std::vector<float>& out, bool product = false) {
  const std::vector<float> before = out;
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error about " << subject;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.op(), product ? "cumulative_product" : "cumulative_sum") << e.what();
    EXPECT_EQ(e.subject(), subject) << e.what();
    EXPECT_NE(e.rule().find(phrase), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()), e.op() + ": " + e.subject() + ": " + e.rule());
  }
  EXPECT_EQ(std::memcmp(before.data(), out.data(), out.size() * sizeof(float)), 0)
      << "the output was modified";
}

TEST(CumulativeValidation, InputTypeMustBeAScanType) {
  Fixture f;
  const TensorDesc d(DataType::int8, {2, 3});
  expect_rejected([&] { cumulative_sum({d, f.in.data()}, {d, f.out.data()}, f.options); },
                  Errc::invalid_type, "input", "is not one of", f.out);
}

TEST(CumulativeValidation, OutputTypeMustMatch) {
  Fixture f;
  const TensorDesc d(DataType::int32, {2, 3});
  expect_rejected([&] { cumulative_product({f.desc, f.in.data()}, {d, f.out.data()}, f.options); },
                  Errc::invalid_type, "output", "differs from the input", f.out, true);
}

TEST(CumulativeValidation, RankZeroIsRejected) {
  Fixture f;
  const TensorDesc d(DataType::float32, std::span<const std::int64_t>{});
  expect_rejected([&] { cumulative_sum({d, f.in.data()}, {d, f.out.data()}, f.options); },
                  Errc::invalid_shape, "input", "rank 0", f.out);
}

TEST(CumulativeValidation, RankAboveEightIsRejectedByTheDescriptor) {
  const std::vector<std::int64_t> sizes(9, 1);
  try {
    TensorDesc d(DataType::float32, sizes);
    ADD_FAILURE() << "accepted rank 9";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_shape);
    EXPECT_NE(e.rule().find("exceeds the maximum of 8"), std::string::npos) << e.what();
  }
}

TEST(CumulativeValidation, SizesMustBePositive) {
  Fixture f;
  for (std::int64_t bad : {std::int64_t(0), std::int64_t(-3)}) {
    const TensorDesc d(DataType::float32, {2, bad});
    expect_rejected([&] { cumulative_sum({d, f.in.data()}, {f.desc, f.out.data()}, f.options); },
                    Errc::invalid_shape, "input", "is not positive", f.out);
  }
}

TEST(CumulativeValidation, StridesMustNotBeNegative) {
  Fixture f;
  const TensorDesc d(DataType::float32, {2, 3}, {3, -1});
  expect_rejected([&] { cumulative_sum({d, f.in.data() + 10}, {f.desc, f.out.data()}, f.options); },
                  Errc::invalid_stride, "input", "is negative", f.out);
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {d, f.out.data() + 10}, f.options); },
                  Errc::invalid_stride, "output", "is negative", f.out);
}

TEST(CumulativeValidation, DataPointersMustBeGiven) {
  Fixture f;
  expect_rejected([&] { cumulative_sum({f.desc, nullptr}, {f.desc, f.out.data()}, f.options); },
                  Errc::invalid_parameter, "input", "null", f.out);
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {f.desc, nullptr}, f.options); },
                  Errc::invalid_parameter, "output", "null", f.out);
}

TEST(CumulativeValidation, ElementCountMustFitIn64Bits) {
  Fixture f;
  const std::int64_t big = std::int64_t(1) << 40;
  const TensorDesc d(DataType::float32, {big, big}, {0, 0});
  expect_rejected([&] { cumulative_sum({d, f.in.data()}, {f.desc, f.out.data()}, f.options); },
                  Errc::invalid_shape, "input", "exceeds 64 bits", f.out);
}

TEST(CumulativeValidation, OffsetsMustFitIn64Bits) {
  Fixture f;
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2;
  const TensorDesc d(DataType::float32, {2, 3}, {huge, 1});
  expect_rejected([&] { cumulative_sum({d, f.in.data()}, {f.desc, f.out.data()}, f.options); },
                  Errc::invalid_stride, "input", "exceed 64 bits", f.out);
}

TEST(CumulativeValidation, OutputMustNotOverlapItself) {
  Fixture f;
  for (const TensorDesc& d : {TensorDesc(DataType::float32, {2, 3}, {0, 1}),
                              TensorDesc(DataType::float32, {2, 3}, {2, 1}),
                              TensorDesc(DataType::float32, {2, 3}, {1, 1})}) {
    expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {d, f.out.data()}, f.options); },
                    Errc::invalid_stride, "output", "overlap", f.out);
  }
}

TEST(CumulativeValidation, RanksMustMatch) {
  Fixture f;
  const TensorDesc d(DataType::float32, {2, 3, 1});
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {d, f.out.data()}, f.options); },
                  Errc::invalid_shape, "output", "differs from the input's", f.out);
}

TEST(CumulativeValidation, SizesMustMatch) {
  Fixture f;
  const TensorDesc d(DataType::float32, {3, 2});
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {d, f.out.data()}, f.options); },
                  Errc::invalid_shape, "output", "differ from the input's", f.out);
}

TEST(CumulativeValidation, AxisMustBeInRange) {
  Fixture f;
  for (int axis : {-3, -9, 2, 7}) {
    const CumulativeOptions o{axis, Direction::increasing, false};
    expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {f.desc, f.out.data()}, o); },
                    Errc::invalid_parameter, "axis", "out of range for a rank-2 tensor (-2 to 1", f.out);
  }
}

// numpy, PyTorch and ONNX: axis -k is axis rank - k, for every schedule, the default choice and
// the tuning key alike.
TEST(CumulativeValidation, NegativeAxisCountsFromTheLast) {
  const TensorDesc d(DataType::float32, {3, 4, 5});
  std::vector<float> x(60);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 11) - 5);
  for (int axis = -3; axis < 0; ++axis) {
    const CumulativeOptions negative{axis, Direction::decreasing, true};
    const CumulativeOptions positive{axis + 3, Direction::decreasing, true};
    std::vector<float> want(x.size()), got(x.size());
    cumulative_product({d, x.data()}, {d, want.data()}, positive, Schedule("reference"));
    for (const auto& s : hk::test::all_scan_schedules()) {
      std::fill(got.begin(), got.end(), -1.0f);
      cumulative_product({d, x.data()}, {d, got.data()}, negative, s);
      EXPECT_EQ(got, want) << "axis " << axis << " " << hk::test::label(s);
    }
    EXPECT_EQ(default_schedule(Operator::cumulative_sum, {d, x.data()}, {d, got.data()}, negative),
              default_schedule(Operator::cumulative_sum, {d, x.data()}, {d, got.data()}, positive));
    const TuningRecord key = tuning_key({Operator::cumulative_sum, {DataType::float32}, {3, 4, 5}, negative});
    EXPECT_EQ(key.params, tuning_key({Operator::cumulative_sum, {DataType::float32}, {3, 4, 5}, positive}).params);
    EXPECT_NE(key.params.find("axis=" + std::to_string(axis + 3)), std::string::npos) << key.params;
  }
}

TEST(CumulativeValidation, DirectionMustBeKnown) {
  Fixture f;
  const CumulativeOptions o{0, static_cast<Direction>(7), false};
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {f.desc, f.out.data()}, o); },
                  Errc::invalid_parameter, "direction", "neither increasing nor decreasing", f.out);
}

TEST(CumulativeValidation, PartialOverlapWithTheInputIsRejected) {
  Fixture f;
  // Shifted by one element, and the same memory seen with other strides: neither is in place.
  expect_rejected([&] { cumulative_sum({f.desc, f.out.data()}, {f.desc, f.out.data() + 1}, f.options); },
                  Errc::overlap, "output", "overlaps the input", f.out);
  const TensorDesc transposed(DataType::float32, {2, 3}, {1, 2});
  expect_rejected([&] { cumulative_sum({f.desc, f.out.data()}, {transposed, f.out.data()}, f.options); },
                  Errc::overlap, "output", "overlaps the input", f.out);
}

TEST(CumulativeValidation, InterleavedTensorsThatShareNoByteAreAccepted) {
  // x[::2] into x[1::2] (numpy's names), and columns of a {3,4} matrix into the ones between them.
  std::vector<float> x = {1, -1, 2, -1, 3, -1, 4, -1};
  const TensorDesc every_other(DataType::float32, {4}, {2});
  cumulative_sum({every_other, x.data()}, {every_other, x.data() + 1}, {0});
  EXPECT_EQ(x, (std::vector<float>{1, 1, 2, 3, 3, 6, 4, 10}));
  std::vector<std::int32_t> y = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0};
  const TensorDesc columns(DataType::int32, {3, 2}, {4, 2});
  cumulative_sum({columns, y.data()}, {columns, y.data() + 1}, {0});
  EXPECT_EQ(y, (std::vector<std::int32_t>{1, 1, 2, 2, 3, 4, 4, 6, 5, 9, 6, 12}));
  // Two bytes apart, float32 elements of stride 2 touch: refused.
  std::vector<std::uint16_t> halves(16, 0);
  const TensorDesc floats(DataType::float32, {4}, {2});
  EXPECT_THROW(cumulative_sum({floats, halves.data()}, {floats, reinterpret_cast<float*>(halves.data() + 1)}, {0}),
               hk::Error);
}

TEST(CumulativeValidation, ColumnBlocksOfOneMatrixAreAccepted) {
  // x[:, :2] into x[:, 2:] of a {3,4} matrix: the blocks' extents interleave row by row, and every
  // stride is a multiple of one element, but the two bands of each row are apart.
  std::vector<float> x = {1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0};
  const TensorDesc block(DataType::float32, {3, 2}, {4, 1});
  cumulative_sum({block, x.data()}, {block, x.data() + 2}, {0});
  EXPECT_EQ(x, (std::vector<float>{1, 2, 1, 2, 3, 4, 4, 6, 5, 6, 9, 12}));
  // Three columns from the second into the last three overlap: refused.
  const TensorDesc wide(DataType::float32, {3, 3}, {4, 1});
  expect_rejected([&] { cumulative_sum({wide, x.data()}, {wide, x.data() + 1}, {0}); }, Errc::overlap, "output",
                  "overlaps the input", x);
}

TEST(CumulativeValidation, InPlaceWithTheSameLayoutIsAccepted) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const TensorDesc d(DataType::float32, {2, 3});
  cumulative_sum({d, x.data()}, {d, x.data()}, {1});
  EXPECT_EQ(x, (std::vector<float>{1, 3, 6, 4, 9, 15}));
}

TEST(CumulativeValidation, SchedulesMustBeLegal) {
  Fixture f;
  const struct {
    const char* text;
    const char* phrase;
  } cases[] = {
      {"scan.nonexistent", "unknown strategy 'scan.nonexistent'"},
      {"qmm.tiled(mc=4)", "unknown strategy 'qmm.tiled'"},
      {"scan.tiled(block=4)", "has no parameter 'block'"},
      {"reference(tile=4)", "it takes none"},
      {"scan.tiled(tile=big)", "must be an integer"},
      {"scan.tiled(tile=0)", "outside 1 to 4096"},
      {"scan.tiled(tile=5000)", "outside 1 to 4096"},
      {"scan.parallel(threads=0)", "outside 1 to 1024"},
      {"scan.blocked(block=8)", "outside 16 to"},
  };
  for (const auto& c : cases)
    expect_rejected(
        [&] {
          cumulative_sum({f.desc, f.in.data()}, {f.desc, f.out.data()}, f.options,
                         Schedule::parse(c.text));
        },
        Errc::invalid_schedule, Schedule::parse(c.text).to_string(), c.phrase, f.out);
  // The constructor takes a parameter twice unchecked, as parse() would not: the call refuses it.
  const Schedule twice("scan.tiled", {{"tile", "4"}, {"tile", "8"}});
  expect_rejected([&] { cumulative_sum({f.desc, f.in.data()}, {f.desc, f.out.data()}, f.options, twice); },
                  Errc::invalid_schedule, twice.to_string(), "parameter tile is given twice", f.out);
}

}  // namespace
