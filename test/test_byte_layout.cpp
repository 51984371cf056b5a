// The byte-layout overlap tests (algorithms/byte_layout.hpp) against byte-by-byte enumeration of
// small random layouts: never "apart" where a byte is shared, and "apart" for the layouts they
// are written to recognise.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "algorithms/byte_layout.hpp"

namespace {

using hk::detail::ByteLayout;
using i64 = std::int64_t;

struct Layout {
  i64 base = 0, item = 1;
  std::vector<i64> sizes, strides;
  ByteLayout view() const { return {base, sizes.data(), strides.data(), int(sizes.size()), item}; }
};

// Every byte of every element, with how many elements cover it.
std::vector<i64> bytes_of(const Layout& t) {
  std::vector<i64> out;
  std::vector<i64> index(t.sizes.size(), 0);
  while (true) {
    i64 at = t.base;
    for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * t.strides[d];
    for (i64 k = 0; k < t.item; ++k) out.push_back(at + k);
    std::size_t d = 0;
    for (; d < index.size(); ++d) {
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
    if (d == index.size()) return out;
  }
}

Layout random_layout(std::mt19937_64& rng) {
  static constexpr i64 items[] = {1, 2, 4, 8};
  Layout t;
  t.item = items[rng() % 4];
  t.base = i64(rng() % 96);
  const int rank = 1 + int(rng() % 3);
  for (int d = 0; d < rank; ++d) {
    t.sizes.push_back(1 + i64(rng() % 4));
    // Multiples of the item mostly, as the library sees them, and any byte stride sometimes.
    const i64 magnitude = rng() % 4 ? t.item * i64(rng() % 9) : i64(rng() % 40);
    t.strides.push_back(rng() % 5 == 0 ? -magnitude : magnitude);
  }
  return t;
}

TEST(ByteLayout, SharedBytesAreNeverMissed) {
  std::mt19937_64 rng(4711);
  int apart = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const Layout a = random_layout(rng), b = random_layout(rng);
    const std::vector<i64> va = bytes_of(a), vb = bytes_of(b);
    const std::set<i64> sa(va.begin(), va.end());
    bool shared = false;
    for (i64 x : vb) shared = shared || sa.count(x) != 0;
    const bool may = hk::detail::may_share_bytes(a.view(), b.view());
    if (shared) EXPECT_TRUE(may) << "trial " << trial;
    apart += !may;
    const bool self_shared = sa.size() != va.size();
    if (self_shared) EXPECT_GE(hk::detail::overlapping_dimension(a.view()), 0) << "trial " << trial;
  }
  EXPECT_GT(apart, 2000) << "the test must also see layouts told apart";
}

TEST(ByteLayout, RecognisedDisjointLayouts) {
  // x[:, :4] and x[:, 4:] of a float32 {4,8} matrix (column blocks).
  const i64 sizes[] = {4, 4}, strides[] = {32, 4};
  EXPECT_FALSE(hk::detail::may_share_bytes({0, sizes, strides, 2, 4}, {16, sizes, strides, 2, 4}));
  EXPECT_TRUE(hk::detail::may_share_bytes({0, sizes, strides, 2, 4}, {12, sizes, strides, 2, 4}));
  // x[::2] and x[1::2] of an int64 {8,4} matrix (row-interleaved), and x[::2] and x[1::2] of a line.
  const i64 rows[] = {4, 4}, row_strides[] = {64, 8};
  EXPECT_FALSE(hk::detail::may_share_bytes({0, rows, row_strides, 2, 8}, {32, rows, row_strides, 2, 8}));
  const i64 line[] = {4}, every_other[] = {8};
  EXPECT_FALSE(hk::detail::may_share_bytes({0, line, every_other, 1, 4}, {4, line, every_other, 1, 4}));
  // The same column blocks with negative strides: the bands are the same bytes.
  const i64 reversed[] = {-32, -4};
  EXPECT_FALSE(hk::detail::may_share_bytes({96 + 12, sizes, reversed, 2, 4}, {16, sizes, strides, 2, 4}));
  // Elements three bytes apart of four-byte items share bytes; four apart do not.
  const i64 three[] = {3}, four[] = {4};
  EXPECT_EQ(hk::detail::overlapping_dimension({0, line, three, 1, 4}), 0);
  EXPECT_EQ(hk::detail::overlapping_dimension({0, line, four, 1, 4}), -1);
}

}  // namespace
