// scan.split: one call's lines shared between the offload devices and the host cores, at once.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hetkern/error.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/scan_host_common.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {
namespace {

// A device takes its lines in rounds of at most this many bytes of input and output together:
// lines that do not fit its memory at once still go through it, and its copies' blocks stay in
// the device scratch cache from round to round.
constexpr std::int64_t device_round_bytes = std::int64_t(1) << 30;
// The outermost line dimension is cut when it has this many lines, since its parts are compact
// spans (a device copies a part's whole span); otherwise the largest one, for finer shares.
constexpr std::int64_t min_cut_lines = 16;

// `desc` with dimension `dim` of size `size`.
TensorDesc with_size(const TensorDesc& desc, int dim, std::int64_t size) {
  std::array<std::int64_t, max_rank> sizes{};
  std::copy(desc.sizes().begin(), desc.sizes().end(), sizes.begin());
  sizes[std::size_t(dim)] = size;
  return TensorDesc(desc.dtype(), std::span(sizes.data(), std::size_t(desc.rank())), desc.strides());
}

// The call's lines as tensors of the layout's line dimensions, then the scanned axis: the same
// elements, with every independent line dimension that can be merged merged, so that the lines
// along any one dimension can be cut into contiguous groups.
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

// Elements [begin, begin + size) of dimension `dim` of a tensor.
template <class T> T slice(T t, int dim, std::int64_t begin, std::int64_t size) {
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(t.data)>>, const char, char>;
  t.data = static_cast<Byte*>(t.data) + begin * t.desc.stride(dim) * std::int64_t(size_of(t.desc.dtype()));
  t.desc = with_size(t.desc, dim, size);
  return t;
}

// Lines [r.begin, r.end) of dimension `dim` of a lines_call.
CumulativeCall part_of(const CumulativeCall& lines, int dim, SplitRange r) {
  CumulativeCall part = lines;
  part.input = slice(lines.input, dim, r.begin, r.size());
  part.output = slice(lines.output, dim, r.begin, r.size());
  return part;
}

int cut_dimension(const ScanLayout& s) {
  if (s.sizes[0] >= min_cut_lines) return 0;
  return int(std::max_element(s.sizes, s.sizes + s.rank) - s.sizes);
}

// Whether every part's span (what a device copies, and copies back whole) holds no other part's
// element: the other dimensions reach less far than one step along the cut one.
bool parts_own_their_spans(const TensorDesc& desc, int dim) {
  std::int64_t reach = 0;
  for (int d = 0; d < desc.rank(); ++d)
    if (d != dim) reach += (desc.size(d) - 1) * desc.stride(d);
  return desc.size(dim) == 1 || reach < desc.stride(dim);
}

// Copies every element of `from` to the same index of `to` (same sizes and type; none for a part
// without lines).
void copy_elements(const ConstTensor& from, const Tensor& to) {
  const TensorDesc& f = from.desc;
  if (f.element_count() == 0) return;
  const auto bytes = std::int64_t(size_of(f.dtype()));
  const int inner = f.rank() - 1;
  std::array<std::int64_t, max_rank> index{};
  for (;;) {
    std::int64_t fo = 0, to_offset = 0;
    for (int d = 0; d < inner; ++d) {
      fo += index[std::size_t(d)] * f.stride(d);
      to_offset += index[std::size_t(d)] * to.desc.stride(d);
    }
    for (std::int64_t i = 0; i < f.size(inner); ++i)
      std::memcpy(static_cast<char*>(to.data) + (to_offset + i * to.desc.stride(inner)) * bytes,
                  static_cast<const char*>(from.data) + (fo + i * f.stride(inner)) * bytes, std::size_t(bytes));
    int d = inner - 1;
    while (d >= 0 && ++index[std::size_t(d)] == f.size(d)) index[std::size_t(d--)] = 0;
    if (d < 0) return;
  }
}

// A packed host copy of a tensor.
struct PackedCopy {
  std::vector<std::byte> bytes;
  Tensor tensor;
  explicit PackedCopy(const TensorDesc& desc)
      : bytes(std::size_t(desc.element_count()) * size_of(desc.dtype())),
        tensor{TensorDesc(desc.dtype(), desc.sizes()), bytes.data()} {}
};

// A device's lines, in rounds, each through the offload strategy for its layout. Where a part's
// span holds other parts' elements, which the host writes meanwhile, the device's output goes to
// a packed copy that is then copied into place, and an in-place call's input comes from
// `gathered` (its lines taken before any part started).
void scan_on_device(const CumulativeCall& lines, int dim, SplitRange r, int device, const ConstTensor* gathered) {
  const std::int64_t lines_per_unit = lines.input.desc.element_count() / lines.input.desc.size(dim);
  const std::int64_t unit_bytes = lines_per_unit * scan_element_bytes(lines) * (lines.in_place() ? 1 : 2);
  const std::int64_t per_round = std::max<std::int64_t>(1, device_round_bytes / unit_bytes);
  const bool staged = !parts_own_their_spans(lines.output.desc, dim);
  for (std::int64_t b = r.begin; b < r.end; b += per_round) {
    const SplitRange round{b, std::min(r.end, b + per_round)};
    CumulativeCall part = part_of(lines, dim, round);
    if (!staged) {
      run_scan_offload_host(part, default_offload_scan_plan(part), device);
      continue;
    }
    if (gathered) part.input = slice(*gathered, dim, round.begin - r.begin, round.size());
    PackedCopy out(part.output.desc);
    const Tensor destination = part.output;
    part.output = out.tensor;
    run_scan_offload_host(part, default_offload_scan_plan(part), device);
    copy_elements(out.tensor, destination);
  }
}

}  // namespace

