// Calibration: times the library's own copies and strategies on fixed shapes (docs/tuning.md).
// Each strategy is timed on a shape where the heuristic would choose it, once tiny (its fixed
// cost) and once large enough that its throughput dominates.
#include "runtime/tuning/calibration.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hetkern/error.hpp"
#include "hetkern/operators.hpp"
#include "runtime/platform/topology.hpp"
#include "runtime/tuning/quantile.hpp"
#ifdef HETKERN_OFFLOAD
#include <omp.h>

#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/page_locked.hpp"
#endif

namespace hk {
namespace detail {
namespace {

// A tiny call's fixed cost is the fastest of this many times the repetitions: on a loaded machine
// a median of a few can be all noise (docs/tuning.md).
constexpr int tiny_call_repetitions = 3;

// One strategy's rate, the work between its smaller and its larger call over the time between
// them, and its fixed cost, what the smaller call takes beyond its work at that rate (a tiny
// call, whose work counts as none: all of its time).
void record(MachineRates& rates, const std::string& strategy, double small_work, double small_seconds,
            double large_work, double large_seconds) {
  const double rate = (large_work - small_work) / std::max(large_seconds - small_seconds, large_seconds * 0.01);
  rates.strategy_rates[strategy] = rate;
  rates.strategy_fixed_seconds[strategy] = std::max(0.0, small_seconds - small_work / rate);
}

struct ScanShape {
  std::vector<std::int64_t> sizes;
  int axis = 0;
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (const auto s : sizes) n *= s;
    return n;
  }
};

// Times `strategy` on a tiny and a large float32 cumulative sum; `scan(shape)` returns the call.
// A strategy that refuses either shape is left out.
void measure_scan(MachineRates& rates, const std::string& strategy, const ScanShape& tiny, const ScanShape& large,
                  const std::function<std::function<void()>(const ScanShape&)>& scan, int repetitions) {
  try {
    const double small = fastest_after_warm_up(tiny_call_repetitions * repetitions, scan(tiny));
    const double big = median_after_warm_up(repetitions, scan(large));
    record(rates, strategy, 0, small, 2.0 * double(large.elements()) * sizeof(float), big);
  } catch (const Error& e) {
    if (e.code() != Errc::invalid_schedule) throw;
  }
}

// Host operands of one u8 x s8 -> u8 matmul, per-tensor quantization.
struct QmmOperands {
  std::int64_t M, N, K;
  std::vector<std::uint8_t> a, out;
  std::vector<std::int8_t> b;
  float a_scale = 0.0625f, b_scale = 0.0625f, out_scale = 64.0f;
  std::uint8_t a_zero = 128, out_zero = 128;

  explicit QmmOperands(std::int64_t side) : QmmOperands(side, side) {}
  QmmOperands(std::int64_t rows, std::int64_t side) : M(rows), N(side), K(side), a(std::size_t(rows * side), 1),
                                                      out(std::size_t(rows * side)), b(std::size_t(side * side), 1) {}

  template <class Operand> BasicQuantizedMatMulArgs<Operand> args(Operand a_operand, Operand b_operand) const {
    const TensorDesc scalar(DataType::float32, {1});
    BasicQuantizedMatMulArgs<Operand> x;
    x.a = a_operand;
    x.b = b_operand;
    x.a_scale = {scalar, &a_scale};
    x.b_scale = {scalar, &b_scale};
    x.output_scale = {scalar, &out_scale};
    x.a_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &a_zero};
    x.output_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &out_zero};
    return x;
  }
  TensorDesc a_desc() const { return TensorDesc(DataType::uint8, {M, K}); }
  TensorDesc b_desc() const { return TensorDesc(DataType::int8, {K, N}); }
  TensorDesc out_desc() const { return TensorDesc(DataType::uint8, {M, N}); }
};

// Times `strategy` on a 1 x 1 x 1 and a rows x side x side matmul.
void measure_qmm(MachineRates& rates, const std::string& strategy, std::int64_t rows, std::int64_t side,
                 int repetitions, const std::function<std::function<void()>(QmmOperands&)>& qmm) {
  try {
    QmmOperands tiny(1), large(rows, side);
    const double small = fastest_after_warm_up(tiny_call_repetitions * repetitions, qmm(tiny));
    const double big = median_after_warm_up(repetitions, qmm(large));
    record(rates, strategy, 0, small, double(rows) * double(side) * double(side), big);
  } catch (const Error& e) {
    if (e.code() != Errc::invalid_schedule) throw;
  }
}

