// The staged copy's pipeline (runtime/platform/staging_pipeline.hpp) driven by a link that copies
// between host buffers: every byte arrives whatever the size, the thread count and the order in
// which the link's copies end, no slot is refilled before the link has moved it, and a failed
// link copy ends the copy; copies of several segments land each one once and whole, and copy none
// back before it is ready.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/platform/staging_pipeline.hpp"
#include "bytes_test_util.hpp"

namespace {

using hk::detail::StagingDirection;
using hk::detail::StagingLayout;
using hk::detail::staging_ring_slots;
using hk::detail::staging_slot_bytes;
using hk::test::random_bytes;

// One copy through a ring of host slots. `device` stands for device memory. The side that moves
// second stalls once, so that the other would overwrite a slot still in use if it could.
// `fail_at`: the chunk whose link copy fails (none when past the last).
struct FakeCopy {
  std::vector<std::byte> slots = std::vector<std::byte>(staging_ring_slots * staging_slot_bytes);

  bool run(StagingDirection direction, std::vector<std::byte>& host, std::vector<std::byte>& device,
           std::size_t fail_at = std::size_t(-1)) {
    const StagingLayout c(host.size());
    const bool to_device = direction == StagingDirection::to_device;
    return hk::detail::run_staged_copy(
        c, direction,
        [&](std::size_t k, std::size_t s) {
          if (k == fail_at) return false;
          // The link stalls on chunk 1 going out (the host threads run a ring ahead of it), and
          // sleeps a little on every third chunk.
          if (to_device && k == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          if (k % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
          std::byte* slot = slots.data() + s * staging_slot_bytes;
          std::byte* dev = device.data() + k * c.chunk;
          if (to_device)
            std::memcpy(dev, slot, c.chunk_length(k));
          else
            std::memcpy(slot, dev, c.chunk_length(k));
          return true;
        },
        [&](std::size_t offset, std::size_t s, std::size_t within, std::size_t length) {
          // The host stalls on chunk 1 coming back (the link runs a ring ahead of it), and sleeps
          // a little on every fifth piece.
          if (!to_device && offset == c.chunk) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          if (offset / c.piece % 5 == 2) std::this_thread::sleep_for(std::chrono::microseconds(300));
          std::byte* slot = slots.data() + s * staging_slot_bytes + within;
          if (to_device)
            std::memcpy(slot, host.data() + offset, length);
          else
            std::memcpy(host.data() + offset, slot, length);
        });
  }
};

class StagingPipeline : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(GetParam());
  }
  void TearDown() override { omp_set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

// Sizes: one chunk of the smallest kind, a byte more, a prime number of bytes over several
// rounds of the ring in small chunks, and several rounds in whole slots with a short last chunk.
const std::size_t sizes[] = {std::size_t(1) << 20, (std::size_t(1) << 20) + 1, 3 * (std::size_t(1) << 20) + 17,
                             100 * (std::size_t(1) << 20) + 4093};

TEST_P(StagingPipeline, EveryByteArrivesInBothDirections) {
  FakeCopy copy;
  unsigned seed = 1;
  for (const std::size_t n : sizes) {
    SCOPED_TRACE("bytes " + std::to_string(n));
    std::vector<std::byte> host = random_bytes(n, seed++), device(n);
    ASSERT_TRUE(copy.run(StagingDirection::to_device, host, device));
    EXPECT_TRUE(device == host);
    std::vector<std::byte> back(n);
    device = random_bytes(n, seed++);
    ASSERT_TRUE(copy.run(StagingDirection::to_host, back, device));
    EXPECT_TRUE(back == device);
  }
}

TEST_P(StagingPipeline, InsideAParallelRegion) {
  // Nested regions get one thread: that thread then does the link's work as well.
  const std::size_t n = 9 * (std::size_t(1) << 20) + 5;
  std::vector<std::vector<std::byte>> host(2), device(2), back(2);
  for (int t = 0; t < 2; ++t) {
    host[std::size_t(t)] = random_bytes(n, 10u + unsigned(t));
    device[std::size_t(t)].resize(n);
    back[std::size_t(t)].resize(n);
  }
  bool ok[2] = {false, false};
#pragma omp parallel num_threads(2)
  {
    const auto t = std::size_t(omp_get_thread_num());
    FakeCopy copy;
    ok[t] = copy.run(StagingDirection::to_device, host[t], device[t]) &&
            copy.run(StagingDirection::to_host, back[t], device[t]);
  }
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_TRUE(ok[t]);
    EXPECT_TRUE(back[t] == host[t]) << t;
  }
}

TEST_P(StagingPipeline, AFailedLinkCopyEndsTheCopy) {
  // The failed chunk's slot never moves again: neither that chunk nor any later one of its slot
  // reaches the other side. (Chunks of other slots may be on their way when the failure happens.)
  FakeCopy copy;
  const std::size_t n = 120 * (std::size_t(1) << 20) + 3;
  const StagingLayout c(n);
  const std::size_t fail_at = staging_ring_slots + 2;
  ASSERT_GT(c.chunks, fail_at + staging_ring_slots);
  const auto untouched = [&](const std::vector<std::byte>& v, std::byte fill) {
    for (std::size_t k = fail_at; k < c.chunks; k += staging_ring_slots)
      for (std::size_t i = k * c.chunk; i < k * c.chunk + c.chunk_length(k); ++i)
        if (v[i] != fill) return false;
    return true;
  };
  std::vector<std::byte> host = random_bytes(n, 7), device(n, std::byte{0x5a});
  EXPECT_FALSE(copy.run(StagingDirection::to_device, host, device, fail_at));
  EXPECT_TRUE(untouched(device, std::byte{0x5a}));

  device = random_bytes(n, 8);
  std::vector<std::byte> back(n, std::byte{0xa5});
  EXPECT_FALSE(copy.run(StagingDirection::to_host, back, device, fail_at));
  EXPECT_TRUE(untouched(back, std::byte{0xa5}));
}

// Segments of one staged copy: empty ones, one byte, sizes that end mid-piece and mid-chunk, one
// over several rounds of the ring, each at its own place on the "device".
struct SegmentCase {
  std::vector<std::size_t> sizes = {0, 1, (std::size_t(1) << 20) + 3, 0, 777, 3 * (std::size_t(1) << 20) + 17,
                                    70 * (std::size_t(1) << 20) + 5, 4096};
  std::vector<std::vector<std::byte>> host, device;
  std::vector<hk::detail::CopySegment> segments;
  explicit SegmentCase(unsigned seed) {
    for (const std::size_t n : sizes) {
      host.push_back(random_bytes(n, seed++));
      device.push_back(random_bytes(n + 9, seed++));
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      segments.push_back({host[i].data(), device[i].data(), i % 3 == 0 ? std::size_t(0) : std::size_t(9) - i, sizes[i]});
  }
  bool arrived(std::size_t i) const {
    const auto* at = static_cast<const std::byte*>(segments[i].device) + segments[i].device_offset;
    return sizes[i] == 0 || std::memcmp(at, host[i].data(), sizes[i]) == 0;
  }
};

bool run_segments(SegmentCase& t, StagingDirection direction, const std::function<bool(std::size_t)>& ready,
                  const std::function<void(std::size_t)>& landed) {
  std::vector<std::byte> slots(staging_ring_slots * staging_slot_bytes);
  const bool to_device = direction == StagingDirection::to_device;
  return hk::detail::run_staged_segments(
      hk::detail::StagedSegments(t.segments), direction,
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        std::byte* slot = slots.data() + s * staging_slot_bytes + within;
        std::byte* dev = static_cast<std::byte*>(t.segments[i].device) + t.segments[i].device_offset + at;
        if (at % 5 == 1) std::this_thread::sleep_for(std::chrono::microseconds(300));
        if (to_device)
          std::memcpy(dev, slot, length);
        else
          std::memcpy(slot, dev, length);
        return true;
      },
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        std::byte* slot = slots.data() + s * staging_slot_bytes + within;
        std::byte* h = static_cast<std::byte*>(t.segments[i].host) + at;
        if (to_device)
          std::memcpy(slot, h, length);
        else
          std::memcpy(h, slot, length);
      },
      ready, landed);
}

TEST_P(StagingPipeline, SegmentsLandOnceAndWholeInTheirPlaces) {
  SegmentCase t(40);
  std::vector<std::atomic<int>> landings(t.sizes.size());
  std::vector<std::atomic<bool>> whole(t.sizes.size());
  ASSERT_TRUE(run_segments(t, StagingDirection::to_device, [](std::size_t) { return true; }, [&](std::size_t i) {
    ++landings[i];
    whole[i] = t.arrived(i);
  }));
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    EXPECT_EQ(landings[i], 1) << "segment " << i;
    EXPECT_TRUE(whole[i]) << "segment " << i << " landed before all its bytes had";
  }
}

