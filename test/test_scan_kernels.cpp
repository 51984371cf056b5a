// The SIMD scan kernels under every instruction-set level this machine runs: contiguous lines in
// both directions at unaligned starts and awkward lengths, with and without streaming stores;
// lines across the contiguous axis bit for bit against the reference; special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "isa_test_util.hpp"
#include "scan_test_util.hpp"

namespace {

using namespace hk;
using hk::test::float16_t;
using hk::test::label;

const std::int64_t lengths[] = {1, 2, 7, 8, 9, 16, 17, 61, 127, 1000, 4099};

template <class T> T random_value(std::mt19937_64& rng, bool product) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());
  } else if (product) {
    // Powers of two: every product is exact, and the exponent wanders slowly.
    static const float steps[] = {1, 1, 1, 1, 1, 1, 2, 0.5f};
    return T(rng() % 2 ? steps[rng() % 8] : -steps[rng() % 8]);
  } else if constexpr (std::is_same_v<T, float>) {
    return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  } else if constexpr (std::is_same_v<T, double>) {
    // Multiples of 2^-50 below 1 in magnitude, 53 bits used: every prefix of up to 2^12 of them
    // is exact in long double, and most are not in float64.
    const double v = std::ldexp(double(rng() >> 12), -51);
    return rng() % 2 ? v : -v;
  } else {
    return T(float(int(rng() % 33) - 16) / 8.0f);
  }
}

template <class T> constexpr DataType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DataType::float32;
  else if constexpr (std::is_same_v<T, float16_t>) return DataType::float16;
  else if constexpr (std::is_same_v<T, double>) return DataType::float64;
  else if constexpr (std::is_same_v<T, hk::test::bfloat16_t>) return DataType::bfloat16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DataType::int32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return DataType::uint32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DataType::int64;
  else return DataType::uint64;
}

template <class T> void call(bool product, const TensorDesc& in, const T* x, const TensorDesc& out,
                             T* y, const CumulativeOptions& o, const Schedule& s) {
  if (product)
    cumulative_product({in, x}, {out, y}, o, s);
  else
    cumulative_sum({in, x}, {out, y}, o, s);
}

// One line of n elements at element offsets in_off and out_off of their buffers, checked
// against the exact prefix to the spec's accuracy, with nothing written around it.
template <class T>
void check_line(bool product, std::int64_t n, const CumulativeOptions& o, int in_off, int out_off,
                const std::vector<Schedule>& schedules, std::mt19937_64& rng) {
  // The integers' oracle: wrapping arithmetic in their unsigned accumulator.
  using IntAcc = std::conditional_t<std::is_integral_v<T>, detail::AccOf<T>, int>;
  std::vector<T> input(std::size_t(n + in_off));
  for (auto& v : input) v = random_value<T>(rng, product);
  const T* x = input.data() + in_off;
  std::vector<long double> exact(static_cast<std::size_t>(n)), mag(static_cast<std::size_t>(n));
  std::vector<T> exact_int(static_cast<std::size_t>(n));
  long double acc = product ? 1 : 0, m = 0;
  IntAcc iacc = product ? 1 : 0;
  for (std::int64_t q = 0; q < n; ++q) {
    const std::size_t i = std::size_t(o.direction == Direction::decreasing ? n - 1 - q : q);
    if (o.exclusive) exact[i] = acc, mag[i] = m;
    const long double xr = hk::test::as_real(x[i]);
    acc = product ? acc * xr : acc + xr;
    m += std::fabs(xr);
    if (!o.exclusive) exact[i] = acc, mag[i] = m;
    if constexpr (std::is_integral_v<T>) {
      if (o.exclusive) exact_int[i] = T(iacc);
      iacc = product ? IntAcc(iacc * IntAcc(x[i])) : IntAcc(iacc + IntAcc(x[i]));
      if (!o.exclusive) exact_int[i] = T(iacc);
    }
  }
  const TensorDesc d(dtype_of<T>(), {n});
  for (const auto& s : schedules) {
    const T sentinel = T(77);
    std::vector<T> output(std::size_t(n + out_off + 3), sentinel);
    T* y = output.data() + out_off;
    call(product, d, x, d, y, o, s);
    int failures = 0;
    for (std::int64_t i = 0; i < n && failures < 3; ++i) {
      const T v = y[i];
      bool ok;
      if constexpr (std::is_integral_v<T>) {
        ok = v == exact_int[std::size_t(i)];
      } else {
        // Every case here is exact in long double; bfloat16 sums of eighths are exact in
        // float32 too, so each output is the exact prefix rounded to nearest even.
        const long double e = exact[std::size_t(i)];
        if (std::is_same_v<T, hk::test::bfloat16_t> && !product)
          ok = hk::test::as_real(v) == hk::test::as_real(T(float(e)));
        else if (std::is_same_v<T, float16_t> && std::fabs(e) >= 65520)  // rounds past 65504
          ok = hk::test::as_real(v) == (e > 0 ? 1 : -1) * std::numeric_limits<long double>::infinity();
        else
          ok = std::fabs(hk::test::as_real(v) - e) <= hk::test::scan_bound<T>(e, mag[std::size_t(i)], n, product);
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << label(s) << " n " << n << " offsets " << in_off << "," << out_off
                      << " element " << i << ": got " << double(hk::test::as_real(v)) << ", exact "
                      << double(exact[std::size_t(i)]);
      }
    }
    for (int i = 0; i < out_off; ++i) EXPECT_TRUE(output[std::size_t(i)] == sentinel) << label(s);
    for (std::size_t i = std::size_t(out_off + n); i < output.size(); ++i)
      EXPECT_TRUE(output[i] == sentinel) << label(s) << " wrote past the end";
  }
}

