// Host lowering of the cumulative schedules: tiled, parallel and blocked.
#include <algorithm>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_schedules.hpp"

namespace hk::detail {
namespace {

template <class T, class Op> struct ScanKernels {
  using Acc = AccOf<T>;
  static constexpr std::int64_t max_tile = 4096;

  // Every kernel reads an element before it writes the output at the same position, so they
  // all run in place when input and output are the same tensor.

  static void scan_line(const T* x, T* y, std::int64_t n, std::int64_t sx, std::int64_t sy,
                   bool exclusive) {
    if (exclusive) {
      line_from(x, y, n, sx, sy, Op::template identity<Acc>(), true);
      return;
    }
    Acc acc = widen(x[0]);
    y[0] = narrow<T>(acc);
    for (std::int64_t q = 1; q < n; ++q) {
      acc = Op::apply(acc, widen(x[q * sx]));
      y[q * sy] = narrow<T>(acc);
    }
  }

  // Continues a line from a carried accumulator (the fold of everything before x[0]).
  static void line_from(const T* x, T* y, std::int64_t n, std::int64_t sx, std::int64_t sy,
                        Acc acc, bool exclusive) {
    for (std::int64_t q = 0; q < n; ++q) {
      const Acc t = widen(x[q * sx]);
      if (exclusive) {
        y[q * sy] = narrow<T>(acc);
        acc = Op::apply(acc, t);
      } else {
        acc = Op::apply(acc, t);
        y[q * sy] = narrow<T>(acc);
      }
    }
  }

  // Fold of a non-empty run, starting from its first element (keeps -0.0 sums exact).
  static Acc fold(const T* x, std::int64_t n, std::int64_t sx) {
    Acc acc = widen(x[0]);
    for (std::int64_t q = 1; q < n; ++q) acc = Op::apply(acc, widen(x[q * sx]));
    return acc;
  }

  // `width` neighbouring lines side by side: per step along the axis, one contiguous run.
  template <bool Unit>
  static void columns(const T* x, T* y, const ScanLayout& s, std::int64_t width, bool exclusive) {
    Acc acc[max_tile];
    const std::int64_t xi = Unit ? 1 : s.in_strides[s.rank - 1];
    const std::int64_t yi = Unit ? 1 : s.out_strides[s.rank - 1];
    if (exclusive) {
      std::fill(acc, acc + width, Op::template identity<Acc>());
    } else {
      for (std::int64_t j = 0; j < width; ++j) {
        acc[j] = widen(x[j * xi]);
        y[j * yi] = narrow<T>(acc[j]);
      }
    }
    for (std::int64_t q = exclusive ? 0 : 1; q < s.length; ++q) {
      const T* xr = x + q * s.in_step;
      T* yr = y + q * s.out_step;
      for (std::int64_t j = 0; j < width; ++j) {
        const Acc t = widen(xr[j * xi]);
        if (exclusive) {
          yr[j * yi] = narrow<T>(acc[j]);
          acc[j] = Op::apply(acc[j], t);
        } else {
          acc[j] = Op::apply(acc[j], t);
          yr[j * yi] = narrow<T>(acc[j]);
        }
      }
    }
  }

  // Panel p: outer line group p / tiles_per_group, lines [j0, j0 + tile) of the inner dimension.
  static void panel(const T* x, T* y, const ScanLayout& s, std::int64_t p, std::int64_t tile,
                    bool exclusive) {
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
        scan_line(x + xo + j * xi, y + yo + j * yi, s.length, s.in_step, s.out_step, exclusive);
    } else if (xi == 1 && yi == 1) {
      columns<true>(x + xo, y + yo, s, width, exclusive);
    } else {
      columns<false>(x + xo, y + yo, s, width, exclusive);
    }
  }

  static std::int64_t panel_count(const ScanLayout& s, std::int64_t tile) {
    return s.outer_lines() * ((s.inner_size() + tile - 1) / tile);
  }

  static void tiled(const T* x, T* y, const ScanLayout& s, std::int64_t tile, bool exclusive) {
    const std::int64_t panels = panel_count(s, tile);
    for (std::int64_t p = 0; p < panels; ++p) panel(x, y, s, p, tile, exclusive);
  }

  static void parallel(const T* x, T* y, const ScanLayout& s, std::int64_t tile, int threads,
                       bool exclusive) {
    const std::int64_t panels = panel_count(s, tile);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t p = 0; p < panels; ++p) panel(x, y, s, p, tile, exclusive);
  }

  static void line_offsets(const ScanLayout& s, std::int64_t line, std::int64_t& xo,
                           std::int64_t& yo) {
    s.outer_offsets(line / s.inner_size(), xo, yo);
    const std::int64_t j = line % s.inner_size();
    xo += j * s.in_strides[s.rank - 1];
    yo += j * s.out_strides[s.rank - 1];
  }

  static void blocked(const T* x, T* y, const ScanLayout& s, std::int64_t block, int threads,
                      bool exclusive) {
    const std::int64_t lines = s.lines();
    const std::int64_t blocks = (s.length + block - 1) / block;
    // carry[line * blocks + b]: the fold of blocks 0..b-1 of that line (slot 0 unused when
    // inclusive, the identity when exclusive).
    std::vector<Acc> carry(std::size_t(lines * blocks));
    const std::int64_t totals = lines * (blocks - 1);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < totals; ++i) {
        const std::int64_t line = i / (blocks - 1), b = i % (blocks - 1);
        std::int64_t xo, yo;
        line_offsets(s, line, xo, yo);
        const std::int64_t n = std::min(block, s.length - b * block);
        carry[line * blocks + b + 1] = fold(x + xo + b * block * s.in_step, n, s.in_step);
      }
#pragma omp for schedule(static)
      for (std::int64_t line = 0; line < lines; ++line) {
        Acc* c = carry.data() + line * blocks;
        if (exclusive) c[0] = Op::template identity<Acc>();
        for (std::int64_t b = exclusive ? 1 : 2; b < blocks; ++b) c[b] = Op::apply(c[b - 1], c[b]);
      }
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < lines * blocks; ++i) {
        const std::int64_t line = i / blocks, b = i % blocks;
        std::int64_t xo, yo;
        line_offsets(s, line, xo, yo);
        const std::int64_t n = std::min(block, s.length - b * block);
        const T* xb = x + xo + b * block * s.in_step;
        T* yb = y + yo + b * block * s.out_step;
        if (b == 0)
          scan_line(xb, yb, n, s.in_step, s.out_step, exclusive);
        else
          line_from(xb, yb, n, s.in_step, s.out_step, carry[i], exclusive);
      }
    }
  }
};

}  // namespace

void run_scan(const CumulativeCall& call, const ScanPlan& plan) {
  if (plan.kind == ScanPlan::Kind::reference) {
    reference_cumulative(call);
    return;
  }
  const ScanLayout s = make_scan_layout(call);
  const bool exclusive = call.options.exclusive;
  visit_scan_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      using K = ScanKernels<T, decltype(op)>;
      const auto* x = static_cast<const T*>(call.input.data);
      auto* y = static_cast<T*>(call.output.data);
      switch (plan.kind) {
        case ScanPlan::Kind::tiled: K::tiled(x, y, s, plan.tile, exclusive); break;
        case ScanPlan::Kind::parallel: K::parallel(x, y, s, plan.tile, plan.threads, exclusive); break;
        case ScanPlan::Kind::blocked: K::blocked(x, y, s, plan.block, plan.threads, exclusive); break;
        case ScanPlan::Kind::reference: break;
      }
    });
  });
}

}  // namespace hk::detail
