// Property tests of QuantizedLinearMatMul: every schedule (bare, minimum, maximum and odd block
// sizes, 1 to 3 threads, the empty schedule) against the independent oracle of qmm_test_util.hpp
// on random shapes, ranks 2 to 4, all eight signedness combinations, every parameter granularity and
// right-aligned parameter rank, strided/padded/transposed inputs and outputs, batch broadcast through
// stride 0, and depths beyond the int32-exact bound. Dyadic (power-of-two) scales are checked bit for
// bit; other scales may differ by one only within 1e-6 (relative) of a .5 boundary, as the spec says.
//
// Every run starts on an output full of random junk, and also checks that no byte of the output
// other than its elements, and no byte of any input, changed.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "qmm_test_util.hpp"

namespace {

using hk::DataType;
using qmmt::Buffer;
using qmmt::Expected;
using qmmt::Gran;
using qmmt::i64;
using qmmt::Layout;
using qmmt::ParamShape;
using qmmt::Problem;

constexpr DataType types8[] = {DataType::uint8, DataType::int8};

// ---- random problems ---------------------------------------------------------------------------

struct Config {
  std::vector<i64> batch;
  i64 M = 1, N = 1, K = 1;
  DataType ta = DataType::uint8, tb = DataType::uint8, ty = DataType::uint8;
  ParamShape sa, sb, sy;
  std::optional<ParamShape> za, zb, zy;
  Layout la = Layout::packed, lb = Layout::packed, ly = Layout::packed;
  std::vector<bool> bcast_a, bcast_b;  // stride 0 on that batch dimension
  std::optional<std::vector<i64>> a_batch, b_batch;  // batch sizes that broadcast to `batch`
  bool dyadic = true;                  // power-of-two scales: bit-exact
};

std::string describe(const Config& c) {
  std::string s = "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
                  " batch=" + qmmt::dims(c.batch) + " layouts a/b/y=" + qmmt::layout_name(c.la) + "/" +
                  qmmt::layout_name(c.lb) + "/" + qmmt::layout_name(c.ly) +
                  (c.dyadic ? " dyadic scales" : " decimal scales");
  for (std::size_t d = 0; d < c.bcast_a.size(); ++d) if (c.bcast_a[d]) s += " a-broadcast-dim" + std::to_string(d);
  for (std::size_t d = 0; d < c.bcast_b.size(); ++d) if (c.bcast_b[d]) s += " b-broadcast-dim" + std::to_string(d);
  return s;
}

std::vector<i64> concat(std::vector<i64> a, std::initializer_list<i64> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// A zero point value: mostly near the middle of the type's range (so accumulators stay varied),
/// sometimes anywhere, sometimes at an end of the range.
int random_zero_point(DataType t, std::mt19937_64& rng) {
  const int lo = qmmt::qmin(t), hi = qmmt::qmax(t), mid = (lo + hi + 1) / 2;
  switch (rng() % 8) {
    case 0: return lo;
    case 1: return hi;
    case 2:
    case 3: return lo + int(rng() % 256);
    default: return std::clamp(mid - 40 + int(rng() % 81), lo, hi);
  }
}

/// A parameter tensor with the given shape and random (padded, permuted) strides, junk values.
Buffer param_buffer(DataType t, ParamShape s, i64 count, std::mt19937_64& rng) {
  const std::vector<i64> sizes = qmmt::param_sizes(s, count);
  return Buffer(t, sizes, qmmt::make_strides(sizes, Layout::random, rng), rng);
}

i64 param_count(const Buffer& p) {
  i64 n = 1;
  for (i64 s : p.sizes) n *= s;
  return n;
}

/// Builds a problem: random data, random zero points, then scales chosen from the actual
/// accumulators so that outputs spread over the type's range instead of all saturating.
Problem build(const Config& c, std::mt19937_64& rng) {
  Problem p;
  p.batch = c.batch;
  p.M = c.M, p.N = c.N, p.K = c.K;
  const std::vector<i64> as = concat(c.a_batch.value_or(c.batch), {c.M, c.K}),
                         bs = concat(c.b_batch.value_or(c.batch), {c.K, c.N}),
                         ys = concat(c.batch, {c.M, c.N});
  std::vector<i64> ast = qmmt::make_strides(as, c.la, rng), bst = qmmt::make_strides(bs, c.lb, rng);
  for (std::size_t d = 0; d < c.bcast_a.size(); ++d) if (c.bcast_a[d]) ast[d] = 0;
  for (std::size_t d = 0; d < c.bcast_b.size(); ++d) if (c.bcast_b[d]) bst[d] = 0;
  p.a = Buffer(c.ta, as, ast, rng);  // random bytes are the data
  p.b = Buffer(c.tb, bs, bst, rng);
  p.y = Buffer(c.ty, ys, qmmt::make_strides(ys, c.ly, rng), rng);

  auto zero = [&](const std::optional<ParamShape>& s, DataType t, i64 count) -> std::optional<Buffer> {
    if (!s) return std::nullopt;
    Buffer z = param_buffer(t, *s, count, rng);
    for (i64 i = 0; i < param_count(z); ++i) z.set_q(qmmt::param_index(z, i), random_zero_point(t, rng));
    return z;
  };
  p.a_zero = zero(c.za, c.ta, c.M);
  p.b_zero = zero(c.zb, c.tb, c.N);
  p.y_zero = zero(c.zy, c.ty, c.M);
  p.a_scale = param_buffer(DataType::float32, c.sa, c.M, rng);
  p.b_scale = param_buffer(DataType::float32, c.sb, c.N, rng);
  p.y_scale = param_buffer(DataType::float32, c.sy, c.M, rng);

  // Root mean square of the accumulators decides the multiplier's size: outputs of about +-40.
  double ms = 0;
  const std::vector<i64> acc = qmmt::oracle_accumulators(p);
  for (i64 v : acc) ms += double(v) * double(v);
  const double rms = std::max(1.0, std::sqrt(ms / double(acc.size())));
  const double target = 40.0 / rms;
  auto fill = [&](Buffer& s, auto value) {
    for (i64 i = 0; i < param_count(s); ++i) s.set_f(qmmt::param_index(s, i), value(i));
  };
  // Per-row / per-column values vary by at most a factor of 2 (dyadic) or 1.4 (decimal) around a
  // base, so a per-tensor output scale still suits every row.
  if (c.dyadic) {
    const int e = int(std::lround(std::log2(target)));
    const int alpha = -12 + int(rng() % 15), beta = -12 + int(rng() % 15);
    std::vector<int> alphas(std::size_t(c.M));
    for (auto& x : alphas) x = alpha - 1 + int(rng() % 3);
    fill(p.a_scale, [&](i64 i) { return std::ldexp(1.0f, alphas[std::size_t(i)]); });
    fill(p.b_scale, [&](i64) { return std::ldexp(1.0f, beta - 1 + int(rng() % 3)); });
    fill(p.y_scale, [&](i64 i) {
      const int a = param_count(p.a_scale) > 1 ? alphas[std::size_t(i)] : alphas[0];
      return std::ldexp(1.0f, a + beta - e - 1 + int(rng() % 3));
    });
  } else {
    std::uniform_real_distribution<double> base(0.001, 0.1), jitter(0.7, 1.4);
    const double base_a = base(rng), base_b = base(rng);
    fill(p.a_scale, [&](i64) { return float(base_a * jitter(rng)); });
    fill(p.b_scale, [&](i64) { return float(base_b * jitter(rng)); });
    fill(p.y_scale, [&](i64 i) {
      const float sa = qmmt::scale_at(p.a_scale, param_count(p.a_scale) > 1 ? i : 0);
      return float(double(sa) * base_b / target * jitter(rng));
    });
  }
  return p;
}

ParamShape random_param_shape(Gran per, std::mt19937_64& rng) {
  ParamShape s;
  s.gran = rng() % 2 ? per : Gran::tensor;
  const int min_rank = s.gran == Gran::row ? 2 : 1;
  s.rank = min_rank + int(rng() % (5 - min_rank));
  return s;
}

std::optional<ParamShape> random_zero_shape(Gran per, std::mt19937_64& rng) {
  if (rng() % 3 == 0) return std::nullopt;
  return random_param_shape(per, rng);
}

Config random_config(std::mt19937_64& rng) {
  static constexpr i64 dims_pool[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 23, 31, 32, 33};
  auto dim = [&] { return dims_pool[rng() % std::size(dims_pool)]; };
  Config c;
  const int rank = 2 + int(rng() % 3);
  for (int d = 0; d < rank - 2; ++d) c.batch.push_back(1 + i64(rng() % 3));
  c.M = dim(), c.N = dim(), c.K = dim();
  c.ta = types8[rng() % 2], c.tb = types8[rng() % 2], c.ty = types8[rng() % 2];
  c.sa = random_param_shape(Gran::row, rng);
  c.sb = random_param_shape(Gran::column, rng);
  c.sy = random_param_shape(Gran::row, rng);
  c.za = random_zero_shape(Gran::row, rng);
  c.zb = random_zero_shape(Gran::column, rng);
  c.zy = random_zero_shape(Gran::row, rng);
  c.la = qmmt::all_layouts[rng() % 5], c.lb = qmmt::all_layouts[rng() % 5], c.ly = qmmt::all_layouts[rng() % 5];
  for (int d = 0; d < rank - 2; ++d) {
    c.bcast_a.push_back(rng() % 4 == 0);
    c.bcast_b.push_back(rng() % 4 == 0);
  }
  c.dyadic = rng() % 2;
  return c;
}

/// Builds, computes the oracle, runs every schedule. Returns the oracle for statistics.
Expected check_config(const Config& c, std::mt19937_64& rng, int random_mixes = 4) {
  Problem p = build(c, rng);
  const Expected e = qmmt::oracle(p, !c.dyadic);
  qmmt::check_all(p, qmmt::test_schedules(rng, random_mixes), e, describe(c));
  return e;
}

// ---- tests ---------------------------------------------------------------------------------------

// Random everything. Also guards against a vacuous test: most outputs must be unsaturated and the
// near-tie tolerance must apply only rarely.
TEST(QmmProperties, RandomProblemsEverySchedule) {
  std::mt19937_64 rng(20240601);
  i64 total = 0, unsaturated = 0, tolerated = 0;
  for (int iter = 0; iter < 250; ++iter) {
    const Config c = random_config(rng);
    const Expected e = check_config(c, rng);
    for (std::size_t i = 0; i < e.lo.size(); ++i) {
      ++total;
      if (e.lo[i] > qmmt::qmin(c.ty) && e.hi[i] < qmmt::qmax(c.ty)) ++unsaturated;
    }
    tolerated += e.tolerated;
  }
  RecordProperty("outputs", int(total));
  RecordProperty("unsaturated", int(unsaturated));
  RecordProperty("near_tie_tolerated", int(tolerated));
  EXPECT_GT(unsaturated * 10, total * 6) << unsaturated << " of " << total << " unsaturated";
  EXPECT_LT(tolerated * 1000, total) << tolerated << " of " << total << " within a near-tie window";
}

// All eight signedness combinations of A, B and the output, with per-row/per-column zero points,
// both scale kinds, packed rank 2 and strided rank 3.
TEST(QmmProperties, AllSignednessCombinations) {
  std::mt19937_64 rng(8);
  for (DataType ta : types8)
    for (DataType tb : types8)
      for (DataType ty : types8)
        for (int variant = 0; variant < 4; ++variant) {
          Config c;
          c.ta = ta, c.tb = tb, c.ty = ty;
          c.M = 7, c.N = 5, c.K = 11;
          c.dyadic = variant % 2 == 0;
          if (variant >= 2) {
            c.batch = {2};
            c.la = Layout::random, c.lb = Layout::transposed_padded, c.ly = Layout::padded;
            c.bcast_a = {false}, c.bcast_b = {false};
          }
          c.sa = {Gran::row, 2}, c.sb = {Gran::column, 2}, c.sy = {Gran::row, 2};
          c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 1}, c.zy = ParamShape{Gran::row, 3};
          SCOPED_TRACE(std::string(hk::name_of(ta)) + " x " + std::string(hk::name_of(tb)) + " -> " +
                       std::string(hk::name_of(ty)));
          check_config(c, rng, 2);
        }
}

// Every combination of granularities: scales per tensor or per row/column, zero points absent,
// per tensor or per row/column (2*3 per operand, 216 in all), at random right-aligned ranks.
TEST(QmmProperties, EveryGranularityCombination) {
  std::mt19937_64 rng(216);
  const std::array<std::optional<Gran>, 3> zero_kinds = {std::nullopt, Gran::tensor, Gran::row};
  int n = 0;
  for (Gran ga : {Gran::tensor, Gran::row})
    for (Gran gb : {Gran::tensor, Gran::column})
      for (Gran gy : {Gran::tensor, Gran::row})
        for (auto za : zero_kinds)
          for (auto zb : zero_kinds)
            for (auto zy : zero_kinds) {
              Config c;
              c.M = 4, c.N = 3, c.K = 5;
              if (n % 3 == 1) c.batch = {2}, c.bcast_a = {false}, c.bcast_b = {n % 2 == 0};
              c.ta = types8[rng() % 2], c.tb = types8[rng() % 2], c.ty = types8[rng() % 2];
              auto shape = [&](Gran g) {
                ParamShape s{g, 1};
                s.rank = (g == Gran::row ? 2 : 1) + int(rng() % (g == Gran::row ? 3 : 4));
                return s;
              };
              c.sa = shape(ga), c.sb = shape(gb), c.sy = shape(gy);
              if (za) c.za = shape(*za);
              if (zb) c.zb = shape(*zb == Gran::row ? Gran::column : Gran::tensor);
              if (zy) c.zy = shape(*zy);
              c.dyadic = n++ % 2 == 0;
              check_config(c, rng, 1);
            }
}

// Each parameter at every legal right-aligned rank of each granularity ({1}..{1,1,1,1},
// {M,1}..{1,1,M,1}, {N}..{1,1,1,N}), the other parameters per tensor.
TEST(QmmProperties, EveryParameterRank) {
  std::mt19937_64 rng(1234);
  for (int which = 0; which < 6; ++which)
    for (Gran g : {Gran::tensor, Gran::row})
      for (int rank = 1; rank <= 4; ++rank) {
        const bool column = which == 1 || which == 4;  // b_scale, b_zero_point
        const Gran gran = g == Gran::row ? (column ? Gran::column : Gran::row) : Gran::tensor;
        if (gran == Gran::row && rank < 2) continue;
        Config c;
        c.M = 5, c.N = 6, c.K = 7;
        c.batch = {2, 1}, c.bcast_a = {false, false}, c.bcast_b = {true, false};
        c.ta = DataType::int8, c.tb = DataType::uint8, c.ty = DataType::int8;
        const ParamShape s{gran, rank};
        c.za = ParamShape{}, c.zb = ParamShape{}, c.zy = ParamShape{};
        switch (which) {
          case 0: c.sa = s; break;
          case 1: c.sb = s; break;
          case 2: c.sy = s; break;
          case 3: c.za = s; break;
          case 4: c.zb = s; break;
          case 5: c.zy = s; break;
        }
        for (bool dyadic : {true, false}) {
          c.dyadic = dyadic;
          SCOPED_TRACE("parameter " + std::to_string(which) + " rank " + std::to_string(rank));
          check_config(c, rng, 1);
        }
      }
}

// Every combination of layouts for A, B and the output: packed, padded (gaps between elements and
// rows), transposed (column-major), transposed and padded, random dimension order.
TEST(QmmProperties, StridedAndTransposedLayouts) {
  std::mt19937_64 rng(55);
  int n = 0;
  for (Layout la : qmmt::all_layouts)
    for (Layout lb : qmmt::all_layouts)
      for (Layout ly : qmmt::all_layouts) {
        Config c;
        c.la = la, c.lb = lb, c.ly = ly;
        c.M = 6, c.N = 9, c.K = 7;
        if (n % 2) c.batch = {3}, c.bcast_a = {false}, c.bcast_b = {false};
        c.ta = types8[n % 2], c.tb = types8[(n / 2) % 2], c.ty = types8[(n / 4) % 2];
        c.sa = {Gran::row, 2}, c.sb = {Gran::column, 2}, c.za = ParamShape{Gran::tensor, 1};
        c.zb = ParamShape{Gran::column, 1};
        c.dyadic = n++ % 3 != 0;
        check_config(c, rng, 1);
      }
}

// Batch broadcast: stride 0 on any subset of A's and B's batch dimensions (B broadcast over every
// batch is the case the tiled schedules pack only once).
TEST(QmmProperties, BatchBroadcastThroughStrideZero) {
  std::mt19937_64 rng(77);
  for (int rank = 3; rank <= 4; ++rank) {
    const int nb = rank - 2;
    for (int ma = 0; ma < (1 << nb); ++ma)
      for (int mb = 0; mb < (1 << nb); ++mb) {
        Config c;
        c.batch = rank == 3 ? std::vector<i64>{3} : std::vector<i64>{2, 3};
        for (int d = 0; d < nb; ++d) {
          c.bcast_a.push_back((ma >> d) & 1);
          c.bcast_b.push_back((mb >> d) & 1);
        }
        c.M = 5, c.N = 7, c.K = 9;
        c.ta = DataType::uint8, c.tb = DataType::int8, c.ty = DataType::uint8;
        c.la = (ma + mb) % 2 ? Layout::transposed : Layout::packed;
        c.za = ParamShape{Gran::row, 2}, c.zy = ParamShape{Gran::tensor, 1};
        c.dyadic = (ma + mb) % 3 != 0;
        check_config(c, rng, 2);
      }
  }
}

// Batch dimensions broadcast as in numpy.matmul: different ranks and size-1 dimensions of A or B
// against the other's, with distinct data in every batch (the oracle right-aligns on its own).
TEST(QmmProperties, BatchBroadcastAsInNumpy) {
  std::mt19937_64 rng(4242);
  struct Shapes {
    std::vector<i64> y, a, b;
  };
  const Shapes cases[] = {{{2}, {2}, {}},        {{2}, {}, {2}},          {{2}, {1}, {2}},
                          {{2, 3}, {2, 1}, {3}}, {{2, 3}, {1, 3}, {2, 1}}, {{2, 3}, {3}, {2, 1}},
                          {{2, 3}, {}, {2, 3}},  {{1, 3}, {1, 3}, {1}},    {{3, 2}, {3, 2}, {1, 1}}};
  int n = 0;
  for (const Shapes& s : cases) {
    Config c;
    c.batch = s.y, c.a_batch = s.a, c.b_batch = s.b;
    c.M = 5, c.N = 7, c.K = 9;
    c.ta = types8[n % 2], c.tb = types8[(n / 2) % 2], c.ty = DataType::uint8;
    c.la = n % 3 == 1 ? Layout::transposed : Layout::packed;
    c.lb = n % 3 == 2 ? Layout::padded : Layout::packed;
    c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::tensor, 1};
    c.dyadic = n++ % 2 == 0;
    SCOPED_TRACE("output batch " + qmmt::dims(s.y) + " from a " + qmmt::dims(s.a) + " and b " + qmmt::dims(s.b));
    check_config(c, rng, 1);
  }
}

