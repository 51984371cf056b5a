// The kernel paths of QuantizedLinearMatMul: the int16 pair bound that decides whether the AVX2
// vpmaddubsw path may run, the GPU and host epilogues' shorter requantizations, the reuse of a B
// packed by hk::pack_b, and its validation.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "algorithms/requantize.hpp"
#include "schedules/qmm_epilogue.hpp"
#include "fenced_bytes_test_util.hpp"
#include "isa_test_util.hpp"
#include "qmm_test_util.hpp"

namespace {

using qmmt::Buffer;
using qmmt::i64;
using qmmt::Problem;
using hk::DataType;

// A problem with the given A and B values (cycled), per-tensor scales chosen so that outputs
// spread around the middle of the output range.
Problem make_problem(i64 M, i64 N, i64 K, DataType ta, DataType tb, const std::vector<int>& a_values,
                     const std::vector<int>& b_values, std::mt19937_64& rng) {
  Problem p;
  p.M = M, p.N = N, p.K = K;
  p.a = qmmt::literal_q(ta, {M, K}, a_values, rng);
  p.b = qmmt::literal_q(tb, {K, N}, b_values, rng);
  p.y = Buffer(DataType::uint8, {M, N}, {}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {128}, rng);
  p.a_scale = qmmt::literal_f({1}, {1.0f}, rng);
  p.b_scale = qmmt::literal_f({1}, {1.0f}, rng);
  double ms = 0;
  const std::vector<i64> acc = qmmt::oracle_accumulators(p);
  for (i64 v : acc) ms += double(v) * double(v);
  const double rms = std::max(1.0, std::sqrt(ms / double(acc.size())));
  p.y_scale = qmmt::literal_f({1}, {float(std::exp2(std::ceil(std::log2(rms / 40.0))))}, rng);
  return p;
}

std::vector<int> random_values(std::size_t n, int lo, int hi, std::mt19937_64& rng) {
  std::vector<int> v(n);
  for (int& x : v) x = lo + int(rng() % std::uint64_t(hi - lo + 1));
  return v;
}

std::vector<hk::Schedule> schedules() {
  return {hk::Schedule(), hk::Schedule::parse("qmm.tiled(mc=16, nc=16, kc=64)"),
          hk::Schedule::parse("qmm.parallel(threads=2)")};
}

// The case oneDNN 2.6 gets wrong on AVX2: u8 255 x s8 127 over K = 64 sums to 2072640, while a
// saturating vpmaddubsw gives 1048544.
TEST(QmmKernels, SaturatingPairsStayExact) {
  std::mt19937_64 rng(1);
  Problem p = make_problem(3, 5, 64, DataType::uint8, DataType::int8, {255}, {127}, rng);
  const qmmt::Expected e = qmmt::oracle(p, false);
  ASSERT_EQ(e.acc[0], 2072640);
  qmmt::check_all(p, schedules(), e);
}

// Weights within [-64, 64] cannot saturate a vpmaddubsw pair and take that path on AVX2; one
// beyond and the exact widening path must take over. Both must match the oracle.
TEST(QmmKernels, PairBoundEitherSide) {
  std::mt19937_64 rng(2);
  for (const std::vector<int>& b : {std::vector<int>{64, 64}, std::vector<int>{-64, -64},
                                    std::vector<int>{65, 1}, std::vector<int>{-65, -1},
                                    std::vector<int>{127, 127}, std::vector<int>{-64, 63, 64, -64}}) {
    // An odd N puts consecutive pattern values into one column's consecutive depths; 17 columns
    // are one full panel (packed by the 16-column path) and one partial panel, 81 columns four
    // full panels (packed together with AVX-512), one more and a partial one. With 64 columns,
    // only four panels packed together, each column repeats one value.
    for (const i64 N : {17, 64, 81}) {
      SCOPED_TRACE("B pattern starts " + std::to_string(b[0]) + ", " + std::to_string(b[1]) + ", N " +
                   std::to_string(N));
      Problem p = make_problem(5, N, 70, DataType::uint8, DataType::int8, random_values(5 * 70, 200, 255, rng), b,
                               rng);
      qmmt::check_all(p, schedules(), qmmt::oracle(p, false));
    }
  }
}

// Weights in [-64, 63] (the fast path on AVX2) and the full range, every signedness of B; 45
// columns (two full panels and a partial one) and 109 (four full panels packed together with
// AVX-512, two more and a partial one); 37 and 8 rows, which leave 1 and 2 rows past the AVX2
// kernels' row tiles (4, and 6 for the exact one).
TEST(QmmKernels, SmallAndFullRangeWeights) {
  std::mt19937_64 rng(3);
  for (DataType ta : {DataType::uint8, DataType::int8})
    for (DataType tb : {DataType::uint8, DataType::int8}) {
      const int lo = tb == DataType::int8 ? -64 : 64, hi = lo + 127;
      for (bool full : {false, true})
        for (const auto [M, N] : {std::pair<i64, i64>{37, 45}, {37, 109}, {8, 45}}) {
          const std::vector<int> a = random_values(std::size_t(M * 200), ta == DataType::int8 ? -128 : 0,
                                                   ta == DataType::int8 ? 127 : 255, rng);
          const std::vector<int> b = full ? random_values(std::size_t(200 * N), tb == DataType::int8 ? -128 : 0,
                                                          tb == DataType::int8 ? 127 : 255, rng)
                                          : random_values(std::size_t(200 * N), lo, hi, rng);
          Problem p = make_problem(M, N, 200, ta, tb, a, b, rng);
          qmmt::check_all(p, schedules(), qmmt::oracle(p, false));
        }
    }
}

// A that the kernels read where it lies (uint8, rows of K contiguous bytes, K a multiple of 64,
// B at its zero point so that no row sums are wanted): rows further apart than K, row counts that
// are not multiples of any kernel's row tile, one matrix or one per batch, at every level; and
// beside them the same A that must still be packed (a B zero point off B's shift, K not a
// multiple of 64).
TEST(QmmKernels, AReadWhereItLies) {
  std::mt19937_64 rng(11);
  for (const DataType tb : {DataType::int8, DataType::uint8})
    for (const i64 M : {1, 7, 37})
      for (const i64 K : {64, 192, 200})
        for (const i64 gap : {0, 64, 3})
          for (const bool batched : {false, true}) {
            const i64 N = 45, row_stride = K + gap;
            Problem p = make_problem(M, N, K, DataType::uint8, tb, random_values(std::size_t(M * K), 0, 255, rng),
                                     random_values(std::size_t(K * N), tb == DataType::int8 ? -128 : 0,
                                                   tb == DataType::int8 ? 127 : 255, rng),
                                     rng);
            const std::vector<int> a_values = random_values(std::size_t(2 * M * K), 0, 255, rng);
            if (batched) {
              p.batch = {2};
              p.a = qmmt::literal_q(DataType::uint8, {2, M, K}, a_values, rng, {M * row_stride + 7, row_stride, 1});
              p.y = Buffer(DataType::uint8, {2, M, N}, {}, rng);
            } else {
              p.a = qmmt::literal_q(DataType::uint8, {M, K}, a_values, rng, {row_stride, 1});
            }
            p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {101}, rng);
            const int shift = tb == DataType::uint8 ? 128 : 0;
            for (const int b_zero : {shift, shift + 3}) {
              SCOPED_TRACE("B " + std::string(hk::name_of(tb)) + ", M " + std::to_string(M) + ", K " +
                           std::to_string(K) + ", row stride " + std::to_string(row_stride) + ", B zero point " +
                           std::to_string(b_zero) + (batched ? ", two batches of A" : ""));
              p.b_zero = qmmt::literal_q(tb, {1}, {b_zero}, rng);
              qmmt::check_all(p, schedules(), qmmt::oracle(p, false));
            }
          }
}

