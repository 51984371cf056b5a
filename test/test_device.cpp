// Device memory, transfers, the copy canary and the cumulative operators on device tensors
// (offload builds; on a machine without a GPU the device is the host fallback).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "hetkern/device.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_tiles.hpp"
#include "scan_test_util.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"

namespace {

using namespace hk;

std::vector<std::string> offload_schedules() {
  std::vector<std::string> out;
  for (const auto& s : hk::test::all_scan_schedules())
    if (s.strategy().rfind("scan.offload", 0) == 0) out.push_back(s.to_string());
  return out;
}

TEST(DeviceBuffer, RoundTripCountsEveryTransfer) {
  std::vector<std::uint8_t> host(1000), back(1000, 0);
  std::iota(host.begin(), host.end(), std::uint8_t(3));
  DeviceBuffer buf(1000);
  reset_transfer_counters();
  buf.upload(host.data(), 600);
  buf.upload(host.data() + 600, 400, 600);
  buf.download(back.data(), 1000);
  EXPECT_EQ(back, host);
  const TransferCounters c = transfer_counters();
  EXPECT_EQ(c.to_device_bytes, 1000);
  EXPECT_EQ(c.to_device_copies, 2);
  EXPECT_EQ(c.to_host_bytes, 1000);
  EXPECT_EQ(c.to_host_copies, 1);
  EXPECT_EQ(buf.device(), offload_device());
}

// Large copies go through the page-locked staging chunks on a GPU (4 to 8 MiB, two at a time):
// sizes below, at and past chunk edges, at odd offsets, from inside a parallel region (a team of
// one) and from several threads at once; each is still one counted copy.
TEST(DeviceBuffer, LargeRoundTripsAcrossStagingChunks) {
  constexpr std::size_t mib = std::size_t(1) << 20;
  const std::size_t sizes[] = {mib - 1, mib, 8 * mib, 8 * mib + 1, 16 * mib, 21 * mib + 13};
  std::vector<std::uint8_t> host(21 * mib + 64);
  std::mt19937 gen(11);
  for (auto& b : host) b = std::uint8_t(gen());
  DeviceBuffer buf(host.size() + 64);
  for (const std::size_t bytes : sizes) {
    for (const std::size_t offset : {std::size_t(0), std::size_t(5)}) {
      std::vector<std::uint8_t> back(bytes + 2, 0xa5);
      reset_transfer_counters();
      buf.upload(host.data() + 3, bytes, offset);
      buf.download(back.data() + 1, bytes, offset);
      ASSERT_EQ(std::memcmp(back.data() + 1, host.data() + 3, bytes), 0) << bytes << " at " << offset;
      EXPECT_EQ(back.front(), 0xa5);
      EXPECT_EQ(back.back(), 0xa5);
      const TransferCounters c = transfer_counters();
      EXPECT_EQ(c.to_device_bytes, std::int64_t(bytes));
      EXPECT_EQ(c.to_device_copies, 1);
      EXPECT_EQ(c.to_host_copies, 1);
    }
  }
#pragma omp parallel num_threads(2)
  {
    // One buffer per thread: the copies run at once, each from inside a parallel region.
    DeviceBuffer own(9 * mib);
    std::vector<std::uint8_t> mine(9 * mib);
    const std::size_t shift = std::size_t(omp_get_thread_num()) * 7;
    own.upload(host.data() + shift, mine.size());
    own.download(mine.data(), mine.size());
#pragma omp critical
    EXPECT_EQ(std::memcmp(mine.data(), host.data() + shift, mine.size()), 0);
  }
}

TEST(DeviceBuffer, RefusesRangesBeyondItsEnd) {
  DeviceBuffer buf(64);
  std::vector<char> host(128);
  reset_transfer_counters();
  try {
    buf.upload(host.data(), 65);
    FAIL() << "upload past the end accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_parameter);
  }
  EXPECT_THROW(buf.download(host.data(), 8, 60), Error);
  EXPECT_EQ(transfer_counters().to_device_copies + transfer_counters().to_host_copies, 0);
}

TEST(DeviceBuffer, MovesOwnership) {
  DeviceBuffer a(256);
  void* p = a.data();
  DeviceBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.bytes(), 256u);
}