// Shapes including 1, primes and non-multiples of 4/8/16/32 in every position.
TEST(QmmProperties, ShapeSweep) {
  std::mt19937_64 rng(99);
  static constexpr i64 sizes[] = {1, 2, 3, 5, 8, 17, 33};
  int n = 0;
  for (i64 M : sizes)
    for (i64 N : sizes)
      for (i64 K : sizes) {
        Config c;
        c.M = M, c.N = N, c.K = K;
        c.ta = types8[n % 2], c.tb = types8[(n / 2) % 2], c.ty = types8[(n / 4) % 2];
        c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 2};
        c.sb = {Gran::column, 1};
        c.dyadic = n++ % 2 == 0;
        check_config(c, rng, 1);
      }
}

// The epilogue's common case (B's zero points at its shift, so none for int8 B; one A scale and one
// output scale; rows of 8-bit output) over rows of several vectors and a tail (221 columns): both
// output types, zero points per row, B scales per column and per tensor, outputs saturating on
// both sides, and padded output rows.
TEST(QmmProperties, WideRowsThroughTheCommonEpilogue) {
  std::mt19937_64 rng(6464);
  i64 low = 0, high = 0, total = 0;
  for (DataType ta : types8)
    for (DataType ty : types8)
      for (Gran sb : {Gran::column, Gran::tensor})
        for (bool dyadic : {true, false}) {
          Config c;
          c.M = 7, c.N = 3 * 64 + 29, c.K = 45;
          c.ta = ta, c.tb = DataType::int8, c.ty = ty;
          c.sb = {sb, 1};
          c.za = ParamShape{Gran::row, 2}, c.zy = ParamShape{Gran::row, 2};
          c.ly = dyadic ? Layout::packed : Layout::padded;
          c.dyadic = dyadic;
          const Expected e = check_config(c, rng, 1);
          for (std::size_t i = 0; i < e.lo.size(); ++i) {
            low += e.hi[i] == qmmt::qmin(ty);
            high += e.lo[i] == qmmt::qmax(ty);
          }
          total += i64(e.lo.size());
        }
  EXPECT_GT(low, 0) << "no output saturated low";
  EXPECT_GT(high, 0) << "no output saturated high";
  EXPECT_GT(total - low - high, total / 2) << "most outputs must lie inside the range";
}