// A read in place whose last row ends right before a page that faults: no kernel, at any level
// (AMX's 16-row tiles included), reads a row past A's last, whatever M is left over by the row
// tiles and blocks; squares of several blocks, strips, and a B short enough to be read in place.
TEST(QmmKernels, AReadInPlaceReadsNoRowPastItsEnd) {
  std::mt19937_64 rng(13);
  const std::vector<hk::Schedule> schedules = {
      hk::Schedule(), hk::Schedule::parse("qmm.tiled(mc=16, nc=32, kc=64)"),
      hk::Schedule::parse("qmm.tiled(mc=48, nc=64, kc=128)"),
      hk::Schedule::parse("qmm.parallel(mc=32, nc=16, kc=64, threads=3)")};
  for (const i64 M : {1, 15, 17, 37, 48})
    for (const auto& [N, K] : {std::pair<i64, i64>{45, 64}, {64, 192}, {45, 192}}) {
      Problem p = make_problem(M, N, K, DataType::uint8, DataType::int8, random_values(std::size_t(M * K), 0, 255, rng),
                               random_values(std::size_t(K * N), -128, 127, rng), rng);
      p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {101}, rng);
      p.b_zero = qmmt::literal_q(DataType::int8, {1}, {0}, rng);
      const qmmt::Expected e = qmmt::oracle(p, false);
      hk::test::FencedBytes fenced(M * K);
      std::copy_n(p.a.base(), M * K, fenced.data());
      hk::QuantizedMatMulArgs args = p.args();
      args.a = {p.a.desc(), fenced.data()};
      const std::vector<unsigned char> junk = p.y.bytes;
      for (const hk::Isa isa : hk::test::runnable_isas()) {
        const hk::test::IsaCap cap(isa);
        for (const hk::Schedule& s : schedules) {
          p.y.bytes = junk;  // no schedule inherits another's outputs
          hk::quantized_linear_matmul(args, p.y.view(), s);
          qmmt::expect_outputs(p, e, "A fenced; isa " + std::string(hk::name_of(isa)) + "; schedule " +
                                         qmmt::schedule_name(s) + "; " + p.describe());
        }
      }
    }
}

