// Strategy table and planning for the cumulative operators.
#include "schedules/scan_schedules.hpp"

#include <algorithm>
#include <array>

#include "algorithms/scan_types.hpp"
#include "hetkern/info.hpp"
#include "runtime/platform/topology.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/error.hpp"
#include "schedules/scan_offload.hpp"
#endif

namespace hk::detail {
namespace {

constexpr std::int64_t max_threads = 1024;
// Cache sizes when hwloc reports none.
constexpr std::int64_t fallback_l1_bytes = 32 * 1024;
constexpr std::int64_t fallback_l2_bytes = 1024 * 1024;
// The block size measured best on the 16-core reference host; larger L2s keep it, smaller L2s
// scale it down.
constexpr std::int64_t max_block_bytes = 256 * 1024;

// Outputs above this size stream past the cache. Fixed rather than read from the system: virtual
// machines report the whole package's last-level cache, of which a process sees a fraction.
constexpr std::int64_t stream_min_bytes = std::int64_t(32) << 20;

std::int64_t element_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(), [](auto t) { return std::int64_t(sizeof(t)); });
}

std::int64_t accumulator_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(),
                         [](auto t) { return std::int64_t(sizeof(AccOf<decltype(t)>)); });
}

const ParamSpec stream_param = {
    "stream", 0, 1,
    "1: non-temporal stores past the cache (ignored in place), 0: regular stores; default 1 when "
    "the output exceeds 32 MiB"};