// Memory hetkern did not allocate (a PyTorch CUDA tensor's, reached through DLPack): borrowed
// buffers run the operators as owned ones do and never free it, moved or assigned.
TEST(DeviceBuffer, BorrowsMemoryItDoesNotOwn) {
  const TensorDesc desc(DataType::int32, {40, 50});
  const std::size_t bytes = 2000 * 4;
  std::vector<std::int32_t> x(2000), want(2000), got(2000);
  std::iota(x.begin(), x.end(), -700);
  cumulative_sum(ConstTensor{desc, x.data()}, Tensor{desc, want.data()}, {.axis = 1}, Schedule("reference"));
  DeviceBuffer owner(2 * bytes);
  owner.upload(x.data(), bytes);
  {
    const DeviceBuffer in = DeviceBuffer::borrow(owner.data(), bytes);
    DeviceBuffer out(16);
    out = DeviceBuffer::borrow(static_cast<char*>(owner.data()) + bytes, bytes);
    DeviceBuffer moved(std::move(out));
    EXPECT_EQ(in.device(), offload_device());
    EXPECT_EQ(moved.bytes(), bytes);
    cumulative_sum(DeviceConstTensor{desc, &in}, DeviceTensor{desc, &moved}, {.axis = 1});
  }
  owner.download(got.data(), bytes, bytes);  // the owner's memory outlived the borrowers
  EXPECT_EQ(got, want);
}

