// Chained scan tiles staged through team memory: the team-memory layout of the staged kernel,
// a thread's run in team memory, and the asynchronous copies of a tile in and out.
#pragma once

#include <bit>
#include <type_traits>

#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {

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
// Unsigned integers of T's and of its accumulator's width: a floating T's accumulator is staged as
// two halves of T's width (StagedRun::scan_split).
template <class T> using StagedHalf = std::conditional_t<sizeof(T) == 2, std::uint16_t, u32>;
template <class T> using StagedBits = std::conditional_t<sizeof(T) == 2, u32, std::uint64_t>;

// A thread's run in team memory (staged tiles): 16-byte aligned, read and rewritten in place 16
// bytes at a time; the interface tile_warp_scan expects of a run. Each pass takes the run's whole
// chunks in a loop of their own, without a test per element, and a last partial chunk (a line's
// end) apart: the tests per element and the exclusive / inclusive choice, evaluated per element
// as selects, took about half of the scan's instructions. stage_in and stage_out likewise.
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
// per chunk took more issue slots than the copies themselves.
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
    store_global16_streaming(dst + c * ve, v);
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
#endif

}  // namespace hk::detail::offload::scan
