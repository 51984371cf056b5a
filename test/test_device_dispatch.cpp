// Device-tensor calls go through the same dispatcher as host-tensor calls: HETKERN_SCHEDULE, the
// tuning record (under a key of their own), the nearest record, the heuristic, with only offload
// strategies qualifying; the dispatch log names the device that runs the call and the rule
// (offload builds; on a machine without a GPU the device is the host fallback).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/tuning/dispatch.hpp"
#include "tuning_test_util.hpp"

namespace {

using namespace hk;
namespace fs = std::filesystem;

// A fresh database per test, dispatch logged.
class DeviceDispatch : public hk::test::FreshTuningDb {
 protected:
  DeviceDispatch() : FreshTuningDb("dispatch") {}

  void put(TuningRecord key, const std::string& schedule) {
    key.schedule = schedule;
    key.median_ns = 1000;
    key.repetitions = 5;
    TuningDb(path_, true).put(key);
    reset_dispatch();
  }
};

// An int32 cumulative sum along axis 1 of {rows, cols}, on device tensors, checked exactly
// against the reference run on host tensors; `log` receives the dispatch log of the device call.
struct DeviceScan {
  TensorDesc desc;
  std::vector<std::int32_t> x, want;
  DeviceBuffer in, out;
  // The call the dispatcher sees, apart from its addresses: only its layout is planned.
  std::byte in_mark[16], out_mark[16];

