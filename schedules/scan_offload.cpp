// Offload lowering of the cumulative schedules: OpenMP `target` kernels for rows (a team per
// line), columns (a thread per line and axis chunk) and one long line (single-pass chained scan
// with look-back). Compiled with the offload flags; on the host fallback the same target regions
// run on host threads, so nothing here assumes the teams or threads it asked for.
#include "schedules/scan_offload.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <bit>

#include "algorithms/scan_types.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "runtime/device_memory.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t default_teams_cap = 1056;  // 8 teams on each of an H100's 132 SMs
constexpr std::int64_t column_lines_single_pass = 16384;
constexpr std::int64_t column_target_threads = std::int64_t(1) << 18;
constexpr std::int64_t column_min_chunk = 64;
constexpr std::int64_t columns_teams_min = 264;  // 2 teams on each of an H100's 132 SMs

// Element offsets of line `line` (innermost line dimension fastest) for input and output.
inline void line_offsets(const ScanLayout& s, std::int64_t line, std::int64_t& xo, std::int64_t& yo) {
  xo = s.in_origin;
  yo = s.out_origin;
  for (int d = s.rank - 1; d >= 0; --d) {
    const std::int64_t i = line % s.sizes[d];
    line /= s.sizes[d];
    xo += i * s.in_strides[d];
    yo += i * s.out_strides[d];
  }
}

inline std::int64_t padded(std::int64_t k) { return k + k / 32; }

// The scan of one staged tile by the threads of a team, inside their parallel region. tile[]
// holds m elements (padded positions); each thread owns a contiguous run of them; parts[] is
// team-local scratch for one accumulator per thread. `carry` is the fold of everything before
// the tile (line_start for the first); returns the tile's total fold (from inclusive_start),
// which every thread receives. When `carry_of` is given, thread 0 calls it with the tile's fold
// to obtain the carry (the chained scan's look-back) and the team waits for it.
template <class T, class Op, class CarryOf>
AccOf<T> scan_tile(T* tile, AccOf<T>* parts, AccOf<T>* shared_carry, std::int64_t m,
                   AccOf<T> carry, bool exclusive, CarryOf&& carry_of) {
  using Acc = AccOf<T>;
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const std::int64_t per = (m + n - 1) / n;
  const std::int64_t a = std::min<std::int64_t>(t * per, m), b = std::min(a + per, m);
  Acc f = inclusive_start<Op, Acc>();
  for (std::int64_t k = a; k < b; ++k) f = Op::apply(f, widen(tile[padded(k)]));
  parts[t] = f;
#pragma omp barrier
  for (int off = 1; off < n; off <<= 1) {
    const Acc v = t >= off ? Op::apply(parts[t - off], parts[t]) : parts[t];
#pragma omp barrier
    parts[t] = v;
#pragma omp barrier
  }
  const Acc total = parts[n - 1];
  if (carry_of(t, total, carry)) {
    if (t == 0) *shared_carry = carry;
#pragma omp barrier
    carry = *shared_carry;
  }
  Acc c = t == 0 ? carry : Op::apply(carry, parts[t - 1]);
  for (std::int64_t k = a; k < b; ++k) {
    T& e = tile[padded(k)];
    const Acc v = widen(e);
    if (exclusive) {
      e = narrow<T>(c);
      c = Op::apply(c, v);
    } else {
      c = Op::apply(c, v);
      e = narrow<T>(c);
    }
  }
#pragma omp barrier
  return total;
}

// Tile loads and stores: consecutive threads on consecutive elements. A thread issues a batch of
// loads before it writes any to team memory, so that it keeps several requests in flight.
constexpr int tile_load_batch = 8;

