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
/// filling `cache_bytes`, each group folded, carried and rescanned while in that cache.
void scan_blocks_parallel(const CumulativeCall& call, std::int64_t block, int threads, bool stream,
                          std::int64_t cache_bytes);

}  // namespace hk::detail
