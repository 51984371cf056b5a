// The split strategies (scan.split, qmm.split): one call on host tensors shared between the offload
// devices and the host cores. Without a GPU the one device is the host fallback, which runs the
// same code with N = 1. Every element is computed by exactly one part, so the results equal a
// single executor's bit for bit: the scans here use integer-valued data, whose every prefix is
// exact in any order of addition; the matmul is exact everywhere.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "qmm_test_util.hpp"
#include "scan_test_util.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/split_common.hpp"

namespace {

using hk::DataType;
using hk::Errc;
using hk::Schedule;
using hk::detail::SplitPlan;
using hk::detail::SplitRange;
using qmmt::i64;

// ---- how the work is shared out -----------------------------------------------------------------

TEST(SplitRanges, CoverEveryUnitOnceDevicesFirstEvenly) {
  for (const i64 units : {i64(0), i64(1), i64(2), i64(7), i64(13), i64(1000), i64(1001)})
    for (const int share : {0, 1, 250, 500, 999, 1000})
      for (const int devices : {1, 2, 3, 8}) {
        SCOPED_TRACE("units " + std::to_string(units) + " share " + std::to_string(share) + " devices " +
                     std::to_string(devices));
        const std::vector<SplitRange> r = hk::detail::split_ranges(units, {share, devices, 1});
        ASSERT_EQ(r.size(), std::size_t(1 + devices));
        // Devices in order from 0, then the host's range up to the end.
        i64 at = 0, device_units = 0, smallest = units, largest = 0;
        for (int d = 0; d < devices; ++d) {
          EXPECT_EQ(r[std::size_t(1 + d)].begin, at);
          at = r[std::size_t(1 + d)].end;
          device_units += r[std::size_t(1 + d)].size();
          smallest = std::min(smallest, r[std::size_t(1 + d)].size());
          largest = std::max(largest, r[std::size_t(1 + d)].size());
        }
        EXPECT_LE(largest - smallest, 1);
        EXPECT_EQ(r[0].begin, at);
        EXPECT_EQ(r[0].end, units);
        EXPECT_EQ(device_units, (units * share + 500) / 1000);
      }
  EXPECT_EQ(hk::detail::split_ranges(10, {0, 1, 1})[0].size(), 10);
  EXPECT_EQ(hk::detail::split_ranges(10, {1000, 1, 1})[1].size(), 10);
  EXPECT_EQ(hk::detail::split_ranges(10, {1000, 1, 1})[0].size(), 0);
}

// With measured speeds the devices' share is divided in proportion to them: every unit still once,
// in device order, each boundary the nearest unit to its share; speeds all alike divide evenly.
TEST(SplitRanges, DevicesShareByTheirSpeeds) {
  const auto ranges = [](i64 units, std::vector<double> speeds) {
    return hk::detail::split_ranges(units, {1000, int(speeds.size()), 1}, speeds);
  };
  const std::vector<SplitRange> r = ranges(1000, {1, 2, 1});
  ASSERT_EQ(r.size(), std::size_t(4));
  EXPECT_EQ(r[1].size(), 250);
  EXPECT_EQ(r[2].size(), 500);
  EXPECT_EQ(r[3].size(), 250);
  EXPECT_EQ(r[0].size(), 0);
  std::mt19937_64 rng(0x5eed);
  for (int round = 0; round < 200; ++round) {
    const i64 units = i64(rng() % 5000);
    const int devices = 1 + int(rng() % 8);
    std::vector<double> speeds;
    for (int d = 0; d < devices; ++d) speeds.push_back(0.25 + double(rng() % 1000) / 250);
    const int share = int(rng() % 1001);
    const std::vector<SplitRange> got = hk::detail::split_ranges(units, {share, devices, 1}, speeds);
    SCOPED_TRACE("units " + std::to_string(units) + " devices " + std::to_string(devices));
    const i64 device_units = (units * share + 500) / 1000;
    const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
    i64 at = 0;
    double so_far = 0;
    for (int d = 0; d < devices; ++d) {
      const SplitRange& part = got[std::size_t(1 + d)];
      EXPECT_EQ(part.begin, at);
      so_far += speeds[std::size_t(d)];
      EXPECT_NEAR(double(part.end), double(device_units) * so_far / total, 0.5 + 1e-9);
      at = part.end;
    }
    EXPECT_EQ(at, device_units);
    EXPECT_EQ(got[0].begin, device_units);
    EXPECT_EQ(got[0].end, units);
  }
  // Alike: the even division, the first ones one more.
  const std::vector<SplitRange> even = ranges(10, {2, 2, 2});
  EXPECT_EQ(even[1].size(), 4);
  EXPECT_EQ(even[2].size(), 3);
  EXPECT_EQ(even[3].size(), 3);
}

// The devices' speeds as calibration leaves them: by OpenMP device number; any device they do not
// name makes every device count alike, as before calibration.
TEST(SplitRanges, DeviceSpeedsByDeviceNumber) {
  using hk::detail::SpreadWork;
  hk::detail::set_device_speeds(SpreadWork::matmul, {1.0, 0.5, 2.0});
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::matmul, {2, 0, 1}), (std::vector<double>{2.0, 1.0, 0.5}));
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::matmul, {0, 3}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::matmul, {-1}), (std::vector<double>{1.0}));
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::scan, {0, 1}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(hk::detail::other_devices_speeds({1, 2}, SpreadWork::matmul), (std::vector<double>{2.0}));
  hk::detail::set_device_speeds(SpreadWork::matmul, {1.0, 0.0});
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::matmul, {0, 1}), (std::vector<double>{1.0, 1.0}));
  hk::detail::set_device_speeds(SpreadWork::matmul, {});
  EXPECT_EQ(hk::detail::device_speeds(SpreadWork::matmul, {0, 1}), (std::vector<double>{1.0, 1.0}));
}