const DataType scan_types[] = {DataType::float32,  DataType::float16, DataType::float64,
                               DataType::bfloat16, DataType::int32,   DataType::uint32,
                               DataType::int64,    DataType::uint64};

// Streaming stores forced on small outputs, blocks that split lines mid-vector.
std::vector<Schedule> line_schedules() {
  std::vector<Schedule> out;
  for (const char* text : {"scan.tiled(stream=0)", "scan.tiled(stream=1)",
                           "scan.blocked(block=40, threads=2, stream=1)",
                           "scan.blocked(block=1024, threads=2, stream=0)"})
    out.push_back(Schedule::parse(text));
  return out;
}

TEST(ScanKernels, ContiguousLinesUnderEveryIsa) {
  const auto schedules = line_schedules();
  std::mt19937_64 rng(42);
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (DataType type : scan_types)
      for (bool product : {false, true})
        for (int variant = 0; variant < 4; ++variant) {
          const CumulativeOptions o{0, variant & 1 ? Direction::decreasing : Direction::increasing,
                                    (variant & 2) != 0};
          for (std::int64_t n : lengths) {
            SCOPED_TRACE(std::string(name_of(isa)) + " " + std::string(name_of(type)) +
                         (product ? " product" : " sum") + " variant " + std::to_string(variant));
            if (product && type == DataType::float16 && n > 200) continue;
            const int in_off = int(rng() % 4), out_off = int(rng() % 4);
            detail::visit_scan_type(type, [&](auto t) {
              check_line<decltype(t)>(product, n, o, in_off, out_off, schedules, rng);
            });
          }
        }
  }
}

// Lines across the contiguous axis: no reassociation, so every schedule equals the reference.
TEST(ScanKernels, SidewaysLinesMatchTheReferenceBitForBit) {
  std::mt19937_64 rng(7);
  std::vector<Schedule> schedules;
  // tile=64 with streaming: rows of a tile that start and end inside cache lines, with whole lines
  // streamed between (streamed_lines).
  for (const char* text : {"scan.tiled(stream=0)", "scan.tiled(tile=16, stream=1)", "scan.tiled(tile=64, stream=1)",
                           "scan.parallel(tile=7, threads=2, stream=1)", "scan.parallel(threads=2)"})
    schedules.push_back(Schedule::parse(text));
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (DataType type : scan_types)
      for (bool product : {false, true})
        for (std::int64_t width : {1, 3, 8, 17, 100, 130})
          for (std::int64_t length : {1, 5, 40}) {
            const int variant = int(rng() % 4), pad = int(rng() % 3), offset = int(rng() % 4);
            const CumulativeOptions o{0, variant & 1 ? Direction::decreasing : Direction::increasing,
                                      (variant & 2) != 0};
            detail::visit_scan_type(type, [&](auto t) {
              using T = decltype(t);
              const std::int64_t row = width + pad;
              std::vector<T> input(std::size_t(length * row + offset));
              for (auto& v : input) v = random_value<T>(rng, product);
              const TensorDesc in(type, {length, width}, {row, 1}), out(type, {length, width});
              const T* x = input.data() + offset;
              std::vector<T> expected(std::size_t(length * width)), got(expected.size() + 1);
              call(product, in, x, out, expected.data(), o, Schedule("reference"));
              for (const auto& s : schedules) {
                T* y = got.data() + 1;  // an unaligned output as well
                call(product, in, x, out, y, o, s);
                EXPECT_EQ(std::memcmp(y, expected.data(), expected.size() * sizeof(T)), 0)
                    << name_of(isa) << " " << name_of(type) << (product ? " product " : " sum ")
                    << label(s) << " width " << width << " length " << length;
              }
            });
          }
  }
}