// HETKERN_GPU_WAIT is read by the process's first offload_device() call, so each case runs in a
// fresh process (the threadsafe death-test style re-executes the test binary): exit code 0 when
// stderr carries the warning exactly when it should.
void expect_gpu_wait_warning(const char* value, bool warned) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("HETKERN_GPU_WAIT", value, 1);
        testing::internal::CaptureStderr();
        const int device = offload_device();
        const std::string err = testing::internal::GetCapturedStderr();
        const bool found = err.find("HETKERN_GPU_WAIT=" + std::string(value) + " ignored") != std::string::npos;
        std::exit(found == warned && device == offload_device() ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST(DeviceWaitDeathTest, GpuWaitTakesSpinOrBlockAndWarnsOfOtherValues) {
  expect_gpu_wait_warning("spin", false);
  expect_gpu_wait_warning("block", false);
  expect_gpu_wait_warning("sleep", true);
}

TEST(OffloadDevice, ReportsTheTeamMemoryAKernelMayHave) {
  const int bytes = gpu_team_memory_bytes();
  if (offload_on_host()) {
    EXPECT_EQ(bytes, 0);
  } else {
    EXPECT_GE(bytes, 48 * 1024);
    EXPECT_EQ(bytes > 48 * 1024, detail::cuda_launch_shim_in_use());
  }
}

TEST(DeviceCopy, CopiesEveryByteAlignedOrNot) {
  std::mt19937_64 rng(7);
  for (std::size_t bytes : {std::size_t(1), std::size_t(16), std::size_t(4099), std::size_t(65536)}) {
    std::vector<std::uint8_t> host(bytes + 1), back(bytes, 0);
    for (auto& v : host) v = std::uint8_t(rng());
    DeviceBuffer src(bytes + 1), dst(bytes);
    src.upload(host.data(), bytes + 1);
    // From offset 0 (16-byte path when the size allows) and from offset 1 (byte path).
    for (std::size_t off : {std::size_t(0), std::size_t(1)}) {
      device_copy(static_cast<char*>(src.data()) + off, dst.data(), bytes, 5, 64);
      dst.download(back.data(), bytes);
      EXPECT_EQ(0, std::memcmp(back.data(), host.data() + off, bytes)) << bytes << " bytes from " << off;
    }
  }
  DeviceBuffer a(16), b(16);
  EXPECT_THROW(device_copy(a.data(), b.data(), 16, 0, 64), Error);
}

// Device tensors against the reference run on host copies: integers and float16 (small integers)
// exactly, float32 within the spec's bound for a float64 accumulation in any order.
TEST(DeviceTensors, EveryOffloadScheduleMatchesTheReference) {
  struct Shape {
    std::vector<std::int64_t> sizes;
    int axis;
  };
  // {97, 64} and {70, 3, 40} along axis 0: 16-byte vectors of lines, whole and partial blocks;
  // {3, 64} and {1, 96}: lines shorter than a run of rows; {300, 72}: several tiles of 16-row
  // runs (float16) over a partial block. {7, 1029} and {3, 8195} along axis 1: lines that start
  // off 16-byte boundaries, each scanned as its head and then 16-byte aligned tiles.
  const Shape shapes[] = {{{5000}, 0},   {{37, 129}, 1}, {{129, 37}, 0}, {{3, 1, 7, 11}, 2}, {{1}, 0},
                          {{97, 64}, 0}, {{70, 3, 40}, 0}, {{3, 64}, 0}, {{1, 96}, 0},       {{300, 72}, 0},
                          {{7, 1029}, 1}, {{3, 8195}, 1}};
  std::mt19937_64 rng(11);
  for (const auto& shape : shapes)
    for (DataType type : {DataType::int32, DataType::uint64, DataType::float32, DataType::float16})
      for (const std::string& text : offload_schedules())
        for (bool exclusive : {false, true}) {
          const TensorDesc desc(type, shape.sizes);
          const std::size_t n = std::size_t(desc.element_count()), bytes = n * size_of(type);
          std::vector<std::uint8_t> x(bytes), want(bytes), got(bytes);
          for (std::size_t i = 0; i < n; ++i) {
            if (type == DataType::float32) {
              const float v = float(int(rng() % 2001) - 1000) / 256.0f;
              std::memcpy(&x[i * 4], &v, 4);
            } else if (type == DataType::float16) {
              // Small integers: every partial sum is exact in the float32 accumulator, so the
              // result is bitwise that of the reference in any order of accumulation.
              const _Float16 v = _Float16(int(rng() % 17) - 8);
              std::memcpy(&x[i * 2], &v, 2);
            } else {
              for (std::size_t b = 0; b < size_of(type); ++b) x[i * size_of(type) + b] = std::uint8_t(rng());
            }
          }
          const CumulativeOptions options{.axis = shape.axis,
                                          .direction = exclusive ? Direction::decreasing : Direction::increasing,
                                          .exclusive = exclusive};
          cumulative_sum(ConstTensor{desc, x.data()}, Tensor{desc, want.data()}, options,
                         Schedule("reference"));
          DeviceBuffer dx(bytes), dy(bytes);
          dx.upload(x.data(), bytes);
          reset_transfer_counters();
          cumulative_sum(DeviceConstTensor{desc, &dx}, DeviceTensor{desc, &dy}, options,
                         Schedule::parse(text));
          const TransferCounters c = transfer_counters();
          EXPECT_EQ(c.to_device_copies + c.to_host_copies, 0) << text;
          dy.download(got.data(), bytes);
          SCOPED_TRACE(desc.to_string() + " " + text + (exclusive ? " exclusive decreasing" : ""));
          if (type != DataType::float32) {
            EXPECT_EQ(0, std::memcmp(got.data(), want.data(), bytes));
            continue;
          }
          for (std::size_t i = 0; i < n; ++i) {
            float g, w;
            std::memcpy(&g, &got[i * 4], 4);
            std::memcpy(&w, &want[i * 4], 4);
            // Every partial sum is a multiple of 2^-8 below 2^24 here: exact in float64, so the
            // rounding to float32 is the only error, in any order of accumulation.
            ASSERT_EQ(g, w) << "element " << i;
          }
        }
}

// Rows at byte offsets that put the input and the output at the same distance from a 16-byte
// boundary (each line scanned as its head, then aligned tiles) or at different distances (every
// tile element by element), in place too.
TEST(DeviceTensors, RowsAtAnyOffsetMatchTheReference) {
  const TensorDesc desc(DataType::float32, {4, 4099});
  const std::size_t n = std::size_t(desc.element_count()), bytes = n * 4;
  std::vector<float> x(n), want(n), got(n);
  std::mt19937_64 rng(5);
  for (float& v : x) v = float(int(rng() % 2001) - 1000) / 256.0f;
  cumulative_sum(ConstTensor{desc, x.data()}, Tensor{desc, want.data()}, {.axis = 1}, Schedule("reference"));
  const std::pair<std::size_t, std::size_t> offsets[] = {{4, 4}, {12, 28}, {4, 0}, {0, 8}, {8, 8}};
  for (const auto& [xo, yo] : offsets)
    for (bool in_place : {false, true}) {
      if (in_place && xo != yo) continue;
      DeviceBuffer dx(bytes + 32), dy(bytes + 32);
      dx.upload(x.data(), bytes, xo);
      const DeviceTensor out = in_place ? DeviceTensor{desc, &dx, xo} : DeviceTensor{desc, &dy, yo};
      cumulative_sum(DeviceConstTensor{desc, &dx, xo}, out, {.axis = 1}, Schedule::parse("scan.offload_rows"));
      out.buffer->download(got.data(), bytes, out.offset);
      SCOPED_TRACE("x at " + std::to_string(xo) + ", y at " + std::to_string(yo) + (in_place ? ", in place" : ""));
      // Every partial sum is a multiple of 2^-8 below 2^24: exact in float64, so the rounding to
      // float32 is the only error, in any order of accumulation.
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
}

TEST(DeviceTensors, DefaultScheduleAndInPlace) {
  const TensorDesc desc(DataType::int64, {300, 70});
  std::vector<std::int64_t> x(21000), want(21000), got(21000);
  std::iota(x.begin(), x.end(), -5000);
  for (int axis : {0, 1}) {
    cumulative_product(ConstTensor{desc, x.data()}, Tensor{desc, want.data()}, {.axis = axis},
                       Schedule("reference"));
    DeviceBuffer d(x.size() * 8);
    d.upload(x.data(), x.size() * 8);
    cumulative_product(DeviceConstTensor{desc, &d}, DeviceTensor{desc, &d}, {.axis = axis});
    d.download(got.data(), got.size() * 8);
    EXPECT_EQ(got, want) << "axis " << axis;
  }
}

// Without a schedule, lines that one chained tile (its threads x items elements) would cover get a
// warp each, as do lines enough for every team of the rows kernel; longer lines, fewer than that,
// are cut into chained tiles.
TEST(DeviceTensors, DefaultPlanCutsOnlyLinesLongerThanATile) {
  using Kind = detail::ScanPlan::Kind;
  std::byte memory[16];  // only the layout is planned: nothing is read or written
  for (DataType type : {DataType::float32, DataType::float16, DataType::int64}) {
    const auto plan = [&](std::vector<std::int64_t> sizes) {
      const TensorDesc desc(type, sizes);
      const detail::CumulativeCall call{false, {desc, memory}, {desc, memory}, {.axis = desc.rank() - 1}};
      return std::pair{detail::default_offload_scan_plan(call),
                       detail::offload_scan_defaults(call, Kind::chained)};
    };
    const auto [small, chained] = plan({1, 1, 3, 4});
    EXPECT_EQ(small.kind, Kind::warp_rows) << name_of(type);
    const std::int64_t width = std::int64_t(chained.team_threads) * chained.items;
    EXPECT_EQ(plan({3, width}).first.kind, Kind::warp_rows) << name_of(type);
    EXPECT_EQ(plan({3, width + 1}).first.kind, Kind::chained) << name_of(type);
    EXPECT_EQ(plan({1056, width + 1}).first.kind, Kind::warp_rows) << name_of(type);
  }
}

// Columns without teams: as many as the width, chunks and threads the schedule gives call for, so
// that a narrower width spreads over more teams instead of sending each team round several blocks.
TEST(OffloadSchedules, ColumnsTeamsFollowTheGivenWidthChunksAndThreads) {
  alignas(16) std::byte memory[16];  // only the layout is planned: nothing is read or written
  const TensorDesc desc(DataType::float32, {16384, 16384});
  const detail::CumulativeCall call{false, {desc, memory}, {desc, memory}, {.axis = 0}};
  const auto teams = [&](const char* text) {
    return std::get<detail::OffloadColumnsScanPlan>(detail::plan_scan(call, Schedule::parse(text))).teams;
  };
  // 16384 lines in vectors of 4: width / 4 vectors a team, at most 32 of them; float32's default
  // width is 64 lines.
  EXPECT_EQ(teams("scan.offload_columns"), 16384 / 64);
  EXPECT_EQ(teams("scan.offload_columns(width=32)"), 16384 / 32);
  EXPECT_EQ(teams("scan.offload_columns(width=256)"), 16384 / 128);
  EXPECT_EQ(teams("scan.offload_columns(width=32, teams=7)"), 7);
  // In chunks: a team per block and chunk, at most 528 (they draw the rest in turn).
  EXPECT_EQ(teams("scan.offload_columns(chunks=2, width=128)"), 16384 / 128 * 2);
  EXPECT_EQ(teams("scan.offload_columns(chunks=4, threads=128)"), 528);
  const TensorDesc odd(DataType::float32, {100, 30});  // lines not in vectors: width lines a team
  const detail::CumulativeCall single{false, {odd, memory}, {odd, memory}, {.axis = 0}};
  EXPECT_EQ(std::get<detail::OffloadColumnsScanPlan>(
                detail::plan_scan(single, Schedule::parse("scan.offload_columns(chunks=1, width=8)")))
                .teams,
            4);
}

// Without a schedule, columns of 2048 lines or more go in one pass: below 16384 lines in blocks
// narrow enough for 256 teams of two warps. Fewer lines go in blocks of 128 bytes, the axis in
// chunks of 4 tiles (2 warps x 4 lanes a vector x 16 rows) where it is long enough for two, the
// same chunks in 2 tiles of 4 warps for 2-byte types.
TEST(OffloadSchedules, ColumnsDefaultToOnePassFrom2048Lines) {
  alignas(16) std::byte memory[16];  // only the layout is planned: nothing is read or written
  const auto plan = [&](DataType type, std::int64_t rows, std::int64_t lines) {
    const TensorDesc desc(type, {rows, lines});
    const detail::CumulativeCall call{false, {desc, memory}, {desc, memory}, {.axis = 0}};
    return detail::offload_scan_defaults(call, detail::ScanPlan::Kind::columns);
  };
  for (DataType type : {DataType::float32, DataType::int32, DataType::float16}) {
    const std::int64_t v = 16 / size_of(type);
    for (const std::int64_t lines : {2048, 4096, 8192}) {
      const detail::ScanPlan p = plan(type, 4096, lines);
      EXPECT_EQ(p.chunks, 1) << name_of(type) << " " << lines;
      EXPECT_EQ(p.team_threads, 64) << name_of(type) << " " << lines;
      EXPECT_EQ(p.stages, 3) << name_of(type) << " " << lines;
      EXPECT_EQ(p.teams, std::min<std::int64_t>(256, lines / v)) << name_of(type) << " " << lines;
    }
    const detail::ScanPlan few = plan(type, 4096, 1024);
    EXPECT_EQ(few.width, 8 * v) << name_of(type);
    EXPECT_EQ(few.chunks, 4096 / (4 * 2 * 4 * 16)) << name_of(type);
    // 2-byte vectors: the same chunks in two tiles of four warps, a ring of 3.
    EXPECT_EQ(few.team_threads, v == 8 ? 128 : 64) << name_of(type);
    EXPECT_EQ(few.stages, v == 8 ? 3 : 4) << name_of(type);
    EXPECT_EQ(few.teams, 1024 / (8 * v) * few.chunks) << name_of(type);
    EXPECT_EQ(plan(type, 1000, 1024).chunks, 1) << name_of(type);
    EXPECT_EQ(plan(type, 4096, 16384).chunks, 1) << name_of(type);
  }
}

// One pass in teams of 256 threads, a team a block of 128 lines (float16 and int32, from 16384
// lines): teams of 128 threads where the blocks outnumber the GPU's multiprocessors by at most
// half; full teams on no more blocks than multiprocessors, on more than half as many again, and
// without a GPU.
TEST(OffloadSchedules, ColumnsHalveTheTeamsWhereAFewBlocksPassTheMultiprocessors) {
  alignas(16) std::byte memory[16];  // only the layout is planned: nothing is read or written
  const std::int64_t sms = detail::cuda_multiprocessors(offload_device());
  const std::int64_t one_pass_blocks = 16384 / 128;
  for (DataType type : {DataType::float16, DataType::int32}) {
    const auto expect_threads = [&](std::int64_t blocks, int threads) {
      if (blocks < one_pass_blocks) return;
      const TensorDesc desc(type, {4096, blocks * 128});
      const detail::CumulativeCall call{false, {desc, memory}, {desc, memory}, {.axis = 0}};
      const detail::ScanPlan p = detail::offload_scan_defaults(call, detail::ScanPlan::Kind::columns);
      EXPECT_EQ(p.teams, blocks) << name_of(type) << " " << blocks;
      EXPECT_EQ(p.team_threads, threads) << name_of(type) << " " << blocks << " blocks, " << sms << " SMs";
    };
    if (sms == 0) {
      for (const std::int64_t blocks : {128, 133, 198, 264}) expect_threads(blocks, 256);
      continue;
    }
    expect_threads(sms, 256);
    expect_threads(sms + 1, 128);
    expect_threads(sms * 3 / 2, 128);
    expect_threads(sms * 3 / 2 + 1, 256);
    expect_threads(sms * 2, 256);
  }
}

// Below 16384 lines (10240 for 2- and 4-byte types other than float32) the one-pass blocks are the
// widest power of two of 16-byte groups that leaves at least 256 teams, so that a warp's 32 lanes
// share a block's groups evenly; from there on float16 and int32 take teams of 256 threads on
// blocks of 128 lines.
TEST(OffloadSchedules, NarrowColumnBlocksAreAPowerOfTwoGroupsWide) {
  alignas(16) std::byte memory[16];  // only the layout is planned: nothing is read or written
  for (DataType type : {DataType::float16, DataType::int32, DataType::float32}) {
    const std::int64_t group_lines = 16 / std::int64_t(size_of(type));
    for (const std::int64_t lines : {2048, 6144, 8192, 9216, 10240, 12288, 14336}) {
      const TensorDesc desc(type, {4096, lines});
      const detail::CumulativeCall call{false, {desc, memory}, {desc, memory}, {.axis = 0}};
      const detail::ScanPlan p = detail::offload_scan_defaults(call, detail::ScanPlan::Kind::columns);
      if (type != DataType::float32 && lines >= 10240) {
        const std::int64_t blocks = lines / 128, sms = detail::cuda_multiprocessors(offload_device());
        const bool halved = sms > 0 && blocks > sms && 2 * blocks <= 3 * sms;
        EXPECT_EQ(p.team_threads, halved ? 128 : 256) << name_of(type) << " " << lines;
        EXPECT_EQ(p.width, 128) << name_of(type) << " " << lines;
        continue;
      }
      const std::int64_t groups = p.width / group_lines;
      EXPECT_EQ(p.width % group_lines, 0) << name_of(type) << " " << lines;
      EXPECT_EQ(32 % groups, 0) << name_of(type) << " " << lines << ": " << groups << " groups";
      EXPECT_LE(groups * 256 * group_lines, std::max(lines, 256 * group_lines)) << name_of(type) << " " << lines;
      EXPECT_GT(groups * 2 * 256 * group_lines, lines) << name_of(type) << " " << lines;
      EXPECT_EQ(p.teams, lines / p.width) << name_of(type) << " " << lines;
    }
  }
}

TEST(DeviceTensors, RefuseHostSchedules) {
  const TensorDesc desc(DataType::float32, {4, 4});
  DeviceBuffer a(64), b(64);
  try {
    cumulative_sum(DeviceConstTensor{desc, &a}, DeviceTensor{desc, &b}, {.axis = 1},
                   Schedule::parse("scan.tiled"));
    FAIL() << "a host schedule ran on device tensors";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_schedule);
  }
}

// float64 and bfloat16 are host types: device tensors of them, with or without a schedule, and
// offload schedules on host tensors of them are refused before anything runs.
TEST(DeviceTensors, RefuseHostOnlyTypes) {
  for (DataType type : {DataType::float64, DataType::bfloat16}) {
    const TensorDesc desc(type, {4, 4});
    DeviceBuffer a(128), b(128);
    for (const Schedule& s : {Schedule(), Schedule::parse("scan.offload_rows")}) {
      try {
        cumulative_product(DeviceConstTensor{desc, &a}, DeviceTensor{desc, &b}, {.axis = -1}, s);
        FAIL() << name_of(type) << " ran on device tensors";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::invalid_schedule) << e.what();
        EXPECT_NE(std::string(e.what()).find(name_of(type)), std::string::npos) << e.what();
      }
    }
    std::vector<std::byte> x(128), y(128, std::byte{7});
    for (const char* text : {"scan.offload_rows", "scan.offload_warp_rows", "scan.offload_columns",
                             "scan.offload_chained"}) {
      EXPECT_THROW(cumulative_sum({desc, x.data()}, {desc, y.data()}, {}, Schedule::parse(text)), Error) << text;
      EXPECT_EQ(y, std::vector<std::byte>(128, std::byte{7})) << text;
    }
  }
}