// Block sizes of 1, odd, prime, just below, equal to and just above the shape, and the maxima,
// for both blocked strategies; 1 to 3 threads for the parallel one.
TEST(QmmProperties, BlockSizesAroundTheShape) {
  std::mt19937_64 rng(31337);
  Config c;
  c.batch = {2}, c.bcast_a = {false}, c.bcast_b = {false};
  c.M = 13, c.N = 11, c.K = 19;
  c.ta = DataType::int8, c.tb = DataType::int8, c.ty = DataType::uint8;
  c.la = Layout::random, c.lb = Layout::random, c.ly = Layout::random;
  c.sa = {Gran::row, 2}, c.sb = {Gran::column, 2};
  c.za = ParamShape{Gran::row, 3}, c.zb = ParamShape{Gran::column, 3}, c.zy = ParamShape{Gran::row, 4};
  for (bool dyadic : {true, false}) {
    c.dyadic = dyadic;
    Problem p = build(c, rng);
    const Expected e = qmmt::oracle(p, !dyadic);
    for (i64 mc : {1, 2, 3, 4, 5, 7, 12, 13, 14, 4096})
      for (i64 nc : {1, 2, 3, 7, 10, 11, 12, 8192})
        for (i64 kc : {1, 2, 3, 5, 18, 19, 20, 33025})
          qmmt::run_and_check(p, hk::Schedule("qmm.tiled").set("mc", mc).set("nc", nc).set("kc", kc), e);
    for (i64 mc : {1, 3, 13, 4096})
      for (i64 nc : {1, 7, 11, 8192})
        for (i64 kc : {1, 5, 19, 33025})
          for (i64 threads : {1, 2, 3})
            qmmt::run_and_check(
                p, hk::Schedule("qmm.parallel").set("mc", mc).set("nc", nc).set("kc", kc).set("threads", threads), e);
  }
}

