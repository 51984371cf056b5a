// The pieces every offload scan kernel shares: the argument block handed to a target region, the
// line walk of ScanLayout in device code, the serial body of the host fallback, 16-byte access
// checks, and (device code) a thread's run of elements in registers and the team-wide scan of a
// tile of such runs.
#pragma once

#include <omp.h>

#include <cstdint>

#include "algorithms/scan_types.hpp"
#include "schedules/offload/device_helpers.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail::offload::scan {

// ScanLayout::lines() for device code (the member is compiled for the host only).
inline std::int64_t line_count(const ScanLayout& s) {
  std::int64_t n = 1;
#pragma unroll
  for (int d = 0; d < max_rank - 1; ++d)
    if (d < s.rank) n *= s.sizes[d];
  return n;
}

// Element offsets of line `line` (innermost line dimension fastest) for input and output.
inline void line_offsets(const ScanLayout& s, std::int64_t line, std::int64_t& xo, std::int64_t& yo) {
  xo = s.in_origin;
  yo = s.out_origin;
#pragma unroll
  for (int d = max_rank - 2; d >= 0; --d)
    if (d < s.rank) {
      const std::int64_t i = line % s.sizes[d];
      line /= s.sizes[d];
      xo += i * s.in_strides[d];
      yo += i * s.out_strides[d];
    }
}

// A chained tile's published state and value in one 16-byte word, written and read with single
// relaxed vector accesses at GPU scope: a reader that sees the state sees its value, with no fence
// on either side (as CUB's tile descriptors).
struct alignas(16) TileWord {
  unsigned long long state, value;
};


// Everything a kernel reads, handed to its target region as launch parameters (kernel_words.hpp;
// the pointers are addresses on the device).
template <class T> struct KernelArgs {
  ScanLayout s;
  const T* x = nullptr;
  T* y = nullptr;
  bool exclusive = false;
  AccOf<T> start{};                     // what every line continues from (line_start_value)
  bool vec = false;                     // 16-byte accesses allowed (rows_vectorizable; rows:
                                        // past each line's head, rows_congruent)
  int items = 1;                        // rows: elements per thread in a tile
  std::int64_t width = 1, tiles = 1;    // chained: elements per tile, tiles per line
  TileWord* words = nullptr;            // chained: per tile its published state and value
  unsigned long long folded = 0;        // chained: this call's state of a published fold (TileStates)
  std::int64_t team_bytes = 0;          // chained, staged: team memory granted to each team
  unsigned long long* ticket = nullptr; // chained: the next tile
  unsigned long long* done = nullptr;   // chained: the teams that drew their last tile
  int lanes = 1;                        // columns: groups of adjacent lines side by side per warp
  int stages = 1;                       // columns, staged: tiles of the ring in team memory
  int ahead = 0;                        // rows: tiles requested into the L2 ahead of the loads
  int buffers = 1;                      // rows: tile buffers per warp in team memory (rows_buffers)
};

// The host fallback's body of every kernel (and the device's where a team's threads cannot hold
// the tiles): the lines cut into one contiguous range per team, each line scanned in order by one
// thread of its team (the reference's arithmetic).
template <class T, class Op>
void serial_lines(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  const T* const x = a.x;
  T* const y = a.y;
  const bool exclusive = a.exclusive;
  const std::int64_t lines = line_count(s), teams = omp_get_num_teams(), team = omp_get_team_num();
  const std::int64_t first = lines * team / teams, last = lines * (team + 1) / teams;
  for (std::int64_t line = first + omp_get_thread_num(); line < last; line += omp_get_num_threads()) {
    std::int64_t xo, yo;
    line_offsets(s, line, xo, yo);
    Acc c = a.start;
    for (std::int64_t q = 0; q < s.length; ++q) {
      const Acc v = widen(x[xo + q * s.in_step]);
      if (exclusive) {
        y[yo + q * s.out_step] = narrow<T>(c);
        c = Op::apply(c, v);
      } else {
        c = Op::apply(c, v);
        y[yo + q * s.out_step] = narrow<T>(c);
      }
    }
  }
}

template <class T> inline constexpr int vec_elems = 16 / int(sizeof(T));  // one 16-byte access

// Whether every line of the layout starts 16-byte aligned in both tensors and runs forward
// contiguously: the tile kernels then load and store 16 bytes at a time.
template <class T> bool rows_vectorizable(const ScanLayout& s, const T* x, const T* y) {
  constexpr std::int64_t v = vec_elems<T>;
  if (s.in_step != 1 || s.out_step != 1 || s.in_origin % v || s.out_origin % v) return false;
  if (reinterpret_cast<std::uintptr_t>(x) % 16 || reinterpret_cast<std::uintptr_t>(y) % 16) return false;
  for (int d = 0; d < s.rank; ++d)
    if ((s.sizes[d] > 1) && (s.in_strides[d] % v || s.out_strides[d] % v)) return false;
  return true;
}

// Whether every line runs forward contiguously in both tensors, and each line's input and output
// lie at the same offset from a 16-byte boundary: past the elements before that boundary (the
// line's head) the rows kernel then loads and stores 16 bytes at a time.
template <class T> bool rows_congruent(const ScanLayout& s, const T* x, const T* y) {
  constexpr std::int64_t e = sizeof(T);
  const auto ax = std::int64_t(reinterpret_cast<std::uintptr_t>(x));
  const auto ay = std::int64_t(reinterpret_cast<std::uintptr_t>(y));
  if (s.in_step != 1 || s.out_step != 1 || ax % e || ay % e) return false;
  if ((ax + s.in_origin * e - ay - s.out_origin * e) % 16) return false;
  for (int d = 0; d < s.rank; ++d)
    if (s.sizes[d] > 1 && (s.in_strides[d] - s.out_strides[d]) * e % 16) return false;
  return true;
}

