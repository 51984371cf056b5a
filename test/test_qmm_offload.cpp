// The offload schedules past what the shared property tests reach (offload builds only; those
// tests run every offload schedule too, through the strategy table): depths beyond one int32 slice
// of the product kernels, batches with a broadcast A and B in one call, tiles in more than one
// band, each packing kernel with each other one, transposes in batches, operands read in place
// beside packed ones, only the row and column sums the zero points need, and output layouts that
// split neighbouring outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device_test_util.hpp"
#include "qmm_test_util.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "runtime/tuning/tuner_problem.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"

namespace {

using qmmt::Buffer;
using qmmt::DataType;
using qmmt::Problem;
using qmmt::i64;

std::vector<hk::Schedule> offload_schedules() {
  std::vector<hk::Schedule> s;
  for (const char* text : {"qmm.offload", "qmm.offload(teams=1, threads=32)", "qmm.offload(threads=33)",
                           "qmm.offload_mma", "qmm.offload_mma(teams=1, threads=32, tensor_cores=mma)",
                           "qmm.offload_mma(threads=64, tensor_cores=mma)",
                           "qmm.offload_mma(threads=40, tensor_cores=mma)",
                           "qmm.offload_mma(threads=128, tensor_cores=mma)",
                           "qmm.offload_mma(teams=2, threads=128, tensor_cores=mma)", "qmm.offload(threads=128)",
                           "qmm.offload(teams=2)", "qmm.offload_mma(teams=3, tensor_cores=mma)",
                           "qmm.offload_mma(tensor_cores=wgmma)", "qmm.offload_mma(teams=1, tensor_cores=wgmma)",
                           "qmm.offload_mma(teams=3, threads=64, tensor_cores=wgmma)",
                           "qmm.offload_mma(tensor_cores=mma, stages=3)", "qmm.offload_mma(tensor_cores=mma, stages=2)",
                           "qmm.offload_mma(teams=3, threads=64, tensor_cores=mma, stages=4)",
                           "qmm.offload_mma(tensor_cores=wgmma, stages=3)",
                           "qmm.offload_mma(teams=1, tensor_cores=wgmma, stages=2)"})
    s.push_back(hk::Schedule::parse(text));
  return s;
}

i64 round_up_256(i64 bytes) { return (bytes + 255) / 256 * 256; }

void check(Problem& p, const qmmt::Expected& e, const std::string& context) {
  for (const auto& s : offload_schedules()) qmmt::run_and_check(p, s, e, context);
}

// One zero point and one scale each for A, B and the output, the zero points of their types.
void set_per_tensor(Problem& p, int a_zero, int b_zero, int y_zero, float a_scale, float b_scale, float y_scale,
                    std::mt19937_64& rng) {
  p.a_zero = qmmt::literal_q(p.a.dtype, {1}, {a_zero}, rng);
  p.b_zero = qmmt::literal_q(p.b.dtype, {1}, {b_zero}, rng);
  p.y_zero = qmmt::literal_q(p.y.dtype, {1}, {y_zero}, rng);
  p.a_scale = qmmt::literal_f({1}, {a_scale}, rng);
  p.b_scale = qmmt::literal_f({1}, {b_scale}, rng);
  p.y_scale = qmmt::literal_f({1}, {y_scale}, rng);
}

// Scales 2^-16 for A and B onto 1, which keep the outputs of accumulators past the int32 range
// in range.
void set_deep_scales(Problem& p, std::mt19937_64& rng) {
  p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -16)}, rng);
  p.b_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -16)}, rng);
  p.y_scale = qmmt::literal_f({1}, {1.0f}, rng);
}

// The kernels add int32 slices of 65536 deep in int64: K = 65536 + 300 with every product -32640
// (and +32640 in row 1) crosses a slice boundary and both int32 limits.
TEST(QmmOffload, DepthPastOneInt32Slice) {
  std::mt19937_64 rng(65836);
  const i64 K = 65536 + 300;
  Problem p;
  p.M = 2, p.N = 3, p.K = K;
  p.a = Buffer(DataType::uint8, {2, K}, {}, rng);
  p.a_zero = qmmt::literal_q(DataType::uint8, {2, 1}, {0, 255}, rng);
  for (i64 k = 0; k < K; ++k) p.a.set_q({0, k}, 255), p.a.set_q({1, k}, 0);  // A - za: +255, -255
  p.b = Buffer(DataType::int8, {K, 3}, {1, K + 1}, rng);  // column-major with a gap
  for (i64 k = 0; k < K; ++k)
    for (i64 n = 0; n < 3; ++n) p.b.set_q({k, n}, n == 2 ? int(rng() % 256) - 128 : -128);
  p.y = Buffer(DataType::int8, {2, 3}, {}, rng);
  set_deep_scales(p, rng);
  const qmmt::Expected e = qmmt::oracle(p, false);
  ASSERT_LT(e.acc[0], i64(INT32_MIN));
  ASSERT_GT(e.acc[3], i64(INT32_MAX));
  check(p, e, "K=" + std::to_string(K));
}

// Two batch dimensions, A broadcast along the first and B along the second, tiles cut at 128.
TEST(QmmOffload, BatchesWithBroadcastAcrossTileEdges) {
  std::mt19937_64 rng(129);
  Problem p;
  p.M = 130, p.N = 129, p.K = 70;
  p.batch = {2, 3};
  p.a = Buffer(DataType::int8, {2, 3, 130, 70}, {0, 130 * 70, 70, 1}, rng);
  p.b = Buffer(DataType::uint8, {2, 3, 70, 129}, {70 * 129, 0, 129, 1}, rng);
  p.y = Buffer(DataType::uint8, {2, 3, 130, 129}, {}, rng);
  p.a_zero = qmmt::literal_q(DataType::int8, {130, 1}, {-3, 0, 5, 127, -128}, rng);
  p.b_zero = qmmt::literal_q(DataType::uint8, {1, 129}, {0, 128, 255, 17}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {100}, rng);
  p.a_scale = qmmt::literal_f({130, 1}, {0.02f, 0.03f, 0.05f}, rng);
  p.b_scale = qmmt::literal_f({1, 129}, {0.01f, 0.07f}, rng);
  p.y_scale = qmmt::literal_f({130, 1}, {9.0f, 11.0f}, rng);
  const qmmt::Expected e = qmmt::oracle(p, true);
  check(p, e, "batches {2,3}");
}

// Teams take tiles in bands of 16 tile rows, column by column: 18 tile rows (a whole band and one
// of two rows, the last row cut at 2 of 128) by 2 tile columns, in two batches.
TEST(QmmOffload, TilesInBandsPastOneBand) {
  std::mt19937_64 rng(2178);
  Problem p;
  p.M = 17 * 128 + 2, p.N = 200, p.K = 64;
  p.batch = {2};
  p.a = Buffer(DataType::uint8, {2, p.M, p.K}, {}, rng);
  p.b = Buffer(DataType::int8, {2, p.K, p.N}, {}, rng);
  p.y = Buffer(DataType::uint8, {2, p.M, p.N}, {}, rng);
  set_per_tensor(p, 128, 3, 110, 0.02f, 0.0125f, 0.5f, rng);
  const qmmt::Expected e = qmmt::oracle(p, true);
  check(p, e, "18 x 2 tiles, batch 2");
}