TEST(DeviceTensors, MustLieInsideTheirBuffers) {
  const TensorDesc desc(DataType::float32, {4, 4});
  DeviceBuffer small(60), big(64), out(64);
  const struct {
    DeviceConstTensor in;
    Errc code;
  } cases[] = {{{desc, nullptr}, Errc::invalid_parameter},
               {{desc, &small}, Errc::invalid_shape},
               {{desc, &big, 4}, Errc::invalid_shape}};
  for (const auto& c : cases) {
    try {
      cumulative_sum(c.in, DeviceTensor{desc, &out}, {.axis = 0});
      FAIL() << "accepted a tensor outside its buffer";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_EQ(e.subject(), "input");
    }
  }
  // A view at an offset inside a larger buffer works: the second row of a {2,4,4} tensor.
  std::vector<std::int32_t> x(32), got(16);
  std::iota(x.begin(), x.end(), 1);
  DeviceBuffer two(128), one(64);
  two.upload(x.data(), 128);
  cumulative_sum(DeviceConstTensor{TensorDesc(DataType::int32, {4, 4}), &two, 64},
                 DeviceTensor{TensorDesc(DataType::int32, {4, 4}), &one}, {.axis = 1});
  one.download(got.data(), 64);
  for (int r = 0; r < 4; ++r)
    for (int c = 0, acc = 0; c < 4; ++c) EXPECT_EQ(got[r * 4 + c], acc += x[16 + r * 4 + c]);
}

