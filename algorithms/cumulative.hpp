// CumulativeSummation and CumulativeProduct: definition, validation, reference.
//
// For every line along `axis`, read in traversal order x(0..L-1):
//   inclusive: acc = x(0); y(0) = acc; acc = acc (+|*) x(q); y(q) = acc
//   exclusive: acc = identity; y(q) = acc; acc = acc (+|*) x(q)
// Accumulation types and combine functions: scan_types.hpp.
#pragma once

#include "hetkern/operators.hpp"

namespace hk::detail {

struct CumulativeCall {
  bool product = false;  // CumulativeProduct, else CumulativeSummation
  ConstTensor input;
  Tensor output;
  CumulativeOptions options;

  const char* op_name() const { return product ? "cumulative_product" : "cumulative_sum"; }
  std::int64_t axis_length() const { return input.desc.size(options.axis); }
  bool in_place() const;
};

/// Every rule of the spec; throws hk::Error and touches nothing when one is broken. On success
/// a negative axis (counting from the last, as in numpy) is replaced by axis + rank, so that
/// planners, kernels and tuning keys see only 0 <= axis < rank.
void validate(CumulativeCall& call);

/// The executable form of the specification: one line at a time, in traversal order.
void reference_cumulative(const CumulativeCall& call);

}  // namespace hk::detail
