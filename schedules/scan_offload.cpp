// Offload lowering of the cumulative schedules: OpenMP `target` kernels for rows (a team per
// line), columns (a team per block of neighbouring lines, or a thread per line and axis chunk)
// and one long line (single-pass chained scan with look-back). Compiled with the offload flags.
// The rows and chained kernels are SPMD target regions (`target teams` with a directly nested
// `parallel`) whose device body is a tile algorithm (16-byte loads, warp shuffles, team-local
// memory through ompx_dyn_cgroup_mem); on the host fallback every strategy runs the rows region,
// whose host body scans each line on one host thread. The kernels take the team and thread
// counts they got, never the ones asked for.
#include "schedules/scan_offload.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <mutex>

#include "algorithms/scan_types.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/kept_scratch.hpp"
#include "schedules/scan_kernels.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t default_teams_cap = 1056;  // 8 teams on each of an H100's 132 SMs
constexpr std::int64_t column_lines_single_pass = 16384;
constexpr std::int64_t column_target_threads = std::int64_t(1) << 18;
constexpr std::int64_t column_min_chunk = 64;
constexpr std::int64_t columns_teams_min = 264;  // 2 teams on each of an H100's 132 SMs
// The staged chained teams that fit an H100 at once: 5 of 128 threads on each of its 132 SMs
// (96 registers a thread under the kernel's launch bound, staged_launch_bound; two 14 KB tiles of
// team memory each).
constexpr std::int64_t chained_teams_cap = 660;
// Chained tiles: runs of 112 bytes (gpu_chained_staged, 2^28 line on an H100, one process:
// float32 2270 GB/s, int32 2397, float16 1945, against 2132, 2365 and 1838 with runs of 128).
constexpr std::int64_t chained_default_item_bytes = 112;
// Launch bounds of the rows and one-pass columns kernels: the most threads a team may have, which
// caps the registers ptxas gives a thread at 65536 / threads. Rows: 128 (under 128 bytes of
// spills, in L1), where left alone it takes 240 and half the teams fit an SM; columns: 255, what
// 16 rows of float16 vectors and the next tile's take (245). Teams asked for more threads get
// these many.
constexpr int rows_max_team_threads = 512;
constexpr int columns_max_team_threads = 256;
// One-pass columns (measured on an H100, {16384,16384} along axis 0, hetkern-offload-bench): a
// team's warps share a block of lines and split its tiles' rows, 256 threads, about 1024 warps
// at work. 4-byte types: 512 bytes of lines, runs of 8 rows (float32 2424-2521 GB/s, int32
// 2352-2419, against 2128 and 2095 with a warp per 128-byte block; 128 threads lose a fifth);
// 2-byte types: 256 bytes, runs of 16 rows (float16 2380-2445, against 1426 with runs of 8, 2294
// with 128 bytes, 1318 with 512 and 1508 with 128 threads).
constexpr int column_default_threads = 256;
constexpr std::int64_t column_default_width_bytes = 512;
constexpr std::int64_t column_default_width_bytes_2byte = 256;
// Rows (measured on an H100, {16384,16384} along axis 1): 64 threads, 128 for 2-byte types
// (float16 2144 GB/s against 2045 with 64), the tile after next requested into the L2 (float32
// 2362 GB/s against 2237 without).
constexpr int rows_default_threads = 64;
constexpr int rows_default_threads_2byte = 128;
constexpr int rows_default_ahead = 1;

// ScanLayout::lines() for device code (the member is compiled for the host only).
inline std::int64_t line_count(const ScanLayout& s) {
  std::int64_t n = 1;
  for (int d = 0; d < s.rank; ++d) n *= s.sizes[d];
  return n;
}

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

// A chained tile's published state and value in one 16-byte word, written and read with single
// relaxed vector accesses at GPU scope: a reader that sees the state sees its value, with no fence
// on either side (as CUB's tile descriptors).
struct alignas(16) TileWord {
  unsigned long long state, value;
};

// Everything a kernel reads, handed to its target region as one firstprivate value (the pointers
// are addresses on the device).
template <class T> struct KernelArgs {
  ScanLayout s;
  const T* x = nullptr;
  T* y = nullptr;
  bool exclusive = false;
  bool vec = false;                     // 16-byte accesses allowed (rows_vectorizable)
  int items = 1;                        // rows: elements per thread in a tile
  std::int64_t width = 1, tiles = 1;    // chained: elements per tile, tiles per line
  TileWord* words = nullptr;            // chained: per tile its published state and value
  unsigned long long folded = 0;        // chained: this call's state of a published fold (TileStates)
  std::int64_t team_bytes = 0;          // chained, staged: team memory granted to each team
  unsigned long long* ticket = nullptr; // chained: the next tile
  unsigned long long* done = nullptr;   // chained: the teams that drew their last tile
  int lanes = 1;                        // columns: groups of adjacent lines side by side per warp
  int ahead = 0;                        // rows: tiles requested into the L2 ahead of the loads
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
    Acc c = line_start<Op, Acc>(exclusive);
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

template <class T> constexpr int vec_elems = 16 / int(sizeof(T));           // one 16-byte access

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

// Whether 16-byte vectors of adjacent lines can be loaded and stored at every step of the scanned
// axis: the innermost line dimension contiguous in both tensors and a whole number of vectors
// long, every vector starting 16-byte aligned.
template <class T> bool columns_vectorizable(const ScanLayout& s, const T* x, const T* y) {
  constexpr std::int64_t v = vec_elems<T>;
  const int inner = s.rank - 1;
  if (s.in_strides[inner] != 1 || s.out_strides[inner] != 1 || s.sizes[inner] % v) return false;
  if (s.in_step % v || s.out_step % v || s.in_origin % v || s.out_origin % v) return false;
  if (reinterpret_cast<std::uintptr_t>(x) % 16 || reinterpret_cast<std::uintptr_t>(y) % 16) return false;
  for (int d = 0; d < inner; ++d)
    if ((s.sizes[d] > 1) && (s.in_strides[d] % v || s.out_strides[d] % v)) return false;
  return true;
}

// Groups (vectors of adjacent lines, or single lines) side by side per warp in one-pass
// scan.offload_columns, from the schedule's width in lines.
template <class T> int column_lanes(int width, bool vec) {
  return std::clamp(vec ? width / vec_elems<T> : width, 1, 32);
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
// Warp primitives through inline PTX (SPMD kernels only: every lane of `mask` executes them).
using u32 = unsigned;
using u32x4 = unsigned __attribute__((ext_vector_type(4)));

inline u32 lane_id() { return u32(omp_get_thread_num()) & 31u; }

// The lanes of the calling thread's warp that exist: all 32 but in a last, partial warp.
inline u32 warp_mask(int threads) {
  const int rest = threads - (omp_get_thread_num() & ~31);
  return rest >= 32 ? ~0u : (1u << rest) - 1u;
}

inline u32 shfl_up_b32(u32 v, u32 delta, u32 mask) {
  u32 r;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, %3;" : "=r"(r) : "r"(v), "r"(delta), "r"(mask));
  return r;
}

inline u32 shfl_idx_b32(u32 v, u32 src, u32 mask) {
  u32 r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, %3;" : "=r"(r) : "r"(v), "r"(src), "r"(mask));
  return r;
}

inline u32 ballot(bool p, u32 mask) {
  u32 r;
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; vote.sync.ballot.b32 %0, q, %2; }"
               : "=r"(r) : "r"(u32(p)), "r"(mask));
  return r;
}

template <class A, class Shfl> A shfl(A v, u32 arg, u32 mask, Shfl op) {
  if constexpr (sizeof(A) == 4) {
    return std::bit_cast<A>(op(std::bit_cast<u32>(v), arg, mask));
  } else {
    const auto w = std::bit_cast<unsigned long long>(v);
    const u32 lo = op(u32(w), arg, mask), hi = op(u32(w >> 32), arg, mask);
    return std::bit_cast<A>((static_cast<unsigned long long>(hi) << 32) | lo);
  }
}
template <class A> A shfl_up(A v, u32 d, u32 mask) { return shfl(v, d, mask, shfl_up_b32); }
template <class A> A shfl_idx(A v, u32 src, u32 mask) { return shfl(v, src, mask, shfl_idx_b32); }