TEST(OffloadSchedules, RefuseRunsBeyondRegisters) {
  const TensorDesc desc(DataType::float32, {8, 8});
  std::vector<float> x(64), y(64);
  for (const char* text : {"scan.offload_rows(threads=1024, items=64)", "scan.offload_chained(threads=512, items=33)",
                           "scan.offload_columns(items=9, stages=1)", "scan.offload_columns(items=17)"}) {
    try {
      cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 1}, Schedule::parse(text));
      FAIL() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_schedule) << text;
    }
  }
}

// A warp a line needs whole warps, and at most the vectors a lane holds: anything else is refused
// before a byte is written, with the parameter named.
TEST(OffloadSchedules, WarpRowsRefuseTeamsOfPartWarpsAndTooManyVectors) {
  const TensorDesc desc(DataType::float32, {8, 8});
  std::vector<float> x(64, 1), y(64, 7);
  for (const auto& [text, named] : {std::pair{"scan.offload_warp_rows(threads=48)", "threads = 48"},
                                    std::pair{"scan.offload_warp_rows(vectors=5)", "vectors"}}) {
    try {
      cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 1}, Schedule::parse(text));
      FAIL() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_schedule) << text;
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
    EXPECT_EQ(y, std::vector<float>(64, 7)) << text;
  }
}