const ScanStrategy& scan_split() {
  static const ScanStrategy record{
      .name = "scan.split",
      .meaning =
          "host tensors: the independent lines cut into contiguous groups, gpu_share per mille of "
          "them to the offload devices (each copies its group over, in rounds of at most 1 GiB, and "
          "scans it with the offload strategy for its layout, driven by a host thread of its own) "
          "and the rest to the host cores (scan.parallel), all at once; every line is scanned "
          "whole by one of them",
      .params = split_params(
          "per mille of the lines the devices take (default 250: a device's part is bound by the "
          "copies over its link, slower than the host's memory)"),
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const SplitPlan plan = bound_split_plan(call.op_name(), p, 250);
        const DataType t = call.input.desc.dtype();
        if (plan.gpu_share > 0 && (t == DataType::float64 || t == DataType::bfloat16))
          throw Error(Errc::invalid_schedule, call.op_name(), p.schedule().to_string(),
                      "the devices' part takes float32, float16 and the integer types, not " +
                          std::string(name_of(t)) + "; gpu_share=0 or a host strategy scans it");
        return plan;
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& p) {
        const auto& plan = std::get<SplitPlan>(p);
        const ScanLayout s = make_scan_layout(call);
        const CumulativeCall lines = lines_call(call, s);
        const int dim = cut_dimension(s);
        // In place, a device part whose span the host writes into reads its lines from a copy.
        std::vector<PackedCopy> gathered;
        const std::vector<SplitRange> ranges = split_ranges(s.sizes[dim], plan);
        if (call.in_place() && !parts_own_their_spans(lines.output.desc, dim))
          for (int d = 0; d < plan.devices; ++d) {
            const CumulativeCall part = part_of(lines, dim, ranges[std::size_t(1 + d)]);
            copy_elements(part.input, gathered.emplace_back(part.input.desc).tensor);
          }
        run_split(
            plan, s.sizes[dim],
            [&](SplitRange r) {
              const CumulativeCall part = part_of(lines, dim, r);
              run_scan(part, plan_scan(part, Schedule("scan.parallel").set("threads", plan.threads)));
            },
            [&](int d, int device, SplitRange r) {
              const bool copied = std::size_t(d) < gathered.size();
              const ConstTensor copy = copied ? ConstTensor(gathered[std::size_t(d)].tensor) : ConstTensor{};
              scan_on_device(lines, dim, r, device, copied ? &copy : nullptr);
            });
      },
      .schedule = [](const ScanStrategyPlan& p) { return split_schedule("scan.split", std::get<SplitPlan>(p)); },
      .space = [](const CumulativeCall&) { return split_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