// Inclusive scan across the lanes of `mask` (its lowest lanes).
template <class Op, class A> A warp_inclusive(A v, u32 lane, u32 mask) {
#pragma unroll
  for (u32 d = 1; d < 32; d <<= 1) {
    const A u = shfl_up(v, d, mask);
    if (lane >= d) v = Op::apply(u, v);
  }
  return v;
}

inline void store_tile_word(TileWord* p, unsigned long long state, unsigned long long value) {
  asm volatile("st.relaxed.gpu.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(state), "l"(value) : "memory");
}

inline void load_tile_word(const TileWord* p, unsigned long long& state, unsigned long long& value) {
  asm volatile("ld.relaxed.gpu.v2.b64 {%0, %1}, [%2];" : "=l"(state), "=l"(value) : "l"(p) : "memory");
}

template <class A> unsigned long long to_word_bits(A a) {
  if constexpr (sizeof(A) == 8)
    return std::bit_cast<unsigned long long>(a);
  else
    return std::bit_cast<u32>(a);
}

template <class A> A from_word_bits(unsigned long long b) {
  if constexpr (sizeof(A) == 8)
    return std::bit_cast<A>(b);
  else
    return std::bit_cast<A>(u32(b));
}

// The address in team memory (the shared window) of a generic pointer to it.
inline u32 team_address(const void* p) {
  u32 r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

// Asynchronous 16-byte copies from global to team memory (sm_80 and newer; team_dst a team
// address): no registers held while they are in flight.
inline void copy_async_16(u32 team_dst, const void* global_src) {
  asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %1; cp.async.cg.shared.global [%0], [g], 16; }" ::"r"(team_dst),
               "l"(global_src)
               : "memory");
}
inline void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
inline void copy_async_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

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

// One tile of threads x items elements by the whole team, first half: each thread folds its run,
// the warps scan their threads' folds and publish their totals. Returns the thread's exclusive
// prefix inside its warp.
template <class T, class Op, class R>
AccOf<T> tile_warp_scan(const R& run, int count, AccOf<T>* warp_total, u32 lane, u32 mask) {
  using Acc = AccOf<T>;
  const Acc f = run.template fold<Op>(count);
  const Acc inc = warp_inclusive<Op>(f, lane, mask);
  const Acc before = shfl_up(inc, 1, mask);
  if (lane == 31u - u32(__builtin_clz(mask))) warp_total[omp_get_thread_num() >> 5] = inc;
  return lane == 0 ? inclusive_start<Op, Acc>() : before;
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

// Asks the L2 to fetch the line holding p (no register, no wait): reading ahead of the loads.
inline void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// The striped form of a rows tile, used when the tile lies wholly inside its line and 16-byte
// accesses are allowed: warp w holds the tile's elements from w * 32 * items on, lane-interleaved
// in 16-byte vectors (vector j of lane l at vector j * lanes + l of the warp's segment), so that
// every load and store of a warp covers lanes x 16 contiguous bytes. The run's registers hold the
// lane's vectors in order.
template <class T, std::int64_t MaxBytes>
void striped_load(Run<T, MaxBytes>& run, const T* segment, int lanes, u32 lane, int vectors) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      const u32x4 w = *reinterpret_cast<const u32x4*>(segment + (std::int64_t(j) * lanes + lane) * ve);
      __builtin_memcpy(&run.v[j * ve], &w, 16);
    }
}

// Warp part of a striped tile: each vector position j is a contiguous chunk of the warp's
// segment, scanned across the lanes with shuffles. Fills, per vector, the fold of the segment
// before the lane's vector; returns the warp's total.
template <class T, class Op, std::int64_t MaxBytes>
AccOf<T> striped_warp_scan(const Run<T, MaxBytes>& run, int vectors, int lanes, u32 lane, u32 mask,
                           AccOf<T> (&before)[Run<T, MaxBytes>::cap / vec_elems<T>]) {
  using Acc = AccOf<T>;
  constexpr int ve = vec_elems<T>;
  Acc chunks = inclusive_start<Op, Acc>();
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      Acc f = inclusive_start<Op, Acc>();
#pragma unroll
      for (int i = 0; i < ve; ++i) f = Op::apply(f, widen(run.v[j * ve + i]));
      const Acc inc = warp_inclusive<Op>(f, lane, mask);
      const Acc up = shfl_up(inc, 1, mask);
      before[j] = lane == 0 ? chunks : Op::apply(chunks, up);
      chunks = Op::apply(chunks, shfl_idx(inc, u32(lanes - 1), mask));
    }
  return chunks;
}

// Rescans the lane's vectors from carry c (the fold before the warp's segment) and stores them
// where striped_load read them.
template <class T, class Op, std::int64_t MaxBytes>
void striped_scan_store(Run<T, MaxBytes>& run, T* segment, int lanes, u32 lane, int vectors, AccOf<T> c,
                        const AccOf<T> (&before)[Run<T, MaxBytes>::cap / vec_elems<T>], bool exclusive) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      AccOf<T> e = Op::apply(c, before[j]);
#pragma unroll
      for (int i = 0; i < ve; ++i) {
        const AccOf<T> v = widen(run.v[j * ve + i]);
        if (exclusive) {
          run.v[j * ve + i] = narrow<T>(e);
          e = Op::apply(e, v);
        } else {
          e = Op::apply(e, v);
          run.v[j * ve + i] = narrow<T>(e);
        }
      }
      u32x4 w;
      __builtin_memcpy(&w, &run.v[j * ve], 16);
      *reinterpret_cast<u32x4*>(segment + (std::int64_t(j) * lanes + lane) * ve) = w;
    }
}

// A team takes lines in turn and walks each in tiles of threads x items elements: striped (above)
// where the tile lies inside its line and 16-byte accesses are allowed, else each thread's run of
// items consecutive elements (tile_warp_scan). The next tile's run (of this line or of the team's
// next one) is loaded before the current tile is scanned, so that its loads are in flight across
// the barrier and the stores, and with ahead > 0 the tile that many beyond the next is requested
// into the L2. Reading ahead is safe in place too: the elements read ahead are written only by
// the thread that reads them, later.
template <class T, class Op>
void gpu_rows(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  using R = Run<T, offload_rows_max_item_bytes>;
  const ScanLayout& s = a.s;
  const T* const x = a.x;
  T* const y = a.y;
  const bool exclusive = a.exclusive;
  const int items = a.items;
  auto* sh = static_cast<TileShared<Acc>*>(llvm_omp_target_dynamic_shared_alloc());
  if (!sh) {  // no team-local memory granted: the serial body
    serial_lines<T, Op>(a);
    return;
  }
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t width = std::int64_t(n) * items, lines = line_count(s), teams = omp_get_num_teams();
  const bool vec = a.vec && items % vec_elems<T> == 0;
  const std::int64_t first = std::int64_t(t) * items;
  // Striped tiles: the warp's segment, its lanes and the vectors of each lane.
  const std::int64_t segment = std::int64_t(t & ~31) * items;
  const int lanes = n - (t & ~31) < 32 ? n - (t & ~31) : 32, vectors = items / vec_elems<T>;
  const std::int64_t ahead = std::int64_t(a.ahead) * width;
  std::int64_t line = omp_get_team_num();
  if (line >= lines) return;
  std::int64_t xo, yo, q = 0;
  line_offsets(s, line, xo, yo);
  Acc carry = line_start<Op, Acc>(exclusive);
  int count = run_count(s.length, first, items);
  bool striped = vec && width <= s.length;
  R run, next;
  if (striped)
    striped_load(run, x + xo + segment, lanes, lane, vectors);
  else
    run.load(x + xo + first * s.in_step, s.in_step, count, vec && count == items);
  int buf = 0;
  for (;;) {
    std::int64_t next_line = line, next_q = q + width, next_xo = xo, next_yo = yo;
    if (next_q >= s.length) {
      next_line += teams;
      next_q = 0;
      if (next_line < lines) line_offsets(s, next_line, next_xo, next_yo);
    }
    const bool more = next_line < lines;
    const int next_count = more ? run_count(s.length, next_q + first, items) : 0;
    const bool next_striped = vec && next_q + width <= s.length;
    if (more) {
      if (next_striped)
        striped_load(next, x + next_xo + next_q + segment, lanes, lane, vectors);
      else
        next.load(x + next_xo + (next_q + first) * s.in_step, s.in_step, next_count, vec && next_count == items);
    }
    if (ahead > 0 && vec && next_q + ahead + width <= s.length) {
      const T* p = x + next_xo + next_q + ahead + segment + std::int64_t(lane) * vec_elems<T>;
      for (int j = 0; j < vectors; ++j) prefetch_l2(p + std::int64_t(j) * lanes * vec_elems<T>);
    }
    Acc warp_before, total;
    if (striped) {
      Acc before[R::cap / vec_elems<T>];
      const Acc warp_fold = striped_warp_scan<T, Op>(run, vectors, lanes, lane, mask, before);
      if (lane == 0) sh->warp_total[buf][t >> 5] = warp_fold;
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      striped_scan_store<T, Op>(run, y + yo + q + segment, lanes, lane, vectors, Op::apply(carry, warp_before),
                                before, exclusive);
    } else {
      const Acc lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total[buf], lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      run.template scan_store<Op>(y + yo + (q + first) * s.out_step, s.out_step, count, vec && count == items,
                                  Op::apply(Op::apply(carry, warp_before), lane_before), exclusive);
    }
    buf ^= 1;
    if (!more) break;
    carry = next_line == line ? Op::apply(carry, total) : line_start<Op, Acc>(exclusive);
    run = next;
    count = next_count;
    striped = next_striped;
    line = next_line;
    q = next_q;
    xo = next_xo;
    yo = next_yo;
  }
}