// Host tensors with an offload schedule: transfers counted on a GPU, none on the host fallback.
TEST(OffloadSchedules, HostTensorsCountTheirTransfers) {
  const TensorDesc desc(DataType::uint32, {1000});
  std::vector<std::uint32_t> x(1000, 3), y(1000);
  reset_transfer_counters();
  cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 0}, Schedule::parse("scan.offload_chained"));
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 3 * (i + 1));
  const TransferCounters c = transfer_counters();
  if (offload_on_host()) {
    EXPECT_EQ(c.to_device_bytes + c.to_host_bytes, 0);
  } else {
    EXPECT_EQ(c.to_device_bytes, 4000);
    EXPECT_EQ(c.to_host_bytes, 4000);
  }
}

// Chained calls in turn share their scratch, never set up again: each must read every tile word
// that the calls before it left as pending. Long and short lines, the staged and the register
// kernel, other teams and tiles, and columns in chunks among them, each result exact (wrapping
// int32 sums; on the host fallback a plain run of the same calls).
TEST(OffloadSchedules, ChainedCallsInTurnStayExact) {
  std::mt19937 rng(11);
  const struct {
    std::int64_t length, lines;  // {length} along axis 0 where lines is 1, else {length, lines}
    const char* schedule;
  } calls[] = {{300000, 1, "scan.offload_chained"},
               {70001, 1, "scan.offload_chained"},
               {4096, 1024, "scan.offload_columns"},
               {300000, 1, "scan.offload_chained(teams=5, threads=32, items=1)"},
               {20000, 64, "scan.offload_columns(chunks=37, threads=64)"},
               {50000, 1, "scan.offload_chained(teams=7, threads=64, items=8)"},
               {4099, 1000, "scan.offload_columns(chunks=5, teams=3, items=8, stages=1)"},
               {4096, 1024, "scan.offload_columns"},
               {300000, 1, "scan.offload_chained"}};
  for (const auto& c : calls) {
    const TensorDesc desc = c.lines == 1 ? TensorDesc(DataType::int32, {c.length})
                                         : TensorDesc(DataType::int32, {c.length, c.lines});
    std::vector<std::int32_t> x(std::size_t(c.length * c.lines)), y(x.size());
    for (auto& v : x) v = std::int32_t(rng());
    cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 0}, Schedule::parse(c.schedule));
    for (std::int64_t line = 0; line < c.lines; ++line) {
      std::uint32_t acc = 0;
      for (std::int64_t i = 0; i < c.length; ++i) {
        acc += std::uint32_t(x[i * c.lines + line]);
        ASSERT_EQ(std::uint32_t(y[i * c.lines + line]), acc)
            << c.schedule << ", length " << c.length << ", line " << line << ", element " << i;
      }
    }
  }
}