// Big enough (M*N*K >= 2^21) for the library's default to choose its parallel strategy.
TEST(QmmProperties, LargerProblemDefaultAndEverySchedule) {
  std::mt19937_64 rng(4242);
  Config c;
  c.M = 129, c.N = 131, c.K = 127;
  c.ta = DataType::uint8, c.tb = DataType::int8, c.ty = DataType::int8;
  c.sa = {Gran::row, 2}, c.sb = {Gran::column, 1};
  c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::tensor, 1}, c.zy = ParamShape{Gran::tensor, 1};
  c.lb = Layout::transposed;
  check_config(c, rng, 1);
}

// Threads sharing a large output (three here: the sanitizer suites run this too): the default
// blocks become squares of up to 256 where column slices would be narrower (600 x 700), the
// few-blocks split where there are fewer squares than threads (300 x 200), and stay slices where
// they are 256 wide or more (300 x 900).
TEST(QmmProperties, DefaultBlocksForSeveralThreads) {
  std::mt19937_64 rng(1300);
  for (auto [M, N] : {std::array<i64, 2>{600, 700}, {300, 200}, {300, 900}}) {
    Config c;
    c.M = M, c.N = N, c.K = 67;
    c.ta = DataType::uint8, c.tb = DataType::int8, c.ty = DataType::uint8;
    c.sa = {Gran::tensor, 1}, c.sb = {Gran::column, 1};
    c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 1};
    Problem p = build(c, rng);
    qmmt::check_all(p, {hk::Schedule("qmm.parallel").set("threads", 3)}, qmmt::oracle(p, c.dyadic), describe(c));
  }
}