// A tile of one-pass scan.offload_columns held by one lane: up to cap rows of its group (V
// adjacent lines, loaded and stored as one 16-byte vector when V > 1).
template <class T, int V, int cap> struct ColumnTile {
  T v[cap][V];

  void load(const T* base, std::int64_t offset, std::int64_t step, int count) {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) {
        const T* p = base + offset + k * step;
        if constexpr (V == 1) {
          v[k][0] = *p;
        } else {
          const u32x4 w = *reinterpret_cast<const u32x4*>(p);
          __builtin_memcpy(v[k], &w, 16);
        }
      }
  }

  template <class Op> void fold(int count, AccOf<T> (&f)[V]) const {
#pragma unroll
    for (int j = 0; j < V; ++j) f[j] = inclusive_start<Op, AccOf<T>>();
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count)
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = Op::apply(f[j], widen(v[k][j]));
  }

  // Replaces the rows by their scans from carries c, then stores them as load() read them.
  template <class Op>
  void scan_store(T* base, std::int64_t offset, std::int64_t step, int count, AccOf<T> (&c)[V], bool exclusive) {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const AccOf<T> e = widen(v[k][j]);
          if (exclusive) {
            v[k][j] = narrow<T>(c[j]);
            c[j] = Op::apply(c[j], e);
          } else {
            c[j] = Op::apply(c[j], e);
            v[k][j] = narrow<T>(c[j]);
          }
        }
        T* p = base + offset + k * step;
        if constexpr (V == 1) {
          *p = v[k][0];
        } else {
          u32x4 w;
          __builtin_memcpy(&w, v[k], 16);
          *reinterpret_cast<u32x4*>(p) = w;
        }
      }
  }
};

// Group g (lines g * V ...) of one-pass scan.offload_columns, walked by warp w of the team's Wp
// warps that share its block, lanes that share lane % W: a team tile holds Wp x L x items rows,
// warp w the rows w * L * items ..., row-thread r of them rows r * items ... The L folds of a
// warp are scanned with shuffles (every lane of the warp takes part, those without a group too:
// valid false); with Wp > 1 each warp's totals go through team memory (two sets, used
// alternately, so one barrier per tile suffices) and every lane adds those of the warps before
// its own. Each row-thread then rescans its rows from its carry. The next tile's rows are loaded
// before the current tile is combined. Reading ahead is safe in place: each element is read,
// then written, by one lane only. Lanes of a partial warp (in_warp false) hold no group and only
// keep the team's barriers.
template <class T, class Op, int V, int Cap>
void column_group(const KernelArgs<T>& a, AccOf<T>* folds, std::int64_t g, bool valid, bool in_warp, int w, int Wp,
                  int r, int L, int W, u32 lane, u32 mask) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  std::int64_t xo = 0, yo = 0;
  if (valid) line_offsets(s, g * V, xo, yo);
  const int items = a.items;
  const std::int64_t rows = std::int64_t(Wp) * L * items, first = (std::int64_t(w) * L + r) * items;
  const std::int64_t length = valid ? s.length : 0;
  Acc carry[V];
#pragma unroll
  for (int j = 0; j < V; ++j) carry[j] = line_start<Op, Acc>(a.exclusive);
  ColumnTile<T, V, Cap> cur, next;
  int count = run_count(length, first, items);
  cur.load(a.x, xo + first * s.in_step, s.in_step, count);
  const u32 group_lane = lane % u32(W), last_row = u32((L - 1) * W) + group_lane;
  int buf = 0;
  for (std::int64_t q = 0; q < s.length; q += rows) {
    const int next_count = run_count(length, q + rows + first, items);
    next.load(a.x, xo + (q + rows + first) * s.in_step, s.in_step, next_count);
    Acc before[V], total[V];
    cur.template fold<Op>(count, total);
#pragma unroll
    for (int j = 0; j < V; ++j) before[j] = inclusive_start<Op, Acc>();
    if (in_warp && L > 1) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        Acc inc = total[j];
        for (int d = 1; d < L; d <<= 1) {
          const Acc u = shfl_up(inc, u32(d * W), mask);
          if (r >= d) inc = Op::apply(u, inc);
        }
        const Acc up = shfl_up(inc, u32(W), mask);
        if (r > 0) before[j] = up;
        total[j] = shfl_idx(inc, last_row, mask);
      }
    }
    if (Wp > 1) {
      Acc* const set = folds + std::int64_t(buf) * Wp * W * V;
      if (in_warp && r == 0)
#pragma unroll
        for (int j = 0; j < V; ++j) set[(w * W + int(group_lane)) * V + j] = total[j];
#pragma omp barrier
      if (in_warp)
#pragma unroll
        for (int j = 0; j < V; ++j) {
          Acc warps_before = inclusive_start<Op, Acc>(), team = warps_before;
          for (int k = 0; k < Wp; ++k) {
            if (k == w) warps_before = team;
            team = Op::apply(team, set[(k * W + int(group_lane)) * V + j]);
          }
          before[j] = Op::apply(warps_before, before[j]);
          total[j] = team;
        }
      buf ^= 1;
    }
    Acc c[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      c[j] = Op::apply(carry[j], before[j]);
      carry[j] = Op::apply(carry[j], total[j]);
    }
    cur.template scan_store<Op>(a.y, yo + (q + first) * s.out_step, s.out_step, count, c, a.exclusive);
    cur = next;
    count = next_count;
  }
}

