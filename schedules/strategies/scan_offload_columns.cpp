// scan.offload_columns: GPU scans with the scanned axis outside the contiguous one.
#include <algorithm>
#include <string>
#include <vector>

#include "hetkern/error.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/strategies/scan_host_common.hpp"
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadColumnsScanPlan::launch() const {
  return {.kind = ScanPlan::Kind::columns, .teams = teams, .team_threads = team_threads, .items = items,
          .chunks = chunks, .width = width, .stages = stages};
}

Schedule OffloadColumnsScanPlan::schedule() const {
  return Schedule("scan.offload_columns").set("teams", teams).set("threads", team_threads)
      .set("chunks", chunks).set("items", items).set("width", width)
      .set("stages", stages);
}

namespace {

// The tuner's space: team sizes, and the lines a team takes (the default's, 256 or 512 bytes of
// them), the rows a thread holds and, where the lines go in 16-byte vectors, how many tiles wait in
// team memory (stages 2 and 3) or the next one in registers (stages = 1). Their best differs
// between GPUs of one architecture, between types and with the teams' count against the
// multiprocessors', and is not always a power of two (docs/performance.md). Where only the
// register kernel runs (lines not in vectors), rows beyond what it holds are left out. Where the
// default cuts the axis into chunks, half and twice as many chunks, at the default's width, and
// the default's stages (a ring that holds a whole chunk).
SearchSpace columns_space(const CumulativeCall& call) {
  if (!offload_scan_takes(call.input.desc.dtype())) return offload_team_space();
  const ScanPlan defaults = offload_scan_defaults(call, ScanPlan::Kind::columns);
  const std::int64_t bytes = scan_element_bytes(call);
  const bool vectors = lines_in_vectors(make_scan_layout(call), call.input.data, call.output.data, bytes);
  SpaceAxis items{"items", {}};
  for (const int rows : {6, 8, 10, 12, 16})
    if (vectors || rows <= offload_column_item_cap(bytes)) items.values.push_back(std::to_string(rows));
  SpaceAxis width{"width", {std::to_string(defaults.width)}};
  SpaceAxis chunks{"chunks", {std::to_string(defaults.chunks)}};
  if (defaults.chunks > 1) {
    chunks.values.push_back(std::to_string(defaults.chunks * 2));
    if (defaults.chunks >= 4) chunks.values.push_back(std::to_string(defaults.chunks / 2));
  } else {
    for (const std::int64_t block_bytes : {256, 512})
      if (block_bytes / bytes != defaults.width) width.values.push_back(std::to_string(block_bytes / bytes));
  }
  std::vector<SpaceAxis> axes = {{"threads", {"64", "128", "256"}}, std::move(width), std::move(items)};
  if (defaults.chunks > 1) axes.push_back(std::move(chunks));
  if (vectors) {
    SpaceAxis stages{"stages", {"1", "2", "3"}};
    if (defaults.stages > 3) stages.values.push_back(std::to_string(defaults.stages));
    axes.push_back(std::move(stages));
  }
  return axes;
}

}  // namespace