TEST(RunSplit, RunsEveryPartOnceAndRethrowsAfterAllFinished) {
  const SplitPlan plan{500, 1, 1};
  const std::vector<SplitRange> ranges = hk::detail::split_ranges(9, plan);
  std::vector<std::atomic<int>> seen(9);
  hk::detail::run_split(
      plan, ranges, [&](SplitRange r) { for (i64 u = r.begin; u < r.end; ++u) ++seen[std::size_t(u)]; },
      [&](int d, int device, SplitRange r) {
        EXPECT_EQ(d, 0);
        EXPECT_EQ(device, hk::offload_device());
        for (i64 u = r.begin; u < r.end; ++u) ++seen[std::size_t(u)];
      });
  for (const auto& s : seen) EXPECT_EQ(s.load(), 1);

  // A device part that throws: the host part still runs to its end, then the exception comes.
  std::atomic<bool> host_done{false};
  EXPECT_THROW(hk::detail::run_split(
                   plan, ranges, [&](SplitRange) { host_done = true; },
                   [&](int, int, SplitRange) { throw std::runtime_error("device part failed"); }),
               std::runtime_error);
  EXPECT_TRUE(host_done);
  // The host part throws while the device part runs: the device part finishes first.
  std::atomic<bool> device_done{false};
  EXPECT_THROW(hk::detail::run_split(
                   plan, ranges, [&](SplitRange) { throw std::runtime_error("host part failed"); },
                   [&](int, int, SplitRange) { device_done = true; }),
               std::runtime_error);
  EXPECT_TRUE(device_done);
}