const std::vector<StrategySpec>& table() {
  static const std::vector<StrategySpec> specs = {
      {"reference", "the specification executed line by line, single thread", {}},
      {"scan.tiled",
       "single thread; a contiguous line is scanned in registers, a vector at a time (log-step "
       "scan per vector, the carry added off the dependency chain); lines across the contiguous "
       "axis are walked a tile side by side, one vector of lines per accumulator, row after row "
       "(the hardware prefetcher follows the rows); SIMD level from hk::active_isa()",
       {{"tile", 1, max_scan_tile,
         "lines processed together (default: accumulators in half the L1 for lines across the "
         "contiguous axis, else 256)"},
        stream_param}},
      {"scan.parallel",
       "scan.tiled with the tiles of lines spread over OpenMP threads",
       {{"tile", 1, max_scan_tile, "lines processed together (default as scan.tiled)"},
        {"threads", 1, max_threads, "OpenMP threads"},
        stream_param,
        pin_param()}},
      {"scan.blocked",
       "the lines cut into blocks handed out in rounds, one block per thread: each thread folds "
       "its block, a barrier, carries from the block totals, then each thread rescans its block "
       "from its carry while it is still in cache; memory sees one read and one write; for few "
       "long lines",
       {{"block", 16, std::int64_t(1) << 40,
         "elements per block (default: a quarter of the L2, at most 256 KiB, of elements, so a "
         "block stays in L2 between its two passes)"},
        {"threads", 1, max_threads, "OpenMP threads"},
        stream_param,
        pin_param()}},
#ifdef HETKERN_OFFLOAD
      {"scan.offload_rows",
       "GPU (OpenMP target): each team scans whole lines, one at a time, a tile of threads x items "
       "elements at a time: each thread loads its run of items consecutive elements into "
       "registers (16 bytes at a time where aligned), folds it, the warps scan the folds with "
       "shuffles, the team combines the warp totals, each thread rescans its run from its carry; "
       "a tile inside its line with 16-byte accesses is held striped instead (a warp's every "
       "access 16 bytes per lane, contiguous); the next tile is loaded before the current one is "
       "scanned; for many lines along the contiguous axis",
       {{"teams", 1, 65536, "OpenMP teams (default: the lines, at most 1056)"},
        {"threads", 32, offload_max_threads,
         "threads per team (default 64, 128 for 2-byte types, fewer for lines shorter than "
         "that many runs; a team gets at most 512)"},
        {"items", 1, 64,
         "consecutive elements per thread in a tile, at most 64 bytes of them (default: 64 "
         "bytes, e.g. 16 for 4-byte types)"},
        {"ahead", 0, offload_max_ahead,
         "tiles further on (where accesses are 16 bytes) requested into the L2 ahead of the "
         "loads (default 1)"}}},
      {"scan.offload_columns",
       "GPU (OpenMP target), for the scanned axis outside the contiguous one. chunks = 1: each "
       "team takes width neighbouring lines (16-byte vectors of adjacent lines where aligned) "
       "and walks the whole axis in tiles of items rows per thread, its warps and their lanes "
       "splitting a tile's rows among them: each lane folds its rows in registers, the folds are "
       "scanned with shuffles within a warp and through team memory across warps (one barrier "
       "per tile), each lane rescans its rows from its carry; the next tile's rows are loaded "
       "before the current one is combined. chunks > 1: one thread per line and axis "
       "chunk, consecutive threads on neighbouring lines, 32 loads in flight each: the chunks' "
       "folds, the carries, then each chunk rescanned from its carry",
       {{"teams", 1, std::int64_t(1) << 20,
         "OpenMP teams (default: a team per width lines; chunks > 1: a thread per line and "
         "chunk)"},
        {"threads", 32, offload_max_threads,
         "threads per team (default 256; chunks = 1: a team gets at most 256; chunks > 1: fewer "
         "when 256 leaves under 264 teams)"},
        {"chunks", 1, std::int64_t(1) << 20,
         "chunks of the scanned axis (default: 1 when there are at least 16384 lines, else "
         "enough for about 2^18 threads, each chunk at least 64 long)"},
        {"items", 1, offload_column_max_items,
         "chunks = 1: consecutive rows of the axis per thread in a tile (default and most: 16 "
         "for 2-byte types, 8 for wider ones)"},
        {"width", 1, offload_column_max_width,
         "chunks = 1: neighbouring lines per team, at most 32 vectors or single lines (default: "
         "512 bytes of them, 256 for 2-byte types: 128 lines of 4-byte types or of float16)"}}},
      {"scan.offload_chained",
       "GPU (OpenMP target): single-pass chained scan; persistent teams take tiles of threads x "
       "items elements in order from an atomic ticket, scan them (staged through team memory "
       "by asynchronous copies when the lines are contiguous and 16-byte aligned and two tiles "
       "fit in 47 KB with at most 512 threads, else in registers as scan.offload_rows does), "
       "publish each tile's fold, look back over their predecessors' published folds and "
       "prefixes (a warp, 32 tiles at a time) for the carry: memory sees one read and one write; "
       "for few long lines",
       {{"teams", 1, 65536, "OpenMP teams (default: the tiles, at most 660)"},
        {"threads", 32, offload_max_threads, "threads per team (default 128)"},
        {"items", 1, 64,
         "consecutive elements per thread in a tile, at most 128 bytes of them (default: 112 "
         "bytes, e.g. 28 for 4-byte types)"}}},
#endif
  };
  return specs;
}

#ifdef HETKERN_OFFLOAD
// A thread's run of items elements must fit the registers the tile kernels give it.
void check_offload_tile(const CumulativeCall& call, const Schedule& schedule, const ScanPlan& plan) {
  if (plan.kind == ScanPlan::Kind::offload_columns) {
    const int cap = offload_column_item_cap(element_bytes(call));
    if (plan.items > cap)
      throw Error(Errc::invalid_schedule, call.op_name(), schedule.to_string(),
                  "items = " + std::to_string(plan.items) + " rows exceed the " + std::to_string(cap) +
                      " rows of " + std::to_string(element_bytes(call)) +
                      "-byte elements a thread holds in registers");
    return;
  }
  const std::int64_t bytes = std::int64_t(plan.items) * element_bytes(call);
  const std::int64_t max_bytes = plan.kind == ScanPlan::Kind::offload_rows ? offload_rows_max_item_bytes
                                                                           : offload_chained_max_item_bytes;
  if (bytes > max_bytes)
    throw Error(Errc::invalid_schedule, call.op_name(), schedule.to_string(),
                "items = " + std::to_string(plan.items) + " elements of " + std::to_string(element_bytes(call)) +
                    " bytes exceed the " + std::to_string(max_bytes) +
                    " bytes a thread holds in registers");
}
#endif

}  // namespace

