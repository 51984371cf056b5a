// Every scan schedule against an independent high-precision oracle, over random shapes, types,
// axes, directions and layouts (padded, Fortran-order, broadcast, permuted outputs, in place).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "isa_test_util.hpp"
#include "scan_test_util.hpp"

namespace {

using namespace hk;
using hk::test::float16_t;
using hk::test::label;

enum class InLayout { packed, padded, fortran, broadcast };
enum class OutLayout { packed, padded, permuted, in_place };

struct Case {
  DataType type;
  bool product;
  std::vector<std::int64_t> sizes;
  CumulativeOptions options;
  InLayout in;
  OutLayout out;
};

std::string describe(const Case& c) {
  std::string s = std::string(name_of(c.type)) + (c.product ? " product" : " sum") + " sizes {";
  for (std::size_t i = 0; i < c.sizes.size(); ++i) s += (i ? "," : "") + std::to_string(c.sizes[i]);
  s += "} axis " + std::to_string(c.options.axis);
  s += c.options.direction == Direction::decreasing ? " decreasing" : " increasing";
  s += c.options.exclusive ? " exclusive" : " inclusive";
  s += " in-layout " + std::to_string(int(c.in)) + " out-layout " + std::to_string(int(c.out));
  return s;
}

// Row-major strides over the dimensions in `order` (outermost first), each extent padded.
std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& sizes,
                                      const std::vector<int>& order, std::mt19937_64& rng,
                                      bool pad) {
  std::vector<std::int64_t> strides(sizes.size());
  std::int64_t running = pad ? 1 + std::int64_t(rng() % 2) : 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = running;
    running = running * sizes[*it] + (pad ? std::int64_t(rng() % 3) : 0);
  }
  return strides;
}

std::int64_t span_of(const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& st) {
  std::int64_t m = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) m += (sizes[d] - 1) * st[d];
  return m + 1;
}

template <class T> T random_value(std::mt19937_64& rng, bool product) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());
  } else if constexpr (std::is_same_v<T, double>) {
    // Sums: multiples of 2^-50 below 2 in magnitude, all 53 bits used, so that every prefix of
    // up to 2^12 of them is exact in long double (63 bits) and most are not in float64.
    // Products: full-precision values in [0.8, 1.25).
    const double v = product ? std::uniform_real_distribution<double>(0.8, 1.25)(rng)
                             : std::ldexp(double(rng() >> 12), -50) * (rng() % 2 ? 1 : 0.5);
    return rng() % 2 ? v : -v;
  } else if constexpr (std::is_same_v<T, float>) {
    std::uniform_real_distribution<float> mag(product ? 0.8f : 0.0f, product ? 1.25f : 1.0f);
    const float v = mag(rng);
    return rng() % 2 ? v : -v;
  } else {
    // float16 and bfloat16: eighths, so that float32 accumulates their sums exactly.
    static const float choices[] = {0.5f, 0.75f, 1.0f, 1.25f, 1.5f};
    const float v = product ? choices[rng() % 5] : float(int(rng() % 33) - 16) / 8.0f;
    return T(rng() % 2 ? v : -v);
  }
}