template <class T>
void load_tile(T* tile, const T* x, std::int64_t step, std::int64_t m) {
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  for (std::int64_t k0 = t; k0 < m; k0 += std::int64_t(tile_load_batch) * n) {
    T v[tile_load_batch];
    for (int j = 0; j < tile_load_batch; ++j)
      if (k0 + j * n < m) v[j] = x[(k0 + j * n) * step];
    for (int j = 0; j < tile_load_batch; ++j)
      if (k0 + j * n < m) tile[padded(k0 + j * n)] = v[j];
  }
#pragma omp barrier
}

template <class T>
void store_tile(const T* tile, T* y, std::int64_t step, std::int64_t m) {
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  for (std::int64_t k = t; k < m; k += n) y[k * step] = tile[padded(k)];
#pragma omp barrier
}

struct NoLookBack {
  template <class Acc> bool operator()(int, Acc, Acc&) const { return false; }
};

template <class T, class Op>
void rows(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  using Acc = AccOf<T>;
  const std::int64_t lines = s.lines(), width = std::int64_t(plan.threads) * plan.items;
  const int threads = plan.threads;
#pragma omp target teams distribute num_teams(plan.teams) thread_limit(threads) device(dev) \
    is_device_ptr(x, y) firstprivate(s, width, exclusive)
  for (std::int64_t line = 0; line < lines; ++line) {
    T tile[offload_tile_bytes / sizeof(T)];
    Acc parts[offload_max_threads];
    Acc shared_carry;
    std::int64_t xo, yo;
    line_offsets(s, line, xo, yo);
#pragma omp parallel num_threads(threads)
    {
      Acc carry = line_start<Op, Acc>(exclusive);
      for (std::int64_t q = 0; q < s.length; q += width) {
        const std::int64_t m = std::min(width, s.length - q);
        load_tile(tile, x + xo + q * s.in_step, s.in_step, m);
        const Acc total =
            scan_tile<T, Op>(tile, parts, &shared_carry, m, carry, exclusive, NoLookBack{});
        carry = Op::apply(carry, total);
        store_tile(tile, y + yo + q * s.out_step, s.out_step, m);
      }
    }
  }
}

// Folds or scans `count` elements of a line from `acc`. Loads go out a batch ahead of their use:
// the next batch is requested before the current one is combined and stored, so that a thread
// keeps two batches of requests in flight. Reading ahead is safe in place too: a thread reads
// and writes only its own line.
template <class T, class Op, bool Scan>
AccOf<T> column_run(const T* x, std::int64_t in_step, T* y, std::int64_t out_step,
                    std::int64_t count, AccOf<T> acc, bool exclusive) {
  using Acc = AccOf<T>;
  constexpr int batch = offload_column_batch;
  T cur[batch], next[batch];
  for (int j = 0; j < batch; ++j)
    if (j < count) cur[j] = x[j * in_step];
  for (std::int64_t q = 0; q < count; q += batch) {
    const std::int64_t ahead = q + batch;
    for (int j = 0; j < batch; ++j)
      if (ahead + j < count) next[j] = x[(ahead + j) * in_step];
    for (int j = 0; j < batch; ++j) {
      if (q + j >= count) break;
      const Acc e = widen(cur[j]);
      if constexpr (Scan) {
        if (exclusive) {
          y[(q + j) * out_step] = narrow<T>(acc);
          acc = Op::apply(acc, e);
        } else {
          acc = Op::apply(acc, e);
          y[(q + j) * out_step] = narrow<T>(acc);
        }
      } else {
        acc = Op::apply(acc, e);
      }
    }
    for (int j = 0; j < batch; ++j) cur[j] = next[j];
  }
  return acc;
}

