// What the host strategies of the cumulative operators share: the `stream` parameter, the
// default tile and the value rules of their search spaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/cumulative.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// `stream`: non-temporal stores (tiled, parallel, blocked).
ParamSpec scan_stream_param();

/// Whether the output is so much larger than the cache that stores should bypass it: then a
/// regular store's read-for-ownership costs a third of the memory traffic. Never in place.
bool scan_streams_by_default(const CumulativeCall& call);

/// The lines a schedule walks side by side by default: for lines across the scanned axis, as
/// many as keep their accumulators and one row of their input in three quarters of the L1 data
/// cache (hwloc's, else 32 KiB); 256 otherwise.
std::int64_t scan_default_tile(const CumulativeCall& call);

/// Bytes per element of the call's type.
std::int64_t scan_element_bytes(const CumulativeCall& call);

/// The tuner's values of `tile`: lines across the contiguous axis are walked a vector of lines
/// per accumulator (fewer than 8 side by side waste the vector); whole lines (rows) are cut into
/// tasks of `tile` lines.
std::vector<std::string> scan_tile_values(const CumulativeCall& call, const ParamSpec& tile);

/// The tuner's values of `stream`: both where the output leaves the last-level cache, else 0.
std::vector<std::string> scan_stream_values(const CumulativeCall& call);

/// The space of a host-parallel strategy: `size` (its tile or block axis), then threads, stream
/// and pin; nullopt with one thread (its single-thread sibling covers that).
SearchSpace scan_threaded_space(const CumulativeCall& call, SpaceAxis size);

}  // namespace hk::detail