// Strips of whole 64-column passes with A read in place: B's column sums come from the packing,
// added up over the kc slices, over depth parts and past int32 (K = 70016); elsewhere from a row of
// ones under A'. Both must give the oracle's sums at every level.
TEST(QmmKernels, StripsSumBColumnsSliceBySlice) {
  std::mt19937_64 rng(12);
  const std::vector<hk::Schedule> strips = {
      hk::Schedule(), hk::Schedule::parse("qmm.tiled(mc=16, nc=64, kc=256)"),
      hk::Schedule::parse("qmm.parallel(mc=16, nc=64, kc=256, threads=2)"),
      hk::Schedule::parse("qmm.parallel(mc=16, nc=128, kc=512, threads=3)")};
  for (const DataType tb : {DataType::int8, DataType::uint8})
    for (const auto& [M, N, K] : {std::array<i64, 3>{1, 64, 3136}, {7, 128, 1088}, {16, 64, 70016}, {5, 48, 1088}}) {
      Problem p = make_problem(M, N, K, DataType::uint8, tb, random_values(std::size_t(M * K), 0, 255, rng),
                               random_values(std::size_t(K * N), tb == DataType::int8 ? -128 : 0,
                                             tb == DataType::int8 ? 127 : 255, rng),
                               rng);
      p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {101}, rng);
      p.b_zero = qmmt::literal_q(tb, {1}, {tb == DataType::uint8 ? 128 : 0}, rng);
      SCOPED_TRACE("B " + std::string(hk::name_of(tb)) + ", M,N,K " + std::to_string(M) + "," + std::to_string(N) +
                   "," + std::to_string(K));
      qmmt::check_all(p, strips, qmmt::oracle(p, false));
    }
}

// K = 70001 of 255 x -128: the kernels' int32 dot products of u8 x s8 would overflow, so depth
// blocks are summed in int64 (the deep path), split at several block depths.
TEST(QmmKernels, DotProductsBeyondInt32) {
  std::mt19937_64 rng(7);
  const i64 K = 70001;
  Problem p = make_problem(2, 3, K, DataType::uint8, DataType::int8, {255}, {-128, -128, -127}, rng);
  const qmmt::Expected e = qmmt::oracle(p, false);
  ASSERT_LT(e.acc[0], i64(INT32_MIN));
  std::vector<hk::Schedule> s = schedules();
  for (const char* text : {"qmm.tiled(kc=64)", "qmm.tiled(kc=65536)", "qmm.parallel(kc=4096, threads=3)"})
    s.push_back(hk::Schedule::parse(text));
  qmmt::check_all(p, s, e);
}

