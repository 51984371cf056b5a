// The heuristic's default plans for a 16-thread team (the GPU machine's Xeon) on shapes where its
// earlier rules left threads idle or the kernel narrow (docs/performance.md, the cost model on the
// H100 machine). Each property is computed from the shape, the team and this host's caches, so
// the tests hold on any machine rather than pinning one machine's outputs.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <variant>
#include <vector>

#include "runtime/platform/topology.hpp"
#include "runtime/tuning/heuristic.hpp"
#include "runtime/tuning/tuner_problem.hpp"
#include "schedules/qmm_kernels.hpp"
#include "schedules/qmm_pack.hpp"
#include "schedules/strategies/scan_host_default.hpp"

namespace hk {
namespace {

constexpr int team = 16;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// hk::default_threads() is omp_get_max_threads() of the calling thread.
class SixteenThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(team);
  }
  void TearDown() override { omp_set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

struct QmmShape {
  std::int64_t M, N, K;
};

detail::ParallelQmmPlan qmm_plan(const QmmShape& s) {
  const detail::TuneWorkload w(
      {Operator::quantized_linear_matmul, {DataType::uint8, DataType::int8, DataType::uint8}, {s.M, s.N, s.K}, {}},
      false);
  const detail::QmmStrategyPlan plan = detail::default_qmm_plan(w.qmm_problem());
  EXPECT_TRUE(std::holds_alternative<detail::ParallelQmmPlan>(plan));
  return std::holds_alternative<detail::ParallelQmmPlan>(plan) ? std::get<detail::ParallelQmmPlan>(plan)
                                                                 : detail::ParallelQmmPlan{};
}

// Dot products per packed byte a block reads: (mc x nc) / (mc + nc).
double reuse(std::int64_t mc, std::int64_t nc) { return double(mc) * double(nc) / double(mc + nc); }

// Every thread gets as many blocks, and the team's split is no worse than cutting only the
// columns; taller blocks keep the kernel pass's B slice in half the L1, one row group keeps the
// depth slice of B in half the L2.
TEST_F(SixteenThreads, MatmulWithFewRowsGivesEveryThreadBlocksAtLeastTheKernelsWidth) {
  const std::int64_t l1 = detail::host_data_cache_bytes(1, 32 * 1024);
  const std::int64_t l2 = detail::host_data_cache_bytes(2, std::int64_t(1) << 20);
  for (const QmmShape s : {QmmShape{256, 256, 256}, {64, 1024, 1024}, {1, 4096, 4096}, {8, 4096, 4096}}) {
    SCOPED_TRACE(::testing::Message() << "M,N,K " << s.M << "," << s.N << "," << s.K);
    const detail::ParallelQmmPlan p = qmm_plan(s);
    const detail::QmmBlocks& b = p.blocks;
    EXPECT_EQ(p.threads, team);
    const std::int64_t blocks = ceil_div(s.M, b.mc) * ceil_div(s.N, b.nc);
    EXPECT_EQ(blocks % team, 0) << blocks << " blocks";
    EXPECT_GE(b.nc, std::min(s.N, detail::qmm_kernel_pass_cols));
    const std::int64_t columns_only_nc = detail::round_up(ceil_div(s.N, team), detail::qmm_panel_cols);
    EXPECT_GE(reuse(b.mc, b.nc), reuse(detail::round_up(s.M, detail::qmm_row_align), columns_only_nc));
    EXPECT_LE(b.kc, detail::round_up(s.K, detail::qmm_depth_align));
    if (b.mc > detail::qmm_row_align)
      EXPECT_LE(b.kc, std::max(l1 / 2 / detail::qmm_kernel_pass_cols, detail::qmm_depth_align));
    else
      EXPECT_LE(b.kc * b.nc, l2 / 2);
  }
}

// Few rows and columns, deep: the threads split each strip's depth rather than cut its columns
// narrower than the kernel's pass; too shallow to split (K < 2 x 4096), the columns are cut.
TEST_F(SixteenThreads, MatmulWithFewColumnsSplitsTheDepthNotTheKernelPass) {
  for (const QmmShape s : {QmmShape{16, 64, 65536}, {4, 128, 1 << 20}, {3, 40, 100000}}) {
    SCOPED_TRACE(::testing::Message() << "M,N,K " << s.M << "," << s.N << "," << s.K);
    const detail::QmmBlocks& b = qmm_plan(s).blocks;
    EXPECT_GE(b.mc, s.M);
    EXPECT_EQ(b.nc, std::min(detail::round_up(s.N, detail::qmm_panel_cols), detail::qmm_kernel_pass_cols));
  }
  const QmmShape shallow{16, 64, 4096};
  EXPECT_LT(qmm_plan(shallow).blocks.nc, detail::qmm_kernel_pass_cols);
}

// Many rows and columns of at least 256 a thread: one column block per thread, each walking
// several row blocks.
TEST_F(SixteenThreads, MatmulWithManyRowsAndWideSlicesGivesEachThreadAColumnBlock) {
  const QmmShape s{512, 8192, 128};
  const detail::ParallelQmmPlan p = qmm_plan(s);
  EXPECT_EQ(p.threads, team);
  EXPECT_EQ(ceil_div(s.N, p.blocks.nc), team);
  EXPECT_GT(ceil_div(s.M, p.blocks.mc), 1);
}

// Many rows, slices narrower than 256: squares of at most 256 a side, at least one per thread
// (2048^3: 64 of 256 x 256), or with fewer squares than threads one block per thread (512^3).
TEST_F(SixteenThreads, MatmulWithManyRowsAndNarrowSlicesCutsSquares) {
  for (const QmmShape s : {QmmShape{2048, 2048, 2048}, {1024, 1024, 1024}, {1100, 1300, 64}}) {
    SCOPED_TRACE(::testing::Message() << "M,N,K " << s.M << "," << s.N << "," << s.K);
    const detail::QmmBlocks& b = qmm_plan(s).blocks;
    EXPECT_LE(b.mc, 256);
    EXPECT_LE(b.nc, 256);
    EXPECT_GT(b.mc, 128);
    EXPECT_GT(b.nc, 128);
    EXPECT_GE(ceil_div(s.M, b.mc) * ceil_div(s.N, b.nc), team);
  }
  const QmmShape s{512, 512, 512};
  const detail::QmmBlocks& b = qmm_plan(s).blocks;
  EXPECT_EQ(ceil_div(s.M, b.mc) * ceil_div(s.N, b.nc), team);
  EXPECT_EQ(b.mc, b.nc);
}

// A call on descriptors alone: plans read no data, so the addresses (distinct, not in place)
// are never dereferenced and large shapes cost no memory.
detail::CumulativeCall scan_call(DataType type, std::vector<std::int64_t> shape, int axis) {
  static std::byte in, out;
  const TensorDesc desc(type, shape);
  return {false, {desc, &in}, {desc, &out}, {.axis = axis}};
}

std::int64_t element_bytes(const detail::CumulativeCall& c) { return std::int64_t(size_of(c.input.desc.dtype())); }

// Lines across the scanned axis, too few panels of a cache line of lines for the whole team: a
// thread per panel rather than one thread for all ({4096,64} axis 0), each panel at least 2^16
// elements; short lines stay in one panel on one thread ({1024,64} axis 0).
TEST_F(SixteenThreads, ScanOfFewSideBySidePanelsGivesAThreadPerPanel) {
  const detail::CumulativeCall c = scan_call(DataType::float32, {4096, 64}, 0);
  const detail::ScanStrategyPlan plan = detail::default_scan_plan(c);
  ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(plan));
  const auto& p = std::get<detail::ParallelScanPlan>(plan);
  EXPECT_GE(p.tile * element_bytes(c), 64);  // at least a cache line of lines per row
  EXPECT_GE(p.tile * 4096, std::int64_t(1) << 16);
  EXPECT_EQ(p.threads, ceil_div(64, p.tile));
  EXPECT_GT(p.threads, 1);
  EXPECT_LE(p.threads, team);
  EXPECT_TRUE(std::holds_alternative<detail::TiledScanPlan>(
      detail::default_scan_plan(scan_call(DataType::float32, {1024, 64}, 0))));
}

// One panel of side-by-side lines stays on one thread (scan.blocked would walk each line alone).
TEST_F(SixteenThreads, ScanOfOnePanelOfSideBySideLinesRunsOnOneThread) {
  EXPECT_TRUE(std::holds_alternative<detail::TiledScanPlan>(
      detail::default_scan_plan(scan_call(DataType::float32, {65536, 16}, 0))));
}

// Whole rows: at least four panels per thread, and panels of at most 1 MiB however long the
// lines ({16384,16384} axis 1: 64 KiB lines).
TEST_F(SixteenThreads, ScanOfRowsCutsThemIntoPanelsOfAtMostOneMebibyte) {
  struct Case {
    DataType type;
    std::vector<std::int64_t> shape;
  };
  for (const Case& k : {Case{DataType::float32, {16384, 16384}}, Case{DataType::float32, {4096, 4096}},
                        Case{DataType::float64, {1024, 1024}}, Case{DataType::int32, {64, 1024}}}) {
    SCOPED_TRACE(::testing::Message() << k.shape[0] << "x" << k.shape[1]);
    const detail::CumulativeCall c = scan_call(k.type, k.shape, 1);
    const detail::ScanStrategyPlan plan = detail::default_scan_plan(c);
    ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(plan));
    const auto& p = std::get<detail::ParallelScanPlan>(plan);
    EXPECT_EQ(p.threads, team);
    EXPECT_GE(ceil_div(k.shape[0], p.tile), 4 * team);
    EXPECT_TRUE(p.tile == 1 || p.tile * k.shape[1] * element_bytes(c) <= (std::int64_t(1) << 20)) << p.tile;
  }
}