// One-pass scan.offload_columns: the groups (lines / V of them) cut into blocks of W side by
// side, a team per block in turn. The team's full warps share the block (32 / W = L lanes on
// each group of it, lanes beyond L x W idle) and split each tile's rows; the lanes of a partial
// warp idle. A team of one partial warp (fewer than 32 threads) puts one lane on a group, its
// lanes taking the block's groups in turn, without barriers. Both cases go through one call of
// column_group: a second inlined copy of it made ptxas spill the 16-row tiles of 2-byte types.
template <class T, class Op, int V, int Cap>
void gpu_columns(const KernelArgs<T>& a) {
  const int n = omp_get_num_threads(), Wp = n / 32, w = omp_get_thread_num() >> 5;
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t groups = line_count(a.s) / V;
  const int W = a.lanes < 1 ? 1 : a.lanes > 32 ? 32 : a.lanes;
  const std::int64_t blocks = (groups + W - 1) / W;
  auto* folds = static_cast<AccOf<T>*>(llvm_omp_target_dynamic_shared_alloc());
  const bool full = Wp > 0, in_warp = !full || w < Wp;
  const int L = full ? 32 / W : 1, r = full ? int(lane) / W : 0;
  // Full warps: lane % W is the lane's group, one pass. A partial warp: every group in turn.
  const int first = full ? int(lane) % W : int(lane), stride = full ? W : __builtin_popcount(mask);
  for (std::int64_t b = omp_get_team_num(); b < blocks; b += omp_get_num_teams())
    for (int k = first; k < W; k += stride) {
      const std::int64_t g = b * W + k;
      column_group<T, Op, V, Cap>(a, folds, g, in_warp && r < L && g < groups, in_warp, full ? w : 0, full ? Wp : 1, r,
                                  L, W, lane, mask);
    }
}
#endif

template <class T, class Op>
void rows(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.vec = rows_vectorizable(s, x, y);
  a.items = plan.items;
  a.ahead = plan.ahead;
  const std::size_t shared = sizeof(TileShared<AccOf<T>>);
  const int threads = std::min(plan.threads, rows_max_team_threads);
#pragma omp target teams num_teams(plan.teams) thread_limit(threads) device(dev) firstprivate(a) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(rows_max_team_threads))))
#pragma omp parallel
  {
#ifdef __NVPTX__
    gpu_rows<T, Op>(a);
#else
    serial_lines<T, Op>(a);
#endif
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

// Launches one-pass scan.offload_columns on groups of V lines with runs of up to Cap rows: a
// kernel per (V, Cap), so that each reserves the registers of its own tiles only.
template <class T, class Op, int V, int Cap>
void columns_one_pass(int dev, const KernelArgs<T> a, int teams, int threads) {
  // Two sets of the warps' totals per group (column_group), when a team has several warps.
  const std::size_t warps = std::size_t(threads / 32);
  const std::size_t shared = warps > 1 ? 2 * warps * std::size_t(a.lanes) * V * sizeof(AccOf<T>) : 0;
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) firstprivate(a) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(columns_max_team_threads))))
#pragma omp parallel
  {
#ifdef __NVPTX__
    gpu_columns<T, Op, V, Cap>(a);
#endif
  }
}

template <class T, class Op>
void columns(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  using Acc = AccOf<T>;
  const std::int64_t lines = s.lines();
  const std::int64_t chunks = std::min(plan.chunks, s.length);
  const std::int64_t chunk = (s.length + chunks - 1) / chunks;
  const int teams = plan.teams, threads = plan.threads;
  if (chunks == 1) {
    KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
    a.vec = columns_vectorizable(s, x, y);
    a.lanes = column_lanes<T>(plan.width, a.vec);
    const int team_threads = std::min(threads, columns_max_team_threads);
    constexpr int cap = offload_column_item_cap(sizeof(T));
    a.items = std::clamp(plan.items, 1, cap);
    if (a.vec)
      columns_one_pass<T, Op, vec_elems<T>, cap>(dev, a, teams, team_threads);
    else
      columns_one_pass<T, Op, 1, cap>(dev, a, teams, team_threads);
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
    const std::int64_t count = run_count(s.length, q, chunk);
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
    const std::int64_t count = run_count(s.length, q, chunk);
    column_run<T, Op, true>(x + xo + q * s.in_step, s.in_step, y + yo + q * s.out_step,
                            s.out_step, count, carries[i], exclusive);
  }
}

// The states of a chained call's tiles (TileWord::state): a published fold, a published inclusive
// prefix. Each call has its own (from its count in the kept scratch), above those of every earlier
// call: any smaller state, a word that zeroing or an earlier call left, reads as pending.
struct TileStates {
  unsigned long long folded, prefixed;

  explicit TileStates(unsigned long long folded_state) : folded(folded_state), prefixed(folded_state + 1) {}
  bool pending(unsigned long long state) const { return state < folded; }
};

constexpr int staged_max_threads = 512;
// The staged kernel's launch bound: 65536 registers / 640 threads caps ptxas at 96 registers a
// thread, so that 5 teams of 128 threads fit an SM (team memory allows 6). Measured on an H100
// (2^28 line, hetkern-offload-bench): 1816 GB/s float32, 1916 int32, 1705 float16 at 660 teams,
// against 1675, 1856 and 1445 with the bound of 512 (128 registers, 4 teams, 528 teams) and
// 1667-1706, 1658-1740 and 1377-1417 with 768 (80 registers: 6 teams, but 400-500 bytes of
// spills); under 96 registers the kernel spills 120-160 bytes a thread, which costs nothing
// measurable (1678 GB/s float32 at 528 teams).
constexpr int staged_launch_bound = 640;

// A staged chained tile: its place in its line (the b-th tile), where it starts in x and y, and
// its elements.
struct StagedTile {
  std::int64_t b, xo, yo, count;
};

// A tile of the staged kernel as its team drew it: its ticket (at least the units when past the
// last tile), and where it lies (staged_tile), worked out once by the thread that drew it.
struct DrawnTile {
  std::int64_t u;
  StagedTile tile;
};

// Team-local memory of the staged kernel, before its two tile buffers.
template <class Acc> struct StagedShared {
  Acc warp_total[32];
  Acc carry;
  DrawnTile drawn[3];  // the team's k-th tile in drawn[k % 3]
};

// Team memory of the staged kernel: the StagedShared head, then the tile buffers of `threads`
// runs (staged_buffers), each run padded to an odd number of 16-byte chunks so that a quarter
// warp's 16-byte accesses to 8 consecutive runs fall in distinct banks.
template <class T> std::int64_t staged_run_stride(std::int64_t per) {
  const std::int64_t bytes = per * std::int64_t(sizeof(T));
  return bytes / 16 % 2 ? bytes : bytes + 16;
}

template <class Acc> constexpr std::int64_t staged_head_bytes() {
  return (std::int64_t(sizeof(StagedShared<Acc>)) + 15) / 16 * 16;
}

// Two tile buffers, and for floating types a side buffer for the low halves of the held tile's
// prefixes (StagedRun::scan_split).
template <class T> constexpr int staged_buffers = std::is_integral_v<T> ? 2 : 3;

template <class T> std::int64_t staged_team_bytes(std::int64_t threads, std::int64_t per) {
  return staged_head_bytes<AccOf<T>>() + staged_buffers<T> * threads * staged_run_stride<T>(per);
}

#ifdef __NVPTX__
// Decoupled look-back by one warp for tile u, the b-th (b > 0) of its line: lane i reads tile
// u-1-i, the warp combines them back to the nearest one holding its inclusive prefix (a tile past
// the line's start counts as one holding the identity), and moves 32 further back when there is
// none. It waits, as a warp, only for the lanes up to the nearest prefix (all 32 while there is
// none): a pending tile behind a prefix does not hold it up. Returns the carry into tile u.
template <class Op, class Acc>
Acc chained_lookback(const TileWord* words, TileStates st, std::int64_t u, std::int64_t b, u32 lane, u32 mask) {
  Acc acc = inclusive_start<Op, Acc>();
  const std::int64_t line_first = u - b;
  for (std::int64_t last = u - 1;; last -= 32) {
    const std::int64_t j = last - std::int64_t(lane);
    const bool in_line = j >= line_first;
    unsigned long long state = st.prefixed, bits = to_word_bits(inclusive_start<Op, Acc>());
    if (in_line) load_tile_word(&words[j], state, bits);
    u32 stops = ballot(state == st.prefixed, mask);
    // The lanes up to the first one holding a prefix (its lowest bit doubled, less one; all when
    // that is lane 31 or there is none).
    while (ballot(st.pending(state), mask) & (stops ? (stops & (0u - stops)) * 2u - 1u : ~0u)) {
      if (st.pending(state)) load_tile_word(&words[j], state, bits);
      stops = ballot(state == st.prefixed, mask);
    }
    const u32 upto = stops ? u32(__builtin_ctz(stops)) : 31u;
    Acc val = from_word_bits<Acc>(bits);
    if (lane > upto) val = inclusive_start<Op, Acc>();
    const Acc window = shfl_idx(warp_inclusive<Op>(val, lane, mask), upto, mask);
    acc = Op::apply(window, acc);
    if (stops) return acc;
  }
}