void measure_host(MachineRates& rates, const CalibrationSizes& z) {
  const auto scan = [](const char* strategy) {
    return [strategy](const ScanShape& shape) -> std::function<void()> {
      const TensorDesc d(DataType::float32, shape.sizes);
      auto in = std::make_shared<std::vector<float>>(std::size_t(shape.elements()));
      auto out = std::make_shared<std::vector<float>>(in->size());
      const CumulativeOptions options{shape.axis};
      return [=] { cumulative_sum(ConstTensor{d, in->data()}, Tensor{d, out->data()}, options, Schedule(strategy)); };
    };
  };
  const std::int64_t S = z.host_scan_elements > 0
                            ? z.host_scan_elements
                            : std::max(z.scan_elements, 2 * host_total_data_cache_bytes(3, 0) / std::int64_t(sizeof(float)));
  measure_scan(rates, "scan.parallel", {{1, 1}, 1}, {{S / 1024, 1024}, 1}, scan("scan.parallel"), z.repetitions);
  measure_scan(rates, "scan.blocked", {{1, 1}, 1}, {{2, S / 2}, 1}, scan("scan.blocked"), z.repetitions);
  const std::int64_t s = z.single_thread_scan_elements;
  measure_scan(rates, "scan.tiled", {{1, 1}, 1}, {{std::max<std::int64_t>(s / 512, 1), 512}, 1}, scan("scan.tiled"),
               z.repetitions);
  const auto qmm = [](const char* strategy) {
    return [strategy](QmmOperands& o) -> std::function<void()> {
      const auto args = o.args(ConstTensor{o.a_desc(), o.a.data()}, ConstTensor{o.b_desc(), o.b.data()});
      return [&o, args, strategy] { quantized_linear_matmul(args, Tensor{o.out_desc(), o.out.data()}, Schedule(strategy)); };
    };
  };
  measure_qmm(rates, "qmm.parallel", z.host_qmm_rows, z.host_qmm_side, z.repetitions, qmm("qmm.parallel"));
  measure_qmm(rates, "qmm.tiled", z.single_thread_qmm_side, z.single_thread_qmm_side, z.repetitions, qmm("qmm.tiled"));
}

#ifdef HETKERN_OFFLOAD
void measure_link(MachineRates& rates, const CalibrationSizes& z) {
  const std::size_t bytes = std::size_t(z.copy_bytes);
  std::vector<std::byte> host(bytes);
  DeviceBuffer device(bytes);
  const int d = offload_device();
  rates.to_device_bytes_per_s =
      double(bytes) / median_after_warm_up(z.repetitions, [&] { copy_to_device(device.data(), 0, host.data(), bytes, d); });
  rates.to_host_bytes_per_s =
      double(bytes) / median_after_warm_up(z.repetitions, [&] { copy_to_host(host.data(), device.data(), 0, bytes, d); });
  // Page-locked host memory, which the link copies unstaged, where the driver gives some.
  const PageLockedHost locked(bytes);
  if (!locked.data()) return;
  rates.page_locked_to_device_bytes_per_s =
      double(bytes) / median_after_warm_up(z.repetitions, [&] { copy_to_device(device.data(), 0, locked.data(), bytes, d); });
  rates.page_locked_to_host_bytes_per_s =
      double(bytes) / median_after_warm_up(z.repetitions, [&] { copy_to_host(locked.data(), device.data(), 0, bytes, d); });
}

// A tiny scan.offload_rows call on host tensors against the same call on device tensors (its
// fixed cost, measured just before): what the copies cost whatever their size.
void measure_host_tensor_call(MachineRates& rates, const CalibrationSizes& z) {
  const auto on_device = rates.strategy_fixed_seconds.find("scan.offload_rows");
  if (on_device == rates.strategy_fixed_seconds.end()) return;
  const TensorDesc d(DataType::float32, {1, 1});
  float x = 1, y = 0;
  const double host = fastest_after_warm_up(tiny_call_repetitions * z.repetitions, [&] {
    cumulative_sum(ConstTensor{d, &x}, Tensor{d, &y}, {.axis = 1}, Schedule("scan.offload_rows"));
  });
  rates.host_tensor_call_seconds = std::max(0.0, host - on_device->second);
}

