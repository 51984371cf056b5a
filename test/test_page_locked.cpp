// Page-locked host memory, which a GPU reads and writes directly (no staging): the driver's answer
// for pageable and page-locked ranges, and host-tensor calls on page-locked tensors, which then
// take that path, against the reference. Without a CUDA GPU only the pageable answers run.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/platform/page_locked.hpp"

namespace {

using hk::detail::host_range_page_locked;

TEST(PageLocked, PageableMemoryIsNot) {
  std::vector<float> pageable(std::size_t(1) << 20, 1.0f);
  EXPECT_FALSE(host_range_page_locked(pageable.data(), pageable.size() * sizeof(float)));
  EXPECT_FALSE(host_range_page_locked(pageable.data(), 1));
  EXPECT_FALSE(host_range_page_locked(pageable.data(), 0));
  EXPECT_FALSE(host_range_page_locked(nullptr, 16));
}

TEST(PageLocked, DriverAllocationsAreWholeAndInPart) {
  if (hk::offload_on_host()) GTEST_SKIP() << "no GPU";
  constexpr std::size_t bytes = std::size_t(8) << 20;
  const hk::detail::PageLockedHost locked(bytes);
  if (!locked.data()) GTEST_SKIP() << "the CUDA driver gave no page-locked memory";
  auto* const p = static_cast<char*>(locked.data());
  EXPECT_TRUE(host_range_page_locked(p, bytes));
  EXPECT_TRUE(host_range_page_locked(p + 4097, bytes / 2));
  EXPECT_TRUE(host_range_page_locked(p + bytes - 1, 1));
  // The question comes from a thread on which the offload runtime never ran.
  bool elsewhere = false;
  std::thread([&] { elsewhere = host_range_page_locked(p, bytes); }).join();
  EXPECT_TRUE(elsewhere);
  std::vector<char> pageable(bytes);
  EXPECT_FALSE(host_range_page_locked(pageable.data(), bytes));
}

// A float32 {rows, length} cumulative sum along the last axis on host tensors that lie in
// page-locked memory, in place and not, on the GPU against the reference on pageable copies.
TEST(PageLocked, HostTensorCallsOnPageLockedMemoryMatchTheReference) {
  if (hk::offload_on_host()) GTEST_SKIP() << "no GPU";
  constexpr std::int64_t rows = 37, length = 100003;  // 14.8 MB each way: copies large enough to stage
  constexpr std::size_t elements = std::size_t(rows * length), bytes = elements * sizeof(float);
  const hk::detail::PageLockedHost in(bytes), out(bytes);
  if (!in.data() || !out.data()) GTEST_SKIP() << "the CUDA driver gave no page-locked memory";
  std::vector<float> x(elements), want(elements);
  for (std::size_t i = 0; i < elements; ++i) x[i] = float(int(i * 2654435761u % 17) - 8) / 4.0f;
  const hk::TensorDesc desc(hk::DataType::float32, {rows, length});
  hk::cumulative_sum(hk::ConstTensor{desc, x.data()}, hk::Tensor{desc, want.data()}, {.axis = 1},
                     hk::Schedule("reference"));
  auto* const x_locked = static_cast<float*>(in.data());
  auto* const y_locked = static_cast<float*>(out.data());
  for (const char* schedule : {"scan.offload_rows", "scan.split(gpu_share=1000)"}) {
    SCOPED_TRACE(schedule);
    std::memcpy(x_locked, x.data(), bytes);
    std::memset(y_locked, 0xff, bytes);
    hk::cumulative_sum(hk::ConstTensor{desc, x_locked}, hk::Tensor{desc, y_locked}, {.axis = 1}, hk::Schedule::parse(schedule));
    EXPECT_EQ(std::memcmp(y_locked, want.data(), bytes), 0);
    hk::cumulative_sum(hk::ConstTensor{desc, x_locked}, hk::Tensor{desc, x_locked}, {.axis = 1}, hk::Schedule::parse(schedule));
    EXPECT_EQ(std::memcmp(x_locked, want.data(), bytes), 0);
  }
}

}  // namespace