// Draws the team's next tile (a new ticket) and leaves it in team memory. By one thread.
template <class Acc> void leave_next_ticket(unsigned long long* ticket, TileShared<Acc>* sh) {
  std::int64_t next;
#pragma omp atomic capture
  next = (*ticket)++;
  sh->ticket = next;
}

// Publishes the fold `total` of tile u, the b-th of its line (a line's first tile: its inclusive
// prefix at once). By one thread, after the tile's block scan.
template <class Op, class Acc>
void publish_fold(TileWord* words, TileStates st, std::int64_t u, std::int64_t b, Acc total, bool exclusive) {
  if (b > 0)
    store_tile_word(&words[u], st.folded, to_word_bits(total));
  else
    store_tile_word(&words[u], st.prefixed, to_word_bits(Op::apply(line_start<Op, Acc>(exclusive), total)));
}

// Warp 0 of a team of the register kernel, after the block scan of tile u: publishes the fold,
// looks back for the carry, publishes the inclusive prefix, leaves the carry and the team's next
// tile in team memory.
template <class Op, class Acc>
void chained_publish(TileWord* words, TileStates st, unsigned long long* ticket, TileShared<Acc>* sh, std::int64_t u,
                     std::int64_t b, Acc total, bool exclusive, u32 lane, u32 mask) {
  Acc carry = line_start<Op, Acc>(exclusive);
  if (b > 0) {
    if (lane == 0) store_tile_word(&words[u], st.folded, to_word_bits(total));
    carry = chained_lookback<Op, Acc>(words, st, u, b, lane, mask);
  }
  if (lane == 0) {
    store_tile_word(&words[u], st.prefixed, to_word_bits(Op::apply(carry, total)));
    sh->carry = carry;
    leave_next_ticket(ticket, sh);
  }
}

// A team's last act in a chained kernel, by the thread that drew its tiles, after its last draw:
// counts the team done, and the last team done leaves the ticket and the count at zero for the next
// call. The count is an acq_rel atomic (inline PTX: LLVM 19 lowers `omp atomic acq_rel` to a relaxed
// atom), so every team's draws come before the last team's reset.
inline void leave_chained(unsigned long long* ticket, unsigned long long* done) {
  unsigned long long before;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], 1;" : "=l"(before) : "l"(done) : "memory");
  if (before + 1 == static_cast<unsigned long long>(omp_get_num_teams())) {
    *ticket = 0;
    *done = 0;
  }
}

// The team's first tile: a ticket, handed to all its threads.
template <class Acc> std::int64_t first_ticket(unsigned long long* ticket, TileShared<Acc>* sh) {
  if (omp_get_thread_num() == 0) leave_next_ticket(ticket, sh);
#pragma omp barrier
  return sh->ticket;
}

// Chained tiles (decoupled look-back), register runs: a team takes tiles of width elements in
// order from an atomic ticket, so that every predecessor of its tile belongs to a team that runs,
// scans each as gpu_rows does and gets its carry from chained_publish. For the layouts the staged
// kernel does not take (strided or unaligned lines, or tiles too large for team memory).
template <class T, class Op>
void gpu_chained(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  const std::int64_t width = a.width, tiles = a.tiles;
  auto* sh = static_cast<TileShared<Acc>*>(llvm_omp_target_dynamic_shared_alloc());
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t units = line_count(s) * tiles;
  // The tile is threads x per elements; per exceeds items only where the teams got fewer threads
  // than asked for. When the runs no longer fit the registers (or no team memory was granted),
  // every team scans its lines serially: the same decision in all teams of one launch.
  const int per = int((width + n - 1) / n);
  if (per > int(offload_chained_max_item_bytes / sizeof(T)) || !sh) {
    serial_lines<T, Op>(a);
    return;
  }
  const bool vec = a.vec && per % vec_elems<T> == 0 && width % vec_elems<T> == 0;
  std::int64_t u = first_ticket(a.ticket, sh);
  while (u < units) {
    const std::int64_t line = u / tiles, b = u % tiles, q = b * width;
    std::int64_t xo, yo;
    line_offsets(s, line, xo, yo);
    const std::int64_t start = q + std::int64_t(t) * per;
    const int count = run_count(q + width < s.length ? q + width : s.length, start, per);
    const bool v = vec && count == per;
    Run<T, offload_chained_max_item_bytes> run;
    run.load(a.x + xo + start * s.in_step, s.in_step, count, v);
    const Acc lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total[0], lane, mask);
#pragma omp barrier
    Acc warp_before, total;
    tile_block_scan<Op>(sh->warp_total[0], n, lane, mask, warp_before, total);
    if (t < 32) chained_publish<Op>(a.words, TileStates(a.folded), a.ticket, sh, u, b, total, a.exclusive, lane, mask);
#pragma omp barrier
    const Acc carry = sh->carry;
    u = sh->ticket;
    run.template scan_store<Op>(a.y + yo + start * s.out_step, s.out_step, count, v,
                                Op::apply(Op::apply(carry, warp_before), lane_before), a.exclusive);
  }
  if (t == 0) leave_chained(a.ticket, a.done);
}

// Unsigned integers of T's and of its accumulator's width: a floating T's accumulator is staged as
// two halves of T's width (StagedRun::scan_split).
template <class T> using StagedHalf = std::conditional_t<sizeof(T) == 2, std::uint16_t, u32>;
template <class T> using StagedBits = std::conditional_t<sizeof(T) == 2, u32, std::uint64_t>;