// The host's plan for a given team (what the host part of scan.split runs with the cores its
// devices leave): fewer than four long lines a thread are cut into blocks for the whole team,
// enough rows go whole to each thread, and no plan takes more threads than it is given.
TEST(HostScanPlan, FewLongLinesAreCutIntoBlocksForTheTeamGiven) {
  for (const int threads : {3, 31}) {
    SCOPED_TRACE(threads);
    const detail::ScanStrategyPlan few =
        detail::default_host_scan_plan(scan_call(DataType::float32, {2 * std::int64_t(threads), 1 << 22}, 1), threads);
    ASSERT_TRUE(std::holds_alternative<detail::BlockedScanPlan>(few));
    EXPECT_EQ(std::get<detail::BlockedScanPlan>(few).threads, threads);
    const detail::ScanStrategyPlan many =
        detail::default_host_scan_plan(scan_call(DataType::float32, {4 * std::int64_t(threads), 1 << 16}, 1), threads);
    ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(many));
    EXPECT_EQ(std::get<detail::ParallelScanPlan>(many).threads, threads);
    const detail::ScanStrategyPlan panels =
        detail::default_host_scan_plan(scan_call(DataType::float32, {4096, 64}, 0), threads);
    ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(panels));
    EXPECT_LE(std::get<detail::ParallelScanPlan>(panels).threads, threads);
  }
  EXPECT_TRUE(std::holds_alternative<detail::TiledScanPlan>(
      detail::default_host_scan_plan(scan_call(DataType::float32, {64, 1 << 22}, 1), 1)));
}