// One row block and fewer column blocks than threads: the idle threads take depth parts of each
// column block, which are added up exactly (K = 70001 in int64 parts), every signedness pair.
TEST(QmmProperties, FewColumnBlocksSplitTheirDepthOverThreads) {
  std::mt19937_64 rng(4099);
  const std::array<std::array<i64, 4>, 5> shapes{{{1, 1, 8193, 1}, {3, 17, 12289, 1}, {2, 16, 70001, 1},
                                                  {5, 16, 9000, 2}, {16, 3, 20000, 1}}};
  for (const auto& [M, N, K, batches] : shapes)
    for (DataType ta : types8)
      for (DataType tb : types8) {
        Config c;
        c.M = M, c.N = N, c.K = K;
        c.ta = ta, c.tb = tb, c.ty = rng() % 2 ? DataType::uint8 : DataType::int8;
        if (batches > 1) c.batch = {batches}, c.bcast_a = {false}, c.bcast_b = {false};
        c.sa = {Gran::row, 2}, c.sb = {Gran::column, 1};
        c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 1};
        Problem p = build(c, rng);
        std::vector<hk::Schedule> schedules;
        // At most 3 threads, as the other tests: teams larger than the 2-core CI machine leave
        // libomp allocations that LeakSanitizer reports at exit.
        for (int threads : {2, 3}) schedules.push_back(hk::Schedule("qmm.parallel").set("threads", threads));
        schedules.push_back(hk::Schedule("qmm.parallel").set("nc", 16).set("kc", 1000).set("threads", 3));
        qmmt::check_all(p, schedules, qmmt::oracle(p, c.dyadic), describe(c));
      }
}

// Shapes {M, N, K} with B laid out as `b_layouts` (in turn), every signedness, per-row and
// per-column zero points (A's at times left out, so that a uint8 A is read in place), through the
// default dispatch and qmm.tiled, and over threads in depth parts and in column blocks.
void check_b_layouts(const std::vector<std::array<i64, 3>>& shapes, std::array<Layout, 2> b_layouts,
                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int n = 0;
  for (const auto& [M, N, K] : shapes)
    for (DataType ta : types8)
      for (DataType tb : types8) {
        Config c;
        c.M = M, c.N = N, c.K = K;
        c.ta = ta, c.tb = tb, c.ty = types8[n % 2];
        c.lb = b_layouts[std::size_t(n++ % 2)];
        c.la = K > 1000 || n % 3 ? Layout::packed : Layout::padded;
        c.sa = {Gran::row, 2}, c.sb = {Gran::column, 2};
        c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 1};
        if (n % 4 == 0) c.za.reset();
        Problem p = build(c, rng);
        const std::vector<hk::Schedule> schedules = {
            hk::Schedule(), hk::Schedule("qmm.tiled"), hk::Schedule("qmm.parallel").set("threads", 2),
            hk::Schedule("qmm.parallel").set("nc", 16).set("kc", 64).set("threads", 3)};
        qmmt::check_all(p, schedules, qmmt::oracle(p, c.dyadic), describe(c));
      }
}

