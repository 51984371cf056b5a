// Default schedules from the shape and the thread count.
#include "runtime/tuning/heuristic.hpp"

#include "hetkern/info.hpp"
#include "schedules/strategies/scan_host_default.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/scan_offload.hpp"
#endif

namespace hk::detail {
namespace {

constexpr std::int64_t qmm_parallel_min_macs = std::int64_t(1) << 21;

}  // namespace

#ifdef HETKERN_OFFLOAD
const char* default_offload_scan_strategy(const CumulativeCall& call) {
  // The offload code picks the kernel family; that family's record fills the same defaults.
  constexpr const char* family_strategy[] = {"scan.offload_rows", "scan.offload_columns", "scan.offload_chained",
                                             "scan.offload_warp_rows"};
  return family_strategy[int(default_offload_scan_plan(call).kind)];
}
#endif

// Names a strategy and the parameters the shape decides; the strategy's record fills the rest.
ScanStrategyPlan default_scan_plan(const CumulativeCall& call, [[maybe_unused]] DataHome home) {
#ifdef HETKERN_OFFLOAD
  if (home == DataHome::device) return plan_scan(call, Schedule(default_offload_scan_strategy(call)));
#endif
  return default_host_scan_plan(call, default_threads());
}

QmmStrategyPlan default_qmm_plan(const QmmProblem& p, [[maybe_unused]] DataHome home) {
#ifdef HETKERN_OFFLOAD
  // Device tensors: the tensor-core kernel with its defaults.
  if (home == DataHome::device) return plan_qmm(p, Schedule("qmm.offload_mma"));
#endif
  const std::int64_t macs = p.batch[0] * p.batch[1] * p.M * p.N * p.K;
  const bool parallel = macs >= qmm_parallel_min_macs && default_threads() > 1;
  return plan_qmm(p, Schedule(parallel ? "qmm.parallel" : "qmm.tiled"));
}

}  // namespace hk::detail