std::span<const StrategySpec> scan_strategies() { return table(); }

Schedule ScanPlan::to_schedule() const {
  switch (kind) {
    case Kind::reference: return Schedule("reference");
    case Kind::tiled: return Schedule("scan.tiled").set("tile", tile).set("stream", std::int64_t(stream));
    case Kind::parallel:
      return Schedule("scan.parallel").set("tile", tile).set("threads", threads).set("stream", std::int64_t(stream))
          .set("pin", name_of(pin));
    case Kind::blocked:
      return Schedule("scan.blocked").set("block", block).set("threads", threads).set("stream", std::int64_t(stream))
          .set("pin", name_of(pin));
    case Kind::offload_rows:
      return Schedule("scan.offload_rows").set("teams", teams).set("threads", threads).set("items", items)
          .set("ahead", ahead);
    case Kind::offload_columns:
      return Schedule("scan.offload_columns").set("teams", teams).set("threads", threads).set("chunks", chunks)
          .set("items", items).set("width", width);
    case Kind::offload_chained:
      return Schedule("scan.offload_chained").set("teams", teams).set("threads", threads).set("items", items);
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
    case ScanPlan::Kind::tiled:
      plan.tile = p.get(0, scan_default_tile(call));
      plan.stream = p.get(1, scan_streams_by_default(call));
      break;
    case ScanPlan::Kind::parallel:
      plan.tile = p.get(0, scan_default_tile(call));
      plan.threads = int(p.get(1, default_threads()));
      plan.stream = p.get(2, scan_streams_by_default(call));
      plan.pin = PinPolicy(p.get(3, std::int64_t(default_pin_policy())));
      break;
    case ScanPlan::Kind::blocked:
      plan.block = p.get(0, scan_default_block(call));
      plan.threads = int(p.get(1, default_threads()));
      plan.stream = p.get(2, scan_streams_by_default(call));
      plan.pin = PinPolicy(p.get(3, std::int64_t(default_pin_policy())));
      break;
    case ScanPlan::Kind::offload_rows:
    case ScanPlan::Kind::offload_columns:
    case ScanPlan::Kind::offload_chained:
#ifdef HETKERN_OFFLOAD
    {
      plan = offload_scan_defaults(call, plan.kind);
      plan.teams = int(p.get(0, plan.teams));
      plan.threads = int(p.get(1, plan.threads));
      if (plan.kind == ScanPlan::Kind::offload_columns) {
        plan.chunks = p.get(2, plan.chunks);
        plan.items = int(p.get(3, plan.items));
        plan.width = int(p.get(4, plan.width));
      } else {
        plan.items = int(p.get(2, plan.items));
        if (plan.kind == ScanPlan::Kind::offload_rows) plan.ahead = int(p.get(3, plan.ahead));
      }
      check_offload_tile(call, schedule, plan);
    }
#endif
      break;
  }
  return plan;
}

bool scan_streams_by_default(const CumulativeCall& call) {
  return !call.in_place() &&
         call.output.desc.element_count() * element_bytes(call) > stream_min_bytes;
}

std::int64_t scan_block_bytes() {
  return std::min(max_block_bytes, host_data_cache_bytes(2, fallback_l2_bytes) / 4);
}

std::int64_t scan_default_block(const CumulativeCall& call) {
  return std::max<std::int64_t>(16, scan_block_bytes() / element_bytes(call));
}

std::int64_t scan_default_tile(const CumulativeCall& call) {
  if (make_scan_layout(call).lines_are_rows()) return 256;
  const std::int64_t l1 = host_data_cache_bytes(1, fallback_l1_bytes);
  return std::clamp<std::int64_t>(l1 / 2 / accumulator_bytes(call), 1, max_scan_tile);
}

}  // namespace hk::detail
