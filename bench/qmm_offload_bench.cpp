// hetkern-qmm-offload-bench: QuantizedLinearMatMul on the OpenMP target device with data resident
// there (offload builds only).
//
//   hetkern-qmm-offload-bench [M N K]... [--reps N] [--a-zero Z] [--jsonl]
//
// u8 A x s8 B -> u8, A centred by zero point Z (default 128; at 0 no kernel needs B's column
// sums) and the output by 128, per-tensor scales; one or more
// shapes (default 4096 4096 4096), all in one process (the device image is JIT-compiled once).
// For every product kernel and team shape it prints the median time of qmm_offload (packing,
// product and requantization; no transfers), the TOPS (2*M*N*K per call) and how many outputs
// differ from the host's exact result (must be 0), and the medians of its two steps apart
// (qmm_offload_pack, qmm_offload_product); then the library's own entry on the same device tensors
// (B column-major; the default schedule, then each tensor-core kernel), whose time adds what an
// application's call adds to those launches (validation, dispatch, the quantization parameters'
// copy, the workspace); then the same call through the host-tensor entry, whose time includes
// the allocations and transfers. One line per measurement, the table last; with
// --jsonl the measurements go to stderr and stdout gets one JSON record per row instead of the
// table, in the form bench/offload_report.py tables next to offload_torch.py's torch._int_mm.
#include <dlfcn.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "runtime/tuning/quantile.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "runtime/platform/nvptx_backend.hpp"
#include "schedules/qmm_offload.hpp"

namespace {

using hk::detail::OffloadQmmKernel;
using hk::detail::OffloadQmmLaunch;

struct DeviceCopy {
  void* data = nullptr;
  int device;
  DeviceCopy(const void* host, std::size_t bytes, int dev) : device(dev) {
    data = omp_target_alloc(bytes, dev);
    if (!data) {
      std::fprintf(stderr, "omp_target_alloc of %zu bytes failed\n", bytes);
      std::exit(1);
    }
    if (host) omp_target_memcpy(data, host, bytes, 0, 0, dev, omp_get_initial_device());
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() { omp_target_free(data, device); }
};

using hk::detail::median_seconds;

struct Row {
  std::string shape, what;
  double pack_ms, product_ms, ms, tops;
  std::int64_t mismatches;
};

struct Variant {
  const char* name;
  OffloadQmmKernel kernel;
  int teams, threads;
  bool b_column_major;
  int stages = 0;  // 0: the kernels' default; more than 2 where the GPU grants the team memory
};

constexpr Variant variants[] = {
    {"qmm.offload (dp4a), 256 threads", OffloadQmmKernel::dp4a, 0, 256, false},
    {"qmm.offload (dp4a), 256 threads, B column-major", OffloadQmmKernel::dp4a, 0, 256, true},
    {"qmm.offload_mma, mma.sync, 128 threads", OffloadQmmKernel::mma, 0, 128, false},
    {"qmm.offload_mma, mma.sync, 256 threads", OffloadQmmKernel::mma, 0, 256, false},
    {"qmm.offload_mma, mma.sync, 4 stages", OffloadQmmKernel::mma, 0, 128, false, 4},
    {"qmm.offload_mma, mma.sync, 4 stages, B column-major", OffloadQmmKernel::mma, 0, 128, true, 4},
    {"qmm.offload_mma, wgmma", OffloadQmmKernel::wgmma, 0, 0, false},
    {"qmm.offload_mma, wgmma, 3 stages", OffloadQmmKernel::wgmma, 0, 0, false, 3},
    {"qmm.offload_mma, wgmma, 4 stages", OffloadQmmKernel::wgmma, 0, 0, false, 4},
    {"qmm.offload_mma, wgmma, 4 stages, B column-major", OffloadQmmKernel::wgmma, 0, 0, true, 4},
};

// Every variant of one shape, appended to rows.
void run_shape(std::int64_t M, std::int64_t N, std::int64_t K, std::uint8_t a_zero, int reps, int device,
               std::FILE* progress, std::vector<Row>& rows) {
  const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  std::mt19937_64 rng(42);
  std::vector<std::uint8_t> a(std::size_t(M * K)), b(std::size_t(K * N)), b_cols(std::size_t(K * N)),
      y_host(std::size_t(M * N)), y_dev(std::size_t(M * N));
  for (auto& v : a) v = std::uint8_t(rng());
  for (auto& v : b) v = std::uint8_t(rng());
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t n = 0; n < N; ++n) b_cols[std::size_t(n * K + k)] = b[std::size_t(k * N + n)];
  // Products of K terms spread about sqrt(K) * 74 * 74 around 0: scale that to about +-40.
  const float a_scale = 0.5f, b_scale = 0.25f;
  const float out_scale = a_scale * b_scale * float(std::sqrt(double(K))) * 74.0f * 74.0f / 40.0f;
  const std::uint8_t out_zero = 128;
  const hk::TensorDesc a_desc(hk::DataType::uint8, {M, K}), b_desc(hk::DataType::int8, {K, N}),
      y_desc(hk::DataType::uint8, {M, N}), scalar(hk::DataType::float32, {1}), zdesc(hk::DataType::uint8, {1});
  hk::QuantizedMatMulArgs args;
  args.a = {a_desc, a.data()};
  args.b = {b_desc, b.data()};
  args.a_scale = {scalar, &a_scale};
  args.b_scale = {scalar, &b_scale};
  args.output_scale = {scalar, &out_scale};
  args.a_zero_point = hk::ConstTensor{zdesc, &a_zero};
  args.output_zero_point = hk::ConstTensor{zdesc, &out_zero};
  const double t_host0 = omp_get_wtime();
  hk::quantized_linear_matmul(args, {y_desc, y_host.data()});
  const double host_s = omp_get_wtime() - t_host0;

