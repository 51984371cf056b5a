// Host lowering of the cumulative schedules: tiled, parallel and blocked, over the SIMD kernels of
// the active instruction-set level for contiguous data and plain loops for strided data.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_schedules.hpp"

namespace hk::detail {
namespace {

template <class T, class Op> struct HostScan {
  using Acc = AccOf<T>;

  const ScanKernels<T, Op>& k;
  const ScanLayout& s;
  const T* x;
  T* y;
  bool exclusive;
  bool stream;

  // Every path reads an element before it writes the output at the same position, so they all
  // run in place when input and output are the same tensor.

  // Continues a line of n elements from `carry`; returns the carry after it.
  Acc line(const T* xl, T* yl, std::int64_t n, Acc carry) const {
    if (s.in_step == s.out_step && (s.in_step == 1 || s.in_step == -1))
      return k.row(xl, yl, n, carry, {exclusive, s.in_step < 0, stream});
    for (std::int64_t q = 0; q < n; ++q) {
      const Acc t = widen(xl[q * s.in_step]);
      if (exclusive) {
        yl[q * s.out_step] = narrow<T>(carry);
        carry = Op::apply(carry, t);
      } else {
        carry = Op::apply(carry, t);
        yl[q * s.out_step] = narrow<T>(carry);
      }
    }
    return carry;
  }

  // The fold of n elements of a line, starting from inclusive_start.
  Acc fold(const T* xl, std::int64_t n) const {
    if (s.in_step == 1) return k.fold(xl, n);
    if (s.in_step == -1) return k.fold(xl - (n - 1), n);
    Acc acc = inclusive_start<Op, Acc>();
    for (std::int64_t q = 0; q < n; ++q) acc = Op::apply(acc, widen(xl[q * s.in_step]));
    return acc;
  }

  // `width` neighbouring lines side by side with strided inner steps: per step along the axis,
  // the same element-wise arithmetic as the kernels' columns.
  void strided_columns(const T* xp, T* yp, std::int64_t width) const {
    Acc acc[max_scan_tile];
    std::fill(acc, acc + width, line_start<Op, Acc>(exclusive));
    const std::int64_t xi = s.in_strides[s.rank - 1], yi = s.out_strides[s.rank - 1];
    for (std::int64_t q = 0; q < s.length; ++q) {
      const T* xr = xp + q * s.in_step;
      T* yr = yp + q * s.out_step;
      for (std::int64_t j = 0; j < width; ++j) {
        const Acc t = widen(xr[j * xi]);
        if (exclusive) yr[j * yi] = narrow<T>(acc[j]);
        acc[j] = Op::apply(acc[j], t);
        if (!exclusive) yr[j * yi] = narrow<T>(acc[j]);
      }
    }
  }

  // Panel p: outer line group p / tiles_per_group, lines [j0, j0 + tile) of the inner dimension.
  void panel(std::int64_t p, std::int64_t tile) const {
    const std::int64_t tiles = (s.inner_size() + tile - 1) / tile;
    std::int64_t xo, yo;
    s.outer_offsets(p / tiles, xo, yo);
    const std::int64_t j0 = (p % tiles) * tile;
    const std::int64_t width = std::min(tile, s.inner_size() - j0);
    const std::int64_t xi = s.in_strides[s.rank - 1], yi = s.out_strides[s.rank - 1];
    xo += j0 * xi;
    yo += j0 * yi;
    if (s.lines_are_rows()) {
      for (std::int64_t j = 0; j < width; ++j)
        line(x + xo + j * xi, y + yo + j * yi, s.length, line_start<Op, Acc>(exclusive));
    } else if (xi == 1 && yi == 1) {
      k.columns(x + xo, y + yo, width, s.length, s.in_step, s.out_step, exclusive, stream);
    } else {
      strided_columns(x + xo, y + yo, width);
    }
  }

  std::int64_t panel_count(std::int64_t tile) const {
    return s.outer_lines() * ((s.inner_size() + tile - 1) / tile);
  }

  void tiled(std::int64_t tile) const {
    const std::int64_t panels = panel_count(tile);
    for (std::int64_t p = 0; p < panels; ++p) panel(p, tile);
  }

  void parallel(std::int64_t tile, int threads) const {
    const std::int64_t panels = panel_count(tile);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t p = 0; p < panels; ++p) panel(p, tile);
  }