// The scans of page-locked host tensors that several GPUs are calibrated on: 16 lines of float32,
// bytes in all, zeros in; none where the driver gives no page-locked memory (ok() false).
struct LockedLines {
  static constexpr std::int64_t count = 16;
  explicit LockedLines(std::size_t bytes)
      : in(bytes), out(bytes), sizes{count, std::int64_t(bytes / sizeof(float)) / count} {
    if (ok()) std::memset(in.data(), 0, bytes);
  }
  bool ok() const { return in.data() && out.data(); }
  PageLockedHost in, out;
  std::vector<std::int64_t> sizes;
};

// scan.split with every line on every GPU, on page-locked host tensors: its rate holds the copies
// over all the host's links at once, which bound it (docs/gpu.md). Pageable tensors get no rate:
// their staging reads and writes each byte on the host before the link reads it, so the GPUs
// share the host's memory, and the host's own scan beat them on every machine measured
// (docs/tuning.md). The lines are cut one part per GPU, as a long line is.
void measure_spread_scan(MachineRates& rates, const LockedLines& lines, const CalibrationSizes& z) {
  if (!lines.ok()) return;
  const Schedule split = Schedule("scan.split").set("gpu_share", 1000);
  measure_scan(
      rates, "scan.split", {{1, 1}, 1}, {lines.sizes, 1},
      [&](const ScanShape& shape) -> std::function<void()> {
        const TensorDesc d(DataType::float32, shape.sizes);
        return [&, d, axis = shape.axis] {
          cumulative_sum(ConstTensor{d, lines.in.data()}, Tensor{d, lines.out.data()}, {.axis = axis}, split);
        };
      },
      z.repetitions);
}

// `strategy`'s call on device tensors (on offload_device()) with the operands' values.
std::function<std::function<void()>(QmmOperands&)> device_qmm(const char* strategy) {
  return [strategy](QmmOperands& o) -> std::function<void()> {
    auto a = std::make_shared<DeviceBuffer>(o.a.size());
    auto b = std::make_shared<DeviceBuffer>(o.b.size());
    auto out = std::make_shared<DeviceBuffer>(o.out.size());
    a->upload(o.a.data(), o.a.size());
    b->upload(o.b.data(), o.b.size());
    const auto args = o.args(DeviceConstTensor{o.a_desc(), a.get()}, DeviceConstTensor{o.b_desc(), b.get()});
    return [&o, a, b, out, args, strategy] {
      quantized_linear_matmul(args, DeviceTensor{o.out_desc(), out.get()}, Schedule(strategy));
    };
  };
}

// With several devices, each one's speed against the default device's (MachineRates::
// device_matmul_speeds, device_scan_speeds): the same calls on each, made the calling thread's
// default device in turn: qmm.offload_mma on device tensors at twice its calibration side, and
// scan.offload_rows on page-locked host tensors (a GPU's scan of host tensors runs at its link's pace).
void measure_device_speeds(MachineRates& rates, const LockedLines& lines, const CalibrationSizes& z) {
  const int count = offload_device_count(), home = offload_device();
  struct DefaultDevice {
    int device;
    ~DefaultDevice() { omp_set_default_device(device); }
  } restore{home};
  const bool scans = lines.ok();
  const TensorDesc d(DataType::float32, lines.sizes);
  std::vector<double> matmul_seconds, scan_seconds;
  for (int device = 0; device < count; ++device) {
    omp_set_default_device(device);
    QmmOperands o(2 * z.gpu_qmm_side);
    matmul_seconds.push_back(median_after_warm_up(z.repetitions, device_qmm("qmm.offload_mma")(o)));
    if (scans)
      scan_seconds.push_back(median_after_warm_up(z.repetitions, [&] {
        cumulative_sum(ConstTensor{d, lines.in.data()}, Tensor{d, lines.out.data()}, {.axis = 1},
                       Schedule("scan.offload_rows"));
      }));
  }
  const auto relative = [&](const std::vector<double>& seconds) {
    std::vector<double> speeds;
    for (const double t : seconds) speeds.push_back(seconds[std::size_t(home)] / t);
    return speeds;
  };
  rates.device_matmul_speeds = relative(matmul_seconds);
  if (scans) rates.device_scan_speeds = relative(scan_seconds);
}