template <class T, class Op>
void columns(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  using Acc = AccOf<T>;
  const std::int64_t lines = s.lines();
  const std::int64_t chunks = std::min(plan.chunks, s.length);
  const std::int64_t chunk = (s.length + chunks - 1) / chunks;
  const int teams = plan.teams, threads = plan.threads;
  if (chunks == 1) {
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(x, y) firstprivate(s, exclusive)
    for (std::int64_t line = 0; line < lines; ++line) {
      std::int64_t xo, yo;
      line_offsets(s, line, xo, yo);
      column_run<T, Op, true>(x + xo, s.in_step, y + yo, s.out_step, s.length,
                              line_start<Op, Acc>(exclusive), exclusive);
    }
    return;
  }
  // Work item i: chunk i / lines of line i % lines, so that neighbouring threads read
  // neighbouring lines.
  const std::int64_t items = lines * chunks;
  ScratchLease scratch(dev, std::size_t(items) * sizeof(Acc));
  Acc* carries = static_cast<Acc*>(scratch.data());
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(x, carries) firstprivate(s, chunk)
  for (std::int64_t i = 0; i < items; ++i) {
    std::int64_t xo, yo;
    line_offsets(s, i % lines, xo, yo);
    const std::int64_t q = (i / lines) * chunk;
    const std::int64_t count = std::max<std::int64_t>(0, std::min(chunk, s.length - q));
    carries[i] = column_run<T, Op, false>(x + xo + q * s.in_step, s.in_step, nullptr, 0, count,
                                          inclusive_start<Op, Acc>(), false);
  }
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(carries) firstprivate(exclusive)
  for (std::int64_t line = 0; line < lines; ++line) {
    Acc running = line_start<Op, Acc>(exclusive);
    for (std::int64_t c = 0; c < chunks; ++c) {
      const Acc fold = carries[c * lines + line];
      carries[c * lines + line] = running;
      running = Op::apply(running, fold);
    }
  }
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(x, y, carries) firstprivate(s, chunk, exclusive)
  for (std::int64_t i = 0; i < items; ++i) {
    std::int64_t xo, yo;
    line_offsets(s, i % lines, xo, yo);
    const std::int64_t q = (i / lines) * chunk;
    const std::int64_t count = std::max<std::int64_t>(0, std::min(chunk, s.length - q));
    column_run<T, Op, true>(x + xo + q * s.in_step, s.in_step, y + yo + q * s.out_step,
                            s.out_step, count, carries[i], exclusive);
  }
}

// Publication states of a chained tile.
constexpr int tile_pending = 0, tile_folded = 1, tile_prefixed = 2;

// Predecessors a team examines at once in the look-back (its first threads, one each).
constexpr int look_back_window = 256;

// The look-back of chained tile u by its whole team (scan_tile's carry_of): thread 0 publishes
// the tile's fold; then the team reads a window of predecessors at once, thread i tile u-1-i
// (waiting until it has published at least its fold), and thread 0 combines the window's folds
// back to the nearest published prefix, moving the window further back when there is none.
// Thread 0 then publishes the tile's inclusive prefix. Values first, then (after a fence) the
// state that announces them; all through atomics, which bypass the GPU's incoherent L1.
template <class Op, class Acc> struct ChainLink {
  int* state;
  Acc* folds;
  Acc* prefixes;
  std::int64_t u;
  std::int64_t line_first;  // the first tile of u's line: always ends a look-back
  bool exclusive;
  bool on_host;
  // Team memory: the window's states and values, and thread 0's decisions.
  int* window_state;
  Acc* window_value;
  std::int64_t* next_end;  // the tile the next window starts from; -1 once the carry is known

  bool operator()(int t, Acc total, Acc& carry) const {
    const int n = omp_get_num_threads(), w = n < look_back_window ? n : look_back_window;
    if (u == line_first) {
      if (t == 0) carry = line_start<Op, Acc>(exclusive);
    } else {
      if (t == 0) {
#pragma omp atomic write
        folds[u] = total;
#pragma omp flush
#pragma omp atomic write
        state[u] = tile_folded;
        *next_end = u - 1;
      }
      Acc acc = inclusive_start<Op, Acc>();
#pragma omp barrier
      for (;;) {
        const std::int64_t end = *next_end;
        if (end < 0) break;
        const std::int64_t j = end - t;
        if (t < w && j >= line_first) {
          int st;
          for (;;) {
#pragma omp atomic read
            st = state[j];
            if (st != tile_pending) break;
#ifndef __NVPTX__  // the GPU has no scheduler to yield to
            if (on_host) sched_yield();  // host teams share cores: let the predecessor run
#endif
          }
#pragma omp flush
          Acc v;
          if (st == tile_prefixed) {
#pragma omp atomic read
            v = prefixes[j];
          } else {
#pragma omp atomic read
            v = folds[j];
          }
          window_state[t] = st;
          window_value[t] = v;
        }
#pragma omp barrier
        if (t == 0) {
          std::int64_t next = end - w;
          for (int i = 0; i < w && end - i >= line_first; ++i) {
            acc = Op::apply(window_value[i], acc);
            if (window_state[i] == tile_prefixed) {
              next = -1;
              break;
            }
          }
          *next_end = next;
        }
#pragma omp barrier
      }
      if (t == 0) carry = acc;
    }
    if (t == 0) {
      const Acc prefix = Op::apply(carry, total);
#pragma omp atomic write
      prefixes[u] = prefix;
#pragma omp flush
#pragma omp atomic write
      state[u] = tile_prefixed;
    }
    return true;
  }
};

