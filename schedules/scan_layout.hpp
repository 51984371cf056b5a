// A cumulative call reduced to what the host kernels walk: one scanned axis and up to seven
// independent "line" dimensions, coalesced and ordered so that the last one is the innermost.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"

namespace hk::detail {

struct ScanLayout {
  std::int64_t length = 1;                 // elements along the scanned axis
  std::int64_t in_step = 0, out_step = 0;  // element step along the traversal (negative: decreasing)
  std::int64_t in_origin = 0, out_origin = 0;  // element offset of each line's first traversed element
  int rank = 1;                            // line dimensions, at least one (size 1 when there are none)
  std::int64_t sizes[max_rank - 1] = {1};
  std::int64_t in_strides[max_rank - 1] = {0};
  std::int64_t out_strides[max_rank - 1] = {0};

  std::int64_t lines() const;
  std::int64_t inner_size() const { return sizes[rank - 1]; }
  std::int64_t outer_lines() const { return lines() / inner_size(); }
  /// True when the scanned axis is more contiguous in the output than the innermost line
  /// dimension: walk each line on its own. Otherwise walk a tile of lines side by side.
  bool lines_are_rows() const;
  /// Element offsets of outer line group g (0 <= g < outer_lines()) for input and output.
  void outer_offsets(std::int64_t g, std::int64_t& in_off, std::int64_t& out_off) const;
};

ScanLayout make_scan_layout(const CumulativeCall& call);

/// Whether 16-byte vectors of adjacent lines can be loaded and stored at every step of the
/// scanned axis, for elements of `element_bytes` at x and y: the innermost line dimension
/// contiguous in both tensors and a whole number of vectors long, every vector 16-byte aligned.
bool lines_in_vectors(const ScanLayout& s, const void* x, const void* y, std::int64_t element_bytes);
/// The lines in one 16-byte vector where lines_in_vectors holds, else 1.
std::int64_t lines_per_vector(const ScanLayout& s, const void* x, const void* y, std::int64_t element_bytes);

}  // namespace hk::detail
