// The cost model for untuned calls: predictions from injected rates, the choice it makes for
// host and device tensors, the rates' round trip through the database, and calibration, which
// measures nothing on the host fallback.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "runtime/tuning/calibration.hpp"
#include "runtime/tuning/cost_model.hpp"
#include "runtime/tuning/machine_rates.hpp"
#include "runtime/tuning/model_choice.hpp"
#include "runtime/tuning/quantile.hpp"
#include "runtime/tuning/tuner_problem.hpp"
#include "tuning_test_util.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#include "runtime/platform/page_locked.hpp"
#include "schedules/strategies/device_speeds.hpp"
#endif

namespace {

using namespace hk;
using detail::CandidateWork;
using detail::DataHome;
using detail::Executor;

// Rates of the order of a 16-core host and one PCIe-attached GPU.
MachineRates example_rates() {
  MachineRates r;
  r.to_device_bytes_per_s = 20e9;
  r.to_host_bytes_per_s = 20e9;
  r.gpu_call_seconds = 30e-6;
  r.strategy_rates = {{"qmm.parallel", 1.4e12},     {"qmm.tiled", 0.1e12},       {"qmm.offload_mma", 40e12},
                      {"qmm.offload", 10e12},       {"scan.parallel", 40e9},     {"scan.tiled", 8e9},
                      {"scan.blocked", 30e9},       {"scan.offload_rows", 1e12}, {"scan.offload_columns", 1e12},
                      {"scan.offload_chained", 1e12}, {"scan.offload_warp_rows", 1e12}};
  r.strategy_fixed_seconds = {{"qmm.parallel", 5e-6}, {"qmm.offload_mma", 40e-6}, {"scan.parallel", 3e-6}};
  return r;
}

TEST(CostModel, PredictsFixedCostWorkAndTransfers) {
  const MachineRates r = example_rates();
  const auto host = detail::predict(r, {"qmm.parallel", Executor::host, 1.4e12, 1e9, 1e9});
  ASSERT_TRUE(host.has_value());
  EXPECT_DOUBLE_EQ(host->work_seconds, 1.0);
  EXPECT_DOUBLE_EQ(host->fixed_seconds, 5e-6);
  EXPECT_EQ(host->transfer_seconds, 0);  // host candidates move nothing
  const auto gpu = detail::predict(r, {"qmm.offload", Executor::gpu, 10e12, 20e9, 40e9});
  ASSERT_TRUE(gpu.has_value());
  EXPECT_DOUBLE_EQ(gpu->transfer_seconds, 3.0);
  EXPECT_DOUBLE_EQ(gpu->fixed_seconds, 30e-6);  // no fixed cost of its own: the generic GPU call's
  EXPECT_DOUBLE_EQ(gpu->seconds(), 4.0 + 30e-6);
  // Host tensors' copies cost their latency too, whatever their size; device tensors move nothing.
  MachineRates latency = r;
  latency.host_tensor_call_seconds = 70e-6;
  EXPECT_DOUBLE_EQ(detail::predict(latency, {"qmm.offload", Executor::gpu, 10e12, 20e9, 40e9})->transfer_seconds,
                   3.0 + 70e-6);
  EXPECT_DOUBLE_EQ(detail::predict(latency, {"qmm.offload", Executor::gpu, 10e12, 0, 0})->transfer_seconds, 0);
  // Unknown: a strategy without a rate, and a GPU candidate without the link's rates.
  EXPECT_FALSE(detail::predict(r, {"qmm.unknown", Executor::host, 1, 0, 0}).has_value());
  MachineRates no_link = r;
  no_link.to_host_bytes_per_s = 0;
  EXPECT_FALSE(detail::predict(no_link, {"qmm.offload", Executor::gpu, 1, 1, 1}).has_value());
}

// Host tensors in page-locked memory cross the link unstaged, at its own measured rates; until
// those are measured the staged rates stand in.
TEST(CostModel, PageLockedHostTensorsPayThePageLockedRates) {
  MachineRates r = example_rates();
  CandidateWork c{"qmm.offload", Executor::gpu, 10e12, 20e9, 40e9};
  c.host_page_locked = true;
  EXPECT_DOUBLE_EQ(detail::predict(r, c)->transfer_seconds, 3.0);
  r.page_locked_to_device_bytes_per_s = 40e9;
  r.page_locked_to_host_bytes_per_s = 80e9;
  EXPECT_DOUBLE_EQ(detail::predict(r, c)->transfer_seconds, 1.0);
  c.host_page_locked = false;
  EXPECT_DOUBLE_EQ(detail::predict(r, c)->transfer_seconds, 3.0);
}

// Copies in and back at once in chunks: the slower direction, plus one chunk of the other.
TEST(CostModel, ChunkedCopiesPayTheSlowerDirectionAndOneChunk) {
  const MachineRates r = example_rates();
  CandidateWork c{"scan.offload_rows", Executor::gpu, 2e9, 20e9, 40e9};
  c.copy_chunks = 4;
  EXPECT_DOUBLE_EQ(detail::predict(r, c)->transfer_seconds, 2.0 + 1.0 / 4);
  c.copy_chunks = 0;
  EXPECT_DOUBLE_EQ(detail::predict(r, c)->transfer_seconds, 3.0);
}

TEST(CostModel, RanksFastestFirstAndDropsWhatItCannotPrice) {
  const MachineRates r = example_rates();
  const std::vector<CandidateWork> c = {{"qmm.parallel", Executor::host, 1e12, 0, 0},
                                        {"qmm.unknown", Executor::host, 1, 0, 0},
                                        {"qmm.offload_mma", Executor::gpu, 1e12, 1e9, 1e9}};
  const auto ranked = detail::rank(r, c);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].index, 2u);
  EXPECT_EQ(ranked[1].index, 0u);
}