template <class T, class Op>
void chained(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  using Acc = AccOf<T>;
  const std::int64_t width = std::int64_t(plan.threads) * plan.items;
  const std::int64_t tiles = (s.length + width - 1) / width;
  const std::int64_t units = s.lines() * tiles;
  // One ticket counter, then per tile its state, its fold and its inclusive prefix.
  const std::size_t state_offset = 64, fold_offset = state_offset + std::size_t(units) * sizeof(int);
  const std::size_t aligned_fold = (fold_offset + 15) / 16 * 16;
  ScratchLease scratch(dev, aligned_fold + 2 * std::size_t(units) * sizeof(Acc));
  char* base = static_cast<char*>(scratch.data());
  auto* ticket = reinterpret_cast<unsigned long long*>(base);
  int* state = reinterpret_cast<int*>(base + state_offset);
  Acc* folds = reinterpret_cast<Acc*>(base + aligned_fold);
  Acc* prefixes = folds + units;
  const int threads = plan.threads;
#pragma omp target teams distribute parallel for num_teams(plan.teams) thread_limit(threads) \
    device(dev) is_device_ptr(ticket, state)
  for (std::int64_t u = 0; u < units; ++u) {
    state[u] = tile_pending;
    if (u == 0) *ticket = 0;
  }
  const bool on_host = dev == omp_get_initial_device();
#pragma omp target teams num_teams(plan.teams) thread_limit(threads) device(dev) \
    is_device_ptr(x, y, ticket, state, folds, prefixes) firstprivate(s, width, tiles, units, exclusive, on_host)
  {
    T tile[offload_tile_bytes / sizeof(T)];
    Acc parts[offload_max_threads];
    Acc shared_carry;
    int window_state[look_back_window];
    Acc window_value[look_back_window];
    std::int64_t next_end;
    for (;;) {
      // Tickets go out in order, so every predecessor of a tile belongs to a team that runs.
      std::int64_t u;
#pragma omp atomic capture
      u = (*ticket)++;
      if (u >= units) break;
      const std::int64_t line = u / tiles, b = u % tiles, q = b * width;
      const std::int64_t m = std::min(width, s.length - q);
      std::int64_t xo, yo;
      line_offsets(s, line, xo, yo);
      const ChainLink<Op, Acc> look_back{state,     folds,         prefixes,      u,         u - b,
                                         exclusive, on_host,       window_state, window_value, &next_end};
#pragma omp parallel num_threads(threads)
      {
        load_tile(tile, x + xo + q * s.in_step, s.in_step, m);
        scan_tile<T, Op>(tile, parts, &shared_carry, m, Acc{}, exclusive, look_back);
        store_tile(tile, y + yo + q * s.out_step, s.out_step, m);
      }
    }
  }
}