// scan.parallel named without a tile takes the one the heuristic gives its thread count: every
// thread gets panels where the lines allow ({4096,16384} along axis 0 had 4 panels of
// scan.tiled's width for 16 threads), whole lines a few panels per thread along axis 1.
TEST(HostScanPlan, ParallelWithoutATileGivesEveryThreadPanels) {
  for (const int threads : {2, 16}) {
    for (const DataType type : {DataType::float32, DataType::float16, DataType::float64})
      for (const int axis : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads, axis " << axis << ", " << name_of(type));
        const detail::CumulativeCall c = scan_call(type, {4096, 16384}, axis);
        const auto named = detail::plan_scan(c, Schedule("scan.parallel").set("threads", threads));
        ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(named));
        const auto& p = std::get<detail::ParallelScanPlan>(named);
        EXPECT_EQ(p.tile, detail::scan_parallel_default_tile(c, threads));
        EXPECT_GE(ceil_div(axis == 0 ? 16384 : 4096, p.tile), threads);
        const auto chosen = detail::default_host_scan_plan(c, threads);
        ASSERT_TRUE(std::holds_alternative<detail::ParallelScanPlan>(chosen));
        EXPECT_EQ(std::get<detail::ParallelScanPlan>(chosen).tile, p.tile);
      }
  }
}

}  // namespace
}  // namespace hk
