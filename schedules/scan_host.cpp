// The host walks of the cumulative strategies (tiled, parallel and blocked), over the SIMD kernels
// of the active instruction-set level for contiguous data and plain loops for strided data.
#include "schedules/scan_host.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "hetkern/info.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

// How far ahead of its reads a contiguous line requests its input (RowMode::lookahead_bytes):
// far enough to cover the memory's latency at the copy's bandwidth, near enough that the lines
// arrive in L2 before they are evicted again (docs/performance.md).
constexpr std::int64_t row_lookahead_bytes = 16 * 1024;

// Polls of a group's state before a thread stops waiting and folds the group itself: long
// enough for a running owner to fold a block from memory, short against the time slice for which
// a loaded machine parks a thread.
constexpr int polls_before_folding = 1 << 12;

enum GroupState : int { nothing_published = 0, aggregate_published = 1, inclusive_published = 2 };

template <class T, class Op> struct HostScan {
  using Acc = AccOf<T>;

  const ScanKernels<T, Op>& k;
  const ScanLayout& s;
  const T* x;
  T* y;
  bool exclusive;
  bool stream;
  Acc start;  // what blocked()'s lines continue from: line_start, or the carry of a longer line's part

  // Every path reads an element before it writes the output at the same position, so they all
  // run in place when input and output are the same tensor.

  // Continues a line of n elements from `carry`; returns the carry after it. `ahead`: see
  // RowMode::prefetch.
  Acc line(const T* xl, T* yl, std::int64_t n, Acc carry, const T* ahead = nullptr) const {
    if (s.in_step == s.out_step && (s.in_step == 1 || s.in_step == -1))
      return k.row(xl, yl, n, carry, {exclusive, s.in_step < 0, stream, ahead, row_lookahead_bytes});
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

  // What blocked() publishes about a group, on a cache line of its own: the thread polling one
  // group would otherwise steal the line from the thread publishing the next.
  struct alignas(64) GroupEnd {
    Acc aggregate{};  // what the group adds to the carry it receives
    Acc inclusive{};  // the carry at its end
    std::atomic<int> state{nothing_published};
  };

  // The fold of a group's unit totals: its end carry when a line starts in it (`independent`),
  // else what it adds to the carry it receives.
  struct GroupSummary {
    Acc value;
    bool independent;
  };

  GroupSummary summary(const Acc* totals, std::int64_t u0, std::int64_t u1, std::int64_t blocks) const {
    GroupSummary r{inclusive_start<Op, Acc>(), false};
    for (std::int64_t u = u0; u < u1; ++u) {
      if (u % blocks == 0) r = {start, true};
      r.value = Op::apply(r.value, totals[u - u0]);
    }
    return r;
  }

  // The carry at the end of group g - 1, from the published states of the groups before it
  // (decoupled look-back): the nearest inclusive carry, then the aggregates after it in order,
  // so the result does not depend on who published what. A group whose owner publishes nothing
  // for a while (parked by a loaded machine) is folded here, with the owner's arithmetic.
  Acc look_back(std::vector<GroupEnd>& ends, std::int64_t g, std::int64_t per, std::int64_t units,
                std::int64_t block, std::int64_t blocks, std::vector<Acc>& totals,
                std::vector<Acc>& pending) const {
    pending.clear();
    Acc base{};
    for (std::int64_t h = g - 1;; --h) {
      const GroupEnd& e = ends[std::size_t(h)];
      int state = e.state.load(std::memory_order_acquire);
      for (int polls = 0; state == nothing_published && polls < polls_before_folding; ++polls) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
        state = e.state.load(std::memory_order_acquire);
      }
      if (state == inclusive_published) {
        base = e.inclusive;
        break;
      }
      if (state == aggregate_published) {
        pending.push_back(e.aggregate);
        continue;
      }
      const std::int64_t u0 = h * per, u1 = std::min(u0 + per, units);
      for (std::int64_t u = u0; u < u1; ++u) totals[std::size_t(u - u0)] = unit_fold(u, block, blocks);
      const GroupSummary folded = summary(totals.data(), u0, u1, blocks);
      if (folded.independent) {
        base = folded.value;
        break;
      }
      pending.push_back(folded.value);
    }
    for (auto a = pending.rbegin(); a != pending.rend(); ++a) base = Op::apply(base, *a);
    return base;
  }

  // Units are the (line, block) pairs in order, in groups of `per` consecutive units (as many as
  // fill `cache_bytes`) that the threads claim in order. A thread folds its group, publishes its
  // aggregate, looks back for the carry it receives, publishes its end carry, then rescans the
  // group while it is still in its cache. No barrier, and no thread waits for another to be
  // scheduled: the threads drift apart, so one reads memory while another writes. The rescan,
  // bound by its arithmetic, also pulls the thread's likely next group into L2, so that reading
  // it overlaps the rescan and its fold runs from L2.
  void blocked(std::int64_t block, int threads, std::int64_t cache_bytes) const {
    const std::int64_t blocks = (s.length + block - 1) / block;
    const std::int64_t units = s.lines() * blocks;
    const std::int64_t per = std::clamp<std::int64_t>(
        cache_bytes / (block * std::int64_t(sizeof(T))), 1, units);
    const std::int64_t groups = (units + per - 1) / per;
    std::vector<GroupEnd> ends(static_cast<std::size_t>(groups));
    std::atomic<std::int64_t> next_group{0};
#pragma omp parallel num_threads(threads)
    {
      const int team = omp_get_num_threads();
      std::vector<Acc> carries(static_cast<std::size_t>(per)), totals(static_cast<std::size_t>(per));
      std::vector<Acc> pending;
      for (std::int64_t g = next_group.fetch_add(1); g < groups; g = next_group.fetch_add(1)) {
        const std::int64_t u0 = g * per, u1 = std::min(u0 + per, units);
        for (std::int64_t u = u0; u < u1; ++u) carries[std::size_t(u - u0)] = unit_fold(u, block, blocks);
        GroupEnd& end = ends[std::size_t(g)];
        const GroupSummary own = summary(carries.data(), u0, u1, blocks);
        if (own.independent) {
          end.inclusive = own.value;
          end.state.store(inclusive_published, std::memory_order_release);
        } else {
          end.aggregate = own.value;
          end.state.store(aggregate_published, std::memory_order_release);
        }
        Acc running = start;
        if (u0 % blocks != 0) running = look_back(ends, g, per, units, block, blocks, totals, pending);
        if (!own.independent) {
          end.inclusive = Op::apply(running, own.value);
          end.state.store(inclusive_published, std::memory_order_release);
        }
        for (std::int64_t u = u0; u < u1; ++u) {
          if (u % blocks == 0) running = start;
          const Acc total = carries[std::size_t(u - u0)];
          carries[std::size_t(u - u0)] = running;
          running = Op::apply(running, total);
        }
        for (std::int64_t u = u0; u < u1; ++u)
          unit_scan(u, block, blocks, carries[std::size_t(u - u0)], u + team * per);
      }
    }
  }

  // The fold of the call's one line: `threads` threads fold a piece each, combined in order.
  Acc line_fold(int threads) const {
    std::int64_t xo, yo;
    line_offsets(0, xo, yo);
    std::vector<Acc> folds(static_cast<std::size_t>(threads));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int i = 0; i < threads; ++i) {
      const std::int64_t b = s.length * i / threads, e = s.length * (i + 1) / threads;
      folds[std::size_t(i)] = fold(x + xo + b * s.in_step, e - b);
    }
    Acc total = inclusive_start<Op, Acc>();
    for (const Acc& f : folds) total = Op::apply(total, f);
    return total;
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

  // Scans unit u, pulling unit `next` (when there is one) towards L2 meanwhile.
  void unit_scan(std::int64_t u, std::int64_t block, std::int64_t blocks, Acc carry,
                 std::int64_t next) const {
    std::int64_t xo, yo;
    const std::int64_t n = unit_place(u, block, blocks, xo, yo);
    const T* ahead = nullptr;
    if (next < s.lines() * blocks && (s.in_step == 1 || s.in_step == -1)) {
      std::int64_t nxo, nyo;
      const std::int64_t nn = unit_place(next, block, blocks, nxo, nyo);
      // The lowest address of the next unit; the row pulls as many bytes as it reads itself.
      ahead = x + nxo - (s.in_step < 0 ? nn - 1 : 0);
    }
    line(x + xo, y + yo, n, carry, ahead);
  }
};

}  // namespace

