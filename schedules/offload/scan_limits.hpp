// The limits of the offload scan kernels' parameters, which the planner checks against a
// schedule: what the kernels' registers, launch bounds and team memory hold.
#pragma once

#include <cstdint>

namespace hk::detail {

/// The tile kernels keep each thread's run of `items` consecutive elements in registers: at most
/// this many bytes of them per thread (rows: fewer, so that more teams fit an SM; chained: more,
/// for larger tiles and fewer look-backs).
inline constexpr std::int64_t offload_rows_max_item_bytes = 64;
inline constexpr std::int64_t offload_chained_max_item_bytes = 128;
inline constexpr std::int64_t offload_max_threads = 1024;
/// scan.offload_columns in one pass (chunks = 1): rows of the scanned axis per thread in a tile,
/// kept in registers, and lines side by side per team. The staged kernel (tiles ahead in team
/// memory) holds up to offload_column_max_items rows of every type; the register kernel, which
/// also holds the next tile's, up to offload_column_item_cap: 16 for 2-byte types, 8 for wider
/// ones. Each (type, path) has its own kernel, whose registers hold that many rows without spills
/// (ptxas for sm_90: 245 registers for float16 16-byte vectors in the register kernel).
inline constexpr int offload_column_max_items = 16;
constexpr int offload_column_item_cap(std::int64_t element_bytes) { return element_bytes == 2 ? 16 : 8; }
inline constexpr int offload_column_max_width = 256;
/// scan.offload_columns in one pass: tiles in its ring in team memory (copy_async_wait_at_most).
inline constexpr int offload_column_max_stages = 8;
/// scan.offload_columns: groups side by side in a team's block of `width` lines (16-byte vectors
/// of vector_lines adjacent lines, or single lines where vector_lines is 1), 1 to 32.
constexpr std::int64_t offload_column_block_groups(int width, std::int64_t vector_lines) {
  const std::int64_t groups = width / vector_lines;
  return groups < 1 ? 1 : groups > 32 ? 32 : groups;
}
/// scan.offload_columns: rows of a tile, `items` for each of the 32 / lanes lanes on a group in
/// each full warp of a team of `threads` (a team of one partial warp: one lane a group).
constexpr std::int64_t offload_column_tile_rows(int threads, std::int64_t lanes, int items) {
  return std::int64_t(threads < 32 ? 1 : threads / 32) * (threads < 32 ? 1 : 32 / lanes) * items;
}
/// scan.offload_columns in chunks: teams at most, each drawing (block, chunk) units in turn: four
/// teams of two warps on each of an H100's 132 SMs.
inline constexpr std::int64_t offload_column_chained_teams = 528;
/// scan.offload_columns, teams by default: a team per block of `width` neighbouring lines, and
/// with chunks > 1 per chunk of the axis in each block too, at most offload_column_chained_teams;
/// at least one and at most 2^20.
constexpr std::int64_t offload_column_teams(std::int64_t lines, std::int64_t chunks, int width,
                                            std::int64_t vector_lines) {
  const std::int64_t lanes = offload_column_block_groups(width, vector_lines);
  std::int64_t teams = (lines / vector_lines + lanes - 1) / lanes;
  if (chunks > 1) teams = teams * chunks < offload_column_chained_teams ? teams * chunks : offload_column_chained_teams;
  return teams < 1 ? 1 : teams > (std::int64_t(1) << 20) ? std::int64_t(1) << 20 : teams;
}

/// Warp rows: 16-byte vectors a lane loads ahead of the ones it scans, at most.
inline constexpr int offload_warp_rows_max_vectors = 4;
/// Warp rows: the teams that give each of `lines` a warp of its own with `threads` a team (whole
/// warps), at least one and at most the 65536 a schedule may ask for.
constexpr std::int64_t offload_warp_rows_teams(std::int64_t lines, int threads) {
  const std::int64_t warps = threads / 32, teams = (lines + warps - 1) / warps;
  return teams < 1 ? 1 : teams > 65536 ? 65536 : teams;
}

/// Rows: at most this many tiles requested into the L2 ahead of the loads.
inline constexpr int offload_max_ahead = 8;

}  // namespace hk::detail
