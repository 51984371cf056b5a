// The fold of one line on a device: what a part of a longer line adds to the carry of the parts
// after it (scan.split cutting lines across devices). Teams fold contiguous ranges of the line;
// the host combines their folds in order.
#include <omp.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/launch_shape.hpp"
#include "schedules/offload/scan_launch.hpp"
#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {
namespace {

// A team folds at least this many elements, with as many teams as fit an H100 at once: the fold
// reads device memory once, far less than the copy over the link that precedes it.
constexpr int fold_threads = 256;
constexpr std::int64_t fold_min_team_elements = 8192;
constexpr std::int64_t fold_teams_cap = 1056;

template <class Op, class T> void fold(int dev, const ScanLayout& s, const T* x, void* result) {
  using Acc = AccOf<T>;
  const LaunchShape shape =
      launch_shape(dev, std::clamp<std::int64_t>(s.length / fold_min_team_elements, 1, fold_teams_cap), fold_threads);
  const int teams = shape.teams, threads = shape.threads;
  // The folds of the line's `teams` parts, each by the team of its number modulo the teams formed:
  // in device memory on a GPU, in place on the host fallback.
  std::vector<Acc> team_folds(static_cast<std::size_t>(teams));
  const bool on_host = dev == omp_get_initial_device();
  std::optional<ScratchLease> scratch;
  if (!on_host) scratch.emplace(dev, team_folds.size() * sizeof(Acc));
  Acc* const folds = on_host ? team_folds.data() : static_cast<Acc*>(scratch->data());
  std::int64_t xo, yo;
  line_offsets(s, 0, xo, yo);
  const T* const line = x + xo;
  const std::int64_t length = s.length, step = s.in_step;
  const std::size_t shared = 32 * sizeof(Acc);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) is_device_ptr(line, folds) \
    firstprivate(length, step, teams) ompx_dyn_cgroup_mem(shared)
#pragma omp parallel
  for (std::int64_t part = omp_get_team_num(); part < teams; part += omp_get_num_teams()) {
    const std::int64_t begin = length * part / teams, end = length * (part + 1) / teams;
#ifdef __NVPTX__
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    Acc acc = inclusive_start<Op, Acc>();
    for (std::int64_t q = begin + t; q < end; q += n) acc = Op::apply(acc, widen(line[q * step]));
    const u32 lane = lane_id(), mask = warp_mask(n);
    const Acc warp = warp_inclusive<Op>(acc, lane, mask);
    auto* const warps = static_cast<Acc*>(llvm_omp_target_dynamic_shared_alloc());
    if (lane == 31u - u32(__builtin_clz(mask))) warps[t >> 5] = warp;
#pragma omp barrier
    if (t == 0) {
      Acc f = inclusive_start<Op, Acc>();
      for (int w = 0; w < (n + 31) / 32; ++w) f = Op::apply(f, warps[w]);
      folds[part] = f;
    }
    // The next part's warps rewrite warps[].
#pragma omp barrier
#else
    if (omp_get_thread_num() == 0) {
      Acc f = inclusive_start<Op, Acc>();
      for (std::int64_t q = begin; q < end; ++q) f = Op::apply(f, widen(line[q * step]));
      folds[part] = f;
    }
#endif
  }
  if (!on_host) copy_to_host(team_folds.data(), folds, 0, team_folds.size() * sizeof(Acc), dev);
  Acc total = inclusive_start<Op, Acc>();
  for (const Acc& f : team_folds) total = Op::apply(total, f);
  *static_cast<Acc*>(result) = total;
}

}  // namespace

void fold_line(const CumulativeCall& call, int device, void* result) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto*, auto op) {
    if (s.lines() != 1) throw Error(Errc::invalid_parameter, call.op_name(), "input", "internal: a fold takes one line");
    fold<decltype(op)>(device, s, x, result);
  });
}

}  // namespace hk::detail::offload::scan
