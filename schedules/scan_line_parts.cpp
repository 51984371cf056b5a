// Cutting a call's lines into groups (scan_line_parts.hpp).
#include "schedules/scan_line_parts.hpp"

#include <algorithm>
#include <array>
#include <span>

namespace hk::detail {
namespace {

// `desc` with dimension `dim` of size `size`.
TensorDesc with_size(const TensorDesc& desc, int dim, std::int64_t size) {
  std::array<std::int64_t, max_rank> sizes{};
  std::copy(desc.sizes().begin(), desc.sizes().end(), sizes.begin());
  sizes[std::size_t(dim)] = size;
  return TensorDesc(desc.dtype(), std::span(sizes.data(), std::size_t(desc.rank())), desc.strides());
}

template <class T, class Byte> T sliced(T t, int dim, std::int64_t begin, std::int64_t size) {
  t.data = static_cast<Byte*>(t.data) + begin * t.desc.stride(dim) * std::int64_t(size_of(t.desc.dtype()));
  t.desc = with_size(t.desc, dim, size);
  return t;
}

}  // namespace

CumulativeCall lines_call(const CumulativeCall& call, const ScanLayout& s) {
  std::array<std::int64_t, max_rank> sizes{}, in_strides{}, out_strides{};
  for (int d = 0; d < s.rank; ++d) {
    sizes[std::size_t(d)] = s.sizes[d];
    in_strides[std::size_t(d)] = s.in_strides[d];
    out_strides[std::size_t(d)] = s.out_strides[d];
  }
  const int axis = call.options.axis;
  sizes[std::size_t(s.rank)] = s.length;
  in_strides[std::size_t(s.rank)] = call.input.desc.stride(axis);
  out_strides[std::size_t(s.rank)] = call.output.desc.stride(axis);
  const auto rank = std::size_t(s.rank + 1);
  CumulativeCall lines = call;
  lines.input.desc = TensorDesc(call.input.desc.dtype(), std::span(sizes.data(), rank), std::span(in_strides.data(), rank));
  lines.output.desc = TensorDesc(call.output.desc.dtype(), std::span(sizes.data(), rank), std::span(out_strides.data(), rank));
  lines.options.axis = s.rank;
  return lines;
}

Tensor slice(Tensor t, int dim, std::int64_t begin, std::int64_t size) { return sliced<Tensor, char>(t, dim, begin, size); }

ConstTensor slice(ConstTensor t, int dim, std::int64_t begin, std::int64_t size) {
  return sliced<ConstTensor, const char>(t, dim, begin, size);
}

CumulativeCall part_of(const CumulativeCall& lines, int dim, SplitRange r) {
  CumulativeCall part = lines;
  part.input = slice(lines.input, dim, r.begin, r.size());
  part.output = slice(lines.output, dim, r.begin, r.size());
  return part;
}

bool parts_own_their_spans(const TensorDesc& desc, int dim) {
  std::int64_t reach = 0;
  for (int d = 0; d < desc.rank(); ++d)
    if (d != dim) reach += (desc.size(d) - 1) * desc.stride(d);
  return desc.size(dim) == 1 || reach < desc.stride(dim);
}

}  // namespace hk::detail