// B whose columns are contiguous (a transposed K x N, packed or with gaps) at heights on both sides
// of where strips stop packing B and read it in place (32 rows with AMX, 12 with AVX2, 256 with
// VNNI, whose kernel changes its tiles past 5 rows); deep enough for int64 sums.
TEST(QmmProperties, BWithContiguousColumnsOnBothSidesOfPacking) {
  check_b_layouts({{1, 3, 100}, {5, 17, 70}, {6, 13, 66}, {12, 4, 129}, {13, 9, 64}, {32, 33, 65},
                   {33, 5, 31}, {256, 6, 40}, {257, 7, 20}, {3, 5, 70001}},
                  {Layout::transposed_padded, Layout::transposed}, 2718);
}

// A row-major B (contiguous, or with gaps between rows and at times between elements) at heights
// on both sides of where strips stop packing B and read it by rows in place (12 rows at AVX2, 4 at
// AVX-512, 8 at AVX-512 VNNI, 6 at AMX), columns past whole 64s and 16s, depths past whole eights
// and pairs; deep enough for int64 sums
// (nc = 16 in the last schedule, which the rows kernels round up to 64).
TEST(QmmProperties, RowMajorBOnBothSidesOfReadingItByRows) {
  check_b_layouts({{1, 3, 100}, {2, 64, 7}, {3, 65, 70}, {4, 130, 9}, {5, 200, 66}, {6, 63, 129},
                   {7, 70, 33}, {8, 9, 64}, {9, 64, 31}, {12, 17, 41}, {13, 33, 18}, {3, 70, 70001}},
                  {Layout::padded, Layout::packed}, 1618);
}

// Powers of two from 2^-64 (everything rounds to zero) through subnormal multipliers to 2^30
// (everything saturates), also with scales that are subnormal themselves.
TEST(QmmProperties, ExtremeMultipliers) {
  std::mt19937_64 rng(6502);
  struct Scales { int a, b, y; };  // exponents
  for (const Scales s : {Scales{-32, -32, 0}, Scales{-100, -40, 10}, Scales{-120, -20, 0},
                         Scales{-70, -70, -130}, Scales{-10, -10, -20}, Scales{0, 0, 0},
                         Scales{10, 10, 0}, Scales{20, 20, 10}, Scales{-140, 0, -140}})
    for (DataType ty : types8) {
      Config c;
      c.M = 5, c.N = 6, c.K = 9;
      c.ta = DataType::int8, c.tb = DataType::uint8, c.ty = ty;
      c.zy = ParamShape{Gran::tensor, 1};
      Problem p = build(c, rng);
      qmmt::for_each_index(p.a_scale.sizes, [&](const std::vector<i64>& i) { p.a_scale.set_f(i, std::ldexp(1.0f, s.a)); });
      qmmt::for_each_index(p.b_scale.sizes, [&](const std::vector<i64>& i) { p.b_scale.set_f(i, std::ldexp(1.0f, s.b)); });
      qmmt::for_each_index(p.y_scale.sizes, [&](const std::vector<i64>& i) { p.y_scale.set_f(i, std::ldexp(1.0f, s.y)); });
      const Expected e = qmmt::oracle(p, false);
      qmmt::check_all(p, qmmt::test_schedules(rng, 1), e,
                      "scale exponents " + std::to_string(s.a) + "," + std::to_string(s.b) + "," + std::to_string(s.y));
    }
}

// The multiplier's evaluation order is part of the spec: float32(float32(sa*sb)/sy). Here sa*sb is
// 3.75 * 2^-149, which float32 rounds to the subnormal 4 * 2^-149, so the multiplier is exactly 1
// (not 0.9375, the real ratio) and acc = 10 gives 10, where an evaluation in double gives 9.
TEST(QmmProperties, CanonicalMultiplierWithSubnormalProduct) {
  std::mt19937_64 rng(149);
  const float sa = std::ldexp(3.0f, -75), sb = std::ldexp(5.0f, -76), sy = std::ldexp(1.0f, -147);
  ASSERT_EQ(qmmt::canonical_multiplier(sa, sb, sy), 1.0f);
  Problem p;
  p.M = 1, p.N = 1, p.K = 1;
  p.a = qmmt::literal_q(DataType::uint8, {1, 1}, {10}, rng);
  p.b = qmmt::literal_q(DataType::uint8, {1, 1}, {1}, rng);
  p.y = Buffer(DataType::uint8, {1, 1}, {}, rng);
  p.a_scale = qmmt::literal_f({1}, {sa}, rng);
  p.b_scale = qmmt::literal_f({1}, {sb}, rng);
  p.y_scale = qmmt::literal_f({1}, {sy}, rng);
  const Expected e = qmmt::oracle(p, false);
  ASSERT_EQ(e.lo[0], 10);
  qmmt::check_all(p, qmmt::test_schedules(rng, 1), e);
}

// ---- depth beyond the int32-exact bound ---------------------------------------------------------

/// Schedules for deep problems: every strategy bare plus block depths that split K at and around
/// the int32 bound (33025), tiny depths and several threads.
std::vector<hk::Schedule> deep_schedules(std::mt19937_64& rng) {
  std::vector<hk::Schedule> s = qmmt::test_schedules(rng, 1);
  for (i64 kc : {1, 7, 4096, 20000, 33024, 33025}) {
    s.push_back(hk::Schedule("qmm.tiled").set("kc", kc));
    s.push_back(hk::Schedule("qmm.parallel").set("mc", 1).set("nc", 1).set("kc", kc).set("threads", 3));
  }
  return s;
}