const ScanStrategy& scan_offload_columns() {
  static const ScanStrategy record = offload_scan_record<OffloadColumnsScanPlan>(
      "scan.offload_columns",
      "GPU (OpenMP target), for the scanned axis outside the contiguous one. Each team takes width "
      "neighbouring lines (16-byte vectors of adjacent lines where aligned) and walks the axis in "
      "tiles of items rows per thread, its warps and their lanes splitting a tile's rows among "
      "them: each lane folds its rows in registers, the folds are scanned with shuffles within a "
      "warp and through team memory across warps (one barrier per tile), each lane rescans its "
      "rows from its carry; the tiles ahead are loaded before the current one is combined, "
      "stages - 1 of them into a ring in team memory by asynchronous copies, or the next one into "
      "registers. chunks = 1: a team walks the whole axis of its lines. chunks > 1: the axis is "
      "cut into chunks of whole tiles that teams draw in order; a team folds its chunk, finds each "
      "line's carry by a look-back over the chunks before, and scans the chunk again (from the L2)",
      {{"teams", 1, std::int64_t(1) << 20,
        "OpenMP teams (default: a team per width lines, and with chunks > 1 per chunk too, at "
        "most 528; both at the width and chunks the schedule gives)"},
       {"threads", 32, offload_max_threads,
        "threads per team (default 64 for float32 and below 16384 lines, 10240 for other 2- and "
        "4-byte types, else 256, but 128 for 2-byte vectors in chunks and, for 2- and 4-byte types "
        "in one pass, where the teams outnumber the GPU's multiprocessors by at most half; a team "
        "gets at most 256, 512 for 4-byte integers in one pass; with chunks > 1 teams of fewer "
        "than 32 scan their lines one thread each)"},
       {"chunks", 1, std::int64_t(1) << 20,
        "chunks of the scanned axis, chained by look-back (default: 1 when there are at least "
        "2048 lines, else chunks of 4 tiles; at most one a tile)"},
       {"items", 1, offload_column_max_items,
        "consecutive rows of the axis per thread in a tile (default 16 for float32, for 2-byte "
        "types and, below 16384 lines (10240 for other 2- and 4-byte types), for lines in 16-byte "
        "vectors, else 8; at most 16, and 8 for types wider than 2 bytes with stages = 1, where a "
        "thread holds the next tile's rows too)"},
       {"width", 1, offload_column_max_width,
        "neighbouring lines per team, at most 32 vectors or single lines (default: 512 bytes of "
        "them, 256 for float32 and 2-byte types: 64 lines of float32, 128 of int32 or of float16; "
        "below 16384 lines (10240 for 2- and 4-byte types but float32), the widest power of two of "
        "vectors or lines that leaves 256 teams or more; below 2048 lines, 128 bytes)"},
       {"stages", 1, offload_column_max_stages,
        "lines in 16-byte vectors: tiles in a ring in team memory, stages - 1 of them in flight "
        "while one is scanned; fewer where the GPU grants a team less memory, and 1 (the next tile "
        "in registers) where not even two fit; with chunks > 1, a chunk of at most stages tiles is "
        "scanned from the ring, not read again (default 4 in chunks, 3 for 2-byte vectors there, 3 "
        "for float32 and below 16384 lines (10240 for other 2- and 4-byte types), 2 for other 4-byte "
        "types, 1 for others)"}},
      [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const ScanPlan d = checked_offload_defaults(call, p, ScanPlan::Kind::columns);
        OffloadColumnsScanPlan plan{d.teams, int(p.get("threads", d.team_threads)), p.get("chunks", d.chunks),
                                    int(p.get("items", d.items)), int(p.get("width", d.width)),
                                    int(p.get("stages", d.stages))};
        // Without teams: the default's rule at the width and chunks given.
        const std::int64_t bytes = scan_element_bytes(call);
        const ScanLayout layout = make_scan_layout(call);
        const std::int64_t vector_lines = lines_per_vector(layout, call.input.data, call.output.data, bytes);
        plan.teams = int(p.get("teams", offload_column_teams(layout.lines(), std::min(plan.chunks, layout.length),
                                                             plan.width, vector_lines)));
        // A thread's rows must fit the registers the tile kernels give it: the parameter's range
        // is the staged kernel's, the register kernel (stages = 1) holds fewer of wider types.
        const int cap = offload_column_item_cap(bytes);
        if (plan.stages == 1 && plan.items > cap)
          throw Error(Errc::invalid_schedule, call.op_name(), p.schedule().to_string(),
                      "items = " + std::to_string(plan.items) + " rows exceed the " + std::to_string(cap) +
                          " rows of " + std::to_string(bytes) +
                          "-byte elements a thread holds in registers beside the next tile's (stages = 1)");
        return plan;
      },
      columns_space);
  return record;
}

}  // namespace hk::detail