TEST(CostModel, SecondsText) {
  EXPECT_EQ(detail::seconds_text(850e-9), "850 ns");
  EXPECT_EQ(detail::seconds_text(12.34e-6), "12.3 us");
  EXPECT_EQ(detail::seconds_text(4.561e-3), "4.56 ms");
  EXPECT_EQ(detail::seconds_text(1.2), "1.2 s");
}

#ifdef HETKERN_OFFLOAD
TuneProblem matmul(std::int64_t m, std::int64_t n, std::int64_t k) {
  return {Operator::quantized_linear_matmul, {DataType::uint8, DataType::int8, DataType::uint8}, {m, n, k}, {}};
}

TuneProblem scan(std::vector<std::int64_t> shape, int axis) {
  return {Operator::cumulative_sum, {DataType::float32}, std::move(shape), {.axis = axis}};
}

std::string strategy(const detail::QmmStrategyPlan& p) { return detail::to_schedule(p).strategy(); }
std::string strategy(const detail::ScanStrategyPlan& p) { return detail::to_schedule(p).strategy(); }

TEST(ModelChoice, LargeHostMatmulGoesToTheGpuWithItsTransfersCounted) {
  const detail::TuneWorkload w(matmul(4096, 4096, 4096), false);
  const auto d = detail::model_qmm_plan(w.qmm_problem(), DataHome::host, example_rates());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(strategy(d->plan), "qmm.offload_mma");
  // 2^36 / 40e12 + 48 MiB / 20e9 + 40 us against the host's 2^36 / 1.4e12 + 5 us; the dp4a
  // kernel is no candidate, whatever its rate.
  EXPECT_EQ(d->reason,
            "cost model: qmm.offload_mma 4.27 ms (transfers 2.52 ms) predicted, runner-up qmm.parallel 49.1 ms");
}

// Weights packed by hk::pack_b are the host kernels' panels: a GPU call would unpack them on the
// host every time, so the model keeps such calls on the host however fast the GPU.
TEST(ModelChoice, PackedWeightsStayOnTheHost) {
  const detail::TuneWorkload w(matmul(4096, 4096, 4096), false);
  detail::QmmProblem p = w.qmm_problem();
  std::vector<std::int8_t> b(std::size_t(p.K * p.N), 3);
  const PackedB packed = pack_b({TensorDesc(DataType::int8, {p.K, p.N}), b.data()});
  p.packed_b = packed_panels(packed);
  ASSERT_NE(p.packed_b, nullptr);
  const auto d = detail::model_qmm_plan(p, DataHome::host, example_rates());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(strategy(d->plan), strategy(detail::default_qmm_plan(p)));
  EXPECT_NE(d->reason.find("the only candidate"), std::string::npos) << d->reason;
}