std::int64_t elem_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(), [](auto t) { return std::int64_t(sizeof(t)); });
}

// Tiles of 8 KiB for rows (lines are often short) and 24 KiB for chained tiles (fewer look-backs),
// both measured best among the sizes tried on an H100.
int default_items(const CumulativeCall& call, ScanPlan::Kind kind) {
  return int((kind == ScanPlan::Kind::offload_rows ? 32 : 96) / elem_bytes(call));
}

}  // namespace

ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan;
  plan.kind = kind;
  // Chained tiles of 4- and 8-byte elements: 128 threads with more items each measured faster.
  plan.threads = kind == ScanPlan::Kind::offload_chained && elem_bytes(call) >= 4 ? 128 : 256;
  plan.items = default_items(call, kind) * (256 / plan.threads);
  const std::int64_t width = std::int64_t(plan.threads) * plan.items;
  switch (kind) {
    case ScanPlan::Kind::offload_rows:
      plan.teams = int(std::clamp<std::int64_t>(s.lines(), 1, default_teams_cap));
      break;
    case ScanPlan::Kind::offload_columns: {
      const std::int64_t lines = s.lines();
      plan.chunks = lines >= column_lines_single_pass
                        ? 1
                        : std::clamp<std::int64_t>(column_target_threads / lines, 1,
                                                   std::max<std::int64_t>(1, s.length / column_min_chunk));
      // Small teams when there are few threads in all, so that every SM gets some.
      const std::int64_t work = lines * plan.chunks;
      plan.threads = int(std::clamp<std::int64_t>(std::bit_floor(std::uint64_t(std::max<std::int64_t>(work / columns_teams_min, 1))), 32, 256));
      plan.teams = int(std::clamp<std::int64_t>((work + plan.threads - 1) / plan.threads, 1, std::int64_t(1) << 20));
      break;
    }
    default:
      plan.teams = int(std::clamp<std::int64_t>(s.lines() * ((s.length + width - 1) / width), 1,
                                                default_teams_cap));
      break;
  }
  return plan;
}

ScanPlan default_offload_scan_plan(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  if (!s.lines_are_rows()) return offload_scan_defaults(call, ScanPlan::Kind::offload_columns);
  // Enough lines to give every team its own: a team per line; otherwise tiles of a few long lines.
  if (s.lines() >= default_teams_cap) return offload_scan_defaults(call, ScanPlan::Kind::offload_rows);
  return offload_scan_defaults(call, ScanPlan::Kind::offload_chained);
}

void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device) {
  const ScanLayout s = make_scan_layout(call);
  // Unsigned integers run the kernels of their signed twins: both accumulate in the same unsigned
  // type and store its bits, so the results are identical, and the device image holds half the
  // integer kernels.
  DataType kernel_type = call.input.desc.dtype();
  if (kernel_type == DataType::uint32) kernel_type = DataType::int32;
  if (kernel_type == DataType::uint64) kernel_type = DataType::int64;
  visit_scan_type(kernel_type, [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      using Op = decltype(op);
      const T* x = static_cast<const T*>(call.input.data);
      T* y = static_cast<T*>(call.output.data);
      const bool ex = call.options.exclusive;
      switch (plan.kind) {
        case ScanPlan::Kind::offload_rows: rows<T, Op>(device, s, x, y, ex, plan); break;
        case ScanPlan::Kind::offload_columns: columns<T, Op>(device, s, x, y, ex, plan); break;
        case ScanPlan::Kind::offload_chained: chained<T, Op>(device, s, x, y, ex, plan); break;
        default:
          throw Error(Errc::invalid_schedule, call.op_name(), plan.to_schedule().to_string(),
                      "internal: not an offload schedule");
      }
    });
  });
}

}  // namespace hk::detail