// A finite non-negative multiplier: any bit pattern, a 24-bit integer scaled by up to 2^-shifts,
// a power of two times 1 + i / 8 up to 2^-tie_shifts (ties on the last bits), or a subnormal.
float random_multiplier(std::mt19937_64& rng, int shifts, int tie_shifts) {
  switch (rng() % 4) {
    case 0: return std::bit_cast<float>(std::uint32_t(rng()) & 0x7f7fffffu);
    case 1: return std::ldexp(float(rng() % 16777216), -int(rng() % shifts));
    case 2: return std::ldexp(1.0f + float(rng() % 8) / 8, -int(rng() % tie_shifts));
    default: return std::bit_cast<float>(std::uint32_t(rng() % 0x00800000u));
  }
}

// requantize_below_2_39 (the tensor-core epilogues' form without a call) against requantize_exact:
// accumulators across |acc| < 2^39 (edges and the narrow range included), multipliers of every
// finite non-negative bit pattern, powers of two that put ties on the last bits, subnormals.
TEST(QmmKernels, InlineWideRequantizationIsExact) {
  std::mt19937_64 rng(39);
  const i64 edge = (i64(1) << 39) - 1;
  for (int i = 0; i < 2000000; ++i) {
    const int bits = 1 + int(rng() % 39);
    i64 acc = i64(rng() & ((std::uint64_t(1) << bits) - 1));
    if (i % 7 == 0) acc = edge - i64(rng() % 4);
    if (rng() & 1) acc = -acc;
    const float m = random_multiplier(rng, 100, 70);
    const bool u8 = rng() & 1;
    const int zero = int(rng() % 256) - (u8 ? 0 : 128), qmin = u8 ? 0 : -128, qmax = u8 ? 255 : 127;
    ASSERT_EQ(hk::detail::requantize_below_2_39(acc, m, zero, qmin, qmax),
              hk::detail::requantize_exact(acc, m, zero, qmin, qmax))
        << "acc " << acc << " multiplier " << m << " zero point " << zero;
  }
}

// requantize_narrow against requantize_exact: accumulators across |acc| < 2^29 (edges included),
// multipliers of every finite non-negative bit pattern, integers, ties and subnormals.
TEST(QmmKernels, NarrowRequantizationIsExact) {
  std::mt19937_64 rng(29);
  const auto check = [](i64 acc, float m, int zero, int qmin, int qmax) {
    ASSERT_EQ(hk::detail::requantize_narrow(std::int32_t(acc), double(m), zero, qmin, qmax),
              hk::detail::requantize_exact(acc, m, zero, qmin, qmax))
        << "acc " << acc << " multiplier " << m << " zero point " << zero;
  };
  const i64 edge = (i64(1) << 29) - 1;
  for (int i = 0; i < 2000000; ++i) {
    const i64 acc = i % 3 == 0   ? i64(rng() % (2 * edge + 1)) - edge
                    : i % 3 == 1 ? i64(rng() % 2001) - 1000
                                 : (rng() & 1 ? edge : -edge) - i64(rng() % 4) * (rng() & 1 ? 1 : -1);
    const float m = random_multiplier(rng, 60, 30);
    const bool u8 = rng() & 1;
    check(std::abs(acc) > edge ? edge : acc, m, int(rng() % 256) - (u8 ? 0 : 128), u8 ? 0 : -128, u8 ? 255 : 127);
  }
  for (float m : {0.0f, 0.5f, 1.0f, 3.0f, 8388608.0f, 3e38f, 1e-45f})
    for (i64 acc = -300; acc <= 300; ++acc) check(acc * 1789, m, 3, 0, 255), check(acc, m, -7, -128, 127);
}