  DeviceCopy d_a(a.data(), a.size(), device), d_b(b.data(), b.size(), device);
  DeviceCopy d_b_cols(b_cols.data(), b_cols.size(), device);
  DeviceCopy d_y(nullptr, y_dev.size(), device);
  hk::detail::QmmProblem x;
  x.M = M, x.N = N, x.K = K;
  x.a = {hk::DataType::uint8, d_a.data, {0, 0}, K, 1};
  x.b = {hk::DataType::int8, d_b.data, {0, 0}, N, 1};
  x.out_type = hk::DataType::uint8;
  x.out = d_y.data;
  x.out_row_stride = N, x.out_col_stride = 1;
  x.q.a_scale = {a_scale}, x.q.b_scale = {b_scale}, x.q.out_scale = {out_scale};
  x.q.a_zero = {a_zero}, x.q.b_zero = {0}, x.q.out_zero = {out_zero};
  const std::vector<std::byte> params = hk::detail::qmm_parameter_block(x.q);
  DeviceCopy d_params(params.data(), params.size(), device);
  // The workspace of the variant that needs the most (dp4a and wgmma sum B's columns, the tensor
  // cores may split the depth).
  std::int64_t workspace_bytes = 0;
  for (const OffloadQmmKernel kernel : {OffloadQmmKernel::dp4a, OffloadQmmKernel::mma, OffloadQmmKernel::wgmma})
    workspace_bytes = std::max(workspace_bytes, hk::detail::qmm_offload_workspace_bytes(x, kernel, device));
  DeviceCopy workspace(nullptr, std::size_t(workspace_bytes), device);
  OffloadQmmLaunch launch;
  launch.device = device;
  launch.parameters = d_params.data;
  launch.workspace = workspace.data;