  DeviceScan(std::int64_t rows, std::int64_t cols)
      : desc(DataType::int32, {rows, cols}), x(std::size_t(rows * cols)), want(x.size()),
        in(x.size() * 4), out(x.size() * 4) {
    std::iota(x.begin(), x.end(), -1000);
    cumulative_sum(ConstTensor{desc, x.data()}, Tensor{desc, want.data()}, {.axis = 1}, Schedule("reference"));
    in.upload(x.data(), x.size() * 4);
  }
  detail::CumulativeCall call() const {
    return {false, {desc, in_mark}, {desc, const_cast<std::byte*>(out_mark)}, {.axis = 1}};
  }
  // The plan an unscheduled device call gets, as schedule text.
  std::string chosen() const {
    return detail::to_schedule(detail::dispatch_scan(call(), {}, detail::DataHome::device)).to_string();
  }
  std::string run_logged() {
    ::testing::internal::CaptureStderr();
    cumulative_sum(DeviceConstTensor{desc, &in}, DeviceTensor{desc, &out}, {.axis = 1});
    const std::string log = ::testing::internal::GetCapturedStderr();
    std::vector<std::int32_t> got(x.size());
    out.download(got.data(), got.size() * 4);
    EXPECT_EQ(got, want);
    return log;
  }
};

// The device the log names for an offload strategy here.
std::string offload_device_text() {
  return offload_on_host() ? "host CPU (offload fallback, no GPU)" : "GPU " + std::to_string(offload_device());
}

TEST_F(DeviceDispatch, ScanHonoursHetkernScheduleSkippingHostStrategies) {
  DeviceScan s(24, 300);
  const std::string heuristic = s.chosen();
  EXPECT_EQ(heuristic.rfind("scan.offload_", 0), 0u) << heuristic;

  setenv("HETKERN_SCHEDULE", "qmm.tiled(mc=32); scan.tiled(tile=4); scan.offload_columns(threads=64)", 1);
  reset_dispatch();
  const std::string env = s.chosen();
  EXPECT_EQ(env.rfind("scan.offload_columns(", 0), 0u) << env;
  EXPECT_NE(env.find("threads=64"), std::string::npos) << env;
  reset_dispatch();
  const std::string log = s.run_logged();
  EXPECT_NE(log.find("-> " + env + " on " + offload_device_text() + " (HETKERN_SCHEDULE"), std::string::npos) << log;
  EXPECT_NE(log.find("device_packed"), std::string::npos) << log;
  EXPECT_NE(log.find("skipped, a host strategy for device tensors: HETKERN_SCHEDULE scan.tiled(tile=4)"),
            std::string::npos)
      << log;

  // Only host strategies in HETKERN_SCHEDULE: each skipped, the heuristic's offload plan runs.
  setenv("HETKERN_SCHEDULE", "scan.tiled(tile=4)", 1);
  reset_dispatch();
  EXPECT_EQ(s.chosen(), heuristic);
  reset_dispatch();
  const std::string fallback = s.run_logged();
  EXPECT_NE(fallback.find("-> " + heuristic + " on " + offload_device_text() + " (heuristic"), std::string::npos)
      << fallback;
  EXPECT_NE(fallback.find("skipped"), std::string::npos) << fallback;

  // A host-tensor call of the same shape still takes the host strategy from the variable.
  std::vector<std::int32_t> y(s.x.size());
  ::testing::internal::CaptureStderr();
  cumulative_sum(ConstTensor{s.desc, s.x.data()}, Tensor{s.desc, y.data()}, {.axis = 1});
  const std::string host_log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(y, s.want);
  EXPECT_NE(host_log.find("-> scan.tiled(tile=4, stream=0) on host CPU (HETKERN_SCHEDULE)"), std::string::npos)
      << host_log;
}

TEST_F(DeviceDispatch, ScanTakesItsOwnRecordsAndNotTheHostTensors) {
  DeviceScan s(24, 300);
  const std::string heuristic = s.chosen();
  const TuningRecord device_key = detail::scan_key(s.call(), detail::DataHome::device);
  const TuningRecord host_key = detail::scan_key(s.call());
  EXPECT_EQ(host_key.stride_class, "packed");  // host keys as earlier versions wrote them
  EXPECT_EQ(device_key.stride_class, "device_packed");

  // A host-tensor record does not reach device tensors.
  put(host_key, "scan.offload_chained(teams=3, threads=64, items=2)");
  EXPECT_EQ(s.chosen(), heuristic);

  put(device_key, "scan.offload_chained(teams=3, threads=64, items=2)");
  EXPECT_EQ(s.chosen(), "scan.offload_chained(teams=3, threads=64, items=2)");
  reset_dispatch();
  const std::string log = s.run_logged();
  EXPECT_NE(log.find("-> scan.offload_chained(teams=3, threads=64, items=2) on " + offload_device_text() +
                     " (exact record"),
            std::string::npos)
      << log;

  // A nearby shape takes the nearest device record.
  DeviceScan near(20, 280);
  EXPECT_EQ(near.chosen(), "scan.offload_chained(teams=3, threads=64, items=2)");
  EXPECT_NE(near.run_logged().find("(nearest tuned shape 24,300"), std::string::npos);

  // A device record naming a host strategy is skipped, not an error.
  put(device_key, "scan.tiled(tile=4, stream=0)");
  EXPECT_EQ(s.chosen(), heuristic);
  reset_dispatch();
  const std::string skipped = s.run_logged();
  EXPECT_NE(skipped.find("skipped, a host strategy for device tensors: exact record scan.tiled(tile=4, stream=0)"),
            std::string::npos)
      << skipped;
}

TEST_F(DeviceDispatch, ExplicitSchedulesAreLoggedAndHostOnesRefused) {
  DeviceScan s(4, 8);
  ::testing::internal::CaptureStderr();
  cumulative_sum(DeviceConstTensor{s.desc, &s.in}, DeviceTensor{s.desc, &s.out}, {.axis = 1},
                 Schedule::parse("scan.offload_rows(threads=32)"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(" on " + offload_device_text() + " (explicit schedule)"), std::string::npos) << log;
  std::vector<std::int32_t> got(s.x.size());
  s.out.download(got.data(), got.size() * 4);
  EXPECT_EQ(got, s.want);
  try {
    cumulative_sum(DeviceConstTensor{s.desc, &s.in}, DeviceTensor{s.desc, &s.out}, {.axis = 1},
                   Schedule::parse("scan.parallel"));
    FAIL() << "a host schedule ran on device tensors";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_schedule);
  }
}

// A u8 x s8 -> u8 matmul with per-tensor parameters, on device tensors, checked against the
// reference run on host tensors.
struct DeviceMatmul {
  static constexpr std::int64_t M = 5, N = 7, K = 9;
  TensorDesc a_desc{DataType::uint8, {M, K}}, b_desc{DataType::int8, {K, N}}, y_desc{DataType::uint8, {M, N}};
  TensorDesc one_f{DataType::float32, {1}}, one_u8{DataType::uint8, {1}}, one_s8{DataType::int8, {1}};
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(M * K), want = std::vector<std::uint8_t>(M * N);
  std::vector<std::int8_t> b = std::vector<std::int8_t>(K * N);
  float sa = 0.05f, sb = 0.02f, sy = 0.01f;
  std::uint8_t za = 3, zy = 128;
  std::int8_t zb = -2;
  DeviceBuffer da{std::size_t(M * K)}, db{std::size_t(K * N)}, dy{std::size_t(M * N)};