// requantize_biased (the host epilogue's fused form) against requantize_exact: accumulators of
// every width up to 2^52 (products far past 2^51, where only the clamp decides), multipliers of
// every finite non-negative bit pattern, ties, subnormals, odd and even zero points.
TEST(QmmKernels, FusedRequantizationIsExact) {
  std::mt19937_64 rng(52);
  const auto check = [](i64 acc, float m, int zero, int qmin, int qmax) {
    const double low = hk::detail::round_bias + qmin, high = hk::detail::round_bias + qmax;
    const double biased = hk::detail::requantize_biased(double(acc), double(m), zero, low, high);
    const auto got = std::int8_t(std::bit_cast<std::uint64_t>(biased));
    const auto want = hk::detail::requantize_exact(acc, m, zero, qmin, qmax);
    ASSERT_EQ(qmin == 0 ? int(std::uint8_t(got)) : int(got), want)
        << "acc " << acc << " multiplier " << m << " zero point " << zero;
  };
  for (int i = 0; i < 2000000; ++i) {
    const int bits = 1 + int(rng() % 52);
    i64 acc = i64(rng() & ((std::uint64_t(1) << bits) - 1));
    if (rng() & 1) acc = -acc;
    const float m = random_multiplier(rng, 80, 60);
    const bool u8 = rng() & 1;
    check(acc, m, int(rng() % 256) - (u8 ? 0 : 128), u8 ? 0 : -128, u8 ? 255 : 127);
  }
  for (float m : {0.0f, 0.5f, 1.5f, 1.0f, 3.0f, 8388608.0f, 3e38f, 1e-45f})
    for (i64 acc = -300; acc <= 300; ++acc) check(acc * 1789, m, 3, 0, 255), check(acc, m, -7, -128, 127);
}

// requantize_biased_float (the host epilogue's float32 form) against requantize_exact over its whole
// domain, |acc| <= 2^24: every width, the edges, multipliers of every finite non-negative bit
// pattern, ties, subnormals, odd and even zero points.
TEST(QmmKernels, FloatFusedRequantizationIsExact) {
  std::mt19937_64 rng(24);
  const auto check = [](i64 acc, float m, int zero, int qmin, int qmax) {
    const float low = hk::detail::round_bias_float + float(qmin), high = hk::detail::round_bias_float + float(qmax);
    const float biased = hk::detail::requantize_biased_float(float(acc), m, float(zero), low, high);
    const auto got = std::int8_t(std::bit_cast<std::uint32_t>(biased));
    const auto want = hk::detail::requantize_exact(acc, m, zero, qmin, qmax);
    ASSERT_EQ(qmin == 0 ? int(std::uint8_t(got)) : int(got), want)
        << "acc " << acc << " multiplier " << m << " zero point " << zero;
  };
  const i64 edge = i64(1) << 24;
  for (int i = 0; i < 2000000; ++i) {
    const int bits = 1 + int(rng() % 25);
    i64 acc = std::min(edge, i64(rng() & ((std::uint64_t(1) << bits) - 1)));
    if (i % 5 == 0) acc = edge - i64(rng() % 3);
    if (rng() & 1) acc = -acc;
    const float m = random_multiplier(rng, 60, 40);
    const bool u8 = rng() & 1;
    check(acc, m, int(rng() % 256) - (u8 ? 0 : 128), u8 ? 0 : -128, u8 ? 255 : 127);
  }
  for (float m : {0.0f, 0.5f, 1.5f, 1.0f, 3.0f, 8388608.0f, 3e38f, 1e-45f})
    for (i64 acc = -300; acc <= 300; ++acc) check(acc * 55921, m, 3, 0, 255), check(acc, m, -7, -128, 127);
}

