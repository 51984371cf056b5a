// Strategy table and planning for the cumulative operators.
#include "schedules/scan_schedules.hpp"

#include <array>

#include "hetkern/info.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t max_threads = 1024;

const std::array<StrategySpec, 4>& table() {
  static const std::array<StrategySpec, 4> specs = {{
      {"reference", "the specification executed line by line, single thread", {}},
      {"scan.tiled",
       "single thread; lines along the contiguous axis are scanned one by one, otherwise a tile "
       "of neighbouring lines is scanned side by side so every memory access is contiguous",
       {{"tile", 1, 4096, "lines processed together"}}},
      {"scan.parallel",
       "scan.tiled with the tiles of lines spread over OpenMP threads",
       {{"tile", 1, 4096, "lines processed together"},
        {"threads", 1, max_threads, "OpenMP threads"}}},
      {"scan.blocked",
       "every line cut into blocks: block totals in parallel, carries per line, then every "
       "block rescanned from its carry in parallel; for few long lines",
       {{"block", 16, std::int64_t(1) << 40, "elements per block"},
        {"threads", 1, max_threads, "OpenMP threads"}}},
  }};
  return specs;
}

}  // namespace

std::span<const StrategySpec> scan_strategies() { return table(); }

Schedule ScanPlan::to_schedule() const {
  switch (kind) {
    case Kind::reference: return Schedule("reference");
    case Kind::tiled: return Schedule("scan.tiled").set("tile", tile);
    case Kind::parallel: return Schedule("scan.parallel").set("tile", tile).set("threads", threads);
    case Kind::blocked: return Schedule("scan.blocked").set("block", block).set("threads", threads);
  }
  return {};
}

ScanPlan plan_scan(const CumulativeCall& call, const Schedule& schedule) {
  BoundParams p;
  const int index = bind_schedule(call.op_name(), schedule, table(), p);
  ScanPlan plan;
  plan.kind = static_cast<ScanPlan::Kind>(index);
  switch (plan.kind) {
    case ScanPlan::Kind::reference: break;
    case ScanPlan::Kind::tiled: plan.tile = p.get(0, 256); break;
    case ScanPlan::Kind::parallel:
      plan.tile = p.get(0, 256);
      plan.threads = int(p.get(1, default_threads()));
      break;
    case ScanPlan::Kind::blocked:
      plan.block = p.get(0, 65536);
      plan.threads = int(p.get(1, default_threads()));
      break;
  }
  return plan;
}

}  // namespace hk::detail