// The columns kernel's passes of two rows read both rows before writing either: in place, and with
// every row of the input the same memory (a broadcast along the scanned axis), each output still
// equals the reference's bit for bit. Widths cover whole cache lines, single vectors and single
// elements; odd lengths leave a row of one.
TEST(ScanKernels, SidewaysLinesInPlaceAndBroadcastUnderEveryIsa) {
  std::mt19937_64 rng(11);
  std::vector<Schedule> schedules;
  for (const char* text : {"scan.tiled(stream=0)", "scan.tiled(stream=1)", "scan.tiled(tile=64, stream=1)",
                           "scan.parallel(tile=48, threads=2, stream=1)"})
    schedules.push_back(Schedule::parse(text));
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (DataType type : scan_types)
      for (bool product : {false, true})
        for (std::int64_t width : {37, 160})
          for (std::int64_t length : {6, 41}) {
            const CumulativeOptions o{0, rng() % 2 ? Direction::decreasing : Direction::increasing, rng() % 2 == 0};
            detail::visit_scan_type(type, [&](auto t) {
              using T = decltype(t);
              const TensorDesc d(type, {length, width}), row_broadcast(type, {length, width}, {0, 1});
              std::vector<T> input(std::size_t(length * width)), expected(input.size());
              for (auto& v : input) v = random_value<T>(rng, product);
              const std::string where = std::string(name_of(isa)) + " " + std::string(name_of(type)) +
                                        (product ? " product" : " sum") + " width " + std::to_string(width) +
                                        " length " + std::to_string(length);
              call(product, d, input.data(), d, expected.data(), o, Schedule("reference"));
              for (const auto& s : schedules) {
                std::vector<T> y = input;
                call(product, d, y.data(), d, y.data(), o, s);
                EXPECT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(T)), 0)
                    << "in place, " << where << " " << label(s);
              }
              call(product, row_broadcast, input.data(), d, expected.data(), o, Schedule("reference"));
              for (const auto& s : schedules) {
                std::vector<T> y(input.size());
                call(product, row_broadcast, input.data(), d, y.data(), o, s);
                EXPECT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(T)), 0)
                    << "broadcast rows, " << where << " " << label(s);
              }
            });
          }
  }
}

// More threads than cores and small blocks: owners are parked mid-group, so threads look back
// over many published aggregates and fold groups whose owners published nothing yet. Several
// lines per group (block 24 of lines of 100), groups that start mid-line, both directions, in
// place too; every run must equal the first bit for bit and the exact prefix to the spec's bound.
TEST(ScanKernels, BlockedLookBackUnderOversubscription) {
  std::mt19937_64 rng(7);
  const std::vector<Schedule> schedules = {Schedule::parse("scan.blocked(block=24, threads=9)"),
                                           Schedule::parse("scan.blocked(block=4096, threads=7)")};
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (int variant = 0; variant < 4; ++variant) {
      const CumulativeOptions o{1, variant & 1 ? Direction::decreasing : Direction::increasing,
                                (variant & 2) != 0};
      SCOPED_TRACE(std::string(name_of(isa)) + " variant " + std::to_string(variant));
      const CumulativeOptions line{0, o.direction, o.exclusive};
      check_line<float>(false, 100003, line, 1, 2, schedules, rng);
      check_line<std::int32_t>(false, 100003, line, 3, 0, schedules, rng);
      const TensorDesc d(DataType::float32, {300, 100});
      std::vector<float> x(300 * 100);
      for (auto& v : x) v = random_value<float>(rng, false);
      for (const auto& s : schedules) {
        std::vector<float> first(x.size()), again(x.size());
        cumulative_sum({d, x.data()}, {d, first.data()}, o, s);
        std::vector<float> expected(x.size());
        cumulative_sum({d, x.data()}, {d, expected.data()}, o, Schedule("reference"));
        for (std::size_t i = 0; i < x.size(); ++i)
          ASSERT_LE(std::fabs(double(first[i]) - double(expected[i])), 1e-5 * (1 + std::fabs(double(expected[i]))))
              << label(s) << " element " << i;
        for (int run = 0; run < 5; ++run) {
          cumulative_sum({d, x.data()}, {d, again.data()}, o, s);
          ASSERT_EQ(std::memcmp(first.data(), again.data(), x.size() * sizeof(float)), 0) << label(s) << " run " << run;
        }
        again = x;
        cumulative_sum({d, again.data()}, {d, again.data()}, o, s);
        ASSERT_EQ(std::memcmp(first.data(), again.data(), x.size() * sizeof(float)), 0) << label(s) << " in place";
      }
    }
  }
}

