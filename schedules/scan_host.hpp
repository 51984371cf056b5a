// The host walks the cumulative strategies run: scan.tiled, scan.parallel and scan.blocked.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"

namespace hk::detail {

/// scan.tiled: tiles of `tile` lines one after another on the calling thread. `stream`:
/// non-temporal stores (never in place).
void scan_tiles(const CumulativeCall& call, std::int64_t tile, bool stream);
/// scan.parallel: the same tiles spread over `threads` OpenMP threads.
void scan_tiles_parallel(const CumulativeCall& call, std::int64_t tile, int threads, bool stream);
/// scan.blocked: (line, block) units of `block` elements dealt out to `threads` threads in groups
/// filling `cache_bytes`, each group folded, carried and rescanned while in that cache. `carry`,
/// where given, points at a value of the accumulator type of the call's elements (AccOf) that
/// every line continues from, as if it were the fold of elements before the line's first.
void scan_blocks_parallel(const CumulativeCall& call, std::int64_t block, int threads, bool stream,
                          std::int64_t cache_bytes, const void* carry = nullptr);

/// The fold of a one-line call's input, from inclusive_start, by `threads` threads, into *fold
/// (AccOf its element type): the carry the rest of a longer line continues from.
void fold_line_parallel(const CumulativeCall& call, int threads, void* fold);

}  // namespace hk::detail
