// The pipeline of a staged host <-> device copy (pinned_staging.hpp), apart from the memory and
// the link so that tests can drive it with their own: a ring of slots, host threads copying
// pieces of the caller's memory into (or out of) the slots in order, one or two threads moving
// whole chunks across the link. Nobody waits for anybody but the owner of the slot or chunk it
// needs, so the link never idles behind a barrier.
#pragma once

#include <emmintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/platform/copy_segment.hpp"

namespace hk::detail {

// A chunk is one link copy: long enough that a driver call's fixed cost is small beside its time
// on the link (4 MiB: 76 us at 55 GB/s), and shorter for small copies, which then still have
// chunks enough to overlap. The ring holds enough chunks that the host threads, each much slower
// than the link alone, keep it busy together.
inline constexpr std::size_t staging_slot_bytes = std::size_t(4) << 20;
inline constexpr std::size_t staging_min_chunk_bytes = std::size_t(256) << 10;
inline constexpr std::size_t staging_ring_slots = 12;
// What one host thread copies at a time: small enough that the first chunk is ready soon, large
// enough that claiming it costs nothing.
inline constexpr std::size_t staging_max_piece_bytes = std::size_t(512) << 10;
// Host threads that fill or empty the slots. Each staged byte is read and written by them and read
// again by the link, so the host's memory bandwidth bounds a staged copy; past about seven threads
// they only slow each other and the link down (docs/performance.md).
inline constexpr int staging_copy_threads = 7;
// Threads on the link, each with one copy in flight: a link copy's fixed cost (the runtime's call
// and the wait for its end) is one to two times a 1 MiB chunk's transfer, so with three there is
// always one queued (docs/performance.md). Fewer where the team is small (staging_link_team).
inline constexpr int staging_link_threads = 3;
inline constexpr bool staging_ring_divides_among_links() {
  for (int links = 1; links <= staging_link_threads; ++links)
    if (staging_ring_slots % std::size_t(links) != 0) return false;
  return true;
}
static_assert(staging_ring_divides_among_links(),
              "every count of link threads divides the ring: a slot's chunks stay with one link thread");

// Of a team of `threads` (2 or more), those on the link: about a third, at least one, at most
// staging_link_threads.
inline int staging_link_team(int threads) { return std::clamp(threads / 3, 1, staging_link_threads); }

// A copy of `bytes` in chunks (link copies) of `chunk` bytes, each cut into pieces (host copies)
// of `piece` bytes; the last chunk and the last piece of a chunk may be shorter. Chunk k lies in
// slot k % staging_ring_slots.
struct StagingLayout {
  std::size_t bytes, chunk, piece, chunks, pieces_per_chunk, pieces;
  explicit StagingLayout(std::size_t total) : bytes(total), chunk(staging_slot_bytes) {
    while (chunk > staging_min_chunk_bytes && chunk * 16 > bytes) chunk /= 2;
    piece = std::min(chunk, staging_max_piece_bytes);
    chunks = (bytes + chunk - 1) / chunk;
    pieces_per_chunk = chunk / piece;
    const std::size_t last = bytes - (chunks - 1) * chunk;
    pieces = (chunks - 1) * pieces_per_chunk + (last + piece - 1) / piece;
  }
  std::size_t chunk_length(std::size_t k) const { return std::min(chunk, bytes - k * chunk); }
  std::size_t chunk_pieces(std::size_t k) const { return (chunk_length(k) + piece - 1) / piece; }
  // Pieces of slot k % staging_ring_slots's chunks up to and including chunk k.
  std::size_t slot_pieces_through(std::size_t k) const { return k / staging_ring_slots * pieces_per_chunk + chunk_pieces(k); }
};

// Waits until `counter` reaches `target` or the copy failed; false on failure. A short wait spins;
// a long one (a copy back whose data is not computed yet, a copy beside another) sleeps, so that
// the threads with work keep their cores. Finer sleeps (2 us under a 1 ns timer slack) woke link
// threads sooner but slowed copies both ways at once, whose threads outnumber the cores
// (docs/performance.md).
inline bool staging_wait_for(const std::atomic<std::size_t>& counter, std::size_t target, const std::atomic<bool>& failed) {
  for (unsigned spins = 0; counter.load(std::memory_order_acquire) < target; ++spins) {
    if (failed.load(std::memory_order_relaxed)) return false;
    if (spins < 256)
      _mm_pause();
    else if (spins < 320)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  return !failed.load(std::memory_order_relaxed);
}

enum class StagingDirection { to_device, to_host };

// Runs one staged copy. `link(k, slot)` moves chunk k between slot `slot` and the device (false on
// failure); `host(offset, slot, within, length)` copies one piece between the caller's memory at
// `offset` and slot `slot` at `within`. After a failed link copy nothing more starts either way.
// Per slot, `host_pieces` counts the pieces the host has done and `link_chunks` the chunks the
// link has done, each cumulative over the slot's chunks:
//   to the device: a piece of chunk k waits for the slot's chunk before it to have left
//     (link_chunks >= k / staging_ring_slots), and the link waits for all of chunk k's pieces;
//   to the host: the link waits for the slot's chunk before it to have been emptied, and a piece
//     of chunk k waits for the link to have brought chunk k (link_chunks > k / staging_ring_slots).
template <class Link, class Host>
bool run_staged_copy(const StagingLayout& c, StagingDirection direction, Link link, Host host) {
  std::atomic<std::size_t> host_pieces[staging_ring_slots] = {}, link_chunks[staging_ring_slots] = {};
  std::atomic<std::size_t> next_piece{0};
  std::atomic<bool> failed{false};
  const bool to_device = direction == StagingDirection::to_device;

  const auto link_chunk = [&](std::size_t k) {
    const std::size_t s = k % staging_ring_slots, round = k / staging_ring_slots;
    const bool ready = to_device ? staging_wait_for(host_pieces[s], c.slot_pieces_through(k), failed)
                                 : round == 0 || staging_wait_for(host_pieces[s], c.slot_pieces_through(k - staging_ring_slots), failed);
    if (!ready) return;
    if (!link(k, s)) {
      failed = true;
      return;
    }
    link_chunks[s].store(round + 1, std::memory_order_release);
  };
  const auto host_piece = [&](std::size_t i) {
    const std::size_t k = i / c.pieces_per_chunk, s = k % staging_ring_slots, round = k / staging_ring_slots;
    if (!staging_wait_for(link_chunks[s], to_device ? round : round + 1, failed)) return;
    const std::size_t within = (i % c.pieces_per_chunk) * c.piece;
    host(k * c.chunk + within, s, within, std::min(c.piece, c.chunk_length(k) - within));
    host_pieces[s].fetch_add(1, std::memory_order_acq_rel);
  };

  // One thread (asked for, or all a nested region gets) moves each chunk in turn.
  const auto alone = [&] {
    for (std::size_t k = 0; k < c.chunks && !failed; ++k) {
      const std::size_t first = k * c.pieces_per_chunk, end = first + c.chunk_pieces(k);
      if (!to_device) link_chunk(k);
      for (std::size_t i = first; i < end && !failed; ++i) host_piece(i);
      if (to_device) link_chunk(k);
    }
  };
  const int team = std::clamp(omp_get_max_threads(), 1, staging_copy_threads + staging_link_threads);
  if (team == 1) {
    alone();
    return !failed;
  }
  // The team sleeps as soon as the copy ends, rather than spin for the runtime's block time (200 ms
  // by default): copies run beside other work (the call's copies the other way, its kernels' host
  // threads, the calls that follow), which idle spinning threads would starve of cores.
  const int block_time = kmp_get_blocktime();
  kmp_set_blocktime(0);
#pragma omp parallel num_threads(team)
  {
    const int t = omp_get_thread_num(), threads = omp_get_num_threads();
    const int links = staging_link_team(threads);
    if (threads == 1) {
      alone();
    } else if (t < links) {
      for (std::size_t k = std::size_t(t); k < c.chunks && !failed; k += std::size_t(links)) link_chunk(k);
    } else {
      for (std::size_t i; (i = next_piece.fetch_add(1, std::memory_order_relaxed)) < c.pieces && !failed;) host_piece(i);
    }
  }
  kmp_set_blocktime(block_time);
  return !failed;
}

// Several host <-> device ranges moved one after another by one staged copy, so that the ring
// stays full from one to the next: the copy's bytes are the segments' in order, a chunk or a piece
// may hold the end of one segment and the start of the next.
class StagedSegments {
 public:
  explicit StagedSegments(const std::vector<CopySegment>& segments) : segments_(segments), starts_(segments.size() + 1, 0) {
    for (std::size_t i = 0; i < segments.size(); ++i) starts_[i + 1] = starts_[i] + segments[i].bytes;
  }
  std::size_t bytes() const { return starts_.back(); }
  const CopySegment& operator[](std::size_t i) const { return segments_[i]; }
  std::size_t size() const { return segments_.size(); }
  // Calls part(i, at, length) for each segment i that bytes [offset, offset + length) of the copy
  // touch, in order, with the `length` bytes at `at` within segment i; stops at the first false.
  template <class Part> bool for_each_part(std::size_t offset, std::size_t length, Part part) const {
    std::size_t i = std::size_t(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    for (const std::size_t end = offset + length; offset < end; ++i) {
      if (segments_[i].bytes == 0) continue;
      const std::size_t n = std::min(end, starts_[i + 1]) - offset;
      if (!part(i, offset - starts_[i], n)) return false;
      offset += n;
    }
    return true;
  }

 private:
  const std::vector<CopySegment>& segments_;
  std::vector<std::size_t> starts_;
};

// Runs a staged copy of `segments`. `link(i, at, slot, within, length)` moves `length` bytes of
// segment i at `at` between slot `slot` at `within` and the device; `host(i, at, slot, within,
// length)` copies them between the segment's host memory and the slot. To the device, landed(i)
// runs once segment i is all there (at once for an empty one), on the thread that moved its last
// chunk. To the host, no byte of segment i moves before ready(i) returned true; ready(i) returning
// false ends the copy as a failed link copy does. False when the copy ended so.
template <class Link, class Host, class Ready, class Landed>
bool run_staged_segments(const StagedSegments& segments, StagingDirection direction, Link link, Host host, Ready ready,
                         Landed landed) {
  const bool to_device = direction == StagingDirection::to_device;
  if (segments.bytes() == 0) {
    if (to_device)
      for (std::size_t i = 0; i < segments.size(); ++i) landed(i);
    return true;
  }
  const StagingLayout c(segments.bytes());
  // Per segment, its chunks not yet moved.
  const std::unique_ptr<std::atomic<std::size_t>[]> chunks_left(new std::atomic<std::size_t>[segments.size()]);
  for (std::size_t i = 0; i < segments.size(); ++i) chunks_left[i] = 0;
  for (std::size_t k = 0; k < c.chunks; ++k)
    segments.for_each_part(k * c.chunk, c.chunk_length(k), [&](std::size_t i, std::size_t, std::size_t) {
      ++chunks_left[i];
      return true;
    });
  if (to_device)
    for (std::size_t i = 0; i < segments.size(); ++i)
      if (segments[i].bytes == 0) landed(i);
  return run_staged_copy(
      c, direction,
      [&](std::size_t k, std::size_t s) {
        std::size_t within = 0;
        // Each part's link copy has ended when `link` returns: its segment may land at once.
        return segments.for_each_part(k * c.chunk, c.chunk_length(k), [&](std::size_t i, std::size_t at, std::size_t n) {
          if (!to_device && !ready(i)) return false;
          if (!link(i, at, s, within, n)) return false;
          within += n;
          if (to_device && chunks_left[i].fetch_sub(1, std::memory_order_acq_rel) == 1) landed(i);
          return true;
        });
      },
      [&](std::size_t offset, std::size_t s, std::size_t within, std::size_t length) {
        segments.for_each_part(offset, length, [&](std::size_t i, std::size_t at, std::size_t n) {
          host(i, at, s, within, n);
          within += n;
          return true;
        });
      });
}

}  // namespace hk::detail