TEST(ModelChoice, TinyCallsStayOnTheHost) {
  const detail::TuneWorkload m(matmul(1, 64, 64), false);
  const auto q = detail::model_qmm_plan(m.qmm_problem(), DataHome::host, example_rates());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(strategy(q->plan), strategy(detail::default_qmm_plan(m.qmm_problem())));
  const detail::TuneWorkload s(scan({1, 1, 3, 4}, 3), false);
  const auto c = detail::model_scan_plan(s.scan_call(), DataHome::host, example_rates());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(strategy(c->plan), "scan.tiled");
  // Even a large host-tensor scan: the link moves its bytes slower than the host scans them.
  const detail::TuneWorkload big(scan({4096, 4096}, 1), false);
  EXPECT_EQ(strategy(detail::model_scan_plan(big.scan_call(), DataHome::host, example_rates())->plan),
            "scan.parallel");
}

// A large host-tensor scan stays on the host through the staged link (above), but goes to the GPU
// when its tensors are page-locked and the link copies those fast enough.
TEST(ModelChoice, PageLockedHostTensorsArePricedAtThePageLockedRates) {
  if (offload_on_host()) GTEST_SKIP() << "no GPU";
  constexpr std::int64_t n = 4096;
  const std::size_t bytes = std::size_t(n * n) * sizeof(float);
  const detail::PageLockedHost in(bytes), out(bytes);
  if (!in.data() || !out.data()) GTEST_SKIP() << "the CUDA driver gave no page-locked memory";
  const TensorDesc desc(DataType::float32, {n, n});
  const detail::CumulativeCall locked{false, {desc, in.data()}, {desc, out.data()}, {.axis = 1}};
  MachineRates r = example_rates();
  EXPECT_EQ(strategy(detail::model_scan_plan(locked, DataHome::host, r)->plan), "scan.parallel");
  r.page_locked_to_device_bytes_per_s = 400e9;
  r.page_locked_to_host_bytes_per_s = 400e9;
  EXPECT_EQ(strategy(detail::model_scan_plan(locked, DataHome::host, r)->plan), "scan.offload_warp_rows");
  const detail::TuneWorkload pageable(scan({n, n}, 1), false);
  EXPECT_EQ(strategy(detail::model_scan_plan(pageable.scan_call(), DataHome::host, r)->plan), "scan.parallel");
}

// With several GPUs, a large scan of page-locked host tensors goes over all of them when the
// spread's rate (its copies over every link at once included) beats one GPU and the host; pageable
// tensors never get it, and one long line is cut across the GPUs like a batch.
TEST(ModelChoice, PageLockedScansSpreadOverTheGpusAtTheirCalibratedRate) {
  if (offload_device_count() < 2) GTEST_SKIP() << "fewer than two GPUs";
  constexpr std::int64_t n = 4096;
  const std::size_t bytes = std::size_t(n * n) * sizeof(float);
  const detail::PageLockedHost in(bytes), out(bytes);
  if (!in.data() || !out.data()) GTEST_SKIP() << "the CUDA driver gave no page-locked memory";
  MachineRates r = example_rates();
  r.page_locked_to_device_bytes_per_s = 50e9;
  r.page_locked_to_host_bytes_per_s = 50e9;
  const std::string split = "scan.split(gpu_share=1000, devices=" + std::to_string(offload_device_count());
  for (const std::vector<std::int64_t>& sizes : {std::vector<std::int64_t>{n, n}, std::vector<std::int64_t>{n * n}}) {
    const TensorDesc desc(DataType::float32, sizes);
    const int axis = int(sizes.size()) - 1;
    const detail::CumulativeCall locked{false, {desc, in.data()}, {desc, out.data()}, {.axis = axis}};
    r.strategy_rates.erase("scan.split");
    EXPECT_NE(detail::to_schedule(detail::model_scan_plan(locked, DataHome::host, r)->plan).strategy(), "scan.split");
    r.strategy_rates["scan.split"] = 400e9;
    r.strategy_fixed_seconds["scan.split"] = 50e-6;
    const auto d = detail::model_scan_plan(locked, DataHome::host, r);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(detail::to_schedule(d->plan).to_string().rfind(split, 0), 0u) << detail::to_schedule(d->plan).to_string();
    const detail::TuneWorkload pageable(scan(sizes, axis), false);
    EXPECT_NE(strategy(detail::model_scan_plan(pageable.scan_call(), DataHome::host, r)->plan), "scan.split");
  }
}

