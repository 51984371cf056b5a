// A host-tensor scan on a GPU whose lines cross in chunks: each chunk is scanned as soon as it has
// landed and goes back while the next ones cross, so that the copies to the GPU and back run at
// once (the link carries both directions at full speed) instead of one after the other. Offload
// builds only.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "schedules/scan_offload_plan.hpp"

namespace hk::detail {

/// The chunks a host-tensor call runs in on a GPU, 0 where it is copied whole: it runs so with 32
/// MiB of input and output together, in at least four chunks of lines (about 16 MiB of input each)
/// along the outermost line dimension, each chunk's spans holding no other chunk's elements in the
/// input and the output.
std::int64_t scan_host_chunks(const CumulativeCall& call);

/// The host-tensor entry of the offload scan strategies: the call in chunks on a GPU where
/// scan_host_chunks is not 0, else run_scan_offload_host. On failure (hk::Error as
/// run_scan_offload_host) the output may hold some chunks' results and the rest unchanged.
void run_scan_offload_host_chunked(const CumulativeCall& call, const ScanPlan& plan, int device);

}  // namespace hk::detail