// One block through the host epilogue's common case (requantize_block), every output compared with
// requantize_exact of its accumulator dot - alpha * colsum.
void check_common_block(i64 K, DataType ta, DataType ty, const std::vector<int>& a_zero, int y_zero,
                        const std::vector<float>& b_scale, float a_scale, const std::vector<i64>& acc, i64 rows,
                        i64 cols, std::mt19937_64& rng) {
  hk::detail::QmmProblem p;
  p.M = rows, p.N = cols, p.K = K;
  p.a.dtype = ta, p.b.dtype = DataType::int8, p.out_type = ty;
  std::vector<std::int8_t> out(std::size_t(rows * cols));
  p.out = out.data(), p.out_row_stride = cols, p.out_col_stride = 1;
  p.q.a_scale = {a_scale}, p.q.b_scale = b_scale, p.q.out_scale = {1.0f};
  p.q.a_zero = a_zero, p.q.b_zero = {0}, p.q.out_zero = {y_zero};
  const i64 ca = ta == DataType::int8 ? 128 : 0;
  std::vector<std::int32_t> dots(acc.size());
  std::vector<std::int64_t> row_sums(static_cast<std::size_t>(rows), 0);
  std::vector<std::int64_t> col_sums(static_cast<std::size_t>(cols));
  const i64 col_bound = std::min(128 * K, i64(1) << 21);  // alpha * colsum stays below 2^29
  for (auto& c : col_sums) c = i64(rng() % std::uint64_t(2 * col_bound + 1)) - col_bound;
  for (i64 i = 0; i < rows; ++i)
    for (i64 j = 0; j < cols; ++j) {
      const i64 alpha = ca + hk::detail::QuantParams::at(p.q.a_zero, i);
      const i64 dot = acc[std::size_t(i * cols + j)] + alpha * col_sums[std::size_t(j)];
      ASSERT_EQ(dot, i64(std::int32_t(dot))) << "a dot product beyond int32";
      dots[std::size_t(i * cols + j)] = std::int32_t(dot);
    }
  hk::detail::QmmBlockResult r;
  r.rows = rows, r.cols = cols, r.dots = dots.data(), r.ld = cols;
  r.row_sums = row_sums.data(), r.col_sums = col_sums.data();
  const int qmin = ty == DataType::uint8 ? 0 : -128, qmax = ty == DataType::uint8 ? 255 : 127;
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    std::fill(out.begin(), out.end(), std::int8_t(0x5a));
    hk::detail::QmmEpilogueScratch scratch;
    scratch.reserve(rows, cols);
    hk::detail::requantize_block(p, r, scratch);
    for (i64 i = 0; i < rows; ++i)
      for (i64 j = 0; j < cols; ++j) {
        const i64 a = acc[std::size_t(i * cols + j)];
        const float m = hk::detail::requant_multiplier(a_scale, hk::detail::QuantParams::at(p.q.b_scale, j), 1.0f);
        const std::int8_t got = out[std::size_t(i * cols + j)];
        ASSERT_EQ(ty == DataType::uint8 ? int(std::uint8_t(got)) : int(got),
                  hk::detail::requantize_exact(a, m, y_zero, qmin, qmax))
            << hk::name_of(isa) << " K " << K << " row " << i << " column " << j << " acc " << a << " multiplier "
            << m;
      }
  }
}

// The common epilogue's float32 path, exact where |acc| <= 2^24, and its rows with larger
// accumulators redone in double. Accumulators 2^24 + 2^16 + 1 + 2^18 t times 2^-17 lie 2^-17 past
// a tie, which float32, rounding the odd accumulator to the tie, would round the other way. At K
// one past the int32 bound every block takes the double path. One alpha for all rows, and per row.
TEST(QmmKernels, CommonEpilogueAroundTwoToThe24) {
  std::mt19937_64 rng(1 << 24);
  const i64 edge = i64(1) << 24;
  for (const i64 K : {i64(1000), i64(33025), i64(33026)})
    for (const bool per_row_alpha : {false, true})
      for (const DataType ty : {DataType::int8, DataType::uint8}) {
        const i64 rows = 1 + i64(rng() % 9), cols = 1 + i64(rng() % 150);
        const int sign = ty == DataType::int8 ? 1 : -1, y_zero = ty == DataType::int8 ? -128 : 255;
        std::vector<i64> acc(std::size_t(rows * cols));
        for (i64 i = 0; i < rows; ++i)
          for (i64 j = 0; j < cols; ++j) {
            const i64 t = i64(rng() % 4);
            i64 a = i % 3 == 0 ? edge + (i64(1) << 16) + 1 + (t << 18)  // past the float32 range
                    : i % 3 == 1 ? edge - i64(rng() % 3)                 // at its edge
                                 : i64(rng() % std::uint64_t(2 * edge)) - edge;
            if (i % 3 == 0 && j % 5 == 4) a = i64(rng() % 1000);  // one row mixing both
            acc[std::size_t(i * cols + j)] = sign * a;
          }
        std::vector<int> a_zero(per_row_alpha ? std::size_t(rows) : 1);
        for (int& z : a_zero) z = int(rng() % 256) - 128;
        check_common_block(K, DataType::int8, ty, a_zero, y_zero, {1.0f}, std::ldexp(1.0f, -17), acc, rows, cols,
                           rng);
      }
  // Random accumulators and multipliers, per-column B scales, uint8 A.
  for (int round = 0; round < 200; ++round) {
    const i64 rows = 1 + i64(rng() % 20), cols = 1 + i64(rng() % 300), K = 1 + i64(rng() % 33025);
    // Within the float32 range or up to the depth's bound (capped so that every dot fits int32).
    const i64 bound = std::min({K * 255 * 255, i64(1) << 30, rng() & 1 ? edge + 64 : i64(1) << 30});
    std::vector<i64> acc(std::size_t(rows * cols));
    for (auto& a : acc) a = i64(rng() % std::uint64_t(2 * bound + 1)) - bound;
    std::vector<float> b_scale(rng() & 1 ? std::size_t(cols) : 1);
    for (auto& b : b_scale) b = std::ldexp(1.0f + float(rng() % 64) / 64, -int(rng() % 24));
    const DataType ty = rng() & 1 ? DataType::uint8 : DataType::int8;
    check_common_block(K, DataType::uint8, ty, {int(rng() % 256)}, int(rng() % 128), b_scale, 1.0f, acc, rows, cols,
                       rng);
  }
}

