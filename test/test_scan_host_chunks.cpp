// Host-tensor scans on a GPU in chunks of lines (schedules/strategies/scan_host_chunks.hpp): which
// calls take them, and their outputs against the reference (offload builds; the outputs on a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/cumulative.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "qmm_test_util.hpp"
#include "schedules/strategies/scan_host_chunks.hpp"

namespace {

using hk::DataType;
using hk::Schedule;
using i64 = std::int64_t;

struct Case {
  std::string what;
  DataType type = DataType::float32;
  std::vector<i64> sizes, in_strides, out_strides;  // elements; empty strides: packed
  int axis = 0;
  bool in_place = false, product = false, exclusive = false, decreasing = false;
};

std::vector<i64> or_packed(const std::vector<i64>& strides, const std::vector<i64>& sizes) {
  return strides.empty() ? qmmt::packed_strides(sizes) : strides;
}

// A case's storage: input and output (the same when in place), the output's gaps 0x5a; the values
// only with `fill`.
struct Storage {
  hk::TensorDesc in, out;
  std::vector<unsigned char> x, y;

  Storage(const Case& c, std::mt19937_64& rng, bool fill = true)
      : in(c.type, c.sizes, or_packed(c.in_strides, c.sizes)), out(c.type, c.sizes, or_packed(c.out_strides, c.sizes)) {
    const std::size_t element = hk::size_of(c.type);
    y.assign(std::size_t(qmmt::element_reach(c.sizes, or_packed(c.out_strides, c.sizes))) * element, 0x5a);
    if (!c.in_place) x.resize(std::size_t(qmmt::element_reach(c.sizes, or_packed(c.in_strides, c.sizes))) * element);
    std::vector<unsigned char>& values = c.in_place ? y : x;
    // Small integers (never 0 in products): every prefix is exact whatever the order of additions.
    for (std::size_t i = 0; fill && i < values.size() / element; ++i) {
      const int v = c.product ? (rng() % 2 ? 1 : -1) : int(rng() % 5) - 2;
      unsigned char* at = values.data() + i * element;
      if (c.type == DataType::int32) {
        const std::int32_t w = v;
        std::memcpy(at, &w, 4);
      } else {
        const float w = float(v);
        std::memcpy(at, &w, 4);
      }
    }
  }

  hk::detail::CumulativeCall call(const Case& c) {
    hk::detail::CumulativeCall k;
    k.product = c.product;
    k.input = {in, c.in_place ? static_cast<const void*>(y.data()) : x.data()};
    k.output = {out, y.data()};
    k.options.axis = c.axis;
    k.options.exclusive = c.exclusive;
    k.options.direction = c.decreasing ? hk::Direction::decreasing : hk::Direction::increasing;
    hk::detail::validate(k);
    return k;
  }

  void run(const Case& c, const Schedule& s) {
    const hk::detail::CumulativeCall k = call(c);
    if (c.product)
      hk::cumulative_product(k.input, k.output, k.options, s);
    else
      hk::cumulative_sum(k.input, k.output, k.options, s);
  }
};

const i64 mib_lines = 1 << 18;  // float32 elements in 1 MiB

TEST(ScanHostChunks, OnlyCallsOfFourChunksOwningTheirSpans) {
  std::mt19937_64 rng(0xc4);
  const std::pair<Case, i64> cases[] = {
      {{"1024 rows of 64 KiB", DataType::float32, {1024, 16384}, {}, {}, 1}, 4},
      {{"a short last chunk", DataType::float32, {1031, 16384}, {}, {}, 1}, 5},
      {{"in place", DataType::float32, {1024, 16384}, {}, {}, 1, true}, 4},
      {{"four lines of 16 MiB", DataType::float32, {4, 16 * mib_lines}, {}, {}, 1}, 4},
      {{"three lines of 16 MiB", DataType::float32, {3, 16 * mib_lines}, {}, {}, 1}, 0},
      {{"one line", DataType::float32, {64 * mib_lines}, {}, {}, 0}, 0},
      {{"rank 3, lines merged", DataType::int32, {8, 128, 16384}, {}, {}, 2}, 4},
      {{"gaps between output rows", DataType::float32, {1024, 16384}, {}, {16400, 1}, 1}, 4},
      {{"under 32 MiB", DataType::float32, {200, 16384}, {}, {}, 1}, 0},
      {{"lines across the contiguous axis", DataType::float32, {16384, 1024}, {}, {}, 0}, 0},
      {{"input rows interleaved", DataType::float32, {1024, 16384}, {1, 1024}, {}, 1}, 0},
  };
  for (const auto& [c, chunks] : cases) {
    Storage s(c, rng, false);
    EXPECT_EQ(hk::detail::scan_host_chunks(s.call(c)), chunks) << c.what;
  }
}

// On a GPU, calls in chunks (a last chunk short of the others, several chunks of one line, in
// place, gaps in the output, every direction and both operators) equal the reference bit for bit
// under the offload strategy for their layout and without a schedule.
TEST(ScanHostChunks, MatchTheReferenceOnAGpu) {
  if (hk::offload_on_host()) GTEST_SKIP() << "no GPU: the chunks run only on one";
  std::mt19937_64 rng(0xc5);
  const Case cases[] = {
      {"a short last chunk", DataType::float32, {1031, 16384}, {}, {}, 1},
      {"in place, decreasing, exclusive", DataType::int32, {1031, 16384}, {}, {}, 1, true, false, true, true},
      {"gaps between output rows", DataType::float32, {1024, 16383}, {}, {16400, 1}, 1},
      {"products of lines of 16 MiB", DataType::float32, {5, 16 * mib_lines}, {}, {}, 1, false, true},
      {"rank 3", DataType::int32, {9, 128, 16384}, {}, {}, 2, false, false, true},
  };
  for (const Case& c : cases) {
    Storage want(c, rng), got = want;
    ASSERT_GT(hk::detail::scan_host_chunks(got.call(c)), 0) << c.what;
    want.run(c, Schedule("reference"));
    for (const Schedule& s : {Schedule("scan.offload_rows"), Schedule()}) {
      Storage run = got;
      run.run(c, s);
      EXPECT_TRUE(run.y == want.y) << c.what << ", " << s.to_string();
    }
  }
}

}  // namespace