std::vector<Schedule> every_schedule_streaming_too() {
  auto out = hk::test::all_scan_schedules();
  for (const auto& s : line_schedules()) out.push_back(s);
  return out;
}

TEST(ScanKernels, NegativeZeroUnderEveryIsa) {
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (std::int64_t n : {1, 9, 37, 100}) {
      const std::vector<float> x(std::size_t(n), -0.0f);
      std::vector<float> y(x.size());
      const TensorDesc d(DataType::float32, {n});
      for (const auto& s : every_schedule_streaming_too())
        for (auto dir : {Direction::increasing, Direction::decreasing}) {
          cumulative_sum({d, x.data()}, {d, y.data()}, {0, dir, false}, s);
          for (float v : y) EXPECT_TRUE(v == 0.0f && std::signbit(v)) << name_of(isa) << label(s);
          cumulative_sum({d, x.data()}, {d, y.data()}, {0, dir, true}, s);
          for (float v : y) EXPECT_TRUE(v == 0.0f && !std::signbit(v)) << name_of(isa) << label(s);
        }
      // float16 and bfloat16 -0.0 through float32 accumulators, float64 through double-double.
      const auto negative_zeros = [&](auto zero, DataType type) {
        using T = decltype(zero);
        const std::vector<T> h(std::size_t(n), zero);
        std::vector<T> hy(h.size());
        const TensorDesc hd(type, {n});
        for (const auto& s : every_schedule_streaming_too()) {
          if (hk::test::offload_refuses(type, s)) continue;
          cumulative_sum({hd, h.data()}, {hd, hy.data()}, {}, s);
          for (T v : hy) {
            const long double r = hk::test::as_real(v);
            EXPECT_TRUE(r == 0 && std::signbit(r)) << name_of(isa) << " " << name_of(type) << " " << label(s);
          }
        }
      };
      negative_zeros(float16_t(-0.0f), DataType::float16);
      negative_zeros(hk::test::bfloat16_t(-0.0f), DataType::bfloat16);
      negative_zeros(-0.0, DataType::float64);
    }
  }
}

template <class T> void check_special_values(DataType type) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto real = [](T v) { return hk::test::as_real(v); };
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    const std::string where = std::string(name_of(isa)) + " " + std::string(name_of(type)) + " ";
    std::vector<T> x(53, T(1.0f));
    x[20] = T(inf);
    x[30] = T(-inf);
    std::vector<T> y(x.size());
    const TensorDesc d(type, {53});
    for (const auto& s : every_schedule_streaming_too()) {
      if (hk::test::offload_refuses(type, s)) {
        EXPECT_THROW(cumulative_sum({d, x.data()}, {d, y.data()}, {}, s), Error) << where << label(s);
        continue;
      }
      cumulative_sum({d, x.data()}, {d, y.data()}, {}, s);
      EXPECT_EQ(real(y[19]), 20.0L) << where << label(s);
      for (int i = 20; i < 30; ++i) EXPECT_EQ(real(y[std::size_t(i)]), inf) << where << label(s);
      for (int i = 30; i < 53; ++i) EXPECT_TRUE(std::isnan(real(y[std::size_t(i)]))) << where << label(s);
      std::vector<T> p(x.size(), T(2.0f));
      p[10] = T(0.0f);
      p[40] = T(inf);
      cumulative_product({d, p.data()}, {d, y.data()}, {0, Direction::decreasing, true}, s);
      EXPECT_EQ(real(y[52]), 1.0L) << where << label(s);
      EXPECT_EQ(real(y[40]), 4096.0L) << where << label(s);
      EXPECT_EQ(real(y[39]), inf) << where << label(s);
      for (int i = 0; i < 10; ++i) EXPECT_TRUE(std::isnan(real(y[std::size_t(i)]))) << where << label(s);
    }
  }
}