// Parts run on kept threads: nested parts (a part that runs parts of its own, as qmm.devices'
// other devices do) each run once, the threads serve later calls, and a child of fork(), which
// has none of them, still runs its parts.
TEST(RunParts, NestedPartsKeptThreadsAndAForkedChild) {
  const auto nested = [] {
    std::atomic<int> runs{0};
    std::vector<std::function<void()>> outer;
    for (int d = 0; d < 4; ++d)
      outer.push_back([&] {
        hk::detail::run_parts({[&] { ++runs; }, [&] { ++runs; }, [&] { ++runs; }});
        ++runs;
      });
    hk::detail::run_parts(outer);
    return runs.load();
  };
  for (int call = 0; call < 50; ++call) ASSERT_EQ(nested(), 16) << "call " << call;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child whose parts wait for threads it does not have would hang: fail instead
    _exit(nested() == 16 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

// ---- scans ----------------------------------------------------------------------------------------

// A random scan: rank 1 to 8, sizes with ones and primes, any axis and direction, inclusive or
// exclusive, packed, padded, transposed or broadcast input, a padded output or in place.
struct ScanCase {
  DataType type = DataType::int32;
  bool product = false;
  std::vector<i64> sizes, in_strides, out_strides;
  hk::CumulativeOptions options;
  bool in_place = false;

  std::string describe() const {
    return std::string(hk::name_of(type)) + (product ? " product" : " sum") + " sizes " + qmmt::dims(sizes) +
           " in strides " + qmmt::dims(in_strides) + " out strides " + qmmt::dims(out_strides) + " axis " +
           std::to_string(options.axis) + (options.direction == hk::Direction::decreasing ? " decreasing" : "") +
           (options.exclusive ? " exclusive" : "") + (in_place ? " in place" : "");
  }
};

ScanCase random_scan(std::mt19937_64& rng) {
  static constexpr DataType types[] = {DataType::int32, DataType::int64, DataType::uint32, DataType::float32,
                                       DataType::float16};
  static constexpr i64 pool[] = {1, 1, 2, 3, 5, 7, 13, 16, 17, 31, 64};
  ScanCase c;
  c.type = types[rng() % std::size(types)];
  c.product = rng() % 4 == 0;
  const int rank = 1 + int(rng() % 8);
  i64 total = 1;
  for (int d = 0; d < rank; ++d) {
    i64 n = pool[rng() % std::size(pool)];
    while (n > 1 && total * n > 6000) n /= 2;
    c.sizes.push_back(n);
    total *= n;
  }
  c.options.axis = int(rng() % rank);
  if (c.type == DataType::float16 || c.product) c.sizes[std::size_t(c.options.axis)] = std::min<i64>(c.sizes[std::size_t(c.options.axis)], 24);
  c.options.direction = rng() % 2 ? hk::Direction::decreasing : hk::Direction::increasing;
  c.options.exclusive = rng() % 2;
  c.in_place = rng() % 4 == 0;
  const qmmt::Layout layouts[] = {qmmt::Layout::packed, qmmt::Layout::padded, qmmt::Layout::transposed,
                                  qmmt::Layout::random};
  c.out_strides = qmmt::make_strides(c.sizes, layouts[rng() % std::size(layouts)], rng);
  if (c.in_place) {
    c.in_strides = c.out_strides;
  } else {
    c.in_strides = qmmt::make_strides(c.sizes, layouts[rng() % std::size(layouts)], rng);
    for (std::size_t d = 0; d < c.sizes.size(); ++d)
      if (int(d) != c.options.axis && rng() % 6 == 0) c.in_strides[d] = 0;  // broadcast lines
  }
  return c;
}

// Storage of `n` elements of `type` holding small integers (magnitudes 0 to 2, never 0 for
// products), so that every prefix is exact whatever the order of its additions.
std::vector<unsigned char> scan_values(DataType type, i64 n, bool product, std::mt19937_64& rng) {
  std::vector<unsigned char> bytes(std::size_t(n) * hk::size_of(type));
  for (i64 i = 0; i < n; ++i) {
    const int v = product ? (rng() % 2 ? 1 : 2) * (rng() % 2 ? 1 : -1) : int(rng() % 5) - 2;
    unsigned char* at = bytes.data() + std::size_t(i) * hk::size_of(type);
    switch (type) {
      case DataType::int32: { const std::int32_t x = v; std::memcpy(at, &x, 4); break; }
      case DataType::uint32: { const std::uint32_t x = std::uint32_t(v); std::memcpy(at, &x, 4); break; }
      case DataType::int64: { const std::int64_t x = v; std::memcpy(at, &x, 8); break; }
      case DataType::float32: { const float x = float(v); std::memcpy(at, &x, 4); break; }
      default: { const auto x = hk::detail::float16_t(float(v)); std::memcpy(at, &x, 2); break; }
    }
  }
  return bytes;
}

// The output storage after running `c` under `schedule` on `input` (a copy of it when in place),
// every other byte of the output storage 0x5a.
std::vector<unsigned char> run_scan(const ScanCase& c, const std::vector<unsigned char>& input,
                                    const Schedule& schedule) {
  const hk::TensorDesc in_desc(c.type, c.sizes, c.in_strides), out_desc(c.type, c.sizes, c.out_strides);
  std::vector<unsigned char> out(std::size_t(qmmt::element_reach(c.sizes, c.out_strides)) * hk::size_of(c.type), 0x5a);
  const void* x = input.data();
  if (c.in_place) {
    out = input;
    x = out.data();
  }
  if (c.product)
    hk::cumulative_product({in_desc, x}, {out_desc, out.data()}, c.options, schedule);
  else
    hk::cumulative_sum({in_desc, x}, {out_desc, out.data()}, c.options, schedule);
  return out;
}

TEST(ScanSplit, RandomCallsEqualTheReferenceBitForBit) {
  std::mt19937_64 rng(0x5b117);
  const char* schedules[] = {"scan.split", "scan.split(gpu_share=0, threads=2)", "scan.split(gpu_share=1000)",
                             "scan.split(gpu_share=1, threads=1)", "scan.split(gpu_share=500, threads=3)",
                             "scan.split(gpu_share=999, devices=1, threads=2)"};
  for (int n = 0; n < 60; ++n) {
    const ScanCase c = random_scan(rng);
    SCOPED_TRACE(c.describe());
    const std::vector<unsigned char> input =
        scan_values(c.type, qmmt::element_reach(c.sizes, c.in_strides), c.product, rng);
    const std::vector<unsigned char> want = run_scan(c, input, Schedule("reference"));
    for (const char* text : schedules) {
      SCOPED_TRACE(text);
      EXPECT_TRUE(run_scan(c, input, Schedule::parse(text)) == want);
    }
  }
}

// Lines only along one dimension, or none: every share of one line, of a prime number of lines,
// and of lines across the contiguous axis.
TEST(ScanSplit, OneLinePrimeLinesAndColumns) {
  std::mt19937_64 rng(17);
  for (const auto& [sizes, axis] : std::vector<std::pair<std::vector<i64>, int>>{
           {{1000}, 0}, {{1, 999}, 1}, {{13, 41}, 1}, {{41, 13}, 0}, {{2, 3, 97}, 2}, {{97, 3, 2}, 0}}) {
    ScanCase c;
    c.sizes = sizes;
    c.in_strides = c.out_strides = qmmt::packed_strides(sizes);
    c.options.axis = axis;
    SCOPED_TRACE(c.describe());
    const std::vector<unsigned char> input = scan_values(c.type, qmmt::element_reach(c.sizes, c.in_strides), false, rng);
    const std::vector<unsigned char> want = run_scan(c, input, Schedule("reference"));
    for (const int share : {0, 1, 333, 500, 900, 1000}) {
      SCOPED_TRACE(share);
      EXPECT_TRUE(run_scan(c, input, Schedule("scan.split").set("gpu_share", share)) == want);
      c.in_place = true;
      EXPECT_TRUE(run_scan(c, input, Schedule("scan.split").set("gpu_share", share)) == want);
      c.in_place = false;
    }
  }
}

// Fewer lines than parts: each line is cut along its axis, every part after the first continuing
// from the folds of those before it. float32 values with full mantissas, so that the carries'
// rounding shows; every output within the spec's bound of the exact prefix. Integer sums and
// products that wrap, bit for bit; lines of 100003 fold their first parts in more teams than a
// host has cores.
TEST(ScanSplit, LinesCutAlongTheAxisCarryBetweenTheirParts) {
  std::mt19937_64 rng(0xca77);
  const int devices = hk::offload_device_count();
  for (const i64 length : {i64(1), i64(2), i64(97), i64(4099), i64(100003)})
    for (const bool decreasing : {false, true})
      for (const bool exclusive : {false, true}) {
        const hk::CumulativeOptions options{.axis = 0,
                                            .direction = decreasing ? hk::Direction::decreasing : hk::Direction::increasing,
                                            .exclusive = exclusive};
        SCOPED_TRACE("length " + std::to_string(length) + (decreasing ? " decreasing" : "") +
                     (exclusive ? " exclusive" : ""));
        // float32 sums, every other element in the output's padding.
        std::vector<float> x(static_cast<std::size_t>(length));
        for (float& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng) * float(1 + rng() % 1000);
        std::vector<long double> exact(x.size()), magnitude(x.size());
        long double acc = 0, mag = 0;
        for (i64 q = 0; q < length; ++q) {
          const std::size_t i = std::size_t(decreasing ? length - 1 - q : q);
          if (exclusive) exact[i] = acc, magnitude[i] = mag;
          acc += x[i];
          mag += std::fabs(x[i]);
          if (!exclusive) exact[i] = acc, magnitude[i] = mag;
        }
        const hk::TensorDesc in(DataType::float32, {length}), out(DataType::float32, {length}, {2});
        for (const int share : {1, 333, 500, 999, 1000}) {
          SCOPED_TRACE("gpu_share " + std::to_string(share));
          std::vector<float> y(std::size_t(2 * length), -7.0f);
          hk::cumulative_sum({in, x.data()}, {out, y.data()}, options,
                             Schedule("scan.split").set("gpu_share", share).set("devices", devices).set("threads", 2));
          int failures = 0;
          for (i64 i = 0; i < length; ++i) {
            const long double bound = hk::test::scan_bound<float>(exact[std::size_t(i)], magnitude[std::size_t(i)], length, false);
            if (std::fabs(y[std::size_t(2 * i)] - exact[std::size_t(i)]) > bound && ++failures <= 3)
              ADD_FAILURE() << "element " << i << ": " << y[std::size_t(2 * i)] << ", exact " << double(exact[std::size_t(i)]);
            if (y[std::size_t(2 * i + 1)] != -7.0f && ++failures <= 3) ADD_FAILURE() << "padding " << i << " written";
          }
        }
        // Wrapping integer sums and products, in place and out of it.
        for (const bool product : {false, true}) {
          ScanCase c;
          c.type = product ? DataType::int64 : DataType::uint32;
          c.product = product;
          c.sizes = {length};
          c.in_strides = c.out_strides = {1};
          c.options = options;
          std::vector<unsigned char> input(std::size_t(length) * hk::size_of(c.type));
          for (auto& b : input) b = static_cast<unsigned char>(rng());
          // Odd factors, so that no prefix product wraps to zero and every carry shows.
          if (product)
            for (std::size_t i = 0; i < input.size(); i += hk::size_of(c.type)) input[i] |= 1;
          const std::vector<unsigned char> want = run_scan(c, input, Schedule("reference"));
          for (const int share : {1, 500, 999}) {
            const Schedule split = Schedule("scan.split").set("gpu_share", share).set("threads", 2);
            EXPECT_TRUE(run_scan(c, input, split) == want) << (product ? "product" : "sum") << " share " << share;
            c.in_place = true;
            EXPECT_TRUE(run_scan(c, input, split) == want) << (product ? "product" : "sum") << " share " << share << " in place";
            c.in_place = false;
          }
        }
      }
}

TEST(ScanSplit, HostTypesRunOnlyWithoutADevicePart) {
  const hk::TensorDesc desc(DataType::float64, {5, 7});
  std::vector<double> x(35, 1.0), y(35, -1.0);
  try {
    hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 1}, Schedule::parse("scan.split(gpu_share=10)"));
    FAIL() << "float64 ran on an offload device";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_schedule);
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(y, std::vector<double>(35, -1.0));
  hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 1}, Schedule::parse("scan.split(gpu_share=0)"));
  for (int i = 0; i < 35; ++i) EXPECT_EQ(y[std::size_t(i)], double(i % 7 + 1));
}