// K = 40000 with every product near +-65025: each accumulator is about +-2.5e9, past int32 in both
// directions. Multipliers from 0 (2^-160 underflows) and subnormal 2^-140 to 2^100: every branch of
// exact requantization, and saturation; then decimal scales.
TEST(QmmProperties, DepthBeyondInt32IsExact) {
  std::mt19937_64 rng(40000);
  const i64 K = 40000;
  Problem p;
  p.M = 3, p.N = 2, p.K = K;
  // A int8 with per-row zero points: row 0 gives A - za in [240,255], row 1 in [-255,-240], row 2 random.
  p.a = Buffer(DataType::int8, {3, K}, {}, rng);
  p.a_zero = qmmt::literal_q(DataType::int8, {3, 1}, {-128, 127, 0}, rng);
  for (i64 k = 0; k < K; ++k) {
    p.a.set_q({0, k}, 112 + int(rng() % 16));
    p.a.set_q({1, k}, -128 + int(rng() % 16));
  }
  // B uint8, column-major, per-column zero points: column 0 gives [240,255], column 1 [-255,-240].
  p.b = Buffer(DataType::uint8, {K, 2}, {1, K + 3}, rng);
  p.b_zero = qmmt::literal_q(DataType::uint8, {1, 2}, {0, 255}, rng);
  for (i64 k = 0; k < K; ++k) {
    p.b.set_q({k, 0}, 240 + int(rng() % 16));
    p.b.set_q({k, 1}, int(rng() % 16));
  }
  p.y = Buffer(DataType::int8, {3, 2}, {}, rng);
  p.y_zero = qmmt::literal_q(DataType::int8, {1}, {3}, rng);
  const auto acc = qmmt::oracle_accumulators(p);
  for (int i = 0; i < 4; ++i)  // rows 0 and 1, both columns
    ASSERT_GT(std::abs(acc[std::size_t(i)]), i64(INT32_MAX)) << "accumulator " << i << " fits int32";
  const auto schedules = deep_schedules(rng);
  for (int e : {-160, -140, -60, -40, -31, -25, -24, -20, 0, 10, 30, 60, 100}) {
    p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, e / 2)}, rng);
    p.b_scale = qmmt::literal_f({1, 2}, {std::ldexp(1.0f, e - e / 2), std::ldexp(1.0f, e - e / 2 - 1)}, rng);
    p.y_scale = qmmt::literal_f({1}, {1.0f}, rng);
    qmmt::check_all(p, schedules, qmmt::oracle(p, false), "multiplier 2^" + std::to_string(e));
  }
  p.a_scale = qmmt::literal_f({3, 1}, {0.0123f, 0.0456f, 0.0789f}, rng);
  p.b_scale = qmmt::literal_f({2}, {0.0031f, 0.0027f}, rng);
  p.y_scale = qmmt::literal_f({3, 1}, {1.3e3f, 4.1e3f, 30.0f}, rng);
  const Expected e = qmmt::oracle(p, true);
  qmmt::check_all(p, schedules, e, "decimal scales");
}

// K = 33025 is the deepest sum of +-255*255 that fits int32; 33026 is one past it.
TEST(QmmProperties, DepthAtTheInt32Bound) {
  std::mt19937_64 rng(33025);
  for (i64 K : {33025, 33026}) {
    Problem p;
    p.M = 2, p.N = 1, p.K = K;
    p.a = Buffer(DataType::uint8, {2, K}, {}, rng);
    p.a_zero = qmmt::literal_q(DataType::uint8, {2, 1}, {0, 255}, rng);
    for (i64 k = 0; k < K; ++k) p.a.set_q({0, k}, 255), p.a.set_q({1, k}, 0);  // +255, -255
    p.b = qmmt::literal_q(DataType::uint8, {K, 1}, {255}, rng);
    p.y = Buffer(DataType::int8, {2, 1}, {}, rng);
    p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -12)}, rng);
    p.b_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -13)}, rng);
    p.y_scale = qmmt::literal_f({1}, {1.0f}, rng);
    const Expected e = qmmt::oracle(p, false);
    ASSERT_EQ(e.acc[0], K * 65025);
    ASSERT_EQ(e.acc[1], -K * 65025);
    qmmt::check_all(p, deep_schedules(rng), e, "K=" + std::to_string(K));
  }
}