TEST(ScanKernels, SpecialValuesPropagateThroughVectors) {
  check_special_values<float>(DataType::float32);
  check_special_values<double>(DataType::float64);
  check_special_values<hk::test::bfloat16_t>(DataType::bfloat16);
}

// float64 lines long enough for the blocks that scan segments side by side (2048 elements and
// more): -0.0 stays -0.0, infinities and NaN propagate through the folds and the segments' carries,
// sums that overflow stay infinite, with streaming stores or without.
TEST(ScanKernels, LongFloat64LinesKeepSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::int64_t n = 6151;
  const TensorDesc d(DataType::float64, {n});
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (const auto& s : line_schedules()) {
      const std::string where = std::string(name_of(isa)) + " " + label(s);
      const std::vector<double> zeros(std::size_t(n), -0.0);
      std::vector<double> y(zeros.size());
      for (auto dir : {Direction::increasing, Direction::decreasing}) {
        cumulative_sum({d, zeros.data()}, {d, y.data()}, {0, dir, false}, s);
        for (double v : y) ASSERT_TRUE(v == 0 && std::signbit(v)) << where;
      }
      std::vector<double> x(std::size_t(n), 1.0);
      x[3000] = inf;
      x[4500] = -inf;
      cumulative_sum({d, x.data()}, {d, y.data()}, {}, s);
      EXPECT_EQ(y[2999], 3000.0) << where;
      for (std::size_t i = 3000; i < 4500; ++i) ASSERT_EQ(y[i], inf) << where << " element " << i;
      for (std::size_t i = 4500; i < y.size(); ++i) ASSERT_TRUE(std::isnan(y[i])) << where << " element " << i;
      // A prefix past the largest double where the folds stay finite (3007 to 3010 fall in lanes
      // whose folds cancel at every vector width), in one line of blocks: infinite there, and
      // never NaN (a block scanned without the special-value selects is scanned again with
      // them). Later segments start from the folds, whose exact sum is finite again. (The
      // blocked schedules' short parts go through each vector's log-step scan, whose partial
      // sums of 1.5e308 and -1.5e308 can overflow apart: NaN there, as before.)
      if (s.strategy() == "scan.tiled") {
        std::vector<double> big(std::size_t(n), 1.0);
        big[3007] = big[3008] = 1.5e308;
        big[3009] = big[3010] = -1.5e308;
        cumulative_sum({d, big.data()}, {d, y.data()}, {}, s);
        EXPECT_TRUE(std::isfinite(y[3007])) << where;
        EXPECT_EQ(y[3008], inf) << where;
        for (std::size_t i = 0; i < y.size(); ++i) ASSERT_FALSE(std::isnan(y[i])) << where << " element " << i;
      }
      std::vector<double> p(std::size_t(n), 1.0);
      p[2500] = 0.0;
      p[5000] = inf;
      cumulative_product({d, p.data()}, {d, y.data()}, {0, Direction::decreasing, true}, s);
      EXPECT_EQ(y[std::size_t(n - 1)], 1.0) << where;
      EXPECT_EQ(y[5000], 1.0) << where;
      for (std::size_t i = 2500; i < 5000; ++i) ASSERT_EQ(y[i], inf) << where << " element " << i;
      for (std::size_t i = 0; i < 2500; ++i) ASSERT_TRUE(std::isnan(y[i])) << where << " element " << i;
    }
  }
}

// float64 lines across the contiguous axis through infinities, NaN, signed zeros and sums that
// overflow: the columns kernel's vector combines, two rows a pass, and its scalar edges must equal
// the reference bit for bit (NaN for NaN).
TEST(ScanKernels, SidewaysFloat64SpecialValuesMatchTheReference) {
  const double inf = std::numeric_limits<double>::infinity();
  const double picks[] = {0.0, -0.0, 1.0, -1.0, 0.5, 3.0, inf, -inf, std::nan(""), 1.5e308, -1.5e308, 1e-310};
  std::mt19937_64 rng(13);
  const std::int64_t length = 37, width = 70;
  const TensorDesc d(DataType::float64, {length, width});
  std::vector<double> x(static_cast<std::size_t>(length * width));
  for (auto& v : x) v = rng() % 3 ? picks[rng() % 6] : picks[rng() % std::size(picks)];
  std::vector<Schedule> schedules;
  for (const char* text : {"scan.tiled(stream=0)", "scan.tiled(tile=16, stream=1)"})
    schedules.push_back(Schedule::parse(text));
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (bool product : {false, true})
      for (int variant = 0; variant < 4; ++variant) {
        const CumulativeOptions o{0, variant & 1 ? Direction::decreasing : Direction::increasing, (variant & 2) != 0};
        std::vector<double> expected(x.size()), got(x.size());
        call(product, d, x.data(), d, expected.data(), o, Schedule("reference"));
        for (const auto& s : schedules) {
          call(product, d, x.data(), d, got.data(), o, s);
          for (std::size_t i = 0; i < x.size(); ++i)
            ASSERT_TRUE(std::isnan(expected[i]) ? std::isnan(got[i])
                                                : std::memcmp(&got[i], &expected[i], sizeof(double)) == 0)
                << name_of(isa) << (product ? " product " : " sum ") << label(s) << " variant " << variant
                << " element " << i << ": got " << got[i] << ", reference " << expected[i];
        }
      }
  }
}