// The scan kernels' arguments reach their target regions as words (kernel_words.hpp): every field
// of a full-rank layout comes back as it went, and the words past the block are zero.
TEST(KernelWords, CarryEveryFieldOfAScanKernelsArguments) {
  using namespace hk::detail::offload;
  using Args = scan::KernelArgs<float>;
  Args a{};
  a.s.length = 1000003;
  a.s.in_step = -3;
  a.s.out_step = 5;
  a.s.in_origin = 77;
  a.s.out_origin = 1 << 20;
  a.s.rank = int(std::size(a.s.sizes));
  for (int d = 0; d < a.s.rank; ++d) {
    a.s.sizes[d] = d + 2;
    a.s.in_strides[d] = -(d + 1) * 1000;
    a.s.out_strides[d] = (std::int64_t(1) << 40) + d;
  }
  a.x = reinterpret_cast<const float*>(std::uintptr_t(0x7f0012345678));
  a.y = reinterpret_cast<float*>(std::uintptr_t(0x7f00abcdef00));
  a.exclusive = true;
  a.start = -0.0;
  a.vec = true;
  a.items = 28;
  a.width = 3584;
  a.tiles = 74899;
  a.folded = ~0ull - 1;
  a.team_bytes = 14336;
  a.lanes = 3;
  a.stages = 4;
  a.ahead = 2;
  a.buffers = 5;
  const KernelWords words = to_kernel_words(a);
  const Args b = std::apply([](auto... w) { return from_kernel_words<Args>(w...); }, words);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
  EXPECT_EQ(b.s.out_strides[a.s.rank - 1], (std::int64_t(1) << 40) + a.s.rank - 1);
  EXPECT_TRUE(std::signbit(b.start));
  EXPECT_EQ(b.x, a.x);
  EXPECT_EQ(b.buffers, 5);
  for (std::size_t i = (sizeof a + 7) / 8; i < words.size(); ++i) EXPECT_EQ(words[i], 0u) << "word " << i;
}

}  // namespace