// ---- matmul ---------------------------------------------------------------------------------------

// A problem of `batch` x M x N x K with random bytes, per-row scales and zero points (powers of
// two), B shared by every batch through stride 0 when `broadcast_b`, a padded output.
qmmt::Problem random_qmm(std::vector<i64> batch, i64 M, i64 N, i64 K, bool broadcast_b, std::mt19937_64& rng) {
  qmmt::Problem p;
  p.batch = batch;
  p.M = M, p.N = N, p.K = K;
  auto with = [&](std::initializer_list<i64> tail) {
    std::vector<i64> s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  const std::vector<i64> as = with({M, K}), bs = with({K, N}), ys = with({M, N});
  std::vector<i64> bst = qmmt::packed_strides(bs);
  if (broadcast_b)
    for (std::size_t d = 0; d < batch.size(); ++d) bst[d] = 0;
  p.a = qmmt::Buffer(DataType::uint8, as, qmmt::make_strides(as, qmmt::Layout::padded, rng), rng);
  p.b = qmmt::Buffer(DataType::int8, bs, bst, rng);
  p.y = qmmt::Buffer(DataType::uint8, ys, qmmt::make_strides(ys, qmmt::Layout::padded, rng), rng);
  std::vector<float> row_scales(static_cast<std::size_t>(M));
  for (auto& s : row_scales) s = std::ldexp(1.0f, -int(rng() % 3));
  std::vector<int> row_zeros(static_cast<std::size_t>(M));
  for (auto& z : row_zeros) z = 100 + int(rng() % 56);
  p.a_scale = qmmt::literal_f({M, 1}, row_scales, rng);
  p.a_zero = qmmt::literal_q(DataType::uint8, {M, 1}, row_zeros, rng);
  p.b_scale = qmmt::literal_f({1}, {1.0f}, rng);
  p.y_scale = qmmt::literal_f({M, 1}, std::vector<float>(std::size_t(M), std::ldexp(1.0f, 9)), rng);
  p.y_zero = qmmt::literal_q(DataType::uint8, {M, 1}, row_zeros, rng);
  return p;
}

std::vector<unsigned char> run_qmm(qmmt::Problem& p, const Schedule& schedule, const hk::PackedB* packed = nullptr) {
  const std::vector<unsigned char> junk = p.y.bytes;
  hk::QuantizedMatMulArgs args = p.args();
  if (packed) {
    args.b = {};
    args.packed_b = packed;
  }
  hk::quantized_linear_matmul(args, p.y.view(), schedule);
  std::vector<unsigned char> out = p.y.bytes;
  p.y.bytes = junk;
  return out;
}

TEST(QmmSplit, RowsSharedOutEqualASingleExecutorBitForBit) {
  std::mt19937_64 rng(0x9115);
  for (const i64 M : {i64(1), i64(2), i64(13), i64(67), i64(130)})
    for (const auto& batch : {std::vector<i64>{}, std::vector<i64>{3}, std::vector<i64>{2, 2}}) {
      qmmt::Problem p = random_qmm(batch, M, 1 + i64(rng() % 40), 1 + i64(rng() % 150), !batch.empty() && rng() % 2, rng);
      SCOPED_TRACE(p.describe());
      const std::vector<unsigned char> want = run_qmm(p, Schedule("reference"));
      EXPECT_TRUE(run_qmm(p, Schedule("qmm.parallel")) == want);
      for (const int share : {0, 1, 250, 500, 900, 999, 1000})
        for (const int threads : {1, 3}) {
          SCOPED_TRACE("gpu_share " + std::to_string(share) + " threads " + std::to_string(threads));
          EXPECT_TRUE(run_qmm(p, Schedule("qmm.split").set("gpu_share", share).set("threads", threads)) == want);
        }
      EXPECT_TRUE(run_qmm(p, Schedule("qmm.split")) == want);
      // B packed by hk::pack_b: the host part reads the panels, a device part the unpacked matrix.
      if (batch.empty()) {
        const hk::PackedB packed = hk::pack_b(p.b.cview());
        EXPECT_TRUE(run_qmm(p, Schedule::parse("qmm.split(gpu_share=500, threads=2)"), &packed) == want);
      }
    }
}

// ---- schedules, bad input, device tensors, availability ----------------------------------------

TEST(Split, SchedulesPrintEveryParameterAndParseBack) {
  const hk::TensorDesc desc(DataType::int32, {6, 10});
  std::vector<std::int32_t> x(60, 1), y(60);
  hk::detail::CumulativeCall call{false, {desc, x.data()}, {desc, y.data()}, {1}};
  hk::detail::validate(call);
  const auto plan = hk::detail::plan_scan(call, Schedule::parse("scan.split(threads=2, gpu_share=750)"));
  const auto& split = std::get<SplitPlan>(plan);
  EXPECT_EQ(split.gpu_share, 750);
  EXPECT_EQ(split.devices, hk::offload_device_count());
  EXPECT_EQ(split.threads, 2);
  const Schedule printed = hk::detail::to_schedule(plan);
  EXPECT_EQ(printed.to_string(),
            "scan.split(gpu_share=750, devices=" + std::to_string(hk::offload_device_count()) + ", threads=2)");
  EXPECT_EQ(Schedule::parse(printed.to_string()), printed);
  EXPECT_EQ(hk::detail::to_schedule(hk::detail::plan_scan(call, Schedule::parse(printed.to_string()))), printed);

  // The defaults: every device, the host's threads less one per device (at least one).
  const auto bare = std::get<SplitPlan>(hk::detail::plan_scan(call, Schedule("scan.split")));
  EXPECT_EQ(bare.gpu_share, 250);
  EXPECT_EQ(bare.threads, std::max(1, hk::default_threads() - hk::offload_device_count()));
  qmmt::Problem p;
  std::mt19937_64 rng(3);
  p = random_qmm({}, 4, 5, 6, false, rng);
  const hk::detail::QmmProblem problem = hk::detail::validate(p.args(), p.y.view());
  const auto qmm = std::get<SplitPlan>(hk::detail::plan_qmm(problem, Schedule("qmm.split")));
  EXPECT_EQ(qmm.gpu_share, 900);
  EXPECT_EQ(qmm.devices, hk::offload_device_count());
}

TEST(Split, BadParametersAreRefusedBeforeAnythingIsWritten) {
  const hk::TensorDesc desc(DataType::int32, {6, 10});
  std::vector<std::int32_t> x(60, 1), y(60, -7);
  std::mt19937_64 rng(5);
  qmmt::Problem p = random_qmm({}, 4, 5, 6, false, rng);
  const std::vector<unsigned char> junk = p.y.bytes;
  const std::pair<const char*, i64> bad[] = {
      {"gpu_share", 1001}, {"gpu_share", -1}, {"devices", 0}, {"devices", hk::offload_device_count() + 1}, {"threads", 0}};
  for (const auto& [key, value] : bad)
    for (const char* strategy : {"scan.split", "qmm.split"}) {
      const Schedule s = Schedule(strategy).set(key, value);
      SCOPED_TRACE(s.to_string());
      try {
        if (strategy[0] == 's')
          hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 1}, s);
        else
          hk::quantized_linear_matmul(p.args(), p.y.view(), s);
        FAIL() << "ran";
      } catch (const hk::Error& e) {
        EXPECT_EQ(e.code(), Errc::invalid_schedule) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      }
    }
  EXPECT_EQ(y, std::vector<std::int32_t>(60, -7));
  EXPECT_TRUE(p.y.bytes == junk);
}

TEST(Split, DeviceTensorsAreRefused) {
  const hk::TensorDesc desc(DataType::int32, {4, 8});
  hk::DeviceBuffer a(128), b(128);
  try {
    hk::cumulative_sum(hk::DeviceConstTensor{desc, &a}, hk::DeviceTensor{desc, &b}, {.axis = 1},
                       Schedule("scan.split"));
    FAIL() << "scan.split ran on device tensors";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_schedule) << e.what();
    EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
  }
}

// Tuning candidates only with a GPU: the host fallback's one device is the host itself, whose
// cores the host part already has.
TEST(Split, AvailableOnlyWithAGpu) {
  EXPECT_EQ(hk::detail::scan_split().available().available, !hk::offload_on_host());
  EXPECT_EQ(hk::detail::qmm_split().available().available, !hk::offload_on_host());
  // The shares, and the device counts only where there are several.
  const hk::detail::SearchSpace space = hk::detail::split_space();
  ASSERT_TRUE(space);
  EXPECT_EQ(space->at(0).key, "gpu_share");
  EXPECT_EQ(space->size(), hk::offload_device_count() > 1 ? 2u : 1u);
  if (hk::offload_on_host()) EXPECT_EQ(hk::offload_device_count(), 1);
}

}  // namespace
