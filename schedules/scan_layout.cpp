// Normalizing a cumulative call's layout for the host kernels.
#include "schedules/scan_layout.hpp"

#include <algorithm>
#include <cstdlib>

namespace hk::detail {

std::int64_t ScanLayout::lines() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= sizes[d];
  return n;
}

bool ScanLayout::lines_are_rows() const {
  return std::llabs(out_step) < out_strides[rank - 1] || inner_size() == 1;
}

void ScanLayout::outer_offsets(std::int64_t g, std::int64_t& in_off, std::int64_t& out_off) const {
  in_off = in_origin;
  out_off = out_origin;
  for (int d = rank - 2; d >= 0; --d) {
    const std::int64_t i = g % sizes[d];
    g /= sizes[d];
    in_off += i * in_strides[d];
    out_off += i * out_strides[d];
  }
}

ScanLayout make_scan_layout(const CumulativeCall& call) {
  const TensorDesc& in = call.input.desc;
  const TensorDesc& out = call.output.desc;
  const int axis = call.options.axis;
  ScanLayout s;
  s.length = in.size(axis);
  s.in_step = in.stride(axis);
  s.out_step = out.stride(axis);
  if (call.options.direction == Direction::decreasing) {
    s.in_origin = (s.length - 1) * s.in_step;
    s.out_origin = (s.length - 1) * s.out_step;
    s.in_step = -s.in_step;
    s.out_step = -s.out_step;
  }
  // Line dimensions of size > 1, ordered by output stride, largest first.
  int dims[max_rank];
  int n = 0;
  for (int d = 0; d < in.rank(); ++d)
    if (d != axis && in.size(d) > 1) dims[n++] = d;
  std::sort(dims, dims + n, [&](int a, int b) {
    return out.stride(a) != out.stride(b) ? out.stride(a) > out.stride(b) : a < b;
  });
  s.rank = 0;
  for (int i = 0; i < n; ++i) {
    const int d = dims[i];
    if (s.rank > 0) {
      // Merge into the previous dimension when both tensors step over it contiguously.
      const int p = s.rank - 1;
      if (s.in_strides[p] == in.stride(d) * in.size(d) &&
          s.out_strides[p] == out.stride(d) * out.size(d)) {
        s.sizes[p] *= in.size(d);
        s.in_strides[p] = in.stride(d);
        s.out_strides[p] = out.stride(d);
        continue;
      }
    }
    s.sizes[s.rank] = in.size(d);
    s.in_strides[s.rank] = in.stride(d);
    s.out_strides[s.rank] = out.stride(d);
    ++s.rank;
  }
  if (s.rank == 0) {
    s.rank = 1;
    s.sizes[0] = 1;
    s.in_strides[0] = s.out_strides[0] = 0;
  }
  return s;
}

bool lines_in_vectors(const ScanLayout& s, const void* x, const void* y, std::int64_t element_bytes) {
  const std::int64_t v = 16 / element_bytes;
  const int inner = s.rank - 1;
  if (s.in_strides[inner] != 1 || s.out_strides[inner] != 1 || s.sizes[inner] % v) return false;
  if (s.in_step % v || s.out_step % v || s.in_origin % v || s.out_origin % v) return false;
  if (reinterpret_cast<std::uintptr_t>(x) % 16 || reinterpret_cast<std::uintptr_t>(y) % 16) return false;
  for (int d = 0; d < inner; ++d)
    if ((s.sizes[d] > 1) && (s.in_strides[d] % v || s.out_strides[d] % v)) return false;
  return true;
}

std::int64_t lines_per_vector(const ScanLayout& s, const void* x, const void* y, std::int64_t element_bytes) {
  return lines_in_vectors(s, x, y, element_bytes) ? 16 / element_bytes : 1;
}

}  // namespace hk::detail