  DeviceMatmul() {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint8_t(i * 37 % 251);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::int8_t(int(i * 53 % 255) - 127);
    quantized_linear_matmul(host_args(), Tensor{y_desc, want.data()}, Schedule("reference"));
    da.upload(a.data(), a.size());
    db.upload(b.data(), b.size());
  }
  QuantizedMatMulArgs host_args() const {
    return {.a = {a_desc, a.data()}, .a_scale = {one_f, &sa}, .a_zero_point = ConstTensor{one_u8, &za},
            .b = {b_desc, b.data()}, .b_scale = {one_f, &sb}, .b_zero_point = ConstTensor{one_s8, &zb},
            .output_scale = {one_f, &sy}, .output_zero_point = ConstTensor{one_u8, &zy}};
  }
  DeviceQuantizedMatMulArgs device_args() const {
    return {.a = {a_desc, &da}, .a_scale = {one_f, &sa}, .a_zero_point = ConstTensor{one_u8, &za},
            .b = {b_desc, &db}, .b_scale = {one_f, &sb}, .b_zero_point = ConstTensor{one_s8, &zb},
            .output_scale = {one_f, &sy}, .output_zero_point = ConstTensor{one_u8, &zy}};
  }
  std::string run_logged() {
    ::testing::internal::CaptureStderr();
    quantized_linear_matmul(device_args(), DeviceTensor{y_desc, &dy});
    const std::string log = ::testing::internal::GetCapturedStderr();
    std::vector<std::uint8_t> got(want.size());
    dy.download(got.data(), got.size());
    EXPECT_EQ(got, want);
    return log;
  }
};

TEST_F(DeviceDispatch, MatmulHonoursHetkernScheduleAndItsRecords) {
  DeviceMatmul m;
  EXPECT_NE(m.run_logged().find("-> qmm.offload_mma("), std::string::npos);

  setenv("HETKERN_SCHEDULE", "qmm.parallel(threads=2); qmm.offload(threads=64)", 1);
  reset_dispatch();
  const std::string env = m.run_logged();
  EXPECT_NE(env.find("-> qmm.offload("), std::string::npos) << env;
  EXPECT_NE(env.find("threads=64) on " + offload_device_text() + " (HETKERN_SCHEDULE"), std::string::npos) << env;
  EXPECT_NE(env.find("skipped, a host strategy for device tensors: HETKERN_SCHEDULE qmm.parallel(threads=2)"),
            std::string::npos)
      << env;

  unsetenv("HETKERN_SCHEDULE");
  const detail::QmmProblem problem = detail::validate(m.host_args(), Tensor{m.y_desc, m.want.data()});
  const TuningRecord key = detail::qmm_key(problem, detail::DataHome::device);
  EXPECT_EQ(key.stride_class, "device_packed");
  put(key, "qmm.offload(teams=1, threads=128)");
  const std::string record = m.run_logged();
  EXPECT_NE(record.find("-> qmm.offload(teams=1, threads=128) on " + offload_device_text() + " (exact record"),
            std::string::npos)
      << record;
}

}  // namespace
