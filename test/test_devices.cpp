// qmm.devices: one matmul spread over several offload devices. Written for N devices and run
// here with the ones visible: one GPU, or the host fallback, whose one device is the host itself.
// The part that goes to another device is also run with the home device standing in for the
// others (devices {home, home, home}), so that its copies, rebased pointers and the copy back of
// its outputs run whatever the machine. The matmul is exact: every result equals the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "device_test_util.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/split_common.hpp"

namespace {

using hk::DataType;
using hk::Errc;
using hk::Schedule;
using hk::detail::SplitRange;
using qmmt::Buffer;
using qmmt::i64;
using qmmt::Layout;
using qmmt::OnDevice;
using qmmt::Problem;

TEST(SpreadRanges, HomeShareFirstThenTheRestEvenly) {
  for (const i64 units : {i64(0), i64(1), i64(2), i64(7), i64(97), i64(1000)})
    for (const int devices : {1, 2, 3, 8})
      for (const int share : {0, 1, 250, 500, 999, 1000}) {
        SCOPED_TRACE("units " + std::to_string(units) + " devices " + std::to_string(devices) + " share " +
                     std::to_string(share));
        const std::vector<SplitRange> r = hk::detail::spread_ranges(units, devices, share);
        ASSERT_EQ(r.size(), std::size_t(devices));
        EXPECT_EQ(r[0].begin, 0);
        EXPECT_EQ(r[0].size(), devices == 1 ? units : (units * share + 500) / 1000);
        i64 smallest = units, largest = 0;
        for (std::size_t d = 1; d < r.size(); ++d) {
          EXPECT_EQ(r[d].begin, r[d - 1].end);
          smallest = std::min(smallest, r[d].size());
          largest = std::max(largest, r[d].size());
        }
        if (devices > 1) EXPECT_LE(largest - smallest, 1);
        EXPECT_EQ(r.back().end, units);
      }
}

// The devices after the home one share what it leaves by their measured speeds: a matmul's rows in
// whole tiles.
TEST(SpreadRanges, TheOthersShareByTheirSpeeds) {
  const std::vector<SplitRange> r = hk::detail::spread_ranges(1000, 3, 400, {1.0, 2.0});
  ASSERT_EQ(r.size(), std::size_t(3));
  EXPECT_EQ(r[0].size(), 400);
  EXPECT_EQ(r[1].size(), 200);
  EXPECT_EQ(r[2].size(), 400);
  const std::vector<SplitRange> rows = hk::detail::qmm_spread_ranges({-1, 128 * 100 - 5}, 3, 400, {1.0, 3.0});
  EXPECT_EQ(rows[0].size(), 40 * 128);
  EXPECT_EQ(rows[1].size(), 15 * 128);
  EXPECT_EQ(rows[2].size(), 45 * 128 - 5);
}

TEST(SpreadDevices, HomeFirstEachOnceAtMostTheVisible) {
  for (int count = 1; count <= hk::offload_device_count() + 1; ++count) {
    const std::vector<int> d = hk::detail::spread_devices(count);
    EXPECT_EQ(d.front(), hk::offload_device());
    EXPECT_EQ(int(d.size()), std::min(count, hk::offload_device_count()));
    std::vector<int> sorted = d;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
}

// Rows go in whole 128-row tiles, the home device's share within a tile, the last part
// taking the rows beyond the last whole tile; whole batch matrices as spread_ranges shares them.
TEST(SpreadRanges, QmmRowsInWholeTiles) {
  for (const i64 rows : {i64(1), i64(127), i64(128), i64(129), i64(1000), i64(16384)})
    for (const int devices : {1, 2, 3, 4})
      for (const int share : {0, 250, 500, 1000}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " devices " + std::to_string(devices) + " share " +
                     std::to_string(share));
        const std::vector<SplitRange> r = hk::detail::qmm_spread_ranges({-1, rows}, devices, share);
        ASSERT_EQ(r.size(), std::size_t(devices));
        EXPECT_EQ(r[0].begin, 0);
        EXPECT_EQ(r.back().end, rows);
        for (std::size_t d = 0; d < r.size(); ++d) {
          if (d > 0) EXPECT_EQ(r[d].begin, r[d - 1].end);
          EXPECT_TRUE(r[d].begin % 128 == 0 || r[d].begin == rows);
        }
        if (devices > 1) EXPECT_LE(std::abs(r[0].size() * 1000 - rows * share), 128 * 1000) << r[0].size();
      }
  const std::vector<SplitRange> b = hk::detail::qmm_spread_ranges({0, 7}, 3, 500);
  const std::vector<SplitRange> want = hk::detail::spread_ranges(7, 3, 500);
  for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(b[d].end, want[d].end);
}

// A random problem: batched or not, B broadcast or not, padded or column-major layouts, per-row
// and per-column parameters with non-power-of-two scales (the oracle's bounds then apply).
Problem random_problem(std::mt19937_64& rng, std::vector<i64> batch, i64 M, i64 K = 0) {
  Problem p;
  p.batch = std::move(batch);
  p.M = M, p.N = i64(1 + rng() % 150), p.K = K > 0 ? K : i64(1 + rng() % 200);
  auto with = [&](std::vector<i64> tail) {
    std::vector<i64> s = p.batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const std::vector<i64> sa = with({p.M, p.K}), sb = with({p.K, p.N}), sy = with({p.M, p.N});
  std::vector<i64> stb = qmmt::make_strides(sb, rng() % 2 ? Layout::transposed_padded : Layout::packed, rng);
  if (!p.batch.empty() && rng() % 2) stb[0] = 0;
  p.a = Buffer(rng() % 2 ? DataType::int8 : DataType::uint8, sa, qmmt::make_strides(sa, Layout::padded, rng), rng);
  p.b = Buffer(rng() % 2 ? DataType::int8 : DataType::uint8, sb, stb, rng);
  p.y = Buffer(DataType::uint8, sy, qmmt::make_strides(sy, rng() % 4 ? Layout::padded : Layout::transposed, rng), rng);
  p.a_zero = qmmt::literal_q(p.a.dtype, {p.M, 1}, {3, -7, 100, 0}, rng);
  p.b_zero = qmmt::literal_q(p.b.dtype, {1, p.N}, {1, 9, -128, 127}, rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {p.M, 1}, {120, 7}, rng);
  p.a_scale = qmmt::literal_f({p.M, 1}, {0.05f, 0.07f}, rng);
  p.b_scale = qmmt::literal_f({1, p.N}, {0.01f, 0.02f, 0.004f}, rng);
  p.y_scale = qmmt::literal_f({p.M, 1}, {0.6f, 1.1f, 2.0f}, rng);
  return p;
}

// Every output within the oracle's bounds and every other byte of the output storage untouched.
void expect_matches_oracle(const Problem& p, const std::vector<unsigned char>& got, const std::string& where) {
  qmmt::expect_matches_oracle(p, qmmt::oracle(p, true), got, where);
}

const std::vector<std::vector<i64>> batches = {{}, {3}, {2, 2}, {5}};

TEST(QmmDevices, HostTensorsEveryShareMatchTheOracle) {
  std::mt19937_64 rng(0xde7);
  for (const i64 M : {i64(1), i64(2), i64(17), i64(130)})
    for (const auto& batch : batches) {
      const Problem p = random_problem(rng, batch, M);
      for (const char* text : {"qmm.devices", "qmm.devices(devices=1)", "qmm.devices(home_share=0)",
                               "qmm.devices(home_share=500, threads=64)", "qmm.devices(home_share=1000)"}) {
        const std::string where = std::string(text) + ", " + p.describe();
        Problem run = p;
        hk::quantized_linear_matmul(run.args(), run.y.view(), Schedule::parse(text));
        expect_matches_oracle(p, run.y.bytes, where);
      }
    }
}

TEST(QmmDevices, DeviceTensorsMatchTheOracle) {
  std::mt19937_64 rng(0xd1ce);
  for (const i64 M : {i64(1), i64(16), i64(100), i64(128)})
    for (const auto& batch : batches) {
      const Problem p = random_problem(rng, batch, M);
      for (const char* text : {"qmm.devices", "qmm.devices(home_share=300)", "qmm.devices(devices=1, home_share=0)"}) {
        const std::string where = std::string(text) + ", " + p.describe();
        Problem run = p;
        OnDevice a(run.a), b(run.b), y(run.y);
        hk::quantized_linear_matmul(qmmt::device_args(run, a, b), y.view(), Schedule::parse(text));
        expect_matches_oracle(p, y.download(), where);
      }
    }
}

// The validated problem of `p` with A, B and the output at their device addresses.
hk::detail::QmmProblem problem_on_device(const Problem& p, const OnDevice& a, const OnDevice& b, const OnDevice& y) {
  hk::QuantizedMatMulArgs args = p.args();
  const auto at = [](const OnDevice& d) { return static_cast<char*>(d.memory.data()) + Buffer::guard; };
  args.a.data = at(a);
  args.b.data = at(b);
  return hk::detail::validate(args, {y.desc, at(y)});
}

// Every part multiplied with the same settings.
hk::detail::PartLaunch every_part(hk::detail::QmmPlan launch) {
  return [launch](const hk::detail::QmmProblem&) { return launch; };
}

// mma.sync, or warpgroup MMA where the GPU has it (the host fallback and older GPUs run mma.sync).
const hk::detail::OffloadQmmKernel tensor_core_kernels[] = {hk::detail::OffloadQmmKernel::mma,
                                                            hk::detail::OffloadQmmKernel::wgmma};

std::string kernel_name(hk::detail::OffloadQmmKernel kernel) {
  return kernel == hk::detail::OffloadQmmKernel::wgmma ? "wgmma" : "mma";
}

// What a part whose B' is streamed moves between devices: its rows of A a band of the kernels' at
// a time (each band's span, as qmm_arrival_bands lists them) where A is by rows, else its
// span once, the N columns of B' (K bytes each), its outputs there first where they have gaps,
// and back a band at a time where it has several bands (each band's span), else whole; and B's
// column sums (N int64) where the products need them. With B' kept on every device, neither B'
// nor its sums.
i64 streamed_part_bytes(const hk::detail::QmmProblem& part, bool b_kept = false) {
  const std::vector<SplitRange> bands =
      hk::detail::qmm_arrival_bands(part.M, hk::detail::qmm_offload_band_rows, hk::detail::qmm_stream_last_rows);
  const hk::detail::QmmSpans s = hk::detail::qmm_spans(part);
  const bool sums = !b_kept && hk::detail::qmm_sums_needed(part).columns;
  i64 bytes = (b_kept ? 0 : part.N * part.K) + i64(s.out_has_gaps() ? s.out : 0) +
              (sums ? part.N * i64(sizeof(std::int64_t)) : 0);
  const bool a_by_rows = part.a.row_stride >= part.K * part.a.col_stride;
  if (!a_by_rows) bytes += i64(s.a);
  for (const SplitRange& rows : bands) {
    const hk::detail::QmmSpans r = hk::detail::qmm_spans(hk::detail::qmm_part(part, {-1, part.M}, rows));
    bytes += i64(a_by_rows ? r.a : 0) + i64(bands.size() > 1 ? r.out : 0);
  }
  return bytes + i64(bands.size() > 1 ? 0 : s.out);
}

// B's column sums made once on the home device for the parts of a spread call: each is the sum of
// its column's K int8 values of B' (what the product's tiles would sum), for widths that are
// not whole tiles and a depth of several slices.
TEST(QmmDevices, ColumnSumsOfBPrimeAreEachColumnsSum) {
  std::mt19937_64 rng(0xc5);
  const int device = hk::offload_device();
  for (const i64 N : {i64(1), i64(300)})
    for (const i64 K : {i64(128), i64(384)}) {
      std::vector<std::int8_t> columns(std::size_t(N * K));
      for (std::int8_t& v : columns) v = std::int8_t(int(rng() % 256) - 128);
      hk::detail::ScratchLease b(device, columns.size()), sums(device, std::size_t(N) * sizeof(std::int64_t));
      hk::detail::copy_to_device(b.data(), 0, columns.data(), columns.size(), device);
      hk::detail::QmmProblem problem;
      problem.M = 1, problem.N = N, problem.K = K;
      problem.b = {DataType::int8, b.data(), {0, 0}, 1, K};
      hk::detail::qmm_offload_column_sums(problem, static_cast<std::int64_t*>(sums.data()), device);
      std::vector<std::int64_t> got(static_cast<std::size_t>(N));
      hk::detail::copy_to_host(got.data(), sums.data(), 0, got.size() * sizeof(std::int64_t), device);
      for (i64 n = 0; n < N; ++n) {
        std::int64_t want = 0;
        for (i64 k = 0; k < K; ++k) want += columns[std::size_t(n * K + k)];
        ASSERT_EQ(got[std::size_t(n)], want) << "column " << n << " of " << N << ", K " << K;
      }
    }
}

// The part for another device, with the home device standing in for the others: every share,
// both cuts (rows, and whole batch matrices when there are as many as devices), and outputs whose
// parts would interleave (column-major), which the home device then runs whole.
TEST(QmmDevices, PartsOnOtherDevicesMatchTheOracle) {
  std::mt19937_64 rng(0x0d15);
  const int home = hk::offload_device();
  for (const i64 M : {i64(1), i64(3), i64(64), i64(129)})
    for (const auto& batch : batches)
      for (const std::vector<int>& devices : {std::vector<int>{home, home}, std::vector<int>{home, home, home}})
        for (const int share : {0, 333, 1000}) {
          const Problem p = random_problem(rng, batch, M);
          const hk::detail::QmmPlan launch{tensor_core_kernels[rng() % 2], 128, 0};
          const std::string where = std::to_string(devices.size()) + " devices, home share " + std::to_string(share) +
                                    ", " + kernel_name(launch.kernel) + ", " + p.describe();
          Problem run = p;
          OnDevice a(run.a), b(run.b), y(run.y);
          const hk::detail::QmmProblem problem = problem_on_device(run, a, b, y);
          const hk::detail::QmmCut cut = hk::detail::qmm_cut(problem, int(devices.size()));
          const auto ranges = hk::detail::qmm_spread_ranges(cut, int(devices.size()), share);
          const bool spread = hk::detail::qmm_parts_own_their_spans(problem, cut, ranges);
          hk::reset_transfer_counters();
          hk::detail::spread_qmm(problem, every_part(launch), devices, share);
          expect_matches_oracle(p, y.download(), where);
          // What went to the other devices: their parts' A, B (B' columns where streamed) and
          // (with gaps) outputs, and back their outputs; nothing when the home device ran it all.
          i64 moved = 0;
          for (std::size_t i = 1; spread && i < ranges.size(); ++i) {
            if (ranges[i].size() == 0) continue;
            const hk::detail::QmmSpans s = hk::detail::qmm_spans(hk::detail::qmm_part(problem, cut, ranges[i]));
            const auto part = hk::detail::qmm_part(problem, cut, ranges[i]);
            moved += !cut.by_batch() && hk::detail::qmm_b_columns_fit(problem)
                         ? streamed_part_bytes(part)
                         : i64(s.a + s.b + s.out * (s.out_has_gaps() ? 2 : 1));
          }
          EXPECT_EQ(hk::transfer_counters().between_devices_bytes, moved) << where;
          if (batch.size() == 1 && batch[0] >= i64(devices.size())) EXPECT_TRUE(cut.by_batch()) << where;
        }
}

// One matrix whose K is whole 128-deep slices: B' is packed once on the home device (or B is B'
// already: int8, column-major, columns of K bytes) and each other device receives its rows of A
// a band at a time, and all of B' a column group at a time (2200 columns: 17 groups of 128 and
// one of 24, the first from the home device, the others from the device before it, by two
// threads), while its one launch runs, and gives back each band's outputs as soon as it is done
// (the last two tile rows are a band of their own: a part of 2200 rows has a band of 2048 rows
// and one of 152). Zero points that need sums of A' or B' (so that the product waits for all of
// them before it starts) and zero points that need neither (so that its tiles wait for their own
// lines). The other devices are the home device standing in for two or three, and on a machine
// with several GPUs every other case runs over the real ones.
TEST(QmmDevices, StreamedBPartsMatchTheOracle) {
  std::mt19937_64 rng(0x5b);
  const int home = hk::offload_device();
  const std::vector<int> visible = hk::detail::spread_devices(hk::offload_device_count());
  int round = 0;
  const Layout b_layouts[] = {Layout::packed, Layout::padded, Layout::transposed, Layout::transposed_padded};
  for (const i64 M : {i64(1), i64(3), i64(129), i64(260), i64(4400)})
    for (const i64 N : {i64(1), i64(128), i64(300), i64(2200)})
      for (const i64 K : {i64(128), i64(256)})
        for (const Layout layout : b_layouts) {
          if (M > 260 && N > 128) continue;
          Problem p = random_problem(rng, {}, M);
          p.N = N, p.K = K;
          const Layout a_layouts[] = {Layout::packed, Layout::padded, Layout::transposed};  // in place, by rows, by columns
          p.a = Buffer(p.a.dtype, {M, K}, qmmt::make_strides({M, K}, a_layouts[rng() % 3], rng), rng);
          p.b = Buffer(rng() % 2 ? DataType::int8 : DataType::uint8, {K, N}, qmmt::make_strides({K, N}, layout, rng), rng);
          p.y = Buffer(DataType::uint8, {M, N}, qmmt::make_strides({M, N}, rng() % 2 ? Layout::padded : Layout::packed, rng), rng);
          p.b_zero = qmmt::literal_q(p.b.dtype, {1, N}, {1, 9, -128, 127}, rng);
          if (rng() % 2) {
            // Every alpha 128 and every beta 0: no sums of A' or B' needed.
            p.a_zero = qmmt::literal_q(p.a.dtype, {M, 1}, {p.a.dtype == DataType::uint8 ? 128 : 0}, rng);
            p.b_zero = qmmt::literal_q(p.b.dtype, {1, N}, {p.b.dtype == DataType::uint8 ? 128 : 0}, rng);
          }
          p.b_scale = qmmt::literal_f({1, N}, {0.01f, 0.02f, 0.004f}, rng);
          const int share = int(rng() % 2) * 250;
          const bool real = visible.size() >= 2 && round++ % 2 == 1;
          const std::vector<int> devices = real ? visible : std::vector<int>(2 + rng() % 2, home);
          // The real devices as if measured unequal: they share by those speeds.
          std::vector<double> speeds;
          if (real)
            for (int d = 0; d < hk::offload_device_count(); ++d) speeds.push_back(double(1 + rng() % 3));
          hk::detail::set_device_speeds(hk::detail::SpreadWork::matmul, speeds);
          // Both kernels read operands as they arrive; wgmma's four stages are its default.
          const hk::detail::OffloadQmmKernel kernel = tensor_core_kernels[rng() % 2];
          const hk::detail::QmmPlan launch{kernel, 128, 0, kernel == hk::detail::OffloadQmmKernel::wgmma ? 4 : 0};
          const std::string where = std::to_string(devices.size()) + (real ? " GPUs" : " stand-ins") +
                                    ", home share " + std::to_string(share) + ", " + kernel_name(kernel) + ", " +
                                    p.describe();
          Problem run = p;
          OnDevice a(run.a), b(run.b), y(run.y);
          const hk::detail::QmmProblem problem = problem_on_device(run, a, b, y);
          ASSERT_TRUE(hk::detail::qmm_b_columns_fit(problem)) << where;
          const hk::detail::QmmCut cut = hk::detail::qmm_cut(problem, int(devices.size()));
          const auto ranges = hk::detail::qmm_spread_ranges(
              cut, int(devices.size()), share, hk::detail::other_devices_speeds(devices, hk::detail::SpreadWork::matmul));
          hk::reset_transfer_counters();
          hk::detail::spread_qmm(problem, every_part(launch), devices, share);
          expect_matches_oracle(p, y.download(), where);
          i64 moved = 0;
          for (std::size_t i = 1; i < ranges.size(); ++i)
            if (ranges[i].size() > 0) moved += streamed_part_bytes(hk::detail::qmm_part(problem, cut, ranges[i]));
          EXPECT_EQ(hk::transfer_counters().between_devices_bytes, moved) << where;
        }
  hk::detail::set_device_speeds(hk::detail::SpreadWork::matmul, {});
}

// B kept on the devices across calls (hk::DevicePackedB): every part reads its own device's copy,
// made on the first call there, so that a later call moves only A's rows and the outputs between
// devices; as B' where K is a whole number of slices (the streamed parts), else as B's bytes (the
// parts copied whole). Stand-ins, and the real GPUs where there are several.
TEST(QmmDevices, KeptBCrossesNoLinkAfterTheFirstCall) {
  std::mt19937_64 rng(0x6b);
  const int home = hk::offload_device();
  const std::vector<int> visible = hk::detail::spread_devices(hk::offload_device_count());
  for (const bool real : {false, true})
    for (const i64 K : {i64(256), i64(100)})
      for (const DataType tb : {DataType::int8, DataType::uint8}) {
        if (real && visible.size() < 2) continue;
        Problem p = random_problem(rng, {}, 300);
        p.N = 140, p.K = K;
        p.a = Buffer(p.a.dtype, {p.M, K}, qmmt::make_strides({p.M, K}, Layout::padded, rng), rng);
        p.b = Buffer(tb, {K, p.N}, qmmt::make_strides({K, p.N}, Layout::transposed_padded, rng), rng);
        p.y = Buffer(DataType::uint8, {p.M, p.N}, qmmt::make_strides({p.M, p.N}, Layout::packed, rng), rng);
        p.b_zero = qmmt::literal_q(tb, {1, p.N}, {1, 9, -128, 127}, rng);
        p.b_scale = qmmt::literal_f({1, p.N}, {0.01f, 0.02f, 0.004f}, rng);
        const std::vector<int> devices = real ? visible : std::vector<int>{home, home, home};
        const hk::detail::QmmPlan launch{tensor_core_kernels[rng() % 2], 128, 0};
        const std::string where = std::to_string(devices.size()) + (real ? " GPUs, " : " stand-ins, ") +
                                  kernel_name(launch.kernel) + ", " + p.describe();
        OnDevice a(p.a), b(p.b), y(p.y);
        const hk::DevicePackedB packed = hk::pack_b(b.cview());
        const hk::detail::DeviceB* kept = hk::device_b(packed);
        ASSERT_NE(kept, nullptr);
        const hk::detail::QmmProblem problem = kept->apply(problem_on_device(p, a, b, y));
        const hk::detail::QmmCut cut = hk::detail::qmm_cut(problem, int(devices.size()));
        const auto ranges = hk::detail::qmm_spread_ranges(cut, int(devices.size()), 250);
        const bool streamed = hk::detail::qmm_b_columns_fit(problem);
        EXPECT_EQ(streamed, K % 128 == 0) << where;
        EXPECT_EQ(hk::detail::is_b_columns(problem.b, K), streamed) << where;
        i64 moved = 0, parts = 0;
        for (std::size_t i = 1; i < ranges.size(); ++i) {
          const hk::detail::QmmProblem part = hk::detail::qmm_part(problem, cut, ranges[i]);
          const hk::detail::QmmSpans spans = hk::detail::qmm_spans(part);
          if (ranges[i].size() == 0) continue;
          ++parts;
          moved += streamed ? streamed_part_bytes(part, true)
                            : i64(spans.a + spans.out + (spans.out_has_gaps() ? spans.out : 0));
        }
        for (int call = 0; call < 2; ++call) {
          hk::reset_transfer_counters();
          hk::detail::spread_qmm(problem, every_part(launch), devices, 250, kept);
          expect_matches_oracle(p, y.download(), where + ", call " + std::to_string(call));
          // The first call copies B once to each other GPU that has a part.
          const i64 copies = call == 0 && real ? parts * i64(kept->bytes()) : 0;
          EXPECT_EQ(hk::transfer_counters().between_devices_bytes, moved + copies) << where << ", call " << call;
        }
      }
}

// B' down the chain: every link takes the first group from the home device and each later one
// from the link before, once that has it; a failure anywhere wakes every link still waiting.
TEST(QmmDevices, ColumnRelayPassesGroupsOnAndFailsEveryWaiter) {
  char home[1], first[1], second[1];
  // 512 columns of K = 16 Mi bytes: groups of 16 MiB at most, so one tile of columns each.
  hk::detail::ColumnRelay relay(7, home, 4 * 128, 1 << 24);
  ASSERT_EQ(relay.groups(), 4u);
  const std::size_t one = relay.add(8, first), two = relay.add(9, second);
  EXPECT_EQ(relay.columns(two), second);
  const auto from = [&](std::size_t link, std::size_t group) { return relay.source(link, group); };
  EXPECT_EQ(from(two, 0)->device, 7);  // the first group from the home device
  EXPECT_EQ(from(one, 3)->columns, home);
  relay.landed(one, 2);
  EXPECT_EQ(from(two, 2)->device, 8);
  EXPECT_EQ(from(two, 2)->columns, first);
  std::optional<hk::detail::ColumnRelay::Source> waited = hk::detail::ColumnRelay::Source{0, nullptr};
  std::thread waiter([&] { waited = from(two, 1); });  // link one does not have group 1
  relay.fail();
  waiter.join();
  EXPECT_FALSE(waited.has_value());
  EXPECT_TRUE(relay.failed());
}

// The streamed parts' launch on its own (OffloadQmmArrivals): with every row and column tile
// marked there, each band's counter ends at its tiles (a batch's bands after the one before it;
// the last 0, 1 or 3 tile rows a band of their own, as qmm_arrival_bands lists them), and every
// output matches the oracle, for each product kernel (wgmma runs as mma.sync where it cannot run).
// The tensor cores' calls of one or two tile rows are 2100 deep, which they split in depth where
// their last wave of tiles leaves most of it idle (its tiles counted once their parts are added up).
TEST(QmmDevices, ArrivingLaunchCountsEveryTileOfItsBand) {
  using hk::detail::OffloadQmmKernel;
  std::mt19937_64 rng(0xba4d);
  const int home = hk::offload_device();
  int round = 0, split_calls = 0;
  for (const i64 M : {i64(1), i64(129), i64(2048), i64(2049), i64(2200)})
    for (const i64 last_rows : {i64(0), i64(1), i64(3)})
      for (const OffloadQmmKernel kernel : {OffloadQmmKernel::dp4a, OffloadQmmKernel::mma, OffloadQmmKernel::wgmma}) {
        const i64 matrices = round++ % 2 ? 2 : 1;
        const i64 K = M <= 129 && kernel != OffloadQmmKernel::dp4a ? 2100 : 0;
        const Problem p = random_problem(rng, matrices > 1 ? std::vector<i64>{2} : std::vector<i64>{}, M, K);
        const std::string where = "M=" + std::to_string(M) + ", last rows " + std::to_string(last_rows) + ", kernel " +
                                  std::to_string(int(kernel)) + ", " + p.describe();
        Problem run = p;
        OnDevice a(run.a), b(run.b), y(run.y);
        const hk::detail::QmmProblem problem = problem_on_device(run, a, b, y);
        split_calls += hk::detail::qmm_offload_split(problem, kernel, hk::detail::qmm_offload_wave(home)).parts > 1;
        const i64 tiles_m = (M + 127) / 128, tiles_n = (p.N + 127) / 128;
        const std::vector<hk::detail::SplitRange> bands = hk::detail::qmm_arrival_bands(M, 16, last_rows);
        ASSERT_EQ(bands.front().begin, 0) << where;
        ASSERT_EQ(bands.back().end, M) << where;
        const i64 counters = matrices * i64(bands.size());
        std::vector<std::int32_t> flags(std::size_t(tiles_m + tiles_n), 1);
        flags.resize(std::size_t(tiles_m + tiles_n + counters), 0);
        const std::size_t bytes = flags.size() * sizeof(std::int32_t);
        hk::DeviceBuffer on_device(bytes);
        on_device.upload(flags.data(), bytes);
        auto* const f = static_cast<std::int32_t*>(on_device.data());
        hk::detail::run_qmm_offload_arriving(problem, {kernel, 128, 0}, home,
                                             {f, f + tiles_m, f + tiles_m + tiles_n, last_rows});
        on_device.download(flags.data(), bytes);
        for (i64 t = 0; t < matrices; ++t)
          for (std::size_t band = 0; band < bands.size(); ++band) {
            if (band > 0) EXPECT_EQ(bands[band].begin, bands[band - 1].end) << where;
            const i64 rows = (bands[band].end + 127) / 128 - bands[band].begin / 128;
            if (last_rows > 0 && band + 1 == bands.size()) EXPECT_EQ(rows, std::min(last_rows, tiles_m)) << where;
            EXPECT_EQ(flags[std::size_t(tiles_m + tiles_n + t * i64(bands.size()) + i64(band))], rows * tiles_n)
                << where << ", batch " << t << ", band " << band;
          }
        expect_matches_oracle(p, y.download(), where);
      }
  EXPECT_GT(split_calls, 0);
}

// Each device of a qmm.devices call multiplies its part as qmm.offload_mma would that part alone:
// warpgroup MMA for a part of at least half a wave of tiles, mma.sync below (where it splits the
// depth), all four stages, and the plan's threads per team.
TEST(QmmDevices, EachPartTakesTheOneDeviceDefaults) {
  using hk::detail::OffloadQmmKernel;
  std::mt19937_64 rng(0x9a);
  const hk::detail::DevicesQmmPlan plan{{2, 500}, 256};
  const i64 wave = hk::detail::qmm_offload_wave(hk::offload_device());
  for (const i64 tiles : {i64(1), wave / 2 - 1, wave / 2, 2 * wave}) {
    if (tiles < 1) continue;
    Problem p = random_problem(rng, {}, 128 * tiles, 256);
    p.N = 128;
    p.b = Buffer(p.b.dtype, {256, 128}, qmmt::make_strides({256, 128}, Layout::packed, rng), rng);
    p.y = Buffer(DataType::uint8, {p.M, 128}, qmmt::make_strides({p.M, 128}, Layout::packed, rng), rng);
    p.b_zero = qmmt::literal_q(p.b.dtype, {1, 1}, {3}, rng);
    p.b_scale = qmmt::literal_f({1, 1}, {0.01f}, rng);
    const hk::detail::QmmProblem part = hk::detail::validate(p.args(), p.y.view());
    ASSERT_EQ(hk::detail::qmm_offload_tile_count(part), tiles);
    const hk::detail::QmmPlan launch = hk::detail::devices_part_launch(plan, part);
    EXPECT_EQ(launch.kernel, 2 * tiles >= wave ? OffloadQmmKernel::wgmma : OffloadQmmKernel::mma) << tiles << " tiles";
    EXPECT_EQ(launch.stages, hk::detail::qmm_offload_max_stages) << tiles << " tiles";
    EXPECT_EQ(launch.team_threads, 256) << tiles << " tiles";
  }
}

TEST(QmmDevices, InterleavedOutputsAreNotSpread) {
  std::mt19937_64 rng(11);
  Problem p = random_problem(rng, {}, 300);
  const std::vector<i64> sy = {p.M, p.N};
  p.y = Buffer(DataType::uint8, sy, qmmt::make_strides(sy, Layout::transposed, rng), rng);
  const hk::detail::QmmProblem problem = hk::detail::validate(p.args(), p.y.view());
  const hk::detail::QmmCut cut = hk::detail::qmm_cut(problem, 2);
  EXPECT_FALSE(cut.by_batch());
  EXPECT_FALSE(hk::detail::qmm_parts_own_their_spans(problem, cut, hk::detail::qmm_spread_ranges(cut, 2, 500)));
  EXPECT_TRUE(hk::detail::qmm_parts_own_their_spans(problem, cut, hk::detail::qmm_spread_ranges(cut, 2, 1000)));
}

TEST(QmmDevices, SchedulesPrintEveryParameterAndBadOnesAreRefused) {
  std::mt19937_64 rng(3);
  Problem p = random_problem(rng, {}, 4);
  const hk::detail::QmmProblem problem = hk::detail::validate(p.args(), p.y.view());
  const int visible = hk::offload_device_count();
  const auto plan = hk::detail::plan_qmm(problem, Schedule("qmm.devices"));
  const Schedule printed = hk::detail::to_schedule(plan);
  // The home device's default share: an even one and 25 per mille more (all with one device).
  const int share = visible == 1 ? 1000 : (1000 + visible / 2) / visible + 25;
  EXPECT_EQ(printed.to_string(), "qmm.devices(devices=" + std::to_string(visible) + ", home_share=" +
                                     std::to_string(share) + ", threads=128)");
  EXPECT_EQ(hk::detail::to_schedule(hk::detail::plan_qmm(problem, Schedule::parse(printed.to_string()))), printed);
  const std::vector<unsigned char> junk = p.y.bytes;
  for (const auto& [key, value] : std::vector<std::pair<const char*, i64>>{
           {"devices", 0}, {"devices", visible + 1}, {"home_share", 1001}, {"threads", 16}}) {
    const Schedule s = Schedule("qmm.devices").set(key, value);
    try {
      hk::quantized_linear_matmul(p.args(), p.y.view(), s);
      ADD_FAILURE() << s.to_string() << " ran";
    } catch (const hk::Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_schedule) << e.what();
    }
  }
  EXPECT_TRUE(p.y.bytes == junk);
  // A tuning candidate only where there are two devices or more.
  EXPECT_EQ(hk::detail::qmm_devices().available().available, !hk::offload_on_host());
  EXPECT_EQ(hk::detail::spread_space().has_value(), visible > 1);
}

}  // namespace
