// The kernel of scan.offload_warp_rows: each warp scans whole lines, one at a time, in chunks of
// 32 lanes x one 16-byte vector, with shuffles only: no team memory and no barrier, so that a
// warp's loads of the next chunks are in flight while it scans the current ones.
#pragma once

#include "schedules/offload/scan_limits.hpp"
#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {

#ifdef __NVPTX__
// The lane's part of a chunk, whose lane totals the warp scans: `base` is what the lane's first
// element continues from, and the carry of the next chunk is returned.
template <class Op, class Acc> Acc warp_chunk_carry(Acc lane_total, Acc carry, u32 lane, Acc& base) {
  const Acc inc = warp_inclusive<Op>(lane_total, lane, ~0u);
  const Acc before = shfl_up(inc, 1, ~0u);
  base = Op::apply(carry, lane == 0 ? inclusive_start<Op, Acc>() : before);
  return Op::apply(carry, shfl_idx(inc, 31, ~0u));
}

// Scans the lane's N consecutive elements e (its vector of a chunk), from the warp's carry; returns
// the next chunk's carry. The elements' prefixes start from inclusive_start, which every output
// then continues exactly (-0.0 and 1 change nothing), so inclusive and exclusive share one form.
template <class T, class Op, int N>
AccOf<T> scan_lane_run(T (&e)[N], AccOf<T> carry, u32 lane, bool exclusive) {
  using Acc = AccOf<T>;
  Acc a[N];
  Acc f = inclusive_start<Op, Acc>();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    f = Op::apply(f, widen(e[i]));
    a[i] = f;
  }
  Acc base;
  const Acc next = warp_chunk_carry<Op>(f, carry, lane, base);
  Acc before = inclusive_start<Op, Acc>();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    e[i] = narrow<T>(Op::apply(base, exclusive ? before : a[i]));
    before = a[i];
  }
  return next;
}

// Elements [q, end) of a line, 32 at a time, one a lane (any step, any alignment): the heads and
// tails of congruent lines and the whole of others. Returns the carry after them. One element a
// lane rather than a run: runs of vec_elems<T> loaded one by one raised the kernel's registers
// (ptxas for sm_90: float16 from 80 to 164), and with them fewer warps fit an SM.
template <class T, class Op>
AccOf<T> warp_rows_elements(const T* x, std::int64_t in_step, T* y, std::int64_t out_step, std::int64_t q,
                            std::int64_t end, AccOf<T> carry, u32 lane, bool exclusive) {
  using Acc = AccOf<T>;
  for (; q < end; q += 32) {
    const std::int64_t p = q + std::int64_t(lane);
    const bool here = p < end;
    const Acc inc = warp_inclusive<Op>(here ? widen(x[p * in_step]) : inclusive_start<Op, Acc>(), lane, ~0u);
    const Acc up = shfl_up(inc, 1, ~0u), before = lane == 0 ? inclusive_start<Op, Acc>() : up;
    if (here) y[p * out_step] = narrow<T>(Op::apply(carry, exclusive ? before : inc));
    carry = Op::apply(carry, shfl_idx(inc, 31, ~0u));
  }
  return carry;
}

// `chunks` whole chunks from x and y, both 16-byte aligned: lane l's vector of chunk c is vector
// 32c + l. The next `vectors` chunks are loaded before the current ones are scanned. Reading ahead
// is safe in place: a warp writes only the chunks it has read.
template <class T, class Op>
AccOf<T> warp_rows_vectors(const T* x, T* y, std::int64_t chunks, int vectors, AccOf<T> carry, u32 lane,
                           bool exclusive) {
  constexpr int ve = vec_elems<T>, V = offload_warp_rows_max_vectors;
  const u32x4* in = reinterpret_cast<const u32x4*>(x) + lane;
  u32x4* out = reinterpret_cast<u32x4*>(y) + lane;
  u32x4 now[V];
#pragma unroll
  for (int u = 0; u < V; ++u)
    if (u < vectors && u < chunks) now[u] = in[32 * u];
  for (std::int64_t c = 0; c < chunks; c += vectors) {
    u32x4 next[V];
#pragma unroll
    for (int u = 0; u < V; ++u)
      if (u < vectors && c + vectors + u < chunks) next[u] = in[32 * (c + vectors + u)];
#pragma unroll
    for (int u = 0; u < V; ++u)
      if (u < vectors && c + u < chunks) {
        T e[ve];
        __builtin_memcpy(e, &now[u], 16);
        carry = scan_lane_run<T, Op>(e, carry, lane, exclusive);
        __builtin_memcpy(&now[u], e, 16);
        out[32 * (c + u)] = now[u];
      }
#pragma unroll
    for (int u = 0; u < V; ++u) now[u] = next[u];
  }
  return carry;
}

// Warp w of team t takes lines t x warps + w, then every teams x warps-th. Where lines are
// congruent (a.vec), each line's elements before its first 16-byte boundary and after its last
// whole chunk are read one at a time and the chunks between as vectors; otherwise every element is.
// Threads past the last whole warp idle.
template <class T, class Op>
void gpu_warp_rows(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  constexpr std::int64_t chunk = 32 * vec_elems<T>;
  const ScanLayout& s = a.s;
  const std::int64_t warps = omp_get_num_threads() / 32, warp = omp_get_thread_num() / 32;
  if (warp >= warps) return;
  const u32 lane = lane_id();
  const std::int64_t lines = line_count(s), stride = std::int64_t(omp_get_num_teams()) * warps;
  for (std::int64_t line = std::int64_t(omp_get_team_num()) * warps + warp; line < lines; line += stride) {
    std::int64_t xo, yo;
    line_offsets(s, line, xo, yo);
    const T* const x = a.x + xo;
    T* const y = a.y + yo;
    std::int64_t head = s.length, body = 0;
    if (a.vec) {
      const std::int64_t h = std::int64_t((16 - reinterpret_cast<std::uintptr_t>(x) % 16) % 16 / sizeof(T));
      head = h < s.length ? h : s.length;
      body = (s.length - head) / chunk;
    }
    Acc carry = warp_rows_elements<T, Op>(x, s.in_step, y, s.out_step, 0, head, a.start, lane, a.exclusive);
    carry = warp_rows_vectors<T, Op>(x + head, y + head, body, a.items, carry, lane, a.exclusive);
    warp_rows_elements<T, Op>(x, s.in_step, y, s.out_step, head + body * chunk, s.length, carry, lane, a.exclusive);
  }
}
#endif

}  // namespace hk::detail::offload::scan