  void line_offsets(std::int64_t line_index, std::int64_t& xo, std::int64_t& yo) const {
    s.outer_offsets(line_index / s.inner_size(), xo, yo);
    const std::int64_t j = line_index % s.inner_size();
    xo += j * s.in_strides[s.rank - 1];
    yo += j * s.out_strides[s.rank - 1];
  }

  // Units are the (line, block) pairs in order. A round hands each thread `per` consecutive
  // units, as many as fill `cache_bytes`: the thread folds them, a barrier, then rescans them
  // from their carries while they are still in its cache. Every thread derives the same carries
  // from the shared unit totals.
  void blocked(std::int64_t block, int threads, std::int64_t cache_bytes) const {
    const std::int64_t blocks = (s.length + block - 1) / block;
    const std::int64_t units = s.lines() * blocks;
    const std::int64_t per =
        std::max<std::int64_t>(1, cache_bytes / (block * std::int64_t(sizeof(T))));
    // Two rounds' totals: a thread may start the next round while another still reads these.
    const std::int64_t slots = std::min(units, per * threads);
    std::vector<Acc> totals(2 * std::size_t(slots));
#pragma omp parallel num_threads(threads)
    {
      const int team = omp_get_num_threads(), t = omp_get_thread_num();
      const std::int64_t round_units = std::min(units, per * team);
      Acc running = line_start<Op, Acc>(exclusive);
      for (std::int64_t first = 0, round = 0; first < units; first += round_units, ++round) {
        Acc* total = totals.data() + (round % 2) * slots;
        const std::int64_t mine = std::min(first + t * per, units);
        const std::int64_t end = std::min(mine + per, std::min(first + round_units, units));
        for (std::int64_t u = mine; u < end; ++u) total[u - first] = unit_fold(u, block, blocks);
#pragma omp barrier
        Acc carry = running;
        for (std::int64_t u = first; u < std::min(first + round_units, units); ++u) {
          if (u % blocks == 0) running = line_start<Op, Acc>(exclusive);
          if (u == mine) carry = running;
          running = Op::apply(running, total[u - first]);
        }
        for (std::int64_t u = mine; u < end; ++u) {
          carry = unit_scan(u, block, blocks, carry);
          if ((u + 1) % blocks == 0) carry = line_start<Op, Acc>(exclusive);
        }
      }
    }
  }

  // Unit u: block u % blocks of line u / blocks.
  std::int64_t unit_place(std::int64_t u, std::int64_t block, std::int64_t blocks,
                          std::int64_t& xo, std::int64_t& yo) const {
    line_offsets(u / blocks, xo, yo);
    const std::int64_t b = u % blocks;
    xo += b * block * s.in_step;
    yo += b * block * s.out_step;
    return std::min(block, s.length - b * block);
  }

  Acc unit_fold(std::int64_t u, std::int64_t block, std::int64_t blocks) const {
    std::int64_t xo, yo;
    const std::int64_t n = unit_place(u, block, blocks, xo, yo);
    return fold(x + xo, n);
  }

  Acc unit_scan(std::int64_t u, std::int64_t block, std::int64_t blocks, Acc carry) const {
    std::int64_t xo, yo;
    const std::int64_t n = unit_place(u, block, blocks, xo, yo);
    return line(x + xo, y + yo, n, carry);
  }
};

}  // namespace

void run_scan(const CumulativeCall& call, const ScanPlan& plan) {
  if (plan.kind == ScanPlan::Kind::reference) {
    reference_cumulative(call);
    return;
  }
  const ScanLayout s = make_scan_layout(call);
  const ScanKernelSet& kernels = scan_kernels(active_isa());
  const bool stream = plan.stream && !call.in_place();
  visit_scan_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      using Op = decltype(op);
      const HostScan<T, Op> h{kernels.get<T, Op>(),
                              s,
                              static_cast<const T*>(call.input.data),
                              static_cast<T*>(call.output.data),
                              call.options.exclusive,
                              stream};
      switch (plan.kind) {
        case ScanPlan::Kind::tiled: h.tiled(plan.tile); break;
        case ScanPlan::Kind::parallel: h.parallel(plan.tile, plan.threads); break;
        case ScanPlan::Kind::blocked: h.blocked(plan.block, plan.threads, scan_block_bytes); break;
        case ScanPlan::Kind::reference: break;
      }
    });
  });
}

}  // namespace hk::detail
