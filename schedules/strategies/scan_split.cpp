// scan.split: one call's lines shared between the offload devices and the host cores, at once.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "hetkern/error.hpp"
#include "schedules/scan_host.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_line_parts.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/scan_host_chunks.hpp"
#include "schedules/strategies/scan_host_common.hpp"
#include "schedules/strategies/scan_host_default.hpp"
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

int cut_dimension(const ScanLayout& s) {
  if (s.sizes[0] >= min_cut_lines) return 0;
  return int(std::max_element(s.sizes, s.sizes + s.rank) - s.sizes);
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
      run_scan_offload_host_chunked(part, default_offload_scan_plan(part), device);
      continue;
    }
    if (gathered) part.input = slice(*gathered, dim, round.begin - r.begin, round.size());
    PackedCopy out(part.output.desc);
    const Tensor destination = part.output;
    part.output = out.tensor;
    run_scan_offload_host_chunked(part, default_offload_scan_plan(part), device);
    copy_elements(out.tensor, destination);
  }
}

// Line `index` of a lines_call (its line dimensions in order, the last fastest) as a call of rank 1.
CumulativeCall one_line(const CumulativeCall& lines, std::int64_t index) {
  const int axis = lines.options.axis;
  const TensorDesc &in = lines.input.desc, &out = lines.output.desc;
  std::int64_t xo = 0, yo = 0;
  for (int d = axis - 1; d >= 0; --d) {
    const std::int64_t i = index % in.size(d);
    index /= in.size(d);
    xo += i * in.stride(d);
    yo += i * out.stride(d);
  }
  const auto bytes = std::int64_t(size_of(in.dtype()));
  const std::int64_t length = in.size(axis), in_step = in.stride(axis), out_step = out.stride(axis);
  CumulativeCall line = lines;
  line.input = {TensorDesc(in.dtype(), std::span(&length, 1), std::span(&in_step, 1)),
                static_cast<const char*>(lines.input.data) + xo * bytes};
  line.output = {TensorDesc(out.dtype(), std::span(&length, 1), std::span(&out_step, 1)),
                 static_cast<char*>(lines.output.data) + yo * bytes};
  line.options.axis = 0;
  return line;
}

// The carries between the parts of one line, numbered in the order its scan traverses them: part
// k continues from the line's start combined with the folds of parts 0 to k - 1, in order, so
// that it waits for those folds only.
template <class Acc, class Op> class CarryChain {
 public:
  CarryChain(int parts, Acc start) : folds_(std::size_t(parts)), carries_(std::size_t(parts)), start_(start) {}

  void post(int k, Acc fold) {
    const std::lock_guard<std::mutex> lock(mutex_);
    folds_[std::size_t(k)] = fold;
    posted_.notify_all();
  }

  // The carry of part k, valid until the chain ends; null once a part has failed.
  const Acc* carry(int k) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto before = folds_.begin() + k;
    posted_.wait(lock, [&] { return failed_ || std::all_of(folds_.begin(), before, [](const auto& f) { return f.has_value(); }); });
    if (failed_) return nullptr;
    Acc c = start_;
    for (auto f = folds_.begin(); f != before; ++f) c = Op::apply(c, **f);
    carries_[std::size_t(k)] = c;
    return &carries_[std::size_t(k)];
  }

  // A part failed or never started: the parts waiting for its fold end without scanning.
  void fail() {
    const std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    posted_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable posted_;
  std::vector<std::optional<Acc>> folds_;
  std::vector<Acc> carries_;
  const Acc start_;
  bool failed_ = false;
};

