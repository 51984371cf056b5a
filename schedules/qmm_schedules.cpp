// Strategy table and planning for QuantizedLinearMatMul.
#include "schedules/qmm_schedules.hpp"

#include <array>

#include "hetkern/info.hpp"

namespace hk::detail {
namespace {

const std::array<StrategySpec, 3>& table() {
  // kc stays within the int32-exact depth so a block's partial sums never overflow.
  static const std::array<StrategySpec, 3> specs = {{
      {"reference", "the specification executed one output at a time, 64-bit accumulation", {}},
      {"qmm.tiled",
       "single thread; B packed once into zero-point-corrected 16-bit panels, A packed per "
       "block of rows, int32 block accumulation, requantization per block",
       {{"mc", 1, 4096, "rows of A per block"},
        {"nc", 1, 8192, "columns of B per panel"},
        {"kc", 1, qmm_int32_max_k, "depth per cache block"}}},
      {"qmm.parallel",
       "qmm.tiled with the (batch, row block, column panel) blocks spread over OpenMP threads",
       {{"mc", 1, 4096, "rows of A per block"},
        {"nc", 1, 8192, "columns of B per panel"},
        {"kc", 1, qmm_int32_max_k, "depth per cache block"},
        {"threads", 1, 1024, "OpenMP threads"}}},
  }};
  return specs;
}

}  // namespace

std::span<const StrategySpec> qmm_strategies() { return table(); }

Schedule QmmPlan::to_schedule() const {
  if (kind == Kind::reference) return Schedule("reference");
  Schedule s(kind == Kind::tiled ? "qmm.tiled" : "qmm.parallel");
  s.set("mc", mc).set("nc", nc).set("kc", kc);
  if (kind == Kind::parallel) s.set("threads", threads);
  return s;
}

QmmPlan plan_qmm(const QmmProblem&, const Schedule& schedule) {
  BoundParams p;
  const int index = bind_schedule("quantized_linear_matmul", schedule, table(), p);
  QmmPlan plan;
  plan.kind = static_cast<QmmPlan::Kind>(index);
  if (plan.kind == QmmPlan::Kind::reference) return plan;
  plan.mc = p.get(0, 64);
  plan.nc = p.get(1, 256);
  plan.kc = p.get(2, 256);
  plan.threads = plan.kind == QmmPlan::Kind::parallel ? int(p.get(3, default_threads())) : 1;
  return plan;
}

}  // namespace hk::detail
