// The offload schedules past what the shared property tests reach (offload builds only; those
// tests run every offload schedule too, through the strategy table): depths beyond one int32 slice
// of the product kernels, and batches with a broadcast A and B in one call.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "qmm_test_util.hpp"

namespace {

using qmmt::Buffer;
using qmmt::DataType;
using qmmt::Problem;
using qmmt::i64;

std::vector<hk::Schedule> offload_schedules() {
  std::vector<hk::Schedule> s;
  for (const char* text : {"qmm.offload", "qmm.offload(teams=1, threads=32)", "qmm.offload(threads=33)",
                           "qmm.offload_mma", "qmm.offload_mma(teams=1, threads=32)",
                           "qmm.offload_mma(threads=64)", "qmm.offload_mma(threads=40)",
                           "qmm.offload_mma(threads=128)", "qmm.offload_mma(teams=2, threads=128)",
                           "qmm.offload(teams=2)", "qmm.offload_mma(teams=3)"})
    s.push_back(hk::Schedule::parse(text));
  return s;
}

void check(Problem& p, const qmmt::Expected& e, const std::string& context) {
  for (const auto& s : offload_schedules()) qmmt::run_and_check(p, s, e, context);
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
  p.a_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -16)}, rng);
  p.b_scale = qmmt::literal_f({1}, {std::ldexp(1.0f, -16)}, rng);
  p.y_scale = qmmt::literal_f({1}, {1.0f}, rng);
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

}  // namespace