TEST_P(StagingPipeline, SegmentsBackWaitUntilTheyAreReady) {
  // Each segment's device bytes are written only when ready(i) is asked: a copy that moved any of
  // them sooner brings back the stale bytes.
  SegmentCase t(50);
  std::vector<std::vector<std::byte>> expected(t.sizes.size());
  std::mutex mutex;
  std::vector<bool> made(t.sizes.size(), false);
  const auto ready = [&](std::size_t i) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!made[i]) {
      expected[i] = random_bytes(t.sizes[i], 60u + unsigned(i));  // never empty: empty segments move no byte
      std::memcpy(static_cast<std::byte*>(t.segments[i].device) + t.segments[i].device_offset, expected[i].data(),
                  t.sizes[i]);
      made[i] = true;
    }
    return true;
  };
  ASSERT_TRUE(run_segments(t, StagingDirection::to_host, ready, [](std::size_t) {}));
  for (std::size_t i = 0; i < t.sizes.size(); ++i) EXPECT_TRUE(t.host[i] == expected[i]) << "segment " << i;
}

TEST_P(StagingPipeline, SegmentsBackStopWhenOneIsNeverReady) {
  SegmentCase t(70);
  const std::size_t never = 6;  // the segment over several rounds of the ring
  const std::vector<std::byte> before = t.host[never + 1];
  EXPECT_FALSE(run_segments(t, StagingDirection::to_host, [&](std::size_t i) { return i < never; }, [](std::size_t) {}));
  EXPECT_TRUE(t.host[never + 1] == before) << "the segment after the one never ready was copied";
}

