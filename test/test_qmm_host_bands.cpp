// Host-tensor matmuls on a GPU in bands of rows (schedules/strategies/qmm_host_bands.hpp): which
// calls take them, and their outputs against the oracle, coming back band by band (offload builds).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hetkern/device.hpp"
#include "qmm_test_util.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_host_bands.hpp"

namespace {

using qmmt::Buffer;
using qmmt::DataType;
using qmmt::Problem;
using qmmt::i64;

struct Shape {
  i64 M, N, K;
  std::vector<i64> batch = {};
  std::vector<i64> a_strides = {}, y_strides = {};  // empty: packed
};

// b_zero_shift: B's zero points are B's own shift (0 for int8, 128 for uint8), so that no row sums
// of A are needed, and A of whole tile rows and slices is read in place while it arrives.
Problem make(const Shape& s, DataType ta, DataType tb, DataType ty, std::mt19937_64& rng, bool b_zero_shift = false) {
  Problem p;
  p.M = s.M, p.N = s.N, p.K = s.K;
  p.batch = s.batch;
  const auto with = [&](std::vector<i64> tail) {
    std::vector<i64> sizes = s.batch;
    sizes.insert(sizes.end(), tail.begin(), tail.end());
    return sizes;
  };
  p.a = Buffer(ta, with({s.M, s.K}), s.a_strides, rng);
  p.b = Buffer(tb, with({s.K, s.N}), {}, rng);
  p.y = Buffer(ty, with({s.M, s.N}), s.y_strides, rng);
  p.a_zero = qmmt::literal_q(ta, {s.M, 1}, {3, -7, 100, 0, 1}, rng);
  p.b_zero = b_zero_shift ? qmmt::literal_q(tb, {1}, {tb == DataType::int8 ? 0 : 128}, rng)
                          : qmmt::literal_q(tb, {1, s.N}, {1, 9, -128, 127}, rng);
  p.y_zero = qmmt::literal_q(ty, {s.M, 1}, {ty == DataType::int8 ? -5 : 120, 7}, rng);
  p.a_scale = qmmt::literal_f({s.M, 1}, {0.05f, 0.03f}, rng);
  p.b_scale = qmmt::literal_f({1, s.N}, {0.01f, 0.02f, 0.004f}, rng);
  p.y_scale = qmmt::literal_f({s.M, 1}, {0.6f, 1.1f, 2.0f}, rng);
  return p;
}

hk::detail::QmmProblem problem_of(Problem& p) { return hk::detail::validate(p.args(), p.y.view()); }
bool in_bands(Problem& p) { return hk::detail::qmm_host_bands_apply(problem_of(p)); }

// 240000 x 16 outputs of depth 128: 33 MiB of tensors (few products for the oracle), 1875 tile
// rows: A in groups of 235 tile rows, the outputs back in bands of as many (the eighth of 229,
// the last row alone).
const Shape banded{240000, 16, 128};

TEST(QmmHostBands, OnlyCallsWhoseBandsOwnTheirOutputs) {
  std::mt19937_64 rng(8000);
  const DataType u8 = DataType::uint8, s8 = DataType::int8;
  Problem yes = make(banded, u8, s8, u8, rng);
  EXPECT_TRUE(in_bands(yes));
  // A by columns, or of a depth that keeps it from being read in place, still goes in bands (all of
  // A before the launch).
  Problem a_by_columns = make({240000, 16, 128, {}, {1, 240000}}, s8, u8, s8, rng);
  EXPECT_TRUE(in_bands(a_by_columns));
  Problem odd_depth = make({300000, 16, 100}, u8, s8, u8, rng);
  EXPECT_TRUE(in_bands(odd_depth));
  const std::pair<const char*, Shape> no[] = {
      {"two matrices", {120000, 16, 128, {2}}},
      {"under 32 MiB", {200000, 16, 128}},
      {"one tile row", {128, 4096, 8192}},
      {"an output by columns", {240000, 16, 128, {}, {}, {1, 240000}}},
      {"gaps between output rows", {240000, 16, 128, {}, {}, {32, 1}}},
  };
  for (const auto& [why, shape] : no) {
    Problem p = make(shape, u8, s8, u8, rng);
    EXPECT_FALSE(in_bands(p)) << why;
  }
}

TEST(QmmHostBands, MatchTheOracleWithTheOutputsBackByBands) {
  if (hk::offload_on_host()) GTEST_SKIP() << "bands run on a GPU only; on the host fallback the call runs in place";
  std::mt19937_64 rng(4100);
  struct Case {
    const char* name;
    Shape shape;
    DataType a, b, y;
    std::int64_t bands;  // of outputs
    bool arriving;       // A read in place while it arrives
  };
  const Case cases[] = {
      {"u8 x s8 -> u8, A by rows", banded, DataType::uint8, DataType::int8, DataType::uint8, 9, false},
      // 1824 tile rows, 228 per band: 32 MiB and 64 KiB.
      {"u8 x s8 -> u8, A arriving", {233472, 16, 128}, DataType::uint8, DataType::int8, DataType::uint8, 9, true},
      // 1813 tile rows: bands of 227, the eighth of 223, then the last row, cut at 64 of 128; 17
      // columns of one tile's 128.
      {"s8 x u8 -> s8, A by columns", {232000, 17, 128, {}, {1, 232000}}, DataType::int8, DataType::uint8,
       DataType::int8, 9, false},
      {"u8 x s8 -> u8, depth 100", {300000, 16, 100}, DataType::uint8, DataType::int8, DataType::uint8, 9, false},
  };
  for (const Case& c : cases) {
    Problem p = make(c.shape, c.a, c.b, c.y, rng, c.arriving);
    ASSERT_TRUE(in_bands(p)) << c.name;
    for (const auto kernel : {hk::detail::OffloadQmmKernel::dp4a, hk::detail::OffloadQmmKernel::mma})
      ASSERT_EQ(hk::detail::qmm_offload_streamable(problem_of(p), kernel, hk::offload_device()).a, c.arriving) << c.name;
    const qmmt::Expected e = qmmt::oracle(p, true);
    for (const char* schedule :
         {"qmm.offload_mma(tensor_cores=wgmma)", "qmm.offload", "qmm.offload_mma(tensor_cores=mma)"}) {
      hk::reset_transfer_counters();
      qmmt::run_and_check(p, hk::Schedule::parse(schedule), e, c.name);
      // At least one read of a band's count of finished tiles, then the band.
      EXPECT_GE(hk::transfer_counters().to_host_copies, 2 * c.bands) << c.name << "; " << schedule;
    }
    if (!c.arriving) continue;
    // With every core busy the copies' threads run late and out of step with the launch, which
    // waits on the device for A's rows: the results must not change. (A launch that once started
    // on the count of segments landed, before B had, went wrong in one call of three or four of a
    // split with the host busy; here B is in the first chunk, so that order cannot arise.)
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
      busy.emplace_back([&] {
        for (volatile std::uint64_t spins = 0; !stop.load(std::memory_order_relaxed);) spins = spins + 1;
      });
    for (int rep = 0; rep < 6; ++rep)
      qmmt::run_and_check(p, hk::Schedule::parse("qmm.offload_mma"), e, std::string(c.name) + ", host busy, call " + std::to_string(rep));
    stop = true;
    for (std::thread& t : busy) t.join();
  }
}

}  // namespace
