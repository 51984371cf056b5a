// Without the GPU plugin (HETKERN_GPU_PLUGIN naming a missing file): device calls throw
// hk::Error(Errc::unavailable) with the loader's reason, offload schedules are refused with it,
// host schedules run, and nothing crashes. A process opens the plugin at most once, so the checks
// run in a fresh process (the threadsafe death-test style re-executes the test binary).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
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
  if (hk::load_gpu_plugin().error.find("cannot open shared object file") == std::string::npos)
    fail("status after loading: " + hk::gpu_plugin_status().error);
  std::exit(0);
}

TEST(GpuPluginDeathTest, MissingPluginGivesReasonsNotCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(check_without_plugin(), testing::ExitedWithCode(0), "");
}

}  // namespace
