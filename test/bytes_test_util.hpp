// Random bytes for the tests of copies (the staging pipeline, streaming stores).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace hk::test {

inline std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(v.data() + i, &word, std::min<std::size_t>(8, n - i));
  }
  return v;
}

}  // namespace hk::test
