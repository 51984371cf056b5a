// Where a strided tensor's elements lie in bytes, and the two overlap tests every operand check
// needs: elements of one tensor sharing bytes, and two tensors sharing bytes. Header-only and on
// plain arrays, so that the Python extension applies the library's rules to the caller's layout
// before it stages an operand (python/ext/operand.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>

namespace hk::detail {

/// Element (i_0, ..., i_{rank-1}) occupies the `item` bytes from base + sum_d i_d * strides[d];
/// strides in bytes, of any sign. Sizes are at least 1 and every offset fits in 64 bits (checked
/// before these tests run).
struct ByteLayout {
  std::int64_t base = 0;
  const std::int64_t* sizes = nullptr;
  const std::int64_t* strides = nullptr;
  int rank = 0;
  std::int64_t item = 1;

  /// The lowest address of an element, and the end of the highest element.
  std::int64_t low() const {
    std::int64_t lo = base;
    for (int d = 0; d < rank; ++d) lo += std::min<std::int64_t>(0, (sizes[d] - 1) * strides[d]);
    return lo;
  }
  std::int64_t high() const {
    std::int64_t hi = base + item;
    for (int d = 0; d < rank; ++d) hi += std::max<std::int64_t>(0, (sizes[d] - 1) * strides[d]);
    return hi;
  }
};

/// A dimension whose elements may share bytes with others of the same tensor, or -1 for none. A
/// conservative test: sorted by stride magnitude, each stride must step over the bytes that the
/// smaller strides reach, the element's own included.
inline int overlapping_dimension(const ByteLayout& t) {
  std::array<int, 16> order{};
  int n = 0;
  for (int d = 0; d < t.rank && n < int(order.size()); ++d)
    if (t.sizes[d] > 1) order[std::size_t(n++)] = d;
  const auto magnitude = [&](int d) { return t.strides[d] < 0 ? -t.strides[d] : t.strides[d]; };
  std::sort(order.begin(), order.begin() + n, [&](int x, int y) { return magnitude(x) < magnitude(y); });
  std::int64_t reach = t.item;  // bytes from an element's first byte to the end of the farthest one
  for (int i = 0; i < n; ++i) {
    const int d = order[std::size_t(i)];
    if (magnitude(d) < reach) return d;
    reach += (t.sizes[d] - 1) * magnitude(d);
  }
  return -1;
}

/// False only where two tensors provably share no byte: their extents are apart; or every
/// distance between their elements is the distance of their bases plus a multiple of the strides'
/// greatest common divisor g, and none of those lies within an element (x[::2] and x[1::2]); or,
/// with S the largest stride of either, each tensor's elements lie in one band of at most S bytes
/// modulo S, and the two bands are apart (the column blocks x[:, :4] and x[:, 4:]).
inline bool may_share_bytes(const ByteLayout& a, const ByteLayout& b) {
  if (!(a.low() < b.high() && b.low() < a.high())) return false;
  std::int64_t g = 0, largest = 0;
  for (const ByteLayout* t : {&a, &b})
    for (int d = 0; d < t->rank; ++d)
      if (t->sizes[d] > 1) {
        const std::int64_t s = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
        g = std::gcd(g, s);
        largest = std::max(largest, s);
      }
  if (g == 0) return true;
  const auto residue = [](std::int64_t x, std::int64_t m) { return (x % m + m) % m; };
  const std::int64_t r = residue(b.base - a.base, g);  // b's elements start r + k g bytes after a's
  if (r >= a.item && g - r >= b.item) return false;
  // The bands modulo S: each tensor's elements from its lowest address, over the dimensions whose
  // stride is not S, a band of `width` bytes that must not wrap onto itself.
  std::int64_t start[2], width[2];
  const ByteLayout* both[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    const ByteLayout& t = *both[i];
    std::int64_t lo = t.base, span = t.item;
    for (int d = 0; d < t.rank; ++d) {
      if (t.sizes[d] <= 1) continue;
      const std::int64_t reach = (t.sizes[d] - 1) * t.strides[d];
      if (reach < 0) lo += reach;
      if (t.strides[d] != largest && t.strides[d] != -largest) span += reach < 0 ? -reach : reach;
    }
    if (span > largest) return true;
    start[i] = lo, width[i] = span;
  }
  const std::int64_t gap = residue(start[1] - start[0], largest);  // b's band starts gap bytes after a's
  return gap < width[0] || gap + width[1] > largest;
}

}  // namespace hk::detail