// A thread's run in team memory (staged tiles): 16-byte aligned, read and rewritten in place 16
// bytes at a time; the interface tile_warp_scan expects of a run. Each pass takes the run's whole
// chunks in a loop of their own, without a test per element, and a last partial chunk (a line's
// end) apart: the tests per element and the exclusive / inclusive choice, evaluated per element
// as selects, took about half of the float32 scan's instructions (Nsight Compute, H100: issue
// slots half busy, the ALU pipe the busiest). With stage_in and stage_out likewise, on an H100,
// 2^28 line, both libraries in one run: float32 2489-2494 GB/s, int32 2483-2529, float16
// 2419-2434, against 2367-2370, 2435-2440 and 2255-2284 before.
template <class T> struct StagedRun {
  static constexpr int ve = vec_elems<T>;
  char* p;

  template <class Op> static void fold_chunk(const char* at, int valid, AccOf<T>& f) {
    T e[ve];
    const u32x4 w = *reinterpret_cast<const u32x4*>(at);
    __builtin_memcpy(e, &w, 16);
#pragma unroll
    for (int i = 0; i < ve; ++i)
      if (i < valid) f = Op::apply(f, widen(e[i]));
  }

  template <class Op> AccOf<T> fold(int count) const {
    AccOf<T> f = inclusive_start<Op, AccOf<T>>();
    const int whole = count / ve;
    for (int j = 0; j < whole; ++j) fold_chunk<Op>(p + j * 16, ve, f);
    if (whole * ve < count) fold_chunk<Op>(p + whole * 16, count - whole * ve, f);
    return f;
  }

  template <class Op, bool Exclusive> static void scan_chunk(char* at, int valid, AccOf<T>& c) {
    T e[ve];
    u32x4 w = *reinterpret_cast<const u32x4*>(at);
    __builtin_memcpy(e, &w, 16);
#pragma unroll
    for (int i = 0; i < ve; ++i)
      if (i < valid) {
        const AccOf<T> v = widen(e[i]);
        if constexpr (Exclusive) {
          e[i] = narrow<T>(c);
          c = Op::apply(c, v);
        } else {
          c = Op::apply(c, v);
          e[i] = narrow<T>(c);
        }
      }
    __builtin_memcpy(&w, e, 16);
    *reinterpret_cast<u32x4*>(at) = w;
  }

  template <class Op, bool Exclusive> void scan_as(int count, AccOf<T> c) {
    const int whole = count / ve;
    for (int j = 0; j < whole; ++j) scan_chunk<Op, Exclusive>(p + j * 16, ve, c);
    if (whole * ve < count) scan_chunk<Op, Exclusive>(p + whole * 16, count - whole * ve, c);
  }

  template <class Op> void scan(int count, AccOf<T> c, bool exclusive) {
    if (exclusive)
      scan_as<Op, true>(count, c);
    else
      scan_as<Op, false>(count, c);
  }

  // For floating T, whose accumulator is twice as wide: a chunk's prefixes from c in the
  // accumulator, exactly, each one's bits cut in two halves of T's width, the high half left in
  // place of its element and the low half at the same place in `side` (staged_prefix joins them).
  template <class Op, bool Exclusive> static void split_chunk(char* at, char* side_at, int valid, AccOf<T>& c) {
    using Half = StagedHalf<T>;
    T e[ve];
    const u32x4 w = *reinterpret_cast<const u32x4*>(at);
    __builtin_memcpy(e, &w, 16);
    Half high[ve], low[ve];
#pragma unroll
    for (int i = 0; i < ve; ++i) {
      AccOf<T> out = c;
      if (i < valid) {
        const AccOf<T> v = widen(e[i]);
        if constexpr (Exclusive) {
          out = c;
          c = Op::apply(c, v);
        } else {
          c = Op::apply(c, v);
          out = c;
        }
      }
      const auto bits = std::bit_cast<StagedBits<T>>(out);
      high[i] = Half(bits >> (8 * sizeof(Half)));
      low[i] = Half(bits);
    }
    u32x4 h, l;
    __builtin_memcpy(&h, high, 16);
    __builtin_memcpy(&l, low, 16);
    *reinterpret_cast<u32x4*>(at) = h;
    *reinterpret_cast<u32x4*>(side_at) = l;
  }

  template <class Op, bool Exclusive> void scan_split_as(int count, AccOf<T> c, char* side) {
    const int whole = count / ve;
    for (int j = 0; j < whole; ++j) split_chunk<Op, Exclusive>(p + j * 16, side + j * 16, ve, c);
    if (whole * ve < count) split_chunk<Op, Exclusive>(p + whole * 16, side + whole * 16, count - whole * ve, c);
  }

  template <class Op> void scan_split(int count, AccOf<T> c, bool exclusive, char* side) {
    if (exclusive)
      scan_split_as<Op, true>(count, c, side);
    else
      scan_split_as<Op, false>(count, c, side);
  }
};

// A staged tile's scanned element as the carry combines with it (stage_out): for integers the
// element itself, a prefix from the identity; for floating types the accumulator that
// StagedRun::scan_split cut in two, joined again from `at` and its place in the side buffer.
template <class T> AccOf<T> staged_prefix(const char* at, const char* side_at) {
  if constexpr (std::is_integral_v<T>) {
    T x;
    __builtin_memcpy(&x, at, sizeof(T));
    return widen(x);
  } else {
    StagedHalf<T> high, low;
    __builtin_memcpy(&high, at, sizeof(T));
    __builtin_memcpy(&low, side_at, sizeof(T));
    return std::bit_cast<AccOf<T>>(StagedBits<T>(high) << (8 * sizeof(T)) | low);
  }
}

inline StagedTile staged_tile(const ScanLayout& s, std::int64_t v, std::int64_t tiles, std::int64_t width) {
  StagedTile tile;
  const std::int64_t line = v / tiles;
  tile.b = v - line * tiles;
  const std::int64_t q = tile.b * width;
  line_offsets(s, line, tile.xo, tile.yo);
  tile.xo += q;
  tile.yo += q;
  tile.count = s.length - q < width ? s.length - q : width;
  return tile;
}

// The 16-byte chunks of a staged tile that one thread copies in and out: chunk c of the tile lies
// in run c / per_run at position c % per_run of a tile buffer, and a thread takes chunks t, t + n,
// t + 2n, ... Its place in the buffer advances by additions: the 64-bit divisions of computing it
// per chunk took more issue slots than the copies themselves (on an H100, threads of the 4 teams
// on an SM spent 6.8 us of a tile's 13 us issuing the copy-out and the next copy-in).
struct ChunkWalk {
  int offset, pos;    // the chunk's byte offset in a tile buffer, its position in its run
  int step, step_pos; // bytes and positions per n chunks
  int wrap;           // bytes added on moving into the next run
  int per_run;

  void advance() {
    offset += step;
    pos += step_pos;
    if (pos >= per_run) {
      pos -= per_run;
      offset += wrap;
    }
  }
};

inline ChunkWalk chunk_walk(int t, int n, int per_run, int stride) {
  ChunkWalk w;
  w.per_run = per_run;
  w.pos = t % per_run;
  w.offset = (t / per_run) * stride + w.pos * 16;
  w.step_pos = n % per_run;
  w.step = (n / per_run) * stride + w.step_pos * 16;
  w.wrap = stride - per_run * 16;
  return w;
}

// Issues the asynchronous copy of a tile of count elements from src into a tile buffer (a partial
// last chunk element by element): chunks first, first + n, ... (w walks them).
template <class T> void stage_in(const T* src, int count, char* buffer, ChunkWalk w, int first, int n) {
  constexpr int ve = vec_elems<T>;
  const u32 buffer_team = team_address(buffer);
  const int whole = count / ve;
  int c = first;
  for (; c < whole; c += n, w.advance()) copy_async_16(buffer_team + u32(w.offset), src + c * ve);
  if (c == whole && whole * ve < count) {
    T* dst = reinterpret_cast<T*>(buffer + w.offset);
    for (int e = whole * ve; e < count; ++e) dst[e - whole * ve] = src[e];
  }
  copy_async_commit();
}

// Writes a scanned tile of count elements from its buffer to dst, 16 bytes at a time, each prefix p
// (staged_prefix: the tile's scan from the identity) as carry (+) p, rounded once.
template <class T, class Op>
void stage_out(const char* buffer, const char* side, int count, T* dst, ChunkWalk w, int n, AccOf<T> carry) {
  constexpr int ve = vec_elems<T>;
  const int whole = count / ve;
  int c = omp_get_thread_num();
  for (; c < whole; c += n, w.advance()) {
    char chunk[16], side_chunk[16];
    *reinterpret_cast<u32x4*>(chunk) = *reinterpret_cast<const u32x4*>(buffer + w.offset);
    if constexpr (!std::is_integral_v<T>)
      *reinterpret_cast<u32x4*>(side_chunk) = *reinterpret_cast<const u32x4*>(side + w.offset);
    T e[ve];
#pragma unroll
    for (int i = 0; i < ve; ++i)
      e[i] = narrow<T>(Op::apply(carry, staged_prefix<T>(chunk + i * sizeof(T), side_chunk + i * sizeof(T))));
    u32x4 v;
    __builtin_memcpy(&v, e, 16);
    *reinterpret_cast<u32x4*>(dst + c * ve) = v;
  }
  if (c == whole && whole * ve < count) {
    for (int e = whole * ve; e < count; ++e) {
      const int at = w.offset + (e - whole * ve) * int(sizeof(T));
      dst[e] = narrow<T>(Op::apply(carry, staged_prefix<T>(buffer + at, side + at)));
    }
  }
}

// Draws the team's next tile into `slot`. By one thread.
inline void draw_tile(unsigned long long* ticket, DrawnTile& slot, const ScanLayout& s, std::int64_t units,
                      std::int64_t tiles, std::int64_t width) {
  std::int64_t v;
#pragma omp atomic capture
  v = (*ticket)++;
  slot.u = v;
  if (v < units) slot.tile = staged_tile(s, v, tiles, width);
}