// Team-local memory of the tile kernels: the warps' folds (two sets, used alternately, so that
// one barrier per tile suffices) and the chained scan's carry and next ticket.
template <class Acc> struct TileShared {
  Acc warp_total[2][32];
  Acc carry;
  std::int64_t ticket;
};

// Elements of a run (or chunk) of up to `items` that starts `start` elements into a line of
// `length`. (A function rather than a lambda: device code globalizes variables that lambdas
// capture. Values, not std::clamp's references to temporaries: LLVM 19's OpenMP optimizer took
// those for dead memory, called the run's count undefined and deleted the chained int32 product
// kernel's tile path, which then wrote nothing. Device code in this file therefore bounds values by
// hand.)
template <class N> inline N run_count(std::int64_t length, std::int64_t start, N items) {
  const std::int64_t rest = length - start;
  return rest <= 0 ? N(0) : rest >= items ? items : N(rest);
}

#ifdef __NVPTX__

// Inclusive scan across the lanes of `mask` (its lowest lanes).
template <class Op, class A> A warp_inclusive(A v, u32 lane, u32 mask) {
#pragma unroll
  for (u32 d = 1; d < 32; d <<= 1) {
    const A u = shfl_up(v, d, mask);
    if (lane >= d) v = Op::apply(u, v);
  }
  return v;
}

// A thread's run of up to `cap` consecutive elements (MaxBytes of them), kept in registers.
template <class T, std::int64_t MaxBytes> struct Run {
  static constexpr int cap = int(MaxBytes / sizeof(T));
  T v[cap];

  // count elements from p (element step `step`); 16-byte accesses when `vec` (then p is 16-byte
  // aligned, step is 1 and count a multiple of vec_elems<T>).
  void load(const T* p, std::int64_t step, int count, bool vec) {
    if (vec) {
#pragma unroll
      for (int j = 0; j < cap / vec_elems<T>; ++j)
        if (j * vec_elems<T> < count) {
          const u32x4 w = *reinterpret_cast<const u32x4*>(p + j * vec_elems<T>);
          __builtin_memcpy(&v[j * vec_elems<T>], &w, 16);
        }
    } else {
#pragma unroll
      for (int i = 0; i < cap; ++i)
        if (i < count) v[i] = p[i * step];
    }
  }

  template <class Op> AccOf<T> fold(int count) const {
    AccOf<T> f = inclusive_start<Op, AccOf<T>>();
#pragma unroll
    for (int i = 0; i < cap; ++i)
      if (i < count) f = Op::apply(f, widen(v[i]));
    return f;
  }

  // Replaces the run by its scan from carry c, then stores it as load() read it.
  template <class Op> void scan_store(T* p, std::int64_t step, int count, bool vec, AccOf<T> c, bool exclusive) {
#pragma unroll
    for (int i = 0; i < cap; ++i)
      if (i < count) {
        const AccOf<T> e = widen(v[i]);
        if (exclusive) {
          v[i] = narrow<T>(c);
          c = Op::apply(c, e);
        } else {
          c = Op::apply(c, e);
          v[i] = narrow<T>(c);
        }
      }
    if (vec) {
#pragma unroll
      for (int j = 0; j < cap / vec_elems<T>; ++j)
        if (j * vec_elems<T> < count) {
          u32x4 w;
          __builtin_memcpy(&w, &v[j * vec_elems<T>], 16);
          *reinterpret_cast<u32x4*>(p + j * vec_elems<T>) = w;
        }
    } else {
#pragma unroll
      for (int i = 0; i < cap; ++i)
        if (i < count) p[i * step] = v[i];
    }
  }
};

// One tile of threads x items elements by the whole team, first half: the warps scan their
// threads' folds f and publish their totals. Returns the thread's exclusive prefix inside its warp.
template <class Op, class Acc> Acc warp_scan_folds(Acc f, Acc* warp_total, u32 lane, u32 mask) {
  const Acc inc = warp_inclusive<Op>(f, lane, mask);
  const Acc before = shfl_up(inc, 1, mask);
  if (lane == 31u - u32(__builtin_clz(mask))) warp_total[omp_get_thread_num() >> 5] = inc;
  return lane == 0 ? inclusive_start<Op, Acc>() : before;
}

// The same, each thread folding its run first.
template <class T, class Op, class R>
AccOf<T> tile_warp_scan(const R& run, int count, AccOf<T>* warp_total, u32 lane, u32 mask) {
  return warp_scan_folds<Op>(run.template fold<Op>(count), warp_total, lane, mask);
}

// Second half, after a barrier: the exclusive prefix of the thread's warp inside the tile, and
// the tile's total. A whole warp scans the warp totals with shuffles; a partial last warp reads
// them one by one.
template <class Op, class Acc>
void tile_block_scan(const Acc* warp_total, int threads, u32 lane, u32 mask, Acc& warp_before, Acc& total) {
  const int warps = (threads + 31) / 32, w = omp_get_thread_num() >> 5;
  if (mask == ~0u) {
    const Acc mine = int(lane) < warps ? warp_total[lane] : inclusive_start<Op, Acc>();
    const Acc inc = warp_inclusive<Op>(mine, lane, mask);
    warp_before = w == 0 ? inclusive_start<Op, Acc>() : shfl_idx(inc, u32(w - 1), mask);
    total = shfl_idx(inc, u32(warps - 1), mask);
  } else {
    Acc c = inclusive_start<Op, Acc>();
    for (int i = 0; i < warps; ++i) {
      if (i == w) warp_before = c;
      c = Op::apply(c, warp_total[i]);
    }
    total = c;
  }
}
#endif

}  // namespace hk::detail::offload::scan
