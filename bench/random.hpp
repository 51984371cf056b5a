// Reproducible benchmark data: element i of a tensor depends only on the seed and i, so the data
// are the same for every thread count and can be generated in parallel.
#pragma once

#include <cstdint>

namespace hk::bench {

/// 64 well-mixed bits for (seed, index): SplitMix64's finalizer over a Weyl sequence.
constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [-1, 1) with 24 random bits.
constexpr float random_signed_unit(std::uint64_t bits) {
  return float(std::int64_t(bits >> 40) - (std::int64_t(1) << 23)) * 0x1p-23f;
}

}  // namespace hk::bench