// Issues the copy-in of a drawn tile (an empty group past the last tile, so that every thread
// counts the same groups).
template <class T>
void stage_in_drawn(const T* x, const DrawnTile& d, std::int64_t units, char* buffer, const ChunkWalk& w, int t,
                    int n) {
  if (d.u < units)
    stage_in(x + d.tile.xo, int(d.tile.count), buffer, w, t, n);
  else
    copy_async_commit();
}

// Chained tiles staged through team memory, for contiguous 16-byte aligned lines: a tile comes in
// by asynchronous 16-byte copies (consecutive threads on consecutive chunks), each thread folds and
// later scans its run of per elements in place there, and the tile goes out in 16-byte chunks
// again; the data in flight holds no registers. The look-back is deferred by one round: in its k-th
// round a team folds tile k and publishes its fold, then looks back for tile k - 1, scans it and
// copies it out, and issues the copy-in of tile k + 1 into tile k - 1's buffer. A tile's fold thus
// waits for its own data only, never for its team's look-back of an earlier tile, so the
// predecessors a look-back meets have seldom not yet published theirs. (Measured on an H100, 2^28
// float32, 660 teams: in the previous form, where the fold of the next tile came after the current
// tile's look-back, thread 0 spent 14.5 of a tile's 20 us in the look-back, polling pending
// predecessors, and the kernel moved 1627-1652 GB/s against 2132 here with the same runs of 128
// bytes. Measured slower: three buffers with each copy-in issued a round earlier, 1952-2073 with
// runs of 80-112 bytes, against 2270 here with runs of 112; in that previous form, three buffers
// with copy-ins one or two tiles ahead, 786-1151, and a warp-specialized form, warp 0 looking back
// outside the other warps' named barriers, 1534-1599 against 1614-1682.) Every thread copies into a
// buffer only the chunks it copied out of it itself, so a buffer is refilled without a barrier. A
// team in its look-back holds just one tile drawn and not yet folded, drawn after the tile it looks
// back for, so the look-back of the least such tile always finishes. Every tile is scanned from the
// identity during the look-back and gets the carry on the way out: integers, whose wrapping sums
// and products regroup exactly, in place; floating types as their prefixes in the accumulator
// type, each cut in two halves (the low ones in a third buffer: StagedRun::scan_split), so that
// each output is still rounded once, from carry (+) prefix in the accumulator. (Measured on an
// H100, 2^28 line, both libraries in one run: float32 2334-2337 GB/s and float16 2196-2209 so,
// against 2223-2234 and 2026-2033 scanned after the carry came, with a barrier more per tile.)
template <class T, class Op>
void gpu_chained_staged(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  constexpr int ve = vec_elems<T>;
  const ScanLayout& s = a.s;
  const std::int64_t width = a.width, tiles = a.tiles;
  char* const base = static_cast<char*>(llvm_omp_target_dynamic_shared_alloc());
  auto* sh = reinterpret_cast<StagedShared<Acc>*>(base);
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t units = line_count(s) * tiles;
  const int per = int((width + n - 1) / n);
  // Fewer threads than asked for make longer runs, which may not fit the team memory granted:
  // then every team scans its lines serially (the same decision in all teams of one launch).
  if (!base || reinterpret_cast<std::uintptr_t>(base) % 16 || per % ve || staged_team_bytes<T>(n, per) > a.team_bytes) {
    serial_lines<T, Op>(a);
    return;
  }
  const int stride = int(staged_run_stride<T>(per));
  char* const buffers = base + staged_head_bytes<Acc>();
  const std::int64_t buffer_bytes = std::int64_t(n) * stride;
  char* const side = buffers + 2 * buffer_bytes;  // floating types only
  const ChunkWalk walk = chunk_walk(t, n, per / ve, stride);
  // The thread that draws tiles: outside warp 0, whose look-back it then overlaps.
  const int drawer = n > 32 ? 32 : 0;
  if (t == 0) draw_tile(a.ticket, sh->drawn[0], s, units, tiles, width);
#pragma omp barrier
  stage_in_drawn(a.x, sh->drawn[0], units, buffers, walk, t, n);
  // The tile folded in the previous round, awaiting its look-back: its fold, the thread's place in it.
  bool held = false;
  Acc held_lane_before = inclusive_start<Op, Acc>(), held_warp_before = held_lane_before, held_total = held_lane_before;
  for (int k = 0;; ++k) {
    const DrawnTile& d = sh->drawn[k % 3];
    const bool fresh = d.u < units;
    if (!fresh && !held) break;
    copy_async_wait();
#pragma omp barrier
    Acc lane_before = inclusive_start<Op, Acc>(), warp_before = lane_before, total = lane_before;
    if (fresh) {
      const int count = run_count(d.tile.count, std::int64_t(t) * per, per);
      const StagedRun<T> run{buffers + (k % 2) * buffer_bytes + std::int64_t(t) * stride};
      lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total, lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total, n, lane, mask, warp_before, total);
      if (t == 0) publish_fold<Op>(a.words, TileStates(a.folded), d.u, d.tile.b, total, a.exclusive);
    }
    if (t == drawer) draw_tile(a.ticket, sh->drawn[(k + 1) % 3], s, units, tiles, width);
    if (held) {
      const DrawnTile& h = sh->drawn[(k + 2) % 3];
      const int count = run_count(h.tile.count, std::int64_t(t) * per, per);
      char* const buffer = buffers + ((k + 1) % 2) * buffer_bytes;
      StagedRun<T> run{buffer + std::int64_t(t) * stride};
      const Acc run_start = Op::apply(held_warp_before, held_lane_before);
      if constexpr (std::is_integral_v<T>)
        run.template scan<Op>(count, run_start, a.exclusive);
      else
        run.template scan_split<Op>(count, run_start, a.exclusive, side + std::int64_t(t) * stride);
      if (t < 32) {
        Acc carry = line_start<Op, Acc>(a.exclusive);
        if (h.tile.b > 0) {
          carry = chained_lookback<Op, Acc>(a.words, TileStates(a.folded), h.u, h.tile.b, lane, mask);
          if (lane == 0)
            store_tile_word(&a.words[h.u], TileStates(a.folded).prefixed, to_word_bits(Op::apply(carry, held_total)));
        }
        if (lane == 0) sh->carry = carry;
      }
#pragma omp barrier
      stage_out<T, Op>(buffer, side, int(h.tile.count), a.y + h.tile.yo, walk, n, sh->carry);
      // Tile k + 1 goes where tile k - 1 was.
      stage_in_drawn(a.x, sh->drawn[(k + 1) % 3], units, buffer, walk, t, n);
    } else {
#pragma omp barrier
      stage_in_drawn(a.x, sh->drawn[(k + 1) % 3], units, buffers + ((k + 1) % 2) * buffer_bytes, walk, t, n);
    }
    held = fresh;
    held_lane_before = lane_before;
    held_warp_before = warp_before;
    held_total = total;
  }
  // The drawer drew the team's first tile too, or came after it through the barriers since.
  if (t == drawer) leave_chained(a.ticket, a.done);
}
#endif

// Scratch of the chained kernels on one device, kept across calls (KeptScratch): the ticket and
// the count of teams done (each in its own 64 bytes), then a TileWord per tile. Zeroed once, when
// allocated; each call takes the next count of calls, its tile states (TileStates) reading every
// word that zeroing or an earlier call left as pending, and its last team leaves the ticket and
// the count at zero (leave_chained). So a call needs no launch to set the scratch up. (Measured
// on an H100, 2^28 line, hetkern-offload-bench --case chained: float32 0.905 ms a call, int32
// 0.889, float16 0.476, against 0.923, 0.902 and 0.483 with an initializing launch per call, the
// lead's report run of the same kind of machine.) One call at a time per device holds it; more
// than chained_kept_bytes (4M tiles: lines of 15 G elements in the default tiles) go back at the
// end of the call.
constexpr std::size_t chained_words_offset = 128, chained_kept_bytes = std::size_t(64) << 20;