namespace {

// Runs `walk` on the HostScan of the call's element type and combine function.
template <class Walk>
void with_host_scan(const CumulativeCall& call, bool stream, Walk&& walk, const void* carry = nullptr) {
  const ScanLayout s = make_scan_layout(call);
  const ScanKernelSet& kernels = scan_kernels(active_isa());
  visit_scan_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      using Op = decltype(op);
      using Acc = AccOf<T>;
      const bool exclusive = call.options.exclusive;
      walk(HostScan<T, Op>{kernels.get<T, Op>(), s, static_cast<const T*>(call.input.data),
                           static_cast<T*>(call.output.data), exclusive, stream && !call.in_place(),
                           line_start_value<Op, Acc>(carry, exclusive)});
    });
  });
}

}  // namespace

void scan_tiles(const CumulativeCall& call, std::int64_t tile, bool stream) {
  with_host_scan(call, stream, [&](const auto& h) { h.tiled(tile); });
}

void scan_tiles_parallel(const CumulativeCall& call, std::int64_t tile, int threads, bool stream) {
  with_host_scan(call, stream, [&](const auto& h) { h.parallel(tile, threads); });
}

void scan_blocks_parallel(const CumulativeCall& call, std::int64_t block, int threads, bool stream,
                          std::int64_t cache_bytes, const void* carry) {
  with_host_scan(call, stream, [&](const auto& h) { h.blocked(block, threads, cache_bytes); }, carry);
}

void fold_line_parallel(const CumulativeCall& call, int threads, void* fold) {
  with_host_scan(call, false, [&](const auto& h) {
    using Acc = decltype(h.start);
    *static_cast<Acc*>(fold) = h.line_fold(threads);
  });
}

}  // namespace hk::detail