TEST(ModelChoice, DeviceTensorsGetOnlyOffloadStrategies) {
  MachineRates r = example_rates();
  r.strategy_rates["qmm.offload"] = 80e12;  // a dp4a rate above the tensor cores' is not believed
  const detail::TuneWorkload m(matmul(1, 64, 64), false);
  const auto q = detail::model_qmm_plan(m.qmm_problem(), DataHome::device, r);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(strategy(q->plan), "qmm.offload_mma");
  EXPECT_NE(q->reason.find("the only candidate"), std::string::npos);
  EXPECT_EQ(q->reason.find("transfers"), std::string::npos);
  // Its fixed cost and 4096 multiply-adds: no host link crossed (which would add 0.2 us here).
  EXPECT_NE(q->reason.find("qmm.offload_mma 40 us predicted"), std::string::npos) << q->reason;
  // Scans keep the layout's family, the only candidate.
  const detail::TuneWorkload s(scan({4096, 64}, 0), false);
  const auto c = detail::model_scan_plan(s.scan_call(), DataHome::device, r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(strategy(c->plan), strategy(detail::default_scan_plan(s.scan_call(), DataHome::device)));
  EXPECT_NE(c->reason.find("the only candidate"), std::string::npos);
}

TEST(ModelChoice, UnpricedHeuristicLeavesTheChoiceToTheHeuristic) {
  MachineRates r = example_rates();
  r.strategy_rates.erase("qmm.parallel");
  const detail::TuneWorkload w(matmul(4096, 4096, 4096), false);
  EXPECT_FALSE(detail::model_qmm_plan(w.qmm_problem(), DataHome::host, r).has_value());
}

TEST(ModelChoice, ConservativeRuleTakesTheGpuOnlyForHugeHostMatmuls) {
  const detail::TuneWorkload huge(matmul(4096, 4096, 4096), false);
  const auto d = detail::conservative_qmm_plan(huge.qmm_problem(), DataHome::host);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(strategy(d->plan), "qmm.offload_mma");
  const detail::TuneWorkload thin(matmul(512, 8192, 8192), false);  // 2^35, but M < 1024
  EXPECT_FALSE(detail::conservative_qmm_plan(thin.qmm_problem(), DataHome::host).has_value());
  EXPECT_FALSE(detail::conservative_qmm_plan(huge.qmm_problem(), DataHome::device).has_value());
}
#endif

class Rates : public hk::test::FreshTuningDb {
 protected:
  Rates() : FreshTuningDb("dispatch") {}
};

TEST_F(Rates, RoundTripKeyedByFingerprint) {
  MachineRates r = example_rates();
  r.page_locked_to_device_bytes_per_s = 50e9;
  r.page_locked_to_host_bytes_per_s = 51e9;
  r.host_tensor_call_seconds = 42e-6;
  r.device_matmul_speeds = {1.0, 0.5, 1.25};
  r.device_scan_speeds = {1.0, 0.9};
  {
    TuningDb db(path_, true);
    db.put_rates("machine-a", r);
    MachineRates other;
    other.gpu_call_seconds = 1;
    db.put_rates("machine-b", other);
  }
  const TuningDb db(path_, false);
  const auto a = db.find_rates("machine-a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->to_device_bytes_per_s, r.to_device_bytes_per_s);
  EXPECT_EQ(a->to_host_bytes_per_s, r.to_host_bytes_per_s);
  EXPECT_EQ(a->page_locked_to_device_bytes_per_s, r.page_locked_to_device_bytes_per_s);
  EXPECT_EQ(a->page_locked_to_host_bytes_per_s, r.page_locked_to_host_bytes_per_s);
  EXPECT_EQ(a->gpu_call_seconds, r.gpu_call_seconds);
  EXPECT_EQ(a->host_tensor_call_seconds, r.host_tensor_call_seconds);
  EXPECT_EQ(a->strategy_rates, r.strategy_rates);
  EXPECT_EQ(a->strategy_fixed_seconds, r.strategy_fixed_seconds);
  EXPECT_EQ(a->device_matmul_speeds, r.device_matmul_speeds);
  EXPECT_EQ(a->device_scan_speeds, r.device_scan_speeds);
  EXPECT_EQ(db.find_rates("machine-b")->gpu_call_seconds, 1);
  EXPECT_TRUE(db.find_rates("machine-b")->device_matmul_speeds.empty());
  EXPECT_FALSE(db.find_rates("machine-c").has_value());
  TuningDb writable(path_, true);
  EXPECT_TRUE(writable.clear_rates("machine-a"));
  EXPECT_FALSE(writable.clear_rates("machine-a"));
  EXPECT_FALSE(writable.find_rates("machine-a").has_value());
  EXPECT_TRUE(writable.find_rates("machine-b").has_value());
}

TEST_F(Rates, PutReplacesEveryRateOfTheFingerprint) {
  TuningDb db(path_, true);
  db.put_rates("m", example_rates());
  MachineRates fewer;
  fewer.strategy_rates = {{"qmm.tiled", 5}};
  db.put_rates("m", fewer);
  const auto got = db.find_rates("m");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->strategy_rates, fewer.strategy_rates);
  EXPECT_TRUE(got->strategy_fixed_seconds.empty());
  EXPECT_EQ(got->to_device_bytes_per_s, 0);
}

// The thread that measures the rates holds the lock that reading them takes: its own calls (the
// calibration's spread schedules) get no rates at once instead of waiting for themselves; after
// it, the stored rates are read as before.
TEST_F(Rates, TheMeasuringThreadReadsNoRatesAndDoesNotWait) {
  TuningDb(path_, true).put_rates(machine_fingerprint(), example_rates());
  reset_dispatch();
  {
    const detail::MeasuringRates measuring;
    {
      const detail::MeasuringRates nested;
    }
    EXPECT_FALSE(detail::dispatch_machine_rates(path_, true).has_value());
  }
  const auto read = detail::dispatch_machine_rates(path_, false);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->strategy_rates, example_rates().strategy_rates);
  reset_dispatch();
}

