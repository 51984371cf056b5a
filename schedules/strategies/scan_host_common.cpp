// Defaults and search values shared by the host strategies of the cumulative operators.
#include "schedules/strategies/scan_host_common.hpp"

#include <algorithm>

#include "algorithms/scan_types.hpp"
#include "hetkern/info.hpp"
#include "runtime/platform/topology.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/search_values.hpp"

namespace hk::detail {
namespace {

// Cache size when hwloc reports none.
constexpr std::int64_t fallback_l1_bytes = 32 * 1024;
// Outputs above this size stream past the cache. Fixed rather than read from the system: virtual
// machines report the whole package's last-level cache, of which a process sees a fraction.
constexpr std::int64_t stream_min_bytes = std::int64_t(32) << 20;
// Below this size an output stays in the last-level cache, where non-temporal stores only hurt.
constexpr std::int64_t stream_min_output_bytes = std::int64_t(4) << 20;

}  // namespace

ParamSpec scan_stream_param() {
  return {"stream", 0, 1,
          "1: non-temporal stores past the cache (ignored in place), 0: regular stores; default 1 when "
          "the output exceeds 32 MiB"};
}

std::int64_t scan_element_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(), [](auto t) { return std::int64_t(sizeof(t)); });
}

bool scan_streams_by_default(const CumulativeCall& call) {
  return !call.in_place() && call.output.desc.element_count() * scan_element_bytes(call) > stream_min_bytes;
}

// Lines across the contiguous axis: the row of input read beside the accumulators must not evict
// them (integers' accumulators in half the L1 left it no room: docs/performance.md).
std::int64_t scan_default_tile(const CumulativeCall& call) {
  if (make_scan_layout(call).lines_are_rows()) return 256;
  const std::int64_t l1 = host_data_cache_bytes(1, fallback_l1_bytes);
  const std::int64_t per_line = visit_scan_type(call.input.desc.dtype(), [](auto t) {
    return std::int64_t(sizeof(AccOf<decltype(t)>) + sizeof(t));
  });
  return std::clamp<std::int64_t>(l1 * 3 / 4 / per_line, 1, max_scan_tile);
}

std::vector<std::string> scan_tile_values(const CumulativeCall& call, const ParamSpec& tile) {
  const ScanLayout s = make_scan_layout(call);
  if (!s.lines_are_rows() && s.inner_size() > 1)
    return geometric_values(8, std::min(ceil_pow2(s.inner_size()), tile.max), 2, tile);
  return geometric_values(1, std::min(ceil_pow2(s.lines()), std::int64_t(1024)), 4, tile);
}

SearchSpace scan_threaded_space(const CumulativeCall& call, SpaceAxis size) {
  std::vector<std::string> threads = host_thread_values();
  if (threads.empty()) return std::nullopt;
  std::vector<SpaceAxis> axes;
  add_axis(axes, size.key.c_str(), std::move(size.values));
  add_axis(axes, "threads", std::move(threads));
  add_axis(axes, "stream", scan_stream_values(call));
  add_axis(axes, "pin", pin_values(default_threads()));
  return axes;
}

std::vector<std::string> scan_stream_values(const CumulativeCall& call) {
  if (call.in_place() || call.output.desc.element_count() * scan_element_bytes(call) < stream_min_output_bytes)
    return {"0"};
  return {"0", "1"};
}

}  // namespace hk::detail
