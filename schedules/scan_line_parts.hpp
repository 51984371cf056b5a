// A call's independent lines as groups: the lines as tensors of their line dimensions (merged
// where they can be) and then the scanned axis, cut into contiguous groups along one dimension.
// What the spreading and the chunked strategies cut calls with.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {

/// The call's lines as tensors of the layout's line dimensions, then the scanned axis: the same
/// elements, with every independent line dimension that can be merged merged, so that the lines
/// along any one dimension can be cut into contiguous groups.
CumulativeCall lines_call(const CumulativeCall& call, const ScanLayout& s);

/// Elements [begin, begin + size) of dimension `dim` of a tensor.
Tensor slice(Tensor t, int dim, std::int64_t begin, std::int64_t size);
ConstTensor slice(ConstTensor t, int dim, std::int64_t begin, std::int64_t size);

/// Lines [r.begin, r.end) of dimension `dim` of a lines_call.
CumulativeCall part_of(const CumulativeCall& lines, int dim, SplitRange r);

/// Whether each group of lines along `dim` has a span (first to last byte) that holds no other
/// group's element: the other dimensions reach less far than one step along it.
bool parts_own_their_spans(const TensorDesc& desc, int dim);

}  // namespace hk::detail
