// scan.tiled: one thread, lines scanned in registers a vector at a time.
#include "schedules/scan_host.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/search_values.hpp"
#include "schedules/strategies/scan_host_common.hpp"

namespace hk::detail {

const ScanStrategy& scan_tiled() {
  static const ScanStrategy record{
      .name = "scan.tiled",
      .meaning =
          "single thread; a contiguous line is scanned in registers, a few vectors at a time in a "
          "three-stage pipeline (loads, scans, carry and stores of neighbouring steps; with 64-byte "
          "vectors, types of half their accumulator's width are permuted into quads of elements, "
          "else each vector takes a log-step scan); lines across the contiguous "
          "axis are walked a tile side by side, one vector of lines per accumulator, row after row "
          "(the hardware prefetcher follows the rows); SIMD level from hk::active_isa()",
      .params = {{"tile", 1, max_scan_tile,
                  "lines processed together (default: accumulators and one row of input in "
                  "three quarters of the L1 for lines across the contiguous axis, else 256)"},
                 scan_stream_param()},
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        return TiledScanPlan{p.get("tile", scan_default_tile(call)),
                             p.get("stream", scan_streams_by_default(call)) != 0};
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& plan) {
        const auto& t = std::get<TiledScanPlan>(plan);
        scan_tiles(call, t.tile, t.stream);
      },
      .schedule = [](const ScanStrategyPlan& plan) {
        const auto& t = std::get<TiledScanPlan>(plan);
        return Schedule("scan.tiled").set("tile", t.tile).set("stream", std::int64_t(t.stream));
      },
      .space = [](const CumulativeCall& call) -> SearchSpace {
        std::vector<SpaceAxis> axes;
        add_axis(axes, "tile", scan_tile_values(call, scan_tiled().params[0]));
        add_axis(axes, "stream", scan_stream_values(call));
        return axes;
      },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