// Checks y against the exact prefix of the spec's fold, to the spec's accuracy. bfloat16 sums
// of eighths are exact in float32, so each output is exactly the exact prefix rounded to
// nearest even.
template <class T>
::testing::AssertionResult close(T y, long double exact, long double abs_sum, const Case& c) {
  const long double v = hk::test::as_real(y);
  const std::int64_t length = c.sizes[std::size_t(c.options.axis)];
  if constexpr (std::is_same_v<T, hk::test::bfloat16_t>) {
    if (!c.product) {
      if (v == hk::test::as_real(T(float(exact)))) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << double(v) << ", exact " << double(exact)
                                           << " rounds to " << float(T(float(exact)));
    }
  }
  // The long double oracle of a float64 product rounds once per step (2^-64 each).
  const long double oracle_rel = std::is_same_v<T, double> && c.product ? (length + 1) * 0x1p-63L : 0;
  const long double bound = hk::test::scan_bound<T>(exact, abs_sum, length, c.product, oracle_rel);
  if (std::fabs(v - exact) <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << double(v) << ", exact " << double(exact)
                                       << ", bound " << double(bound);
}

template <class T> void check_case(const Case& c, std::mt19937_64& rng) {
  // The integers' oracle: wrapping arithmetic in their unsigned accumulator.
  using IntAcc = std::conditional_t<std::is_integral_v<T>, detail::AccOf<T>, int>;
  const int rank = int(c.sizes.size());
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);

  std::vector<std::int64_t> in_strides =
      c.in == InLayout::fortran
          ? strides_for(c.sizes, std::vector<int>(order.rbegin(), order.rend()), rng, false)
          : strides_for(c.sizes, order, rng, c.in == InLayout::padded);
  if (c.in == InLayout::broadcast)
    for (int d = 0; d < rank; ++d)
      if (rng() % 2) in_strides[d] = 0;
  std::vector<T> input(std::size_t(span_of(c.sizes, in_strides)));
  for (auto& v : input) v = random_value<T>(rng, c.product);

  std::vector<int> out_order = order;
  if (c.out == OutLayout::permuted) std::shuffle(out_order.begin(), out_order.end(), rng);
  const std::vector<std::int64_t> out_strides =
      c.out == OutLayout::in_place ? in_strides
                                   : strides_for(c.sizes, out_order, rng, c.out == OutLayout::padded);
  const TensorDesc in_desc(c.type, c.sizes, in_strides), out_desc(c.type, c.sizes, out_strides);

  // Expected values, computed line by line in long double (exact for every case generated here
  // but float64 products) and, for integers, in the unsigned accumulator.
  const std::int64_t count = in_desc.element_count();
  std::vector<long double> exact(static_cast<std::size_t>(count)), abs_sum(static_cast<std::size_t>(count));
  std::vector<T> exact_int(static_cast<std::size_t>(count));
  auto offset = [&](const std::vector<std::int64_t>& idx, const std::vector<std::int64_t>& st) {
    std::int64_t o = 0;
    for (int d = 0; d < rank; ++d) o += idx[d] * st[d];
    return o;
  };
  const int axis = c.options.axis;
  const std::int64_t length = c.sizes[axis];
  std::vector<std::int64_t> packed(rank);
  for (int d = rank - 1, r = 1; d >= 0; --d) packed[d] = r, r *= int(c.sizes[d]);
  std::vector<std::int64_t> idx(rank, 0);
  for (std::int64_t line = 0; line < count / length; ++line) {
    std::int64_t rest = line;
    for (int d = rank - 1; d >= 0; --d) {
      if (d == axis) continue;
      idx[d] = rest % c.sizes[d];
      rest /= c.sizes[d];
    }
    long double acc = c.product ? 1 : 0, mag = 0;
    IntAcc iacc = c.product ? 1 : 0;
    for (std::int64_t q = 0; q < length; ++q) {
      idx[axis] = c.options.direction == Direction::decreasing ? length - 1 - q : q;
      const T x = input[std::size_t(offset(idx, in_strides))];
      const std::size_t e = std::size_t(offset(idx, packed));
      if (c.options.exclusive) exact[e] = acc, abs_sum[e] = mag;
      const long double xr = hk::test::as_real(x);
      acc = c.product ? acc * xr : acc + xr;
      mag += std::fabs(xr);
      if (!c.options.exclusive) exact[e] = acc, abs_sum[e] = mag;
      if constexpr (std::is_integral_v<T>) {
        if (c.options.exclusive) exact_int[e] = T(iacc);
        iacc = c.product ? IntAcc(iacc * IntAcc(x)) : IntAcc(iacc + IntAcc(x));
        if (!c.options.exclusive) exact_int[e] = T(iacc);
      }
    }
  }

  const T sentinel = T(77);
  for (const auto& schedule : hk::test::all_scan_schedules()) {
    std::vector<T> output;
    const T* x = input.data();
    T* y;
    if (c.out == OutLayout::in_place) {
      output = input;
      x = y = output.data();
    } else {
      output.assign(std::size_t(span_of(c.sizes, out_strides)), sentinel);
      y = output.data();
    }
    const auto run = [&] {
      if (c.product)
        cumulative_product({in_desc, x}, {out_desc, y}, c.options, schedule);
      else
        cumulative_sum({in_desc, x}, {out_desc, y}, c.options, schedule);
    };
    if (hk::test::offload_refuses(c.type, schedule)) {
      EXPECT_THROW(run(), Error) << describe(c) << " schedule " << label(schedule);
      continue;
    }
    run();

    std::vector<bool> written(output.size(), false);
    std::vector<std::int64_t> i(rank, 0);
    int failures = 0;
    for (std::int64_t e = 0; e < count; ++e) {
      for (int d = rank - 1, r = int(e); d >= 0; --d) i[d] = r % c.sizes[d], r /= int(c.sizes[d]);
      const std::size_t o = std::size_t(offset(i, out_strides));
      written[o] = true;
      if constexpr (std::is_integral_v<T>) {
        if (output[o] != exact_int[std::size_t(e)] && ++failures <= 3) {
          ADD_FAILURE() << describe(c) << " schedule " << label(schedule) << " element " << e
                        << ": got " << output[o] << ", expected " << exact_int[std::size_t(e)];
        }
      } else {
        const auto ok = close(output[o], exact[std::size_t(e)], abs_sum[std::size_t(e)], c);
        if (!ok && ++failures <= 3) {
          ADD_FAILURE() << describe(c) << " schedule " << label(schedule) << " element " << e
                        << ": " << ok.message();
        }
      }
    }
    if (c.out != OutLayout::in_place)
      for (std::size_t o = 0; o < output.size(); ++o)
        if (!written[o] && !(output[o] == sentinel)) {
          ADD_FAILURE() << describe(c) << " schedule " << label(schedule)
                        << " wrote outside the output at offset " << o;
          break;
        }
  }
}