// Packing picks a kernel per operand from its layout: 16-byte chunks where the depth is contiguous
// and 16-byte aligned, 16 x 16 transposes where the lines are (in groups of 16), byte gathers
// otherwise; the copying kernel runs first and zeroes the sums the others add atomically. Every
// pairing, with tiles and depth cut off mid-tile, B scales per column or per tensor.
TEST(QmmOffload, EveryPairOfPackingKernels) {
  std::mt19937_64 rng(16);
  struct Case {
    const char* name;
    i64 M, N, K;
    bool a_transposed, b_transposed;  // column-major A; B with k contiguous (column-major)
    bool b_scale_per_column;
  };
  const Case cases[] = {
      {"copy A, transpose B", 144, 160, 208, false, false, true},
      {"copy A and B in one launch", 144, 160, 208, false, true, false},
      {"transpose A, copy B", 144, 160, 208, true, true, true},
      {"transpose A and B", 48, 32, 90, true, false, false},
      {"copy A, transpose B over depth tiles and a partial line tile", 40, 400, 300, false, false, true},
      {"transpose A and B over several staged depth steps, the last partial, and half-empty line groups", 48, 80,
       1100, true, false, true},
      {"gather A and B", 50, 70, 90, false, false, true},
      {"copy A, gather B", 50, 70, 96, false, false, false},
      {"gather A, copy B", 50, 70, 96, true, true, true},
  };
  for (const Case& c : cases) {
    Problem p;
    p.M = c.M, p.N = c.N, p.K = c.K;
    p.a = Buffer(DataType::uint8, {c.M, c.K}, c.a_transposed ? std::vector<i64>{1, c.M} : std::vector<i64>{}, rng);
    p.b = Buffer(DataType::int8, {c.K, c.N}, c.b_transposed ? std::vector<i64>{1, c.K} : std::vector<i64>{}, rng);
    p.y = Buffer(DataType::uint8, {c.M, c.N}, {}, rng);
    p.a_zero = qmmt::literal_q(DataType::uint8, {c.M, 1}, {128, 3, 250}, rng);
    p.b_zero = qmmt::literal_q(DataType::int8, {1}, {-5}, rng);
    p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
    p.a_scale = qmmt::literal_f({c.M, 1}, {0.02f, 0.03f}, rng);
    p.b_scale = c.b_scale_per_column ? qmmt::literal_f({1, c.N}, {0.01f, 0.015f, 0.02f}, rng)
                                     : qmmt::literal_f({1}, {0.0125f}, rng);
    p.y_scale = qmmt::literal_f({1}, {4.0f}, rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    check(p, e, c.name);
  }
}

// Transposing units in batches: two batches of a column-major A, one row-major B shared by both,
// each unit over five staged depth steps (the last partial).
TEST(QmmOffload, TransposesInBatches) {
  std::mt19937_64 rng(2100);
  const i64 M = 48, N = 32, K = 2100;
  Problem p;
  p.M = M, p.N = N, p.K = K;
  p.batch = {2};
  p.a = Buffer(DataType::uint8, {2, M, K}, {M * K, 1, M}, rng);
  p.b = Buffer(DataType::int8, {2, K, N}, {0, N, 1}, rng);
  p.y = Buffer(DataType::uint8, {2, M, N}, {}, rng);
  p.a_zero = qmmt::literal_q(DataType::uint8, {M, 1}, {128, 3, 250}, rng);
  p.b_zero = qmmt::literal_q(DataType::int8, {1, N}, {-5, 60}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
  p.a_scale = qmmt::literal_f({1}, {0.01f}, rng);
  p.b_scale = qmmt::literal_f({1, N}, {0.01f, 0.015f}, rng);
  p.y_scale = qmmt::literal_f({1}, {16.0f}, rng);
  const qmmt::Expected e = qmmt::oracle(p, true);
  check(p, e, "K=2100, batch 2");
}

// Output layouts an epilogue that stores neighbouring outputs together must tell apart: an odd row
// stride (every other row's 4-byte words misaligned), column-major outputs, a last tile cut
// mid-word; int8 outputs with per-row output scales and B scales per column.
TEST(QmmOffload, EpilogueOutputLayouts) {
  std::mt19937_64 rng(4);
  struct Case {
    const char* name;
    i64 M, N;
    std::vector<i64> y_strides;
    DataType y_type;
    bool b_scale_per_column;
  };
  const Case cases[] = {
      {"odd row stride", 136, 150, {151, 1}, DataType::uint8, false},
      {"column-major", 136, 150, {1, 137}, DataType::uint8, true},
      {"packed, N cut mid-word", 70, 133, {}, DataType::int8, true},
  };
  for (const Case& c : cases) {
    Problem p;
    p.M = c.M, p.N = c.N, p.K = 96;
    p.a = Buffer(DataType::uint8, {c.M, 96}, {}, rng);
    p.b = Buffer(DataType::int8, {96, c.N}, {}, rng);
    p.y = Buffer(c.y_type, {c.M, c.N}, c.y_strides, rng);
    p.a_zero = qmmt::literal_q(DataType::uint8, {c.M, 1}, {128, 7, 200}, rng);
    p.b_zero = qmmt::literal_q(DataType::int8, {1, c.N}, {-3, 0, 9}, rng);
    p.y_zero = qmmt::literal_q(c.y_type, {1}, {c.y_type == DataType::int8 ? 5 : 130}, rng);
    p.a_scale = qmmt::literal_f({c.M, 1}, {0.02f, 0.03f}, rng);
    p.b_scale = c.b_scale_per_column ? qmmt::literal_f({1, c.N}, {0.01f, 0.015f, 0.02f}, rng)
                                     : qmmt::literal_f({1}, {0.0125f}, rng);
    p.y_scale = qmmt::literal_f({c.M, 1}, {3.0f, 5.0f}, rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    check(p, e, c.name);
  }
}

// An operand whose memory already is its packed form (k contiguous lines of whole 128-byte slices,
// whole tiles of lines, batches one after another or shared, u8 A / s8 B) is read where it is and
// only summed; the others are packed as before, in the same call.
TEST(QmmOffload, OperandsAlreadyPackedAreReadInPlace) {
  std::mt19937_64 rng(256);
  struct Case {
    const char* name;
    std::vector<i64> batch;
    i64 K;
    DataType a_type, b_type;
    std::vector<i64> a_strides, b_strides;  // empty: packed (row-major)
  };
  const i64 M = 256, N = 128;
  const Case cases[] = {
      {"A and B in place, batches following", {2}, 256, DataType::uint8, DataType::int8, {}, {256 * N, 1, 256}},
      {"A in place, B broadcast over the first batch dimension", {2, 2}, 128, DataType::uint8, DataType::int8, {},
       {0, 128 * N, 1, 128}},
      {"B shared by every batch in place, A int8", {3}, 384, DataType::int8, DataType::int8, {}, {0, 1, 384}},
      {"A with a gap between rows, B uint8", {}, 256, DataType::uint8, DataType::uint8, {256 + 16, 1}, {1, 256}},
  };
  for (const Case& c : cases) {
    const i64 K = c.K;
    std::vector<i64> a_sizes = c.batch, b_sizes = c.batch, y_sizes = c.batch;
    a_sizes.insert(a_sizes.end(), {M, K});
    b_sizes.insert(b_sizes.end(), {K, N});
    y_sizes.insert(y_sizes.end(), {M, N});
    Problem p;
    p.M = M, p.N = N, p.K = K;
    p.batch = c.batch;
    p.a = Buffer(c.a_type, a_sizes, c.a_strides, rng);
    p.b = Buffer(c.b_type, b_sizes, c.b_strides, rng);
    p.y = Buffer(DataType::uint8, y_sizes, {}, rng);
    p.a_zero = qmmt::literal_q(c.a_type, {M, 1}, {1, 100, 4}, rng);
    p.b_zero = qmmt::literal_q(c.b_type, {1, N}, {2, 7}, rng);
    p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {128}, rng);
    p.a_scale = qmmt::literal_f({1}, {0.02f}, rng);
    p.b_scale = qmmt::literal_f({1, N}, {0.01f, 0.015f}, rng);
    p.y_scale = qmmt::literal_f({1}, {8.0f}, rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    check(p, e, c.name);
  }
}

// Zero points decide which sums the correction needs: none of A' rows when every zb equals cb (0
// for int8 B, 128 for uint8), none of B' columns when every za equals -ca (0 for uint8 A, -128 for
// int8), and none of B' columns for mma when every alpha is 128 (it multiplies A' - 128); the
// packing kernels sum the others. Per-tensor and per-row / per-column zero points, each
// signedness, in place and packed, ragged tiles.
TEST(QmmOffload, OnlyTheSumsTheZeroPointsNeed) {
  std::mt19937_64 rng(4096);
  struct Case {
    const char* name;
    std::vector<i64> batch;
    i64 M, N, K;
    DataType a_type, b_type;
    std::vector<i64> a_strides, b_strides;  // empty: packed (row-major)
    std::vector<i64> a_zero_sizes, b_zero_sizes;
    std::vector<int> a_zero, b_zero;
  };
  const Case cases[] = {
      {"no sums, A and B in place: no packing kernel", {}, 256, 128, 256, DataType::uint8, DataType::int8, {},
       {1, 256}, {1}, {1, 128}, {0}, {0}},
      {"no sums, A int8 and B uint8 packed with flips", {}, 130, 70, 90, DataType::int8, DataType::uint8, {}, {},
       {130, 1}, {1}, {-128}, {128}},
      {"row sums only, A and B in place; batches following", {2}, 256, 128, 384, DataType::uint8, DataType::int8, {},
       {384 * 128, 1, 384}, {1}, {1, 128}, {0}, {2, -7, 0}},
      {"column sums only, A int8 packed, ragged rows, B shared in place", {3}, 200, 256, 128, DataType::int8,
       DataType::int8, {}, {0, 1, 128}, {200, 1}, {1}, {5, -3, 127}, {0}},
      {"column sums only, B uint8 transposed", {}, 128, 144, 128, DataType::uint8,
       DataType::uint8, {}, {}, {1}, {1, 144}, {9}, {128}},
      {"row sums only, A column-major transposed", {}, 96, 128, 256, DataType::uint8, DataType::int8,
       {1, 96}, {1, 256}, {1}, {1}, {0}, {-1}},
      {"every alpha 128 (u8 A at 128): mma from A' - 128, row sums", {2}, 256, 128, 256, DataType::uint8,
       DataType::int8, {}, {256 * 128, 1, 256}, {256, 1}, {1, 128}, {128}, {3, 0, -128, 127}},
      {"every alpha 128 (int8 A at 0), B uint8 transposed, stored row sums", {}, 130, 144, 100, DataType::int8,
       DataType::uint8, {}, {}, {1}, {1}, {0}, {77}},
  };
  for (const Case& c : cases) {
    std::vector<i64> a_sizes = c.batch, b_sizes = c.batch, y_sizes = c.batch;
    a_sizes.insert(a_sizes.end(), {c.M, c.K});
    b_sizes.insert(b_sizes.end(), {c.K, c.N});
    y_sizes.insert(y_sizes.end(), {c.M, c.N});
    Problem p;
    p.M = c.M, p.N = c.N, p.K = c.K;
    p.batch = c.batch;
    p.a = Buffer(c.a_type, a_sizes, c.a_strides, rng);
    p.b = Buffer(c.b_type, b_sizes, c.b_strides, rng);
    p.y = Buffer(DataType::uint8, y_sizes, {}, rng);
    p.a_zero = qmmt::literal_q(c.a_type, c.a_zero_sizes, c.a_zero, rng);
    p.b_zero = qmmt::literal_q(c.b_type, c.b_zero_sizes, c.b_zero, rng);
    p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {128}, rng);
    p.a_scale = qmmt::literal_f({1}, {0.02f}, rng);
    p.b_scale = qmmt::literal_f({1, c.N}, {0.01f, 0.015f}, rng);
    p.y_scale = qmmt::literal_f({1}, {8.0f}, rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    check(p, e, c.name);
  }
}

// Every alpha 128 (int8 A without zero point) past one int32 slice: the deep mma kernel multiplies
// A' - 128, whose row sums it takes from the packing kernel less 128 * K.
TEST(QmmOffload, CentredAPastOneInt32Slice) {
  std::mt19937_64 rng(65664);
  const i64 K = 65536 + 1000;
  Problem p;
  p.M = 3, p.N = 2, p.K = K;
  p.a = Buffer(DataType::int8, {3, K}, {}, rng);
  for (i64 k = 0; k < K; ++k) p.a.set_q({0, k}, 127), p.a.set_q({1, k}, -128);
  p.b = Buffer(DataType::int8, {K, 2}, {}, rng);
  for (i64 k = 0; k < K; ++k) p.b.set_q({k, 0}, 127);
  p.b_zero = qmmt::literal_q(DataType::int8, {1, 2}, {-128, 5}, rng);
  p.y = Buffer(DataType::int8, {3, 2}, {}, rng);
  set_deep_scales(p, rng);
  const qmmt::Expected e = qmmt::oracle(p, false);
  ASSERT_GT(e.acc[0], i64(INT32_MAX));
  check(p, e, "K=" + std::to_string(K));
}

// The tensor-core kernels (wgmma on Hopper GPUs, mma.sync) on the rows a call with few rows leaves
// in a tile (1, 16, 100, 128), over depths cut mid-slice, for every signedness pair of A, B and
// the output, with zero points and scales per row and column or one each.
TEST(QmmOffload, TensorCoresOnFewRowsEverySignednessAndParameterLayout) {
  std::mt19937_64 rng(9016);
  const DataType types[] = {DataType::uint8, DataType::int8};
  int round = 0;
  for (const i64 M : {1, 16, 100, 128})
    for (const DataType at : types)
      for (const DataType bt : types) {
        const bool per_line = round++ % 2 == 1;
        const DataType yt = types[(round / 2) % 2];
        Problem p;
        p.M = M, p.N = 136 + 5 * round, p.K = round % 3 == 0 ? 64 : 200 + 7 * round;
        p.a = Buffer(at, {M, p.K}, {}, rng);
        p.b = Buffer(bt, {p.K, p.N}, round % 4 < 2 ? std::vector<i64>{} : std::vector<i64>{1, p.K}, rng);
        p.y = Buffer(yt, {M, p.N}, {}, rng);
        // One alpha of 128 everywhere (A's zero point 128 - its shift) takes the kernels' centred path.
        const int centred = at == DataType::uint8 ? 128 : 0;
        p.a_zero = per_line ? qmmt::literal_q(at, {M, 1}, {3, centred, -7 + 10 * (at == DataType::uint8)}, rng)
                            : qmmt::literal_q(at, {1}, {round % 3 == 1 ? centred : 9}, rng);
        p.b_zero = per_line ? qmmt::literal_q(bt, {1, p.N}, {0, 5, 100}, rng) : qmmt::literal_q(bt, {1}, {2}, rng);
        p.y_zero = qmmt::literal_q(yt, {1}, {yt == DataType::uint8 ? 120 : -5}, rng);
        p.a_scale = per_line ? qmmt::literal_f({M, 1}, {0.02f, 0.03f}, rng) : qmmt::literal_f({1}, {0.025f}, rng);
        p.b_scale = per_line ? qmmt::literal_f({1, p.N}, {0.01f, 0.0125f}, rng) : qmmt::literal_f({1}, {0.015f}, rng);
        p.y_scale = qmmt::literal_f({1}, {0.75f}, rng);
        const qmmt::Expected e = qmmt::oracle(p, true);
        for (const char* s : {"qmm.offload_mma(tensor_cores=wgmma)", "qmm.offload_mma(tensor_cores=mma)"})
          qmmt::run_and_check(p, hk::Schedule::parse(s), e,
                              "M=" + std::to_string(M) + " K=" + std::to_string(p.K) + " round " + std::to_string(round));
      }
}

// The workspace holds only what the packing kernels write: for operands read in place their sums,
// and no sums the zero points do not need.
TEST(QmmOffload, WorkspaceHoldsOnlyWhatPackingWrites) {
  using hk::detail::OffloadQmmKernel;
  std::mt19937_64 rng(1);
  const i64 M = 256, N = 128, K = 512;
  const Buffer a_u8(DataType::uint8, {M, K}, {}, rng), a_s8(DataType::int8, {M, K}, {}, rng);
  const Buffer b(DataType::int8, {K, N}, {1, K}, rng);
  hk::detail::QmmProblem x;
  x.M = M, x.N = N, x.K = K;
  x.b = hk::detail::matrix_view(b.cview());
  x.a = hk::detail::matrix_view(a_u8.cview());
  const auto bytes = [&](std::vector<std::int32_t> a_zero, std::vector<std::int32_t> b_zero, OffloadQmmKernel kernel) {
    x.q.a_zero = std::move(a_zero), x.q.b_zero = std::move(b_zero);
    return hk::detail::qmm_offload_workspace_bytes(x, kernel, hk::offload_device());
  };
  // u8 A at 5 and int8 B at 1: both operands read in place, both sums needed.
  EXPECT_EQ(bytes({5}, {1}, OffloadQmmKernel::dp4a), round_up_256(M * 8) + round_up_256(N * 8));
  EXPECT_EQ(bytes({0}, {0}, OffloadQmmKernel::dp4a), 0);  // u8 A and int8 B at 0: nothing to pack or sum
  x.a = hk::detail::matrix_view(a_s8.cview());
  // int8 A at 5: column sums only.
  EXPECT_EQ(bytes({5}, {0}, OffloadQmmKernel::dp4a), round_up_256(M * K) + round_up_256(N * 8));
  // A int8 centred at -128, B int8 at 0: no sums.
  EXPECT_EQ(bytes({-128}, {0}, OffloadQmmKernel::dp4a), round_up_256(M * K));
  hk::detail::OffloadQmmSums sums = hk::detail::qmm_sums_needed(x);
  EXPECT_FALSE(sums.rows);
  EXPECT_FALSE(sums.columns);
  EXPECT_FALSE(sums.every_alpha_128);
  x.q.b_zero = {0, 0, 1};
  sums = hk::detail::qmm_sums_needed(x);
  EXPECT_TRUE(sums.rows);
  EXPECT_FALSE(sums.columns);
  x.q.a_zero = {0, 0}, x.q.b_zero = {0};  // int8 A at 0: every alpha is 128
  sums = hk::detail::qmm_sums_needed(x);
  EXPECT_TRUE(sums.columns);
  EXPECT_TRUE(sums.every_alpha_128);
  x.q.a_zero = {1}, x.q.b_zero = {1};  // int8 A at 1: alpha 129
  EXPECT_FALSE(hk::detail::qmm_sums_needed(x).every_alpha_128);
  x.a = hk::detail::matrix_view(a_u8.cview());
  x.q.a_zero = {128}, x.q.b_zero = {0};  // u8 A at 128: every alpha is 128
  EXPECT_TRUE(hk::detail::qmm_sums_needed(x).every_alpha_128);
  EXPECT_EQ(bytes({128}, {0}, OffloadQmmKernel::dp4a), round_up_256(N * 8));
  // The mma kernel folds alpha into its product: no column sums.
  EXPECT_EQ(bytes({128}, {0}, OffloadQmmKernel::mma), 0);
  // Two tiles 4096 deep: both tensor-core kernels split the depth (int32 partials of a tile each
  // per part); wgmma also sums B's columns, and keeps two tensor maps of 128 bytes.
  const i64 deep = 4096;
  const Buffer a_deep(DataType::uint8, {M, deep}, {}, rng), b_deep(DataType::int8, {deep, N}, {1, deep}, rng);
  x.K = deep;
  x.a = hk::detail::matrix_view(a_deep.cview());
  x.b = hk::detail::matrix_view(b_deep.cview());
  const i64 wave = hk::detail::qmm_offload_wave(hk::offload_device());
  const auto split = hk::detail::qmm_offload_split(x, OffloadQmmKernel::mma, wave);
  EXPECT_EQ(split.tiles, 2);
  EXPECT_GE(split.parts, 4);
  // The parts' int32 products of a tile each, the tiles' words (progress, chunks done, a start per
  // part) and a word per team (a team per work item at most).
  const auto split_bytes = [](hk::detail::OffloadQmmSplit s) {
    return s.parts == 1 ? 0
                        : round_up_256(s.parts * s.tiles * 128 * 128 * 4) + round_up_256(s.tiles * (2 + s.parts) * 8) +
                              round_up_256((s.tiles * s.parts) * 4);
  };
  EXPECT_EQ(bytes({128}, {0}, OffloadQmmKernel::mma), split_bytes(split));
  // wgmma (which may split otherwise: its wave is half), A at 5: the column sums of B (read in
  // place) and a state for its one column tile, which its warp-specialized kernel sums itself.
  const auto wgmma_split = hk::detail::qmm_offload_split(x, OffloadQmmKernel::wgmma, wave);
  EXPECT_EQ(bytes({5}, {0}, OffloadQmmKernel::wgmma),
            round_up_256(N * 8) + split_bytes(wgmma_split) + round_up_256(8) + 2 * 128);
  // dp4a never splits.
  EXPECT_EQ(bytes({128}, {0}, OffloadQmmKernel::dp4a), round_up_256(N * 8));
}

// Split-K: calls of few tiles cut their depth into parts (tensor cores, one int32 slice deep),
// whose int32 products the parts' teams add up, 16 rows at a time: parts of unequal sizes
// (K = 2176: 34 slices of 64) and equal ones (4096), more work items than teams, one chunk of rows
// and several, two tile rows, centred and plain A, B in both layouts, parameters per row and column
// or one each.
TEST(QmmOffload, SplitDepthForFewTiles) {
  std::mt19937_64 rng(4096);
  int round = 0;
  for (const i64 M : {1, 16, 100, 128, 200})
    for (const i64 K : {2176, 4096})
      for (const DataType at : {DataType::uint8, DataType::int8}) {
        const bool per_line = round++ % 2 == 1;
        Problem p;
        p.M = M, p.N = 200 + 37 * round, p.K = K;
        p.a = Buffer(at, {M, K}, {}, rng);
        p.b = Buffer(DataType::int8, {K, p.N}, round % 3 == 0 ? std::vector<i64>{1, K} : std::vector<i64>{}, rng);
        p.y = Buffer(DataType::uint8, {M, p.N}, {}, rng);
        const int centred = at == DataType::uint8 ? 128 : 0;
        p.a_zero = per_line ? qmmt::literal_q(at, {M, 1}, {3, centred, 7}, rng)
                            : qmmt::literal_q(at, {1}, {round % 4 < 2 ? centred : 5}, rng);
        p.b_zero = per_line ? qmmt::literal_q(DataType::int8, {1, p.N}, {0, -5, 100}, rng)
                            : qmmt::literal_q(DataType::int8, {1}, {0}, rng);
        p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
        p.a_scale = per_line ? qmmt::literal_f({M, 1}, {0.02f, 0.03f}, rng) : qmmt::literal_f({1}, {0.025f}, rng);
        p.b_scale = per_line ? qmmt::literal_f({1, p.N}, {0.01f, 0.0125f}, rng) : qmmt::literal_f({1}, {0.015f}, rng);
        p.y_scale = qmmt::literal_f({1}, {3.0f}, rng);
        const qmmt::Expected e = qmmt::oracle(p, true);
        for (const char* s : {"qmm.offload_mma", "qmm.offload_mma(teams=3, tensor_cores=mma)",
                              "qmm.offload_mma(threads=64, tensor_cores=mma)", "qmm.offload_mma(tensor_cores=wgmma)",
                              "qmm.offload_mma(teams=5, tensor_cores=wgmma)",
                              "qmm.offload_mma(tensor_cores=wgmma, stages=2)",
                              "qmm.offload_mma(teams=5, tensor_cores=wgmma, stages=3)"})
          qmmt::run_and_check(p, hk::Schedule::parse(s), e, "M=" + std::to_string(M) + " K=" + std::to_string(K));
      }
}

// A split call's tile counts live in its workspace and nothing clears them: each call counts in an
// epoch of its own, so that what earlier calls, or other uses of the memory, left there counts as
// zero. The same split call from a workspace of all ones, of all zeros, and from the counts its
// previous run left, exact every time, on both tensor-core kernels, with one chunk of rows to add
// up and with seven.
class SplitCounts : public testing::TestWithParam<i64> {};
INSTANTIATE_TEST_SUITE_P(QmmOffload, SplitCounts, testing::Values(16, 100));
TEST_P(SplitCounts, NeedNoClearing) {
  using hk::detail::OffloadQmmKernel;
  const int device = hk::offload_device();
  std::mt19937_64 rng(77);
  Problem p;
  p.M = GetParam(), p.N = 120, p.K = 2048;  // one tile: split on every device
  p.a = Buffer(DataType::uint8, {p.M, p.K}, {}, rng);
  p.b = Buffer(DataType::int8, {p.K, p.N}, {1, p.K}, rng);
  p.y = Buffer(DataType::uint8, {p.M, p.N}, {}, rng);
  p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {3}, rng);
  p.b_zero = qmmt::literal_q(DataType::int8, {1, p.N}, {0, -5, 100}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
  p.a_scale = qmmt::literal_f({1}, {0.025f}, rng);
  p.b_scale = qmmt::literal_f({1}, {0.015f}, rng);
  p.y_scale = qmmt::literal_f({1}, {3.0f}, rng);
  const qmmt::Expected e = qmmt::oracle(p, true);
  Buffer y = p.y;
  hk::detail::QmmProblem x = hk::detail::validate(p.args(), y.view());
  const auto split = hk::detail::qmm_offload_split(x, OffloadQmmKernel::mma, hk::detail::qmm_offload_wave(device));
  ASSERT_GE(split.parts, 2);
  const qmmt::OnDevice a(p.a), b(p.b);
  qmmt::OnDevice out(p.y);
  const auto inside = [](const qmmt::OnDevice& d) {
    return static_cast<unsigned char*>(d.memory.data()) + Buffer::guard;
  };
  x.a.data = inside(a), x.b.data = inside(b), x.out = inside(out);
  const std::vector<std::byte> block = hk::detail::qmm_parameter_block(x.q);
  hk::DeviceBuffer parameters(block.size());
  parameters.upload(block.data(), block.size());
  for (const OffloadQmmKernel kernel : {OffloadQmmKernel::mma, OffloadQmmKernel::wgmma}) {
    const std::size_t bytes = std::size_t(hk::detail::qmm_offload_workspace_bytes(x, kernel, device));
    hk::DeviceBuffer workspace(bytes);
    hk::detail::OffloadQmmLaunch launch;
    launch.device = device, launch.kernel = kernel, launch.parameters = parameters.data();
    launch.workspace = workspace.data();
    for (const int fill : {0xff, 0x00, -1}) {
      if (fill >= 0) {
        const std::vector<unsigned char> pattern(bytes, static_cast<unsigned char>(fill));
        workspace.upload(pattern.data(), bytes);
      }
      out.memory.upload(p.y.bytes.data(), p.y.bytes.size());
      hk::detail::qmm_offload(x, launch);
      qmmt::expect_matches_oracle(p, e, out.download(),
                                  "kernel " + std::to_string(int(kernel)) + " fill " + std::to_string(fill));
    }
  }
}

// One matrix whose rows of A (or columns of B) end in a cut tile is read in place when its lines
// are otherwise its packed form: no A' in the workspace for a few rows of contiguous u8 A, nor B'
// for int8 B column-major of ragged columns; the kernels read the missing lines as zeros. Exact
// on every schedule, with the sums both zero points need and with none; batches still pack.
TEST(QmmOffload, OneMatrixWithACutTileIsReadInPlace) {
  using hk::detail::OffloadQmmKernel;
  std::mt19937_64 rng(1601);
  int round = 0;
  for (const i64 M : {1, 16, 100, 200})
    for (const bool sums : {false, true}) {
      ++round;
      Problem p;
      p.M = M, p.N = 136 + 17 * round, p.K = 128 * (1 + round % 3);
      p.a = Buffer(DataType::uint8, {M, p.K}, {}, rng);
      p.b = Buffer(DataType::int8, {p.K, p.N}, {1, p.K}, rng);
      p.y = Buffer(DataType::uint8, {M, p.N}, {}, rng);
      p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {sums ? 9 : 128}, rng);
      p.b_zero = qmmt::literal_q(DataType::int8, {1, p.N}, {0, sums ? 5 : 0}, rng);
      p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
      p.a_scale = qmmt::literal_f({M, 1}, {0.02f, 0.03f}, rng);
      p.b_scale = qmmt::literal_f({1}, {0.015f}, rng);
      p.y_scale = qmmt::literal_f({1}, {1.5f}, rng);
      Buffer y = p.y;
      const hk::detail::QmmProblem x = hk::detail::validate(p.args(), y.view());
      // Nothing but the sums (int64 per line) and split-K's own: no packed operand.
      const i64 a_packed = round_up_256((M + 127) / 128 * 128 * p.K);
      const i64 b_packed = round_up_256((p.N + 127) / 128 * 128 * p.K);
      EXPECT_LT(hk::detail::qmm_offload_workspace_bytes(x, OffloadQmmKernel::dp4a, hk::offload_device()),
                std::min(a_packed, b_packed))
          << "M=" << M;
      check(p, qmmt::oracle(p, true), "M=" + std::to_string(M) + (sums ? " with sums" : ""));
    }
  // Two matrices of 100 rows: A' packed, whole tiles in the workspace.
  Problem p;
  p.M = 100, p.N = 130, p.K = 256;
  p.batch = {2};
  p.a = Buffer(DataType::uint8, {2, p.M, p.K}, {}, rng);
  p.b = Buffer(DataType::int8, {2, p.K, p.N}, {}, rng);
  p.y = Buffer(DataType::uint8, {2, p.M, p.N}, {}, rng);
  set_per_tensor(p, 128, 0, 120, 0.02f, 0.015f, 1.5f, rng);
  Buffer y = p.y;
  const hk::detail::QmmProblem x = hk::detail::validate(p.args(), y.view());
  EXPECT_GE(hk::detail::qmm_offload_workspace_bytes(x, OffloadQmmKernel::dp4a, hk::offload_device()), 2 * 128 * p.K);
  check(p, qmmt::oracle(p, true), "two matrices");
}

// The warp-specialized wgmma kernel's tensor maps are kept on the device from call to call and
// reused where a call's maps match: twenty shapes (more than the kept slots, so that slots are
// taken over by other maps), then the first again, each exact.
TEST(QmmOffload, KeptTensorMapsFollowTheirOperands) {
  std::mt19937_64 rng(2020);
  std::vector<Problem> problems;
  for (int i = 0; i < 20; ++i) {
    Problem p;
    p.M = 128 + 16 * (i % 5), p.N = 128 + 8 * (i / 5), p.K = 128 * (1 + i % 4);
    p.a = Buffer(DataType::uint8, {p.M, p.K}, {}, rng);
    p.b = Buffer(DataType::int8, {p.K, p.N}, {1, p.K}, rng);
    p.y = Buffer(DataType::uint8, {p.M, p.N}, {}, rng);
    set_per_tensor(p, 7, 0, 120, 0.02f, 0.015f, 1.5f, rng);
    problems.push_back(std::move(p));
  }
  const hk::Schedule wgmma = hk::Schedule::parse("qmm.offload_mma(tensor_cores=wgmma)");
  for (int i = 0; i <= 20; ++i) {
    Problem& p = problems[std::size_t(i % 20)];
    qmmt::run_and_check(p, wgmma, qmmt::oracle(p, true), "call " + std::to_string(i));
  }
}

// Operands read in place whose sums the zero points need: on a Hopper GPU the warp-specialized
// wgmma kernel sums their lines itself (its teams claim tiles of 128 lines), with one team, a few,
// or one per multiprocessor; rows of A, columns of B, or both; one A matrix or one per batch, B
// shared; a cut last tile; split-K parts. Exact everywhere (elsewhere the packing launch sums).
TEST(QmmOffload, LineSumsOfOperandsReadInPlace) {
  std::mt19937_64 rng(4242);
  struct Case {
    i64 batch, M, N, K;
    int a_zero, b_zero;
  };
  const Case cases[] = {{1, 300, 520, 512, 9, 0}, {1, 256, 256, 384, 128, 5}, {2, 200, 130, 256, 3, -7},
                        {1, 16, 200, 2048, 7, 2}};
  for (const Case& c : cases) {
    Problem p;
    p.M = c.M, p.N = c.N, p.K = c.K;
    std::vector<i64> a_sizes = {c.M, c.K}, y_sizes = {c.M, c.N};
    if (c.batch > 1) {
      p.batch = {c.batch};
      a_sizes.insert(a_sizes.begin(), c.batch);
      y_sizes.insert(y_sizes.begin(), c.batch);
    }
    p.a = Buffer(DataType::uint8, a_sizes, {}, rng);
    p.b = Buffer(DataType::int8, {c.K, c.N}, {1, c.K}, rng);
    p.y = Buffer(DataType::uint8, y_sizes, {}, rng);
    set_per_tensor(p, c.a_zero, c.b_zero, 120, 0.02f, 0.015f, 2.0f, rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    for (const char* s : {"qmm.offload_mma(tensor_cores=wgmma)", "qmm.offload_mma(teams=1, tensor_cores=wgmma)",
                          "qmm.offload_mma(teams=3, tensor_cores=wgmma, stages=2)"})
      qmmt::run_and_check(p, hk::Schedule::parse(s), e,
                          "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " batch " +
                              std::to_string(c.batch));
  }
}

// Every zero point of A' 128 (u8 A at 128, one or per row; int8 A at 0, packed with its bytes
// flipped): the warp-specialized wgmma kernel takes A' into registers, flips it and multiplies
// A' - 128 as signed bytes, without B's column sums. A and B read in place or packed, B's zero
// point 0 or per column (A's row sums then needed, in the product or from the packing launch), cut
// tiles, teams that take many tiles, odd counts of slices (384 and 2176 deep: the A' words' two
// sets are taken by turns), split-K parts, two and four stages; uint8 B (packed with its bytes
// flipped) and int8 outputs; 1, 16, 100, 128 and more rows.
TEST(QmmOffload, CentredAInTheWarpSpecializedKernel) {
  std::mt19937_64 rng(128);
  struct Case {
    i64 M, N, K;
    DataType a_type, b_type, y_type;
    bool a_per_row, b_column_major, b_zero;
  };
  constexpr DataType u8 = DataType::uint8, s8 = DataType::int8;
  const Case cases[] = {{300, 260, 512, u8, s8, u8, false, true, false},
                        {256, 384, 1024, u8, s8, u8, true, true, true},
                        {100, 200, 384, s8, s8, s8, false, false, true},
                        {16, 256, 4096, u8, s8, u8, false, true, false},
                        {129, 130, 2176, s8, s8, u8, true, true, false},
                        {1, 130, 640, u8, u8, u8, false, true, false},
                        {128, 128, 768, s8, u8, s8, true, false, true}};
  for (const Case& c : cases) {
    Problem p;
    p.M = c.M, p.N = c.N, p.K = c.K;
    p.a = Buffer(c.a_type, {c.M, c.K}, {}, rng);
    p.b = Buffer(c.b_type, {c.K, c.N}, c.b_column_major ? std::vector<i64>{1, c.K} : std::vector<i64>{}, rng);
    p.y = Buffer(c.y_type, {c.M, c.N}, {}, rng);
    set_per_tensor(p, c.a_type == DataType::uint8 ? 128 : 0, 0, 100, 0.02f, 0.015f, 2.5f, rng);
    if (c.a_per_row)
      p.a_zero = qmmt::literal_q(c.a_type, {c.M, 1}, {c.a_type == DataType::uint8 ? 128 : 0}, rng);
    if (c.b_zero) {
      const std::vector<int> zeros = c.b_type == s8 ? std::vector<int>{0, -9, 31} : std::vector<int>{0, 9, 31};
      p.b_zero = qmmt::literal_q(c.b_type, {1, c.N}, zeros, rng);
    }
    const qmmt::Expected e = qmmt::oracle(p, true);
    for (const char* s : {"qmm.offload_mma(tensor_cores=wgmma)", "qmm.offload_mma(teams=1, tensor_cores=wgmma)",
                          "qmm.offload_mma(teams=3, tensor_cores=wgmma, stages=2)"})
      qmmt::run_and_check(p, hk::Schedule::parse(s), e,
                          std::string(s) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
                              " K=" + std::to_string(c.K));
  }
}

// The last wave's tiles split in depth beside whole tiles: two tiles past whole waves of this
// device (so their parts run in the last wave), in one matrix of two tile rows (the split tiles
// the last of the second row's columns) and in two batch matrices of one row each (the split tiles
// in the second); unequal parts (2176 deep), centred and plain A, parameters per row and column.
TEST(QmmOffload, SplitTheLastWaveBesideWholeTiles) {
  const i64 wave = hk::detail::qmm_offload_wave(hk::offload_device());
  std::mt19937_64 rng(wave);
  int round = 0;
  for (const i64 batch : {1, 2})
    for (const DataType at : {DataType::uint8, DataType::int8}) {
      const bool per_line = round++ % 2 == 0;
      Problem p;
      const i64 columns = (wave + 2) / 2;  // tile columns: wave + 2 tiles in all
      p.M = batch == 1 ? 128 + 3 : 5, p.N = columns * 128 - 7, p.K = batch == 1 ? 2048 : 2176;
      const std::vector<i64> lead = batch == 1 ? std::vector<i64>{} : std::vector<i64>{batch};
      const auto dims = [&](i64 rows, i64 cols) {
        std::vector<i64> d = lead;
        d.insert(d.end(), {rows, cols});
        return d;
      };
      p.a = Buffer(at, dims(p.M, p.K), {}, rng);
      p.b = Buffer(DataType::int8, dims(p.K, p.N), {}, rng);
      p.y = Buffer(DataType::uint8, dims(p.M, p.N), {}, rng);
      const int centred = at == DataType::uint8 ? 128 : 0;
      p.a_zero = per_line ? qmmt::literal_q(at, {p.M, 1}, {3, centred, 7}, rng) : qmmt::literal_q(at, {1}, {centred}, rng);
      p.b_zero = per_line ? qmmt::literal_q(DataType::int8, {1, p.N}, {0, -5, 100}, rng)
                          : qmmt::literal_q(DataType::int8, {1}, {0}, rng);
      p.y_zero = qmmt::literal_q(DataType::uint8, {1}, {120}, rng);
      p.a_scale = per_line ? qmmt::literal_f({p.M, 1}, {0.02f, 0.03f}, rng) : qmmt::literal_f({1}, {0.025f}, rng);
      p.b_scale = per_line ? qmmt::literal_f({1, p.N}, {0.01f, 0.0125f}, rng) : qmmt::literal_f({1}, {0.015f}, rng);
      p.y_scale = qmmt::literal_f({1}, {3.0f}, rng);
      hk::detail::QmmProblem x;
      x.M = p.M, x.N = p.N, x.K = p.K;
      x.batch[0] = batch;
      const auto split = hk::detail::qmm_offload_split(x, hk::detail::OffloadQmmKernel::mma, wave);
      ASSERT_EQ(split.tiles, 2);
      ASSERT_GE(split.parts, 2);
      const qmmt::Expected e = qmmt::oracle(p, true);
      for (const char* s : {"qmm.offload_mma", "qmm.offload_mma(teams=5, tensor_cores=wgmma)",
                            "qmm.offload_mma(tensor_cores=mma)", "qmm.offload_mma(tensor_cores=mma, stages=3)",
                            "qmm.offload_mma(tensor_cores=wgmma, stages=2)"})
        qmmt::run_and_check(p, hk::Schedule::parse(s), e, "batch " + std::to_string(batch) + " round " + std::to_string(round));
    }
}

// The split follows the wave: on an H100 or H200 (264 teams at once, 132 for wgmma) 16384^3 has a
// last wave of 16 tiles, cut in 16 parts (8 for wgmma); 8192^3's last wave of 136 tiles would fill
// no more in 2 parts (wgmma's last 4 tiles are cut in 16); 16 x 4096 x 4096 has 32 tiles, cut in 8
// (4 for wgmma); parts keep eight 64-deep slices, and fewer than four parts are not worth their
// sum (1024^3: 2 parts of 64 tiles); whole waves, depths past one int32 slice and dp4a are not
// split; batches count all their tiles.
TEST(QmmOffload, SplitTheLastWave) {
  using hk::detail::OffloadQmmKernel;
  const auto split = [](i64 M, i64 N, i64 K, i64 wave, OffloadQmmKernel kernel = OffloadQmmKernel::mma,
                        i64 batch = 1) {
    hk::detail::QmmProblem x;
    x.M = M, x.N = N, x.K = K;
    x.batch[0] = batch;
    const auto s = hk::detail::qmm_offload_split(x, kernel, wave);
    return std::pair<i64, i64>(s.tiles, s.parts);
  };
  using Split = std::pair<i64, i64>;
  EXPECT_EQ(split(16384, 16384, 16384, 264), Split(16, 16));
  // wgmma's wave is half as many teams: 132.
  EXPECT_EQ(split(16384, 16384, 16384, 264, OffloadQmmKernel::wgmma), Split(16, 8));
  EXPECT_EQ(split(8192, 8192, 8192, 264, OffloadQmmKernel::wgmma), Split(4, 16));
  EXPECT_EQ(split(16, 4096, 4096, 264, OffloadQmmKernel::wgmma), Split(32, 4));
  EXPECT_EQ(split(1024, 1024, 2048, 264, OffloadQmmKernel::wgmma), Split(0, 1));
  EXPECT_EQ(split(16384, 16384, 16384, 264, OffloadQmmKernel::dp4a), Split(0, 1));
  EXPECT_EQ(split(8192, 8192, 8192, 264), Split(0, 1));
  EXPECT_EQ(split(16, 4096, 4096, 264), Split(32, 8));
  EXPECT_EQ(split(1024, 1024, 1024, 264), Split(0, 1));
  EXPECT_EQ(split(1024, 1024, 2048, 264), Split(64, 4));
  EXPECT_EQ(split(200, 100, 700, 264), Split(0, 1));        // 768 deep: one part of eight slices
  EXPECT_EQ(split(128, 128 * 528, 4096, 264), Split(0, 1));  // two whole waves
  EXPECT_EQ(split(128, 128 * 265, 65536, 264), Split(1, 128));
  EXPECT_EQ(split(128, 128 * 265, 65536 + 128, 264), Split(0, 1));
  EXPECT_EQ(split(100, 300, 2048, 8, OffloadQmmKernel::mma, 3), Split(1, 4));  // 9 tiles in 3 matrices
  EXPECT_EQ(split(300, 300, 2048, 8), Split(1, 4));
  EXPECT_EQ(split(300, 300, 2048, 2), Split(0, 1));   // 2 parts
  EXPECT_EQ(split(300, 300, 2048, 36), Split(9, 4));
  EXPECT_EQ(split(300, 300, 2048, 35), Split(0, 1));  // 9 tiles leave under three quarters of 35 idle
}

// A plan's default team count is one per work item, split parts included: a default capped at
// the output tiles ran a split call's parts a tile's worth of teams at a time.
TEST(QmmOffload, DefaultTeamsTakeEverySplitKPart) {
  using hk::detail::OffloadQmmKernel;
  const i64 wave = hk::detail::qmm_offload_wave(hk::offload_device());
  const auto teams = [](std::vector<i64> mnk, const char* schedule) {
    const std::vector<hk::DataType> types = {hk::DataType::uint8, hk::DataType::int8, hk::DataType::uint8};
    const hk::detail::TuneWorkload w({hk::Operator::quantized_linear_matmul, types, std::move(mnk), {}}, false);
    const auto plan = hk::detail::plan_qmm(w.qmm_problem(), hk::Schedule::parse(schedule));
    return std::get<hk::detail::OffloadMmaQmmPlan>(plan).teams;
  };
  const auto items = [&](i64 M, i64 N, i64 K, OffloadQmmKernel kernel = OffloadQmmKernel::mma) {
    hk::detail::QmmProblem x;
    x.M = M, x.N = N, x.K = K;
    const auto s = hk::detail::qmm_offload_split(x, kernel, wave);
    EXPECT_GE(s.parts, 2) << M << " x " << N << " x " << K;  // the shapes below are split on every device
    return hk::detail::qmm_offload_tiles_of(M) * hk::detail::qmm_offload_tiles_of(N) + s.tiles * (s.parts - 1);
  };
  // 1 x 33 tiles 4096 deep, 1 x 34 tiles 2048 deep: fewer than half a wave on a GPU, one or two
  // tiles past whole waves on the host fallback.
  const i64 a = items(16, 33 * 128 - 5, 4096), b = items(16, 34 * 128, 2048);
  EXPECT_EQ(teams({16, 33 * 128 - 5, 4096}, "qmm.offload_mma(tensor_cores=mma)"), a);
  EXPECT_EQ(teams({16, 33 * 128 - 5, 4096}, "qmm.offload_mma(teams=40, tensor_cores=mma)"), std::min<i64>(a, 40));
  EXPECT_EQ(teams({16, 33 * 128 - 5, 4096}, "qmm.offload_mma(tensor_cores=wgmma)"),
            items(16, 33 * 128 - 5, 4096, OffloadQmmKernel::wgmma));
  EXPECT_EQ(teams({16, 34 * 128, 2048}, "qmm.offload_mma(tensor_cores=mma)"), b);
  // 768 deep: one part of eight slices, no split.
  EXPECT_EQ(teams({200, 100, 700}, "qmm.offload_mma"), 2);
}

// qmm.offload_mma's default tensor cores: wgmma for calls of at least half a wave of tiles (a tile
// per multiprocessor on a GPU); for fewer, mma.sync, unless every zero point of A' is 128 (u8 A at
// 128 here) and the warp-specialized wgmma kernel runs (Hopper, the launch shim), which then needs
// no column sums of B; a named choice stands whatever the size, and the default stages are the
// most the kernels take.
TEST(QmmOffload, DefaultTensorCoresFollowTheTileCount) {
  const i64 wave = hk::detail::qmm_offload_wave(hk::offload_device());
  const auto plan = [](std::vector<i64> mnk, const char* schedule, std::int32_t a_zero = 128) {
    const std::vector<hk::DataType> types = {hk::DataType::uint8, hk::DataType::int8, hk::DataType::uint8};
    const hk::detail::TuneWorkload w({hk::Operator::quantized_linear_matmul, types, std::move(mnk), {}}, false);
    hk::detail::QmmProblem x = w.qmm_problem();
    x.q.a_zero = {a_zero};
    return std::get<hk::detail::OffloadMmaQmmPlan>(hk::detail::plan_qmm(x, hk::Schedule::parse(schedule)));
  };
  const i64 half_wave = (wave + 1) / 2;
  using hk::detail::OffloadQmmKernel;
  const int device = hk::offload_device();
  const bool warp_specialized = hk::detail::cuda_has_wgmma(device) && hk::detail::cuda_launch_shim_in_use();
  const OffloadQmmKernel centred_few = warp_specialized ? OffloadQmmKernel::wgmma : OffloadQmmKernel::mma;
  EXPECT_EQ(plan({128 * half_wave, 128, 256}, "qmm.offload_mma").tensor_cores, OffloadQmmKernel::wgmma);
  EXPECT_EQ(plan({128 * half_wave, 128, 256}, "qmm.offload_mma", 5).tensor_cores, OffloadQmmKernel::wgmma);
  EXPECT_EQ(plan({128 * half_wave - 127, 100, 256}, "qmm.offload_mma").tensor_cores, OffloadQmmKernel::wgmma);
  EXPECT_EQ(plan({128 * (half_wave - 1), 128, 256}, "qmm.offload_mma", 5).tensor_cores, OffloadQmmKernel::mma);
  EXPECT_EQ(plan({128 * (half_wave - 1), 128, 256}, "qmm.offload_mma").tensor_cores, centred_few);
  EXPECT_EQ(plan({1, 1, 1}, "qmm.offload_mma", 5).tensor_cores, OffloadQmmKernel::mma);
  EXPECT_EQ(plan({1, 1, 1}, "qmm.offload_mma").tensor_cores, centred_few);
  EXPECT_EQ(plan({1, 1, 1}, "qmm.offload_mma(tensor_cores=wgmma)").tensor_cores, OffloadQmmKernel::wgmma);
  EXPECT_EQ(plan({128 * half_wave, 128, 256}, "qmm.offload_mma(tensor_cores=mma)").tensor_cores, OffloadQmmKernel::mma);
  EXPECT_EQ(plan({1, 1, 1}, "qmm.offload_mma").stages, hk::detail::qmm_offload_max_stages);
  EXPECT_EQ(plan({1, 1, 1}, "qmm.offload_mma(stages=2)").stages, 2);
}

}  // namespace

// On a GPU the offload runtime's driver is hetkern's launch shim, so the tensor-core kernels may
// have more than 48 KB of team memory: the stages the schedules above ask for are granted.
TEST(QmmOffload, GpusGrantMoreTeamMemoryThroughTheLaunchShim) {
  if (hk::offload_on_host()) GTEST_SKIP() << "no GPU";
  if (const char* v = std::getenv("HETKERN_CUDA_SHIM"); v && std::string(v) == "off") GTEST_SKIP() << "shim off";
  EXPECT_TRUE(hk::detail::cuda_launch_shim_in_use());
  EXPECT_GT(hk::detail::cuda_team_memory_limit(hk::offload_device()), 4 * 16384 + 8192);
}
