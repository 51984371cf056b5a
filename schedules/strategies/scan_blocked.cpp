// scan.blocked: few long lines cut into blocks, each folded, carried and rescanned in cache.
#include <algorithm>

#include "hetkern/info.hpp"
#include "runtime/platform/pinning.hpp"
#include "runtime/platform/topology.hpp"
#include "schedules/scan_host.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/search_values.hpp"
#include "schedules/strategies/scan_host_common.hpp"

namespace hk::detail {
namespace {

// L2 size when hwloc reports none.
constexpr std::int64_t fallback_l2_bytes = 1024 * 1024;
// The block size measured best on the 16-core reference host; larger L2s keep it, smaller L2s
// scale it down.
constexpr std::int64_t max_block_bytes = 256 * 1024;

// Bytes of input a thread takes per round: they stay in its L2 cache between the two passes. A
// quarter of the L2, at most 256 KiB.
std::int64_t block_bytes() {
  return std::min(max_block_bytes, host_data_cache_bytes(2, fallback_l2_bytes) / 4);
}

}  // namespace

const ScanStrategy& scan_blocked() {
  static const ScanStrategy record{
      .name = "scan.blocked",
      .meaning =
          "the lines cut into blocks that the threads claim in order: each thread folds its block, "
          "publishes the total, takes its carry from the totals published before it (folding a "
          "block itself when its owner is slow to publish), then rescans its block from that carry "
          "while it is still in cache; memory sees one read and one write; for few long lines",
      .params = {{"block", 16, std::int64_t(1) << 40,
                  "elements per block (default: a quarter of the L2, at most 256 KiB, of elements, so a "
                  "block stays in L2 between its two passes)"},
                 {"threads", 1, max_threads, "OpenMP threads"},
                 scan_stream_param(),
                 pin_param()},
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const std::int64_t block = std::max<std::int64_t>(16, block_bytes() / scan_element_bytes(call));
        return BlockedScanPlan{p.get("block", block), int(p.get("threads", default_threads())),
                               p.get("stream", scan_streams_by_default(call)) != 0,
                               PinPolicy(p.get("pin", std::int64_t(default_pin_policy())))};
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& plan) {
        const auto& b = std::get<BlockedScanPlan>(plan);
        const PinnedCall pinned(b.threads, b.pin);
        scan_blocks_parallel(call, b.block, b.threads, b.stream, block_bytes());
      },
      .schedule = [](const ScanStrategyPlan& plan) {
        const auto& b = std::get<BlockedScanPlan>(plan);
        return Schedule("scan.blocked").set("block", b.block).set("threads", b.threads)
            .set("stream", std::int64_t(b.stream)).set("pin", name_of(b.pin));
      },
      .space = [](const CumulativeCall& call) -> SearchSpace {
        const std::int64_t limit = std::min(ceil_pow2(make_scan_layout(call).length), std::int64_t(1) << 22);
        return scan_threaded_space(call, {"block", geometric_values(1024, limit, 4, scan_blocked().params[0])});
      },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
