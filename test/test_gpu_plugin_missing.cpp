// Without the GPU plugin (HETKERN_GPU_PLUGIN naming a missing file): device calls throw
// hk::Error(Errc::unavailable) with the loader's reason, offload schedules are refused with it,
// host schedules run, and so do the default schedules of large host calls, and nothing crashes.
// A plugin copied without the GPU kernels' builder beside it is refused where a GPU would compile
// them (LLVM's runtime would crash the process), and runs on the host elsewhere. A process opens
// the plugin at most once, so the checks run in a fresh process (the threadsafe death-test style
// re-executes the test binary).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "hetkern/hetkern.hpp"

namespace {

constexpr const char* missing_plugin = "/nonexistent/libhetkern_gpu.so";

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

// The loader's reason for a file that does not exist.
void expect_unavailable(const hk::Error& e) {
  const std::string text = e.what();
  if (e.code() != hk::Errc::unavailable || text.find(missing_plugin) == std::string::npos ||
      text.find("cannot open shared object file") == std::string::npos)
    fail("unexpected error: " + text);
}

// Calls large enough that the dispatcher asks whether their host tensors are page-locked (2^24
// scan elements, 2^30 multiply-adds) run with no schedule, and match a host schedule's result.
void check_default_dispatch_of_large_host_calls() {
  const std::int64_t n = std::int64_t(1) << 24;
  std::vector<std::int32_t> x(std::size_t(n), 0), y(x.size()), expected(x.size());
  for (std::int64_t i = 0; i < n; ++i) x[std::size_t(i)] = std::int32_t(i % 7) - 3;
  const hk::TensorDesc line(hk::DataType::int32, {n});
  hk::cumulative_sum({line, x.data()}, {line, y.data()}, {.axis = 0});
  hk::cumulative_sum({line, x.data()}, {line, expected.data()}, {.axis = 0}, hk::Schedule::parse("scan.tiled"));
  if (y != expected) fail("a large cumsum with the default schedule without the plugin");

  const std::int64_t m = 1024;
  std::vector<std::uint8_t> a(std::size_t(m * m)), out(a.size()), out_expected(a.size());
  std::vector<std::int8_t> b(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = std::uint8_t(i * 37 % 251);
    b[i] = std::int8_t(int(i * 11 % 255) - 127);
  }
  const float a_scale = 0.02f, b_scale = 0.03f, out_scale = 0.5f;
  const std::uint8_t a_zero = 100, out_zero = 128;
  const hk::TensorDesc scalar(hk::DataType::float32, {1}), u8_scalar(hk::DataType::uint8, {1});
  hk::QuantizedMatMulArgs q;
  q.a = {hk::TensorDesc(hk::DataType::uint8, {m, m}), a.data()};
  q.b = {hk::TensorDesc(hk::DataType::int8, {m, m}), b.data()};
  q.a_scale = {scalar, &a_scale};
  q.b_scale = {scalar, &b_scale};
  q.output_scale = {scalar, &out_scale};
  q.a_zero_point = hk::ConstTensor{u8_scalar, &a_zero};
  q.output_zero_point = hk::ConstTensor{u8_scalar, &out_zero};
  const hk::TensorDesc out_desc(hk::DataType::uint8, {m, m});
  hk::quantized_linear_matmul(q, {out_desc, out.data()});
  hk::quantized_linear_matmul(q, {out_desc, out_expected.data()}, hk::Schedule::parse("qmm.tiled"));
  if (out != out_expected) fail("a large matmul with the default schedule without the plugin");
}

[[noreturn]] void check_without_plugin() {
  setenv("HETKERN_GPU_PLUGIN", missing_plugin, 1);
  const hk::GpuPluginStatus before = hk::gpu_plugin_status();
  if (before.loaded || before.error.find("No such file or directory") == std::string::npos)
    fail("status before loading: " + before.error);
  // Nothing owns device memory yet: empty buffers move and die without the plugin.
  hk::DeviceBuffer empty;
  hk::DeviceBuffer moved(std::move(empty));
  moved = hk::DeviceBuffer();
  if (hk::release_cached_device_memory() != 0 || hk::transfer_counters().to_device_copies != 0)
    fail("device memory without a plugin");
  if (!hk::offload_on_host()) fail("offload_on_host() is false without the plugin");
  hk::warm_up_offload();
  try {
    hk::DeviceBuffer buffer(64);
    fail("a device buffer without the plugin");
  } catch (const hk::Error& e) {
    expect_unavailable(e);
  }
  const std::vector<int> x = {3, 1, 4, 1, 5};
  std::vector<int> y(x.size());
  const hk::TensorDesc desc(hk::DataType::int32, {5});
  try {
    hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 0}, hk::Schedule::parse("scan.offload_rows"));
    fail("an offload schedule ran without the plugin");
  } catch (const hk::Error& e) {
    expect_unavailable(e);
  }
  if (y != std::vector<int>(x.size(), 0)) fail("a refused call wrote its output");
  hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 0}, hk::Schedule::parse("scan.tiled"));
  if (y != std::vector<int>{3, 4, 8, 9, 14}) fail("scan.tiled without the plugin");
  check_default_dispatch_of_large_host_calls();
  if (hk::load_gpu_plugin().error.find("cannot open shared object file") == std::string::npos)
    fail("status after loading: " + hk::gpu_plugin_status().error);
  std::exit(0);
}

