// scan.parallel: scan.tiled's tiles of lines spread over OpenMP threads.
#include "hetkern/info.hpp"
#include "runtime/platform/pinning.hpp"
#include "schedules/scan_host.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/scan_host_common.hpp"
#include "schedules/strategies/scan_host_default.hpp"

namespace hk::detail {

const ScanStrategy& scan_parallel() {
  static const ScanStrategy record{
      .name = "scan.parallel",
      .meaning = "scan.tiled with the tiles of lines spread over OpenMP threads",
      .params = {{"tile", 1, max_scan_tile,
                  "lines processed together (default: a few panels per thread where the lines allow, "
                  "never wider than scan.tiled's)"},
                 {"threads", 1, max_threads, "OpenMP threads"},
                 scan_stream_param(),
                 pin_param()},
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const int threads = int(p.get("threads", default_threads()));
        return ParallelScanPlan{p.get("tile", scan_parallel_default_tile(call, threads)), threads,
                                p.get("stream", scan_streams_by_default(call)) != 0,
                                PinPolicy(p.get("pin", std::int64_t(default_pin_policy())))};
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& plan) {
        const auto& t = std::get<ParallelScanPlan>(plan);
        const PinnedCall pinned(t.threads, t.pin);
        scan_tiles_parallel(call, t.tile, t.threads, t.stream);
      },
      .schedule = [](const ScanStrategyPlan& plan) {
        const auto& t = std::get<ParallelScanPlan>(plan);
        return Schedule("scan.parallel").set("tile", t.tile).set("threads", t.threads)
            .set("stream", std::int64_t(t.stream)).set("pin", name_of(t.pin));
      },
      .space = [](const CumulativeCall& call) -> SearchSpace {
        return scan_threaded_space(call, {"tile", scan_tile_values(call, scan_parallel().params[0])});
      },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
