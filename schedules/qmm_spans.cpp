// The byte spans of a matmul's operands. In libhetkern, not the GPU plugin: the dispatcher asks
// whether host tensors are page-locked for every large call, GPU or not.
#include <cstddef>
#include <cstdint>

#include "schedules/qmm_offload.hpp"

namespace hk::detail {
namespace {

using i64 = std::int64_t;

// Bytes from a matrix's first element to its last, inclusive (strides are non-negative).
i64 span_bytes(const std::int64_t (&batch)[2], const std::int64_t (&batch_stride)[2], i64 rows,
               i64 row_stride, i64 cols, i64 col_stride) {
  return (batch[0] - 1) * batch_stride[0] + (batch[1] - 1) * batch_stride[1] +
         (rows - 1) * row_stride + (cols - 1) * col_stride + 1;
}

}  // namespace

QmmSpans qmm_spans(const QmmProblem& p) {
  return {std::size_t(span_bytes(p.batch, p.a.batch_stride, p.M, p.a.row_stride, p.K, p.a.col_stride)),
          std::size_t(span_bytes(p.batch, p.b.batch_stride, p.K, p.b.row_stride, p.N, p.b.col_stride)),
          std::size_t(span_bytes(p.batch, p.out_batch_stride, p.M, p.out_row_stride, p.N, p.out_col_stride)),
          p.batch[0] * p.batch[1] * p.M * p.N};
}

}  // namespace hk::detail