TEST(QmmPackedB, ReusedAcrossCallsWithDifferentA) {
  std::mt19937_64 rng(4);
  Problem p = make_problem(9, 40, 77, DataType::int8, DataType::uint8,
                           random_values(9 * 77, -128, 127, rng), random_values(77 * 40, 0, 255, rng), rng);
  const hk::PackedB packed = hk::pack_b(p.b.cview());
  EXPECT_FALSE(packed.empty());
  EXPECT_GE(packed.packed_bytes(), 77 * 40);
  EXPECT_EQ(packed.desc().dtype(), DataType::uint8);
  for (int round = 0; round < 3; ++round) {
    p.a = qmmt::literal_q(DataType::int8, {9, 77}, random_values(9 * 77, -128, 127, rng), rng);
    const qmmt::Expected e = qmmt::oracle(p, false);
    for (const auto& s : schedules()) qmmt::run_and_check(p, s, e, "round " + std::to_string(round), &packed);
  }
}

TEST(QmmPackedB, BroadcastBatchIsPackedOnce) {
  std::mt19937_64 rng(5);
  Buffer b(DataType::int8, {3, 20, 17}, {0, 17, 1}, rng);
  const hk::PackedB packed = hk::pack_b(b.cview());
  EXPECT_EQ(packed.desc().stride(0), 0);
  Buffer single(DataType::int8, {20, 17}, {17, 1}, rng);
  EXPECT_EQ(packed.packed_bytes(), hk::pack_b(single.cview()).packed_bytes());
}

TEST(QmmPackedB, Validation) {
  std::mt19937_64 rng(6);
  Buffer wrong_type(DataType::int32, {4, 4}, {}, rng);
  try {
    hk::pack_b(wrong_type.cview());
    ADD_FAILURE() << "int32 B was packed";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_type);
  }
  Problem p = make_problem(4, 6, 8, DataType::uint8, DataType::int8, {1}, {1}, rng);
  hk::QuantizedMatMulArgs args = p.args();
  const hk::PackedB empty;
  args.packed_b = &empty;
  try {
    hk::quantized_linear_matmul(args, p.y.view());
    ADD_FAILURE() << "an empty PackedB was accepted";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_parameter);
  }
  Buffer other_depth(DataType::int8, {9, 6}, {}, rng);
  const hk::PackedB mismatched = hk::pack_b(other_depth.cview());
  args.packed_b = &mismatched;
  const std::vector<unsigned char> before = p.y.bytes;
  try {
    hk::quantized_linear_matmul(args, p.y.view());
    ADD_FAILURE() << "a packed B of depth 9 was accepted for K = 8";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_shape);
  }
  EXPECT_TRUE(p.y.bytes == before) << "the output was written";
}

}  // namespace