TEST(GpuPluginDeathTest, MissingPluginGivesReasonsNotCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(check_without_plugin(), testing::ExitedWithCode(0), "");
}

[[noreturn]] void check_plugin_alone(const std::string& copy) {
  setenv("HETKERN_GPU_PLUGIN", copy.c_str(), 1);
  const hk::GpuPluginStatus before = hk::gpu_plugin_status();
  if (before.path != copy) fail("the library looks for its plugin elsewhere");
  const std::vector<int> x = {3, 1, 4, 1, 5};
  std::vector<int> y(x.size());
  const hk::TensorDesc desc(hk::DataType::int32, {5});
  const bool gpu_driver = access("/dev/nvidiactl", F_OK) == 0;
  // The refusal is known before the plugin is opened (hetkern info tells it), where a GPU would compile.
  if (before.loaded || (before.error.find("/hetkern/ptxas is missing") == std::string::npos) == gpu_driver)
    fail("status before loading: '" + before.error + "'");
  try {
    hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 0}, hk::Schedule::parse("scan.offload_rows"));
    if (gpu_driver) fail("a plugin without its ptxas ran where the GPU would compile its kernels");
    if (y != std::vector<int>{3, 4, 8, 9, 14}) fail("the plugin alone on the host gave a wrong result");
  } catch (const hk::Error& e) {
    const std::string text = e.what();
    if (!gpu_driver || e.code() != hk::Errc::unavailable || text.find("/hetkern/ptxas is missing") == std::string::npos)
      fail("unexpected error: " + text);
    if (y != std::vector<int>(x.size(), 0)) fail("a refused call wrote its output");
  }
  std::exit(0);
}

TEST(GpuPluginDeathTest, PluginWithoutItsPtxasIsRefusedWhereAGpuWouldCompile) {
  namespace fs = std::filesystem;
  // The build's plugin, found without asking the library, whose plugin path is fixed at its first
  // question (the child process repeats this part before it names the copy).
  const fs::path plugin = fs::path(HETKERN_CLI_PATH).parent_path().parent_path() / "lib" / "libhetkern_gpu.so";
  if (!fs::exists(plugin)) GTEST_SKIP() << "no GPU plugin in this build";
  const fs::path dir = fs::path(::testing::TempDir()) / "hetkern-plugin-alone";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(plugin, dir / plugin.filename());
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(check_plugin_alone((dir / plugin.filename()).string()), testing::ExitedWithCode(0), "");
  fs::remove_all(dir);
}

}  // namespace