// 2 and 3 threads: one on the link; 6: two; 9: three.
INSTANTIATE_TEST_SUITE_P(Threads, StagingPipeline, ::testing::Values(1, 2, 3, 6, 9),
                         [](const auto& info) { return std::to_string(info.param); });

TEST(StagingLayout, LinkThreadsKeepEachSlotsChunks) {
  // Thread t on the link moves chunks t, t + links, ...: a slot's chunks stay with one thread only
  // where the link's thread count divides the ring, and copying threads are left beside them.
  for (int threads = 2; threads <= 256; ++threads) {
    const int links = hk::detail::staging_link_team(threads);
    EXPECT_GE(links, 1) << threads;
    EXPECT_LE(links, hk::detail::staging_link_threads) << threads;
    EXPECT_LT(links, threads) << threads;
    EXPECT_EQ(staging_ring_slots % std::size_t(links), 0u) << threads;
  }
}

TEST(StagingLayout, ChunksCoverTheCopyInWholePieces) {
  for (const std::size_t n : sizes) {
    const StagingLayout c(n);
    EXPECT_LE(c.chunk, staging_slot_bytes);
    EXPECT_EQ(c.chunk % c.piece, 0u);
    EXPECT_EQ((c.chunks - 1) * c.chunk + c.chunk_length(c.chunks - 1), n);
    std::size_t pieces = 0;
    for (std::size_t k = 0; k < c.chunks; ++k) pieces += c.chunk_pieces(k);
    EXPECT_EQ(pieces, c.pieces);
    // Small copies still come in enough chunks to overlap.
    EXPECT_GE(c.chunks, std::min<std::size_t>(4, n / (std::size_t(256) << 10)));
  }
}

}  // namespace
