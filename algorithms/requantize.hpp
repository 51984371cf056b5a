// QuantizedLinearMatMul's requantization, RNE(acc * multiplier) + zero_point saturated to the
// output range, exact for every 64-bit acc and every finite non-negative multiplier. One
// definition for the reference, the host epilogue and the offload kernels: it uses no libm, so it
// compiles for the device too.
#pragma once

#include <bit>
#include <cstdint>

namespace hk::detail {

/// RNE(acc * multiplier) saturated to +-limit, exactly through the multiplier's bits (multiplier =
/// mantissa * 2^shift), in an integer type Wide that holds acc * mantissa; past zero_shift bits of
/// shift the value lies within +-1/2, never on it, and rounds to 0.
template <class Wide, int zero_shift>
inline std::int64_t rounded_product(std::int64_t acc, float multiplier, std::int64_t limit) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(multiplier);
  const int biased = int(bits >> 23) & 0xff;
  const std::int64_t mantissa = biased == 0 ? std::int64_t(bits & 0x7fffff) : std::int64_t((bits & 0x7fffff) | 0x800000);
  const int shift = (biased == 0 ? 1 : biased) - 150;
  const Wide product = Wide(acc) * mantissa;
  if (product == 0) return 0;
  if (shift >= 0) return product > 0 ? limit : -limit;  // |acc| >= 2^29 and multiplier >= 1
  if (-shift >= zero_shift) return 0;
  const int s = -shift;
  Wide quotient = product >> s;  // floor
  const Wide remainder = product - (quotient << s);
  const Wide half = Wide(1) << (s - 1);
  if (remainder > half || (remainder == half && (quotient & 1))) ++quotient;
  return quotient < -limit ? -limit : quotient > limit ? limit : std::int64_t(quotient);
}

/// RNE(acc * multiplier) for |acc| >= 2^29, saturated to +-limit. Out of line: callers inline the
/// common case into every output.
[[gnu::noinline]] inline std::int64_t requantize_wide(std::int64_t acc, float multiplier, std::int64_t limit) {
  return rounded_product<__int128, 90>(acc, multiplier, limit);  // |product| < 2^88
}

/// requantize_wide for |acc| < 2^39, in 64-bit integers (|acc * mantissa| < 2^63) and inline:
/// the GPU tensor-core epilogues, whose products of at most 65536 terms stay below 2^36, then call
/// no function (a call in a kernel with Hopper's asynchronous wgmma serializes its products).
inline std::int64_t requantize_wide_below_2_39(std::int64_t acc, float multiplier, std::int64_t limit) {
  return rounded_product<std::int64_t, 64>(acc, multiplier, limit);
}

/// RNE(acc * multiplier) + zero_point saturated to [qmin, qmax].
inline std::int32_t requantize_exact(std::int64_t acc, float multiplier, std::int32_t zero_point, std::int32_t qmin,
                                     std::int32_t qmax) {
  constexpr std::int64_t limit = std::int64_t(1) << 20;  // far beyond any 8-bit result
  std::int64_t rounded;
  if (acc > -(std::int64_t(1) << 29) && acc < (std::int64_t(1) << 29)) {
    // 29 + 24 significant bits fit a double: the product is exact, so its RNE is too.
    const double v = __builtin_rint(double(acc) * double(multiplier));
    rounded = v < -double(limit) ? -limit : v > double(limit) ? limit : std::int64_t(v);
  } else {
    rounded = requantize_wide(acc, multiplier, limit);
  }
  const std::int64_t v = rounded + zero_point;
  return std::int32_t(v < qmin ? qmin : v > qmax ? qmax : v);
}

/// requantize_exact for |acc| < 2^39 (see requantize_wide_below_2_39), calling no function.
inline std::int32_t requantize_below_2_39(std::int64_t acc, float multiplier, std::int32_t zero_point,
                                          std::int32_t qmin, std::int32_t qmax) {
  const std::int64_t v = requantize_wide_below_2_39(acc, multiplier, std::int64_t(1) << 20) + zero_point;
  return std::int32_t(v < qmin ? qmin : v > qmax ? qmax : v);
}

/// 1.5 * 2^52: a double in [2^52, 2^53) has spacing 1, so adding this rounds to an integer, to
/// nearest even, and leaves that integer in the sum's low bits.
inline constexpr double round_bias = 0x1.8p52;

/// requantize_exact for |acc| < 2^53 and the multiplier already widened to a double, plus
/// round_bias, whose low byte is then the 8-bit output; low and high are round_bias + qmin and
/// round_bias + qmax. One fused multiply-add rounds the exact product once: to RNE(acc *
/// multiplier) + round_bias while |acc * multiplier| < 2^51, monotonically beyond, where the
/// clamp decides. The zero point comes after the rounding (an odd one would move ties). Written
/// for loops that vectorize: no conversion back to an integer.
inline double requantize_biased(double acc, double multiplier, double zero_point, double low, double high) {
  double v = __builtin_fma(acc, multiplier, round_bias) + zero_point;
  v = v < low ? low : v;
  return v > high ? high : v;
}

/// round_bias for float32: 1.5 * 2^23, where a float32 has spacing 1.
inline constexpr float round_bias_float = 0x1.8p23f;

/// requantize_biased in float32, for |acc| <= 2^24 (every such integer is a float32): the same
/// single rounding of the exact product, to RNE(acc * multiplier) + round_bias_float while
/// |acc * multiplier| < 2^22, monotonically beyond. Twice the lanes of the double form.
inline float requantize_biased_float(float acc, float multiplier, float zero_point, float low, float high) {
  float v = __builtin_fmaf(acc, multiplier, round_bias_float) + zero_point;
  v = v < low ? low : v;
  return v > high ? high : v;
}

/// requantize_exact for |acc| < 2^29, with the multiplier already widened to a double: the product
/// is exact (29 + 24 significant bits); it is clamped to +-2^20 first (an integer, so rounding a
/// clamped value changes nothing), then rounded to nearest even by adding 1.5 * 2^52, whose
/// spacing is 1, so that the sum's low 32 bits hold the rounded value. Fewer conversions than
/// rint and a double-to-integer conversion, which the GPU epilogues run once per output.
inline std::int32_t requantize_narrow(std::int32_t acc, double multiplier, std::int32_t zero_point, std::int32_t qmin,
                                      std::int32_t qmax) {
  constexpr double limit = 1 << 20;
  double x = double(acc) * multiplier;
  x = x < -limit ? -limit : x > limit ? limit : x;
  const std::int32_t rounded = std::int32_t(std::uint32_t(std::bit_cast<std::uint64_t>(x + round_bias)));
  const std::int64_t v = std::int64_t(rounded) + zero_point;
  return std::int32_t(v < qmin ? qmin : v > qmax ? qmax : v);
}

}  // namespace hk::detail