// float64 sums whose prefixes cancel, over 80 binades: the row kernels keep their sums
// unnormalized between steps and fold segments apart, and the error after a cancellation must
// stay within the spec's bound, relative to the magnitudes summed. Every value is a multiple of
// 2^-40 below 2^65, so the exact prefixes are integers of that unit in 128 bits.
TEST(ScanKernels, Float64SumsCancelAcrossBinades) {
  constexpr std::int64_t n = 6151;
  const TensorDesc d(DataType::float64, {n});
  std::mt19937_64 rng(5);
  std::vector<double> x(static_cast<std::size_t>(n));
  std::vector<__int128> units(x.size());
  __int128 before = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i % 64 == 63) {
      // Every 64th value undoes the prefix before it but for less than 2^12: its multiple of 2^12.
      const double twelves = std::trunc(std::ldexp(double(before), -52));
      x[i] = -std::ldexp(twelves, 12);
      units[i] = -__int128(twelves) * (__int128(1) << 52);
    } else {
      const int e = int(rng() % 81) - 40;
      const auto m = std::int64_t(rng() % 4096) * (rng() % 2 ? 1 : -1);
      x[i] = std::ldexp(double(m), e);
      units[i] = __int128(m) * (__int128(1) << (e + 40));
    }
    before += units[i];
  }
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (const auto& s : line_schedules())
      for (auto dir : {Direction::increasing, Direction::decreasing})
        for (bool exclusive : {false, true}) {
          std::vector<double> y(x.size());
          cumulative_sum({d, x.data()}, {d, y.data()}, {0, dir, exclusive}, s);
          __int128 acc = 0;
          long double magnitude = 0;
          int failures = 0;
          for (std::int64_t q = 0; q < n && failures < 3; ++q) {
            const auto i = std::size_t(dir == Direction::decreasing ? n - 1 - q : q);
            if (!exclusive) acc += units[i], magnitude += std::fabs((long double)x[i]);
            const long double exact = std::ldexp((long double)acc, -40);
            if (std::fabs(y[i] - exact) > hk::test::scan_bound<double>(exact, magnitude, n, false, 0x1p-62L)) {
              ++failures;
              ADD_FAILURE() << name_of(isa) << " " << label(s) << " element " << i << ": got " << y[i]
                            << ", exact " << double(exact);
            }
            if (exclusive) acc += units[i], magnitude += std::fabs((long double)x[i]);
          }
        }
  }
}

// Stride 0 along the scanned axis and in place with streaming requested: the generic paths.
TEST(ScanKernels, BroadcastAndInPlaceUnderEveryIsa) {
  for (Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    const std::int32_t one = 1;
    const TensorDesc broadcast(DataType::int32, {1000}, {0}), packed(DataType::int32, {1000});
    std::vector<std::int32_t> y(1000);
    for (const auto& s : every_schedule_streaming_too()) {
      cumulative_sum({broadcast, &one}, {packed, y.data()}, {}, s);
      for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], std::int32_t(i + 1)) << name_of(isa) << label(s);
      std::vector<std::int64_t> z(999, 2);
      const TensorDesc zd(DataType::int64, {999});
      cumulative_sum({zd, z.data()}, {zd, z.data()}, {0, Direction::decreasing, false}, s);
      for (std::size_t i = 0; i < z.size(); ++i)
        EXPECT_EQ(z[i], std::int64_t(2 * (999 - i))) << name_of(isa) << label(s);
    }
  }
}

}  // namespace