// K = 8256 is the deepest at which no accumulator can reach 2^29 (+-255*255 a term), where a
// product with a float32 multiplier stops being exact in a double; 8257 is one past it, where only
// a fused multiply-add rounds it right. Both with B's zero point at its shift (s8 B, zb 0: the
// epilogue's term in B's zero point vanishes) and away from it (u8 B, zb 0).
TEST(QmmProperties, DepthWhereAccumulatorsPass2To29) {
  std::mt19937_64 rng(8256);
  for (i64 K : {8256, 8257})
    for (DataType tb : types8) {
      Problem p;
      p.M = 3, p.N = 2, p.K = K;
      p.a = Buffer(DataType::uint8, {3, K}, {}, rng);
      p.a_zero = qmmt::literal_q(DataType::uint8, {3, 1}, {0, 255, 100}, rng);
      for (i64 k = 0; k < K; ++k) p.a.set_q({0, k}, 255), p.a.set_q({1, k}, 0);  // +255, -255
      p.b = Buffer(tb, {K, 2}, {}, rng);
      const int extreme = tb == DataType::int8 ? -128 : 255;
      for (i64 k = 0; k < K; ++k) p.b.set_q({k, 0}, extreme);
      p.y = Buffer(DataType::int8, {3, 2}, {}, rng);
      const auto acc = qmmt::oracle_accumulators(p);
      const i64 term = tb == DataType::int8 ? -128 : 255;
      ASSERT_EQ(acc[0], K * 255 * term);
      ASSERT_EQ(acc[2], -K * 255 * term);
      const std::string what = "K=" + std::to_string(K) + (tb == DataType::int8 ? " s8 B" : " u8 B");
      for (int e : {-30, -24, -23, -22, -20}) {
        p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, e / 2)}, rng);
        p.b_scale = qmmt::literal_f({1, 2}, {std::ldexp(1.0f, e - e / 2), std::ldexp(1.0f, e - e / 2 - 1)}, rng);
        p.y_scale = qmmt::literal_f({1}, {1.0f}, rng);
        qmmt::check_all(p, deep_schedules(rng), qmmt::oracle(p, false), what + " multiplier 2^" + std::to_string(e));
      }
      p.a_scale = qmmt::literal_f({3, 1}, {0.0123f, 0.0456f, 0.0789f}, rng);
      p.b_scale = qmmt::literal_f({2}, {0.0031f, 0.0027f}, rng);
      p.y_scale = qmmt::literal_f({3, 1}, {3.3e3f, 4.1e3f, 30.0f}, rng);
      qmmt::check_all(p, deep_schedules(rng), qmmt::oracle(p, true), what + " decimal scales");
    }
}

// Accumulators of 1.5e9 to 2.9e9 landing exactly on (or one unit beside) .5 boundaries of a 2^-30
// multiplier: round half to even must hold on the wide path too.
TEST(QmmProperties, WideAccumulatorTiesRoundHalfToEven) {
  std::mt19937_64 rng(2718);
  const i64 K = 45000, h = i64(1) << 29;
  const std::vector<i64> targets = {3 * h,     5 * h,     -3 * h,    -5 * h,     3 * h + 1, 3 * h - 1,
                                    5 * h + 1, 5 * h - 1, 4 * h,     -4 * h - 1, -5 * h + 1, 1};
  const i64 M = i64(targets.size());
  Problem p;
  p.M = M, p.N = 1, p.K = K;
  // B column: 255 everywhere except a final 1, so acc = 255 * (sum of the first K-1 terms) + last.
  std::vector<int> bcol(std::size_t(K), 255);
  bcol.back() = 1;
  p.b = qmmt::literal_q(DataType::uint8, {K, 1}, bcol, rng);
  // A int8, row m holds A - za = +-terms: za = -128 (a = t - 128) or 127 (a = 127 - t).
  p.a = Buffer(DataType::int8, {M, K}, {}, rng);
  std::vector<int> za;
  for (i64 m = 0; m < M; ++m) {
    const i64 t = targets[std::size_t(m)];
    const bool neg = t < 0;
    za.push_back(neg ? 127 : -128);
    i64 s = std::abs(t) / 255;
    const i64 last = std::abs(t) % 255;
    for (i64 k = 0; k < K - 1; ++k) {
      const i64 v = std::min<i64>(255, s);
      s -= v;
      p.a.set_q({m, k}, neg ? int(127 - v) : int(v - 128));
    }
    ASSERT_EQ(s, 0);
    p.a.set_q({m, K - 1}, neg ? int(127 - last) : int(last - 128));
  }
  p.a_zero = qmmt::literal_q(DataType::int8, {M, 1}, za, rng);
  p.y = Buffer(DataType::uint8, {M, 1}, {}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {100}, rng);
  p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -10)}, rng);
  p.b_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -10)}, rng);
  p.y_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, 10)}, rng);
  const Expected e = qmmt::oracle(p, false);
  for (i64 m = 0; m < M; ++m) ASSERT_EQ(e.acc[std::size_t(m)], targets[std::size_t(m)]);
  // Spot-check the oracle itself on the ties: 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, -2.5 -> -2.
  EXPECT_EQ(e.lo[0], 102);
  EXPECT_EQ(e.lo[1], 102);
  EXPECT_EQ(e.lo[2], 98);
  EXPECT_EQ(e.lo[3], 98);
  qmmt::check_all(p, deep_schedules(rng), e);
}

// Inputs may share memory with each other (only the output must be disjoint): B is A's transpose
// viewed through the same bytes.
TEST(QmmProperties, InputsMayShareMemory) {
  std::mt19937_64 rng(11);
  const i64 M = 6, K = 9;
  Config c;
  c.M = M, c.N = M, c.K = K;
  c.za = ParamShape{Gran::row, 2}, c.zb = ParamShape{Gran::column, 2};
  Problem p = build(c, rng);
  // The same problem with B a separate copy of A^T (what the oracle sees)...
  for (i64 k = 0; k < K; ++k)
    for (i64 n = 0; n < M; ++n) p.b.set_q({k, n}, p.a.q({n, k}));
  const Expected e = qmmt::oracle(p, false);
  // ...and the call with B reading A's storage.
  hk::QuantizedMatMulArgs args = p.args();
  args.b = hk::ConstTensor{hk::TensorDesc(DataType::uint8, {K, M}, {p.a.strides[1], p.a.strides[0]}), p.a.base()};
  for (const auto& s : qmmt::test_schedules(rng, 1)) {
    Buffer y = p.y;
    ASSERT_NO_THROW(hk::quantized_linear_matmul(args, y.view(), s)) << qmmt::schedule_name(s);
    std::size_t i = 0;
    qmmt::for_each_index(y.sizes, [&](const std::vector<i64>& idx) {
      EXPECT_EQ(y.q(idx), e.lo[i]) << qmmt::dims(idx) << " " << qmmt::schedule_name(s);
      ++i;
    });
  }
}

}  // namespace