// One line cut along its axis into the plan's parts at once (split_ranges), every part but the
// first continuing from the folds of the parts before it: each part except the last folds its
// elements first (on a device, once they are in its memory), and each except the first then waits
// for its carry. The host's part is scanned by scan.blocked from its carry.
template <class T, class Op> void scan_line_in_parts(const CumulativeCall& line, const SplitPlan& plan) {
  using Acc = AccOf<T>;
  const std::int64_t length = line.input.desc.size(0);
  const std::vector<SplitRange> ranges = split_ranges(length, plan, split_speeds(plan, SpreadWork::scan));
  // Part numbers in traversal order, by the ranges' index (0 the host's, 1 + d device d's).
  std::vector<int> order;
  for (int i = 0; i < int(ranges.size()); ++i)
    if (ranges[std::size_t(i)].size() > 0) order.push_back(i);
  const bool backward = line.options.direction == Direction::decreasing;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return (ranges[std::size_t(a)].begin < ranges[std::size_t(b)].begin) != backward;
  });
  std::vector<int> part_number(ranges.size());
  for (int k = 0; k < int(order.size()); ++k) part_number[std::size_t(order[std::size_t(k)])] = k;
  const int parts = int(order.size());
  CarryChain<Acc, Op> chain(parts, line_start<Op, Acc>(line.options.exclusive));
  const auto failing = [&](auto&& part) {
    try {
      part();
    } catch (...) {
      chain.fail();
      throw;
    }
  };
  run_split(
      plan, ranges,
      [&](SplitRange r) {
        failing([&] {
          const int k = part_number[0];
          const CumulativeCall part = part_of(line, 0, r);
          if (k + 1 < parts) {
            Acc fold;
            fold_line_parallel(part, plan.threads, &fold);
            chain.post(k, fold);
          }
          const Acc* const carry = chain.carry(k);
          if (!carry) return;
          const auto blocked =
              std::get<BlockedScanPlan>(plan_scan(part, Schedule("scan.blocked").set("threads", plan.threads)));
          scan_blocks_parallel(part, blocked.block, blocked.threads, blocked.stream,
                               blocked.block * scan_element_bytes(part), carry);
        });
      },
      [&](int d, int device, SplitRange r) {
        failing([&] {
          const int k = part_number[std::size_t(1 + d)];
          run_scan_line_part_host(part_of(line, 0, r), device, k + 1 < parts, [&](const void* fold) -> const void* {
            if (fold) chain.post(k, *static_cast<const Acc*>(fold));
            return chain.carry(k);
          });
        });
      },
      [&] { chain.fail(); });
}

}  // namespace

const ScanStrategy& scan_split() {
  static const ScanStrategy record{
      .name = "scan.split",
      .meaning =
          "host tensors: the independent lines cut into contiguous groups, gpu_share per mille of "
          "them to the offload devices (shared by their measured speeds at scans of host tensors; "
          "each copies its group over, in rounds of at most 1 GiB, and "
          "scans it with the offload strategy for its layout, driven by a host thread of its own) "
          "and the rest to the host cores (the host's default strategy for that part and their "
          "count: scan.blocked for a few long lines), all at once; with fewer lines than "
          "parts, each line is cut along its axis in the same shares instead, every part but the "
          "first continuing from the folds of those before it (a device's part, copied over whole, "
          "must fit its memory; the host's runs scan.blocked)",
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
        // Fewer lines than parts: each line in turn is cut along its axis instead.
        const int parts = (plan.gpu_share > 0 ? plan.devices : 0) + (plan.gpu_share < 1000 ? 1 : 0);
        if (s.lines() < parts) {
          visit_scan_type(call.input.desc.dtype(), [&](auto t) {
            visit_combine(call.product, [&](auto op) {
              for (std::int64_t i = 0; i < s.lines(); ++i)
                scan_line_in_parts<decltype(t), decltype(op)>(one_line(lines, i), plan);
            });
          });
          return;
        }
        const int dim = cut_dimension(s);
        // In place, a device part whose span the host writes into reads its lines from a copy.
        std::vector<PackedCopy> gathered;
        const std::vector<SplitRange> ranges = split_ranges(s.sizes[dim], plan, split_speeds(plan, SpreadWork::scan));
        if (call.in_place() && !parts_own_their_spans(lines.output.desc, dim))
          for (int d = 0; d < plan.devices; ++d) {
            const CumulativeCall part = part_of(lines, dim, ranges[std::size_t(1 + d)]);
            copy_elements(part.input, gathered.emplace_back(part.input.desc).tensor);
          }
        run_split(
            plan, ranges,
            [&](SplitRange r) {
              const CumulativeCall part = part_of(lines, dim, r);
              run_scan(part, default_host_scan_plan(part, plan.threads));
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