  const double ops = 2.0 * double(M) * double(N) * double(K);
  const std::vector<std::uint8_t> zeros(y_dev.size(), 0);
  for (const Variant& v : variants) {
    launch.kernel = v.kernel, launch.teams = v.teams, launch.team_threads = v.threads, launch.stages = v.stages;
    x.b = v.b_column_major ? hk::detail::MatrixView{hk::DataType::int8, d_b_cols.data, {0, 0}, 1, K}
                           : hk::detail::MatrixView{hk::DataType::int8, d_b.data, {0, 0}, N, 1};
    // No earlier result can pass for this one.
    omp_target_memcpy(d_y.data, zeros.data(), zeros.size(), 0, 0, device, omp_get_initial_device());
    hk::detail::qmm_offload(x, launch);  // warm-up (the first launch JIT-compiles the image)
    omp_target_memcpy(y_dev.data(), d_y.data, y_dev.size(), 0, 0, omp_get_initial_device(), device);
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < y_dev.size(); ++i) bad += y_dev[i] != y_host[i];
    const double s = median_seconds(reps, [&] { hk::detail::qmm_offload(x, launch); });
    const double pack_s = median_seconds(reps, [&] { hk::detail::qmm_offload_pack(x, launch); });
    const double product_s = median_seconds(reps, [&] { hk::detail::qmm_offload_product(x, launch); });
    rows.push_back({shape, v.name, pack_s * 1e3, product_s * 1e3, s * 1e3, ops / s / 1e12, bad});
    std::fprintf(progress, "%-16s %-48s pack %8.3f ms product %8.3f ms total %8.3f ms %8.1f TOPS  mismatches %lld\n",
                 shape.c_str(), v.name, pack_s * 1e3, product_s * 1e3, s * 1e3, ops / s / 1e12, (long long)bad);
    std::fflush(progress);
  }
  {
    hk::DeviceBuffer a_buffer = hk::DeviceBuffer::borrow(d_a.data, a.size()),
                     b_buffer = hk::DeviceBuffer::borrow(d_b_cols.data, b_cols.size()),
                     y_buffer = hk::DeviceBuffer::borrow(d_y.data, y_dev.size());
    const hk::TensorDesc b_columns(hk::DataType::int8, {K, N}, {1, K});
    hk::DeviceQuantizedMatMulArgs device_args;
    device_args.a = {a_desc, &a_buffer, 0};
    device_args.b = {b_columns, &b_buffer, 0};
    device_args.a_scale = args.a_scale, device_args.b_scale = args.b_scale, device_args.output_scale = args.output_scale;
    device_args.a_zero_point = args.a_zero_point, device_args.output_zero_point = args.output_zero_point;
    for (const char* kernel : {"default", "mma", "wgmma"}) {
      const std::string text = std::string("qmm.offload_mma(tensor_cores=") + kernel + ")";
      const hk::Schedule schedule = std::strcmp(kernel, "default") ? hk::Schedule::parse(text) : hk::Schedule{};
      const auto call = [&] { hk::quantized_linear_matmul(device_args, {y_desc, &y_buffer, 0}, schedule); };
      omp_target_memcpy(d_y.data, zeros.data(), zeros.size(), 0, 0, device, omp_get_initial_device());
      call();
      omp_target_memcpy(y_dev.data(), d_y.data, y_dev.size(), 0, 0, omp_get_initial_device(), device);
      std::int64_t bad = 0;
      for (std::size_t i = 0; i < y_dev.size(); ++i) bad += y_dev[i] != y_host[i];
      const double s = median_seconds(reps, call);
      const std::string what = std::string("library, device tensors, B column-major, ") + kernel;
      rows.push_back({shape, what, 0, 0, s * 1e3, ops / s / 1e12, bad});
      std::fprintf(progress, "%-16s %-48s total %8.3f ms %8.1f TOPS  mismatches %lld\n", shape.c_str(), what.c_str(),
                   s * 1e3, ops / s / 1e12, (long long)bad);
      std::fflush(progress);
    }
  }
  for (const char* text : {"qmm.offload", "qmm.offload_mma"}) {
    std::vector<std::uint8_t> y(y_host.size());
    const double s = median_seconds(std::max(3, reps / 4), [&] {
      hk::quantized_linear_matmul(args, {y_desc, y.data()}, hk::Schedule::parse(text));
    });
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < y.size(); ++i) bad += y[i] != y_host[i];
    rows.push_back({shape, std::string(text) + " from host tensors (with transfers)", 0, 0, s * 1e3, ops / s / 1e12, bad});
  }
  rows.push_back({shape, "host, library's default schedule (one call)", 0, 0, host_s * 1e3, ops / host_s / 1e12, 0});
}