Case random_case(std::mt19937_64& rng) {
  static const DataType types[] = {DataType::float32, DataType::float16, DataType::float64,
                                   DataType::bfloat16, DataType::int32,   DataType::uint32,
                                   DataType::int64,   DataType::uint64};
  static const std::int64_t sizes[] = {1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 64};
  Case c;
  c.type = types[rng() % std::size(types)];
  c.product = rng() % 2;
  const int rank = 1 + int(rng() % 8);
  std::int64_t total = 1;
  for (int d = 0; d < rank; ++d) {
    std::int64_t n = sizes[rng() % std::size(sizes)];
    while (n > 1 && total * n > 4000) n /= 2;
    c.sizes.push_back(n);
    total *= n;
  }
  c.options.axis = int(rng() % rank);
  // Some long lines, so that blocked schedules cut them into many blocks.
  // Float products stay short enough to remain within range (float16: 1.5^24 < 65504).
  if (!c.product && total <= 64 && rng() % 2) c.sizes[c.options.axis] = 500 + std::int64_t(rng() % 3000);
  if (c.product && c.type == DataType::float16)
    c.sizes[c.options.axis] = std::min<std::int64_t>(c.sizes[c.options.axis], 24);
  c.options.direction = rng() % 2 ? Direction::decreasing : Direction::increasing;
  c.options.exclusive = rng() % 2;
  c.in = static_cast<InLayout>(rng() % 4);
  c.out = static_cast<OutLayout>(rng() % 4);
  if (c.out == OutLayout::in_place && c.in == InLayout::broadcast) c.in = InLayout::padded;
  return c;
}

class CumulativeProperties : public ::testing::TestWithParam<int> {};

TEST_P(CumulativeProperties, EveryScheduleMatchesTheOracle) {
  // The seeds take turns over the instruction-set levels this machine can run.
  const std::vector<Isa> isas = hk::test::runnable_isas();
  const hk::test::IsaCap cap(isas[std::size_t(GetParam()) % isas.size()]);
  SCOPED_TRACE(std::string("isa ") + name_of(active_isa()));
  std::mt19937_64 rng(0x5eed0000u + unsigned(GetParam()));
  for (int n = 0; n < 40; ++n) {
    const Case c = random_case(rng);
    SCOPED_TRACE(describe(c));
    detail::visit_scan_type(c.type, [&](auto t) { check_case<decltype(t)>(c, rng); });
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, CumulativeProperties, ::testing::Range(0, 20));

}  // namespace
