// Strategy table and planning for QuantizedLinearMatMul.
#include "schedules/qmm_schedules.hpp"

#include <algorithm>
#include <vector>

#include "hetkern/info.hpp"
#include "runtime/platform/topology.hpp"
#include "schedules/qmm_pack.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/qmm_offload.hpp"
#endif

namespace hk::detail {
namespace {

const std::vector<StrategySpec>& table() {
  static const std::vector<StrategySpec> specs = {
      {"reference", "the specification executed one output at a time, 64-bit accumulation", {}},
      {"qmm.tiled",
       "single thread; A and B packed as u8 x s8 with row and column sums, the fastest exact "
       "kernel of the CPU (AMX, AVX-512 VNNI, AVX2, portable) over mc x nc x kc blocks, "
       "requantized per block; mc and nc are rounded up to multiples of 16, kc to 64",
       {{"mc", 1, 4096, "rows of A per block"},
        {"nc", 1, 8192, "columns of B per block"},
        {"kc", 1, 65536, "depth per kernel call"}}},
      {"qmm.parallel",
       "qmm.tiled with blocks spread over OpenMP threads; each thread packs the columns of B it "
       "uses when there are enough column blocks, otherwise B is packed first and shared",
       {{"mc", 1, 4096, "rows of A per block"},
        {"nc", 1, 8192, "columns of B per block"},
        {"kc", 1, 65536, "depth per kernel call"},
        {"threads", 1, 1024, "OpenMP threads"},
        pin_param()}},
#ifdef HETKERN_OFFLOAD
      {"qmm.offload",
       "OpenMP target device (the host without one): A and B packed there as u8 x s8, 128 x 128 "
       "output tiles dealt out to teams, 64-deep slices of A and B staged in team-local memory "
       "(cp.async, two stages), dp4a, requantized exactly in the epilogue",
       {{"teams", 1, 65536, "teams at most (default: one per tile)"},
        {"threads", 32, 1024,
         "threads per team, rounded down to a power of two (default 256: one 8 x 8 block of outputs "
         "each; at most 512 used)"}}},
      {"qmm.offload_mma",
       "qmm.offload with tensor cores: 64-deep slices staged in team-local memory (cp.async, two "
       "stages), each warp 64 x 64 outputs from ldmatrix fragments with mma.sync m16n8k32 u8 x s8 "
       "in an SPMD kernel, requantized exactly in the epilogue",
       {{"teams", 1, 65536, "teams at most (default: one per tile)"},
        {"threads", 32, 1024,
         "threads per team, rounded down to a power of two (default 128: the tile's four warps; at most "
         "256 used)"}}},
#endif
  };
  return specs;
}

}  // namespace

std::span<const StrategySpec> qmm_strategies() { return table(); }

Schedule QmmPlan::to_schedule() const {
  if (kind == Kind::reference) return Schedule("reference");
  if (kind == Kind::offload || kind == Kind::offload_mma) {
    Schedule s(kind == Kind::offload ? "qmm.offload" : "qmm.offload_mma");
    s.set("teams", teams).set("threads", threads);
    return s;
  }
  Schedule s(kind == Kind::tiled ? "qmm.tiled" : "qmm.parallel");
  s.set("mc", mc).set("nc", nc).set("kc", kc);
  if (kind == Kind::parallel) s.set("threads", threads).set("pin", name_of(pin));
  return s;
}

QmmPlan default_qmm_blocking(const QmmProblem& problem, int threads) {
  // Sizes from the L2 of a core. Columns are split so that every thread gets a block. With one block of
  // rows, B is packed a depth slice at a time and the slice (kc x nc bytes) stays in cache; with
  // several, a thread's whole column block of B (K x nc) should.
  const std::int64_t l2_bytes = host_data_cache_bytes(2, std::int64_t(1) << 20);
  const std::int64_t batches = problem.batch[0] * problem.batch[1];
  const std::int64_t blocks_wanted = (threads + batches - 1) / batches;
  const std::int64_t by_threads = round_up((problem.N + blocks_wanted - 1) / blocks_wanted, 16);
  const std::int64_t depth = round_up(problem.K, qmm_depth_align);
  QmmPlan plan;
  plan.threads = threads;
  plan.pin = default_pin_policy();
  if (problem.M <= 256) {
    plan.mc = round_up(problem.M, qmm_row_align);
    plan.kc = std::min<std::int64_t>(depth, 1024);
    plan.nc = std::clamp<std::int64_t>(std::min(by_threads, l2_bytes / 2 / plan.kc / 16 * 16), 16, 4096);
    return plan;
  }
  plan.mc = 96;
  plan.kc = std::min<std::int64_t>(depth, 2048);
  const std::int64_t by_cache = std::max<std::int64_t>(16, l2_bytes / 2 / plan.kc / 16 * 16);
  plan.nc = std::clamp<std::int64_t>(std::min(by_cache, by_threads), 16, 512);
  return plan;
}

QmmPlan plan_qmm(const QmmProblem& problem, const Schedule& schedule) {
  BoundParams p;
  const int index = bind_schedule("quantized_linear_matmul", schedule, table(), p);
  const auto kind = static_cast<QmmPlan::Kind>(index);
  if (kind == QmmPlan::Kind::reference) return QmmPlan{};
  if (kind == QmmPlan::Kind::offload || kind == QmmPlan::Kind::offload_mma) {
    // Teams take 128 x 128 output tiles in turn; more teams than tiles would idle.
    const std::int64_t tiles = problem.batch[0] * problem.batch[1] * ((problem.M + 127) / 128) *
                               ((problem.N + 127) / 128);
    QmmPlan plan;
    plan.kind = kind;
    plan.teams = int(std::min(p.get(0, tiles), tiles));
    plan.threads = int(p.get(1, kind == QmmPlan::Kind::offload_mma ? 128 : 256));
    return plan;
  }
  const int threads = kind == QmmPlan::Kind::parallel ? int(p.get(3, default_threads())) : 1;
  QmmPlan plan = default_qmm_blocking(problem, threads);
  plan.kind = kind;
  plan.mc = p.get(0, plan.mc);
  plan.nc = p.get(1, plan.nc);
  plan.kc = p.get(2, plan.kc);
  plan.pin = PinPolicy(p.get(4, std::int64_t(plan.pin)));
  return plan;
}

#ifdef HETKERN_OFFLOAD
QmmPlan default_offload_qmm_plan(const QmmProblem& problem) {
  return plan_qmm(problem, Schedule("qmm.offload_mma"));
}
#endif

}  // namespace hk::detail