// This program links the offload runtime, which opens the CUDA driver as the program starts, before
// the library can put its launch shim in the driver's place (docs/gpu.md): it runs again with the
// shim preloaded, so that its kernels get the team memory they get in the library's own calls.
void open_launch_shim(char** argv) {
  const char* setting = std::getenv("HETKERN_CUDA_SHIM");
  if ((setting && std::strcmp(setting, "off") == 0) || hk::detail::cuda_launch_shim_in_use()) return;
  if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    hk::load_gpu_plugin();  // the driver is not open yet: the plugin opens the shim first
    return;
  }
  Dl_info library;
  if (!dladdr(reinterpret_cast<void*>(&hk::load_gpu_plugin), &library) || !library.dli_fname) return;
  const std::string path = library.dli_fname, shim = path.substr(0, path.rfind('/') + 1) + "libhetkern_cuda.so";
  const char* preload = std::getenv("LD_PRELOAD");
  if (access(shim.c_str(), R_OK) != 0 || (preload && std::strstr(preload, shim.c_str()))) return;
  setenv("LD_PRELOAD", preload && *preload ? (shim + ":" + preload).c_str() : shim.c_str(), 1);
  execv("/proc/self/exe", argv);
}

int run(int argc, char** argv) {
  open_launch_shim(argv);
  // This program's own target regions run before any call opens the GPU plugin, which registers
  // the backend for the library's.
  hk::detail::register_nvptx_backend();
  int reps = 20, a_zero = 128;
  std::vector<std::int64_t> dims;
  bool usage = false, jsonl = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--a-zero") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      usage = usage || end == argv[i] || *end != '\0' || v < 0 || v > 255;
      a_zero = int(v);
    } else if (std::strcmp(argv[i], "--jsonl") == 0) {
      jsonl = true;
    } else {
      char* end = nullptr;
      const long long v = std::strtoll(argv[i], &end, 10);
      usage = usage || end == argv[i] || *end != '\0' || v <= 0;
      dims.push_back(v);
    }
  }
  if (dims.empty()) dims = {4096, 4096, 4096};
  if (usage || dims.size() % 3 != 0) {
    std::fprintf(stderr, "usage: hetkern-qmm-offload-bench [M N K]... [--reps N] [--a-zero 0..255] [--jsonl]\n");
    return 2;
  }
  const int device = omp_get_num_devices() > 0 ? omp_get_default_device() : omp_get_initial_device();
  int on_host = 1;
#pragma omp target device(device) map(from : on_host)
  on_host = omp_is_initial_device();
  std::FILE* const progress = jsonl ? stderr : stdout;
  std::fprintf(progress, "devices %d, running on %s\n", omp_get_num_devices(), on_host ? "the host (fallback)" : "the GPU");

  std::vector<Row> rows;
  for (std::size_t i = 0; i < dims.size(); i += 3)
    run_shape(dims[i], dims[i + 1], dims[i + 2], std::uint8_t(a_zero), reps, device, progress, rows);
  if (jsonl) {
    for (const Row& r : rows) {
      const std::string check = r.mismatches == 0 ? "exact" : std::to_string(r.mismatches) + " MISMATCHES";
      std::printf("{\"group\": \"qmm\", \"case\": \"qlinear-matmul %s\", \"impl\": \"%s\", \"role\": \"\", "
                  "\"ms\": %.6f, \"rate\": %.6g, \"unit\": \"TOPS\", \"check\": \"%s\"}\n",
                  r.shape.c_str(), r.what.c_str(), r.ms, r.tops, check.c_str());
    }
    return std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.mismatches != 0; }) ? 1 : 0;
  }

  std::printf("\nQuantizedLinearMatMul u8 x s8 -> u8 (pack and product: the steps of the total, timed apart)\n");
  std::printf("%-16s %-52s %9s %9s %9s %8s %10s\n", "M x N x K", "schedule", "pack ms", "prod ms", "total ms", "TOPS",
              "mismatches");
  for (const Row& r : rows)
    std::printf("%-16s %-52s %9.3f %9.3f %9.3f %8.1f %10lld\n", r.shape.c_str(), r.what.c_str(), r.pack_ms,
                r.product_ms, r.ms, r.tops, (long long)r.mismatches);
  for (const Row& r : rows)
    if (r.mismatches != 0) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hetkern-qmm-offload-bench: %s\n", e.what());
    return 1;
  }
}
