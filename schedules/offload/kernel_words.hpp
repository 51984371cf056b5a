// A kernel's argument block handed to its target region as 64 eight-byte scalars. LLVM 19's offload
// runtime copies a firstprivate struct to the device before every launch, one more transfer on
// the launch's path, while scalars travel in the launch's own parameters (docs/gpu.md#launches).
//
//   const KernelWords a_words = to_kernel_words(a);
//   HK_KERNEL_WORDS_DECLARE(a, a_words)
//   #pragma omp target teams ... firstprivate(HK_KERNEL_WORDS(a))
//   #pragma omp parallel
//   kernel(from_kernel_words<Args>(HK_KERNEL_WORDS(a)));
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace hk::detail::offload {

constexpr int kernel_words = 64;
using KernelWords = std::array<std::uint64_t, kernel_words>;

template <class T> KernelWords to_kernel_words(const T& v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(KernelWords));
  KernelWords words{};
  std::memcpy(words.data(), &v, sizeof v);
  return words;
}

template <class T, class... Words> T from_kernel_words(Words... w) {
  static_assert(sizeof...(Words) == kernel_words);
  const KernelWords words{w...};
  T v;
  std::memcpy(&v, words.data(), sizeof v);
  return v;
}

}  // namespace hk::detail::offload

// Names v_w0 to v_w63, the words of `words`, for a target region's clauses.
#define HK_KERNEL_WORDS_DECLARE(v, words) \
  const std::uint64_t v##_w0 = (words)[0]; \
  const std::uint64_t v##_w1 = (words)[1]; \
  const std::uint64_t v##_w2 = (words)[2]; \
  const std::uint64_t v##_w3 = (words)[3]; \
  const std::uint64_t v##_w4 = (words)[4]; \
  const std::uint64_t v##_w5 = (words)[5]; \
  const std::uint64_t v##_w6 = (words)[6]; \
  const std::uint64_t v##_w7 = (words)[7]; \
  const std::uint64_t v##_w8 = (words)[8]; \
  const std::uint64_t v##_w9 = (words)[9]; \
  const std::uint64_t v##_w10 = (words)[10]; \
  const std::uint64_t v##_w11 = (words)[11]; \
  const std::uint64_t v##_w12 = (words)[12]; \
  const std::uint64_t v##_w13 = (words)[13]; \
  const std::uint64_t v##_w14 = (words)[14]; \
  const std::uint64_t v##_w15 = (words)[15]; \
  const std::uint64_t v##_w16 = (words)[16]; \
  const std::uint64_t v##_w17 = (words)[17]; \
  const std::uint64_t v##_w18 = (words)[18]; \
  const std::uint64_t v##_w19 = (words)[19]; \
  const std::uint64_t v##_w20 = (words)[20]; \
  const std::uint64_t v##_w21 = (words)[21]; \
  const std::uint64_t v##_w22 = (words)[22]; \
  const std::uint64_t v##_w23 = (words)[23]; \
  const std::uint64_t v##_w24 = (words)[24]; \
  const std::uint64_t v##_w25 = (words)[25]; \
  const std::uint64_t v##_w26 = (words)[26]; \
  const std::uint64_t v##_w27 = (words)[27]; \
  const std::uint64_t v##_w28 = (words)[28]; \
  const std::uint64_t v##_w29 = (words)[29]; \
  const std::uint64_t v##_w30 = (words)[30]; \
  const std::uint64_t v##_w31 = (words)[31]; \
  const std::uint64_t v##_w32 = (words)[32]; \
  const std::uint64_t v##_w33 = (words)[33]; \
  const std::uint64_t v##_w34 = (words)[34]; \
  const std::uint64_t v##_w35 = (words)[35]; \
  const std::uint64_t v##_w36 = (words)[36]; \
  const std::uint64_t v##_w37 = (words)[37]; \
  const std::uint64_t v##_w38 = (words)[38]; \
  const std::uint64_t v##_w39 = (words)[39]; \
  const std::uint64_t v##_w40 = (words)[40]; \
  const std::uint64_t v##_w41 = (words)[41]; \
  const std::uint64_t v##_w42 = (words)[42]; \
  const std::uint64_t v##_w43 = (words)[43]; \
  const std::uint64_t v##_w44 = (words)[44]; \
  const std::uint64_t v##_w45 = (words)[45]; \
  const std::uint64_t v##_w46 = (words)[46]; \
  const std::uint64_t v##_w47 = (words)[47]; \
  const std::uint64_t v##_w48 = (words)[48]; \
  const std::uint64_t v##_w49 = (words)[49]; \
  const std::uint64_t v##_w50 = (words)[50]; \
  const std::uint64_t v##_w51 = (words)[51]; \
  const std::uint64_t v##_w52 = (words)[52]; \
  const std::uint64_t v##_w53 = (words)[53]; \
  const std::uint64_t v##_w54 = (words)[54]; \
  const std::uint64_t v##_w55 = (words)[55]; \
  const std::uint64_t v##_w56 = (words)[56]; \
  const std::uint64_t v##_w57 = (words)[57]; \
  const std::uint64_t v##_w58 = (words)[58]; \
  const std::uint64_t v##_w59 = (words)[59]; \
  const std::uint64_t v##_w60 = (words)[60]; \
  const std::uint64_t v##_w61 = (words)[61]; \
  const std::uint64_t v##_w62 = (words)[62]; \
  const std::uint64_t v##_w63 = (words)[63];

#define HK_KERNEL_WORDS(v) v##_w0, v##_w1, v##_w2, v##_w3, v##_w4, v##_w5, v##_w6, v##_w7, v##_w8, v##_w9, v##_w10, v##_w11, v##_w12, v##_w13, v##_w14, v##_w15, v##_w16, v##_w17, v##_w18, v##_w19, v##_w20, v##_w21, v##_w22, v##_w23, v##_w24, v##_w25, v##_w26, v##_w27, v##_w28, v##_w29, v##_w30, v##_w31, v##_w32, v##_w33, v##_w34, v##_w35, v##_w36, v##_w37, v##_w38, v##_w39, v##_w40, v##_w41, v##_w42, v##_w43, v##_w44, v##_w45, v##_w46, v##_w47, v##_w48, v##_w49, v##_w50, v##_w51, v##_w52, v##_w53, v##_w54, v##_w55, v##_w56, v##_w57, v##_w58, v##_w59, v##_w60, v##_w61, v##_w62, v##_w63