// Rates that price some offload scan strategies but not all of this build's (stored before one was
// added) count as none: the default GPU strategy would go unpriced. Rates without any stand.
TEST_F(Rates, RatesMissingAnOffloadScanStrategyAreNotUsed) {
  MachineRates partial = example_rates();
  partial.strategy_rates.erase("scan.offload_warp_rows");
  TuningDb(path_, true).put_rates(machine_fingerprint(), partial);
  reset_dispatch();
  EXPECT_FALSE(detail::dispatch_machine_rates(path_, false).has_value());
  MachineRates host_only = example_rates();
  std::erase_if(host_only.strategy_rates, [](const auto& kv) { return kv.first.rfind("scan.offload", 0) == 0; });
  TuningDb(path_, true).put_rates(machine_fingerprint(), host_only);
  reset_dispatch();
  const auto read = detail::dispatch_machine_rates(path_, false);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->strategy_rates, host_only.strategy_rates);
  reset_dispatch();
}

#ifdef HETKERN_OFFLOAD
// Whatever chose a plan that spreads a call (here an explicit schedule), the dispatcher reads the
// machine's rates for it: the devices' speeds they hold are what the spread strategies share by,
// until hk::reset_dispatch forgets them.
TEST_F(Rates, SpreadPlansReadTheDevicesSpeeds) {
  using detail::SpreadWork;
  MachineRates r;
  r.gpu_call_seconds = 1e-5;
  r.device_matmul_speeds = {1.0, 0.5};
  r.device_scan_speeds = {1.0, 2.0};
  TuningDb(path_, true).put_rates(machine_fingerprint(), r);
  reset_dispatch();
  const std::vector<double> alike{1.0, 1.0};
  EXPECT_EQ(detail::device_speeds(SpreadWork::matmul, {0, 1}), alike);
  const TensorDesc d(DataType::float32, {8, 16});
  std::vector<float> x(128, 1.0f), y(128);
  cumulative_sum(ConstTensor{d, x.data()}, Tensor{d, y.data()}, {.axis = 1},
                 Schedule("scan.split").set("gpu_share", 500).set("devices", 1));
  EXPECT_FLOAT_EQ(y[127], 16.0f);
  EXPECT_EQ(detail::device_speeds(SpreadWork::matmul, {0, 1}), r.device_matmul_speeds);
  EXPECT_EQ(detail::device_speeds(SpreadWork::scan, {0, 1}), r.device_scan_speeds);
  reset_dispatch();
  EXPECT_EQ(detail::device_speeds(SpreadWork::matmul, {0, 1}), alike);
}
#endif