void measure_device(MachineRates& rates, const CalibrationSizes& z) {
  const auto scan = [](const char* strategy) {
    return [strategy](const ScanShape& shape) -> std::function<void()> {
      const TensorDesc d(DataType::float32, shape.sizes);
      const std::size_t bytes = std::size_t(shape.elements()) * sizeof(float);
      auto in = std::make_shared<DeviceBuffer>(bytes);
      auto out = std::make_shared<DeviceBuffer>(bytes);
      in->upload(std::vector<std::byte>(bytes).data(), bytes);
      const CumulativeOptions options{shape.axis};
      return [=] {
        cumulative_sum(DeviceConstTensor{d, in.get()}, DeviceTensor{d, out.get()}, options, Schedule(strategy));
      };
    };
  };
  const std::int64_t S = z.scan_elements;
  for (const char* rows : {"scan.offload_rows", "scan.offload_warp_rows"})
    measure_scan(rates, rows, {{1, 1}, 1}, {{S / 1024, 1024}, 1}, scan(rows), z.repetitions);
  measure_scan(rates, "scan.offload_columns", {{1, 1}, 0}, {{1024, S / 1024}, 0}, scan("scan.offload_columns"),
               z.repetitions);
  measure_scan(rates, "scan.offload_chained", {{1}, 0}, {{S}, 0}, scan("scan.offload_chained"), z.repetitions);
  measure_qmm(rates, "qmm.offload_mma", z.gpu_qmm_side, z.gpu_qmm_side, z.repetitions, device_qmm("qmm.offload_mma"));
  measure_qmm(rates, "qmm.offload", z.gpu_qmm_side, z.gpu_qmm_side, z.repetitions, device_qmm("qmm.offload"));
  // Over every GPU, on two shapes of the size it is for: a tiny call runs on the home device alone
  // and would hide the copies to the others and the threads that drive them, and at 2048^3 those
  // copies still outweigh the product (docs/tuning.md).
  // qmm.offload_mma's rate is then taken between the same two shapes, so that the two compare at
  // the sizes where spreading can pay (a 2048^3 call is mostly launches and packing, which makes
  // the product look faster than it is at 16384^3); its fixed cost stays the tiny call's.
  if (offload_device_count() > 1) {
    QmmOperands medium(2 * z.gpu_qmm_side), large(4 * z.gpu_qmm_side);
    const auto work = [](const QmmOperands& o) { return double(o.M) * double(o.N) * double(o.K); };
    for (const char* strategy : {"qmm.devices", "qmm.offload_mma"}) {
      const double fixed = rates.strategy_fixed_seconds[strategy];
      const double m = median_after_warm_up(z.repetitions, device_qmm(strategy)(medium));
      const double l = median_after_warm_up(z.repetitions, device_qmm(strategy)(large));
      record(rates, strategy, work(medium), m, work(large), l);
      if (fixed > 0) rates.strategy_fixed_seconds[strategy] = fixed;
    }
  }
  measure_host_tensor_call(rates, z);
  if (offload_device_count() > 1) {
    const LockedLines lines(std::size_t(z.copy_bytes));
    measure_spread_scan(rates, lines, z);
    // Without the speeds the spread strategies share evenly; the other rates still stand.
    try {
      measure_device_speeds(rates, lines, z);
    } catch (const Error& e) {
      rates.device_matmul_speeds.clear();
      rates.device_scan_speeds.clear();
      std::fprintf(stderr, "hetkern: warning: the devices' speeds were not measured (%s); they share evenly\n", e.what());
    }
  }
  // The generic GPU call: the cheapest offload call measured, a launch and a synchronization.
  rates.gpu_call_seconds = 0;
  for (const auto& [name, seconds] : rates.strategy_fixed_seconds)
    if (name.find(".offload") != std::string::npos && (rates.gpu_call_seconds == 0 || seconds < rates.gpu_call_seconds))
      rates.gpu_call_seconds = seconds;
}
#endif

}  // namespace

MachineRates measure_rates([[maybe_unused]] const CalibrationSizes& sizes) {
  MachineRates rates;
#ifdef HETKERN_OFFLOAD
  warm_up_offload();
  measure_link(rates, sizes);
  measure_device(rates, sizes);
#endif
  measure_host(rates, sizes);
  return rates;
}

}  // namespace detail

std::optional<MachineRates> measure_machine_rates() {
#ifdef HETKERN_OFFLOAD
  if (!offload_on_host()) return detail::measure_rates({});
#endif
  return std::nullopt;
}

}  // namespace hk