template <class T, class Op>
void chained(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.vec = rows_vectorizable(s, x, y);
  a.width = std::int64_t(plan.threads) * plan.items;
  a.tiles = (s.length + a.width - 1) / a.width;
  const std::int64_t units = s.lines() * a.tiles;
  const int teams = plan.teams, threads = plan.threads;
  KeptScratch& scratch = kept_scratch(dev, "scan.offload_chained");
  const std::lock_guard<std::mutex> hold(scratch.mutex);
  reserve_kept(scratch, dev, chained_words_offset + std::size_t(units) * sizeof(TileWord));
  char* const base = static_cast<char*>(scratch.data);
  a.ticket = reinterpret_cast<unsigned long long*>(base);
  a.done = reinterpret_cast<unsigned long long*>(base + 64);
  a.words = reinterpret_cast<TileWord*>(base + chained_words_offset);
  a.folded = 2 * ++scratch.calls;
  // Staged through team memory where the lines allow 16-byte copies and the tile buffers fit. Its
  // launch bound caps the registers at 96 per thread, so that five teams of 128 threads fit an SM.
  const std::int64_t staged_bytes = staged_team_bytes<T>(threads, plan.items);
  if (a.vec && plan.items % vec_elems<T> == 0 && staged_bytes <= offload_team_memory_bytes &&
      threads <= staged_max_threads) {
    a.team_bytes = staged_bytes;
    const std::size_t shared = std::size_t(staged_bytes);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) firstprivate(a) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(staged_launch_bound))))
#pragma omp parallel
    {
#ifdef __NVPTX__
      gpu_chained_staged<T, Op>(a);
#endif
    }
  } else {
    const std::size_t shared = sizeof(TileShared<AccOf<T>>);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) firstprivate(a) \
    ompx_dyn_cgroup_mem(shared)
#pragma omp parallel
    {
#ifdef __NVPTX__
      gpu_chained<T, Op>(a);
#endif
    }
  }
  trim_kept(scratch, dev, chained_kept_bytes);
}

std::int64_t elem_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(), [](auto t) { return std::int64_t(sizeof(t)); });
}

}  // namespace

ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan;
  plan.kind = kind;
  // Measured on an H100 ({16384,16384} rows and a 2^28 line; float32, int32, float16): rows
  // fastest with runs of 64 bytes (threads and read-ahead: rows_default_* above),
  // chained tiles with 128 threads (the staged kernel before its deferred look-back: 1658 GB/s
  // float32, against 1251 with 256 threads and runs of 64 bytes; 256 threads 906 in registers
  // before the division-free chunk walk) and runs of chained_default_item_bytes, 660 teams (as
  // many as fit at once: chained_teams_cap; 14% faster than 528 for float32).
  plan.threads = 128;
  switch (kind) {
    case ScanPlan::Kind::offload_rows:
      plan.items = int(offload_rows_max_item_bytes / elem_bytes(call));
      plan.ahead = rows_default_ahead;
      // Short lines: fewer threads, so that a tile is not mostly idle lanes.
      plan.threads = int(std::clamp<std::int64_t>(
          std::int64_t(std::bit_ceil(std::uint64_t((s.length + plan.items - 1) / plan.items))), 32,
          elem_bytes(call) == 2 ? rows_default_threads_2byte : rows_default_threads));
      plan.teams = int(std::clamp<std::int64_t>(s.lines(), 1, default_teams_cap));
      break;
    case ScanPlan::Kind::offload_columns: {
      const std::int64_t lines = s.lines();
      plan.chunks = lines >= column_lines_single_pass
                        ? 1
                        : std::clamp<std::int64_t>(column_target_threads / lines, 1,
                                                   std::max<std::int64_t>(1, s.length / column_min_chunk));
      plan.items = offload_column_item_cap(elem_bytes(call));
      plan.width = int((elem_bytes(call) == 2 ? column_default_width_bytes_2byte : column_default_width_bytes) /
                       elem_bytes(call));
      if (plan.chunks == 1) {
        // A team per block of width lines (vectors of them where the layout allows).
        const std::int64_t v = 16 / elem_bytes(call);
        const int inner = s.rank - 1;
        const bool vec = s.in_strides[inner] == 1 && s.out_strides[inner] == 1 && s.sizes[inner] % v == 0;
        const std::int64_t lanes = std::clamp<std::int64_t>(vec ? plan.width / v : plan.width, 1, 32);
        const std::int64_t blocks = ((vec ? lines / v : lines) + lanes - 1) / lanes;
        plan.threads = column_default_threads;
        plan.teams = int(std::clamp<std::int64_t>(blocks, 1, std::int64_t(1) << 20));
        break;
      }
      // Small teams when there are few threads in all, so that every SM gets some.
      const std::int64_t work = lines * plan.chunks;
      plan.threads = int(std::clamp<std::int64_t>(std::bit_floor(std::uint64_t(std::max<std::int64_t>(work / columns_teams_min, 1))), 32, 256));
      plan.teams = int(std::clamp<std::int64_t>((work + plan.threads - 1) / plan.threads, 1, std::int64_t(1) << 20));
      break;
    }
    default: {
      plan.items = int(chained_default_item_bytes / elem_bytes(call));
      const std::int64_t width = std::int64_t(plan.threads) * plan.items;
      plan.teams = int(std::clamp<std::int64_t>(s.lines() * ((s.length + width - 1) / width), 1,
                                                chained_teams_cap));
      break;
    }
  }
  return plan;
}

ScanPlan default_offload_scan_plan(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  if (!s.lines_are_rows()) return offload_scan_defaults(call, ScanPlan::Kind::offload_columns);
  // Enough lines to give every team its own, or lines no longer than one chained tile (whose
  // look-back buys nothing: a {1,1,3,4} float32 scan took 0.036-0.039 ms per call chained on the
  // H100, when chained calls still launched a kernel to set up their tile states): a team per line;
  // otherwise tiles of a few long lines.
  const ScanPlan chained = offload_scan_defaults(call, ScanPlan::Kind::offload_chained);
  if (s.lines() >= default_teams_cap || s.length <= std::int64_t(chained.threads) * chained.items)
    return offload_scan_defaults(call, ScanPlan::Kind::offload_rows);
  return chained;
}

// Calls f(T{}) with the storage type whose kernels run `type`: unsigned integers run the kernels
// of their signed twins (both accumulate in the same unsigned type and store its bits, so the
// results are identical), which keeps the device image, and its compile time at the first call,
// smaller.
template <class F> void visit_kernel_type(DataType type, F&& f) {
  switch (type) {
    case DataType::float32: return f(float{});
    case DataType::float16: return f(float16_t{});
    case DataType::int32:
    case DataType::uint32: return f(std::int32_t{});
    case DataType::int64:
    case DataType::uint64: return f(std::int64_t{});
    default: break;
  }
  throw Error(Errc::invalid_type, "scan", "input", "internal: not a scan type");
}

void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device) {
  const ScanLayout s = make_scan_layout(call);
  if (!plan.offload())
    throw Error(Errc::invalid_schedule, call.op_name(), plan.to_schedule().to_string(),
                "internal: not an offload schedule");
  visit_kernel_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      using Op = decltype(op);
      const T* x = static_cast<const T*>(call.input.data);
      T* y = static_cast<T*>(call.output.data);
      const bool ex = call.options.exclusive;
      // The host fallback scans every line serially whatever the strategy: the rows region's
      // host body (the others' device-only regions then never run on the host).
      if (device == omp_get_initial_device() || plan.kind == ScanPlan::Kind::offload_rows)
        rows<T, Op>(device, s, x, y, ex, plan);
      else if (plan.kind == ScanPlan::Kind::offload_columns)
        columns<T, Op>(device, s, x, y, ex, plan);
      else
        chained<T, Op>(device, s, x, y, ex, plan);
    });
  });
}

}  // namespace hk::detail