// A tiny call's fixed cost is its fastest run: here most runs are held up (as a busy machine
// holds them), which a median would report.
TEST(Calibration, TinyCallCostIsTheFastestRun) {
  int calls = 0;
  const double seconds = detail::fastest_after_warm_up(5, [&] {
    if (++calls % 3 != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  EXPECT_EQ(calls, 6);
  EXPECT_LT(seconds, 0.02);
}

#ifdef HETKERN_OFFLOAD
TEST_F(Rates, NoCalibrationAndNoGpuChoiceOnTheHostFallback) {
  if (!offload_on_host()) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(measure_machine_rates().has_value());
  EXPECT_FALSE(calibrate(path_, true).has_value());
  EXPECT_FALSE(TuningDb(path_, false).find_rates(machine_fingerprint()).has_value());
  // Rates that favour the GPU are stored, yet without a GPU a large untuned matmul stays on the
  // host and the log says the heuristic chose it.
  TuningDb(path_, true).put_rates(machine_fingerprint(), example_rates());
  reset_dispatch();
  const detail::TuneWorkload w(matmul(4096, 4096, 4096), false);
  ::testing::internal::CaptureStderr();
  const auto plan = detail::dispatch_qmm(w.qmm_problem());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(strategy(plan), "qmm.parallel");
  EXPECT_NE(log.find("-> qmm.parallel("), std::string::npos) << log;
  EXPECT_NE(log.find(" on host CPU (heuristic, no tuning record)"), std::string::npos) << log;
}

// Calibration over several GPUs makes spread calls of its own (qmm.devices, scan.split), which
// read the rates it is measuring: it ends, with a speed for every device, the default one's 1.
TEST_F(Rates, CalibrationOverSeveralGpusEndsWithEveryDevicesSpeed) {
  if (offload_device_count() < 2) GTEST_SKIP() << "fewer than two GPUs";
  const auto r = calibrate(path_, true);
  ASSERT_TRUE(r.has_value());
  const auto count = std::size_t(offload_device_count());
  ASSERT_EQ(r->device_matmul_speeds.size(), count);
  EXPECT_DOUBLE_EQ(r->device_matmul_speeds[std::size_t(offload_device())], 1.0);
  for (const double s : r->device_matmul_speeds) EXPECT_GT(s, 0);
  for (const double s : r->device_scan_speeds) EXPECT_GT(s, 0);
  EXPECT_TRUE(TuningDb(path_, false).find_rates(machine_fingerprint()).has_value());
  reset_dispatch();
}

// The measurement code itself, on tiny shapes so that the host fallback runs it in moments: every
// strategy of both operators gets a rate and a fixed cost, the link its bandwidths.
TEST(Calibration, MeasuresEveryStrategyOnTinyShapes) {
  detail::CalibrationSizes tiny;
  tiny.copy_bytes = 4096;
  tiny.scan_elements = 1 << 14;
  tiny.host_scan_elements = 1 << 14;
  tiny.single_thread_scan_elements = 1 << 12;
  tiny.gpu_qmm_side = 32;
  tiny.host_qmm_rows = 16;
  tiny.host_qmm_side = 32;
  tiny.single_thread_qmm_side = 16;
  tiny.repetitions = 1;
  const MachineRates r = detail::measure_rates(tiny);
  EXPECT_GT(r.to_device_bytes_per_s, 0);
  EXPECT_GT(r.to_host_bytes_per_s, 0);
  // Page-locked memory only where a CUDA driver gives it.
  EXPECT_EQ(r.page_locked_to_device_bytes_per_s > 0, detail::PageLockedHost(1).data() != nullptr);
  EXPECT_EQ(r.page_locked_to_host_bytes_per_s > 0, r.page_locked_to_device_bytes_per_s > 0);
  EXPECT_GT(r.gpu_call_seconds, 0);
  // A GPU call's copies of host tensors cost more than none; on the host fallback nothing is copied.
  if (!offload_on_host()) EXPECT_GT(r.host_tensor_call_seconds, 0);
  for (const char* s : {"scan.parallel", "scan.blocked", "scan.tiled", "scan.offload_rows", "scan.offload_warp_rows",
                        "scan.offload_columns", "scan.offload_chained", "qmm.parallel", "qmm.tiled", "qmm.offload_mma", "qmm.offload"}) {
    ASSERT_TRUE(r.strategy_rates.count(s)) << s;
    EXPECT_GT(r.strategy_rates.at(s), 0) << s;
    EXPECT_GT(r.strategy_fixed_seconds.at(s), 0) << s;
  }
  // Spreading a scan over the GPUs, from page-locked memory only: a rate only where both exist.
  const bool spread = offload_device_count() > 1 && detail::PageLockedHost(1).data() != nullptr;
  EXPECT_EQ(r.strategy_rates.count("scan.split"), spread ? 1u : 0u);
  if (spread) EXPECT_GT(r.strategy_rates.at("scan.split"), 0);
}
#endif

}  // namespace
