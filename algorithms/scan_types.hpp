// The element and accumulator types of the cumulative operators, and their combine functions.
// Shared by the reference and every schedule so that all of them round identically.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "hetkern/dtype.hpp"
#include "hetkern/error.hpp"

namespace hk::detail {

using float16_t = _Float16;

/// bfloat16 storage: the upper 16 bits of a float32. Conversions are written out in integer
/// arithmetic because clang's own narrowing calls a runtime function (__truncsfbf2) that the
/// libgcc of the supported systems lacks.
struct bfloat16_t {
  std::uint16_t bits;

  bfloat16_t() = default;
  /// Rounds to nearest even; NaN stays a (quiet) NaN of the same sign.
  explicit bfloat16_t(float f) : bits(round_to_bfloat16(std::bit_cast<std::uint32_t>(f))) {}
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t(bits) << 16); }
  friend bool operator==(bfloat16_t a, bfloat16_t b) { return a.bits == b.bits; }

  static constexpr std::uint16_t round_to_bfloat16(std::uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);
    return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

/// The float64 accumulator: an unevaluated sum hi + lo with hi = fl(hi + lo), which carries
/// about 106 significant bits. Sums use an error-free TwoSum and products an exact fma product
/// (TwoProd), so each output, hi, is the accumulated value rounded once to float64.
struct DoubleDouble {
  double hi = 0, lo = 0;

  // hi = fl(s + e), lo = the rounding error. Infinities and NaNs carry no error term (it would be
  // NaN); an exact-zero error keeps s itself, so that -0.0 + -0.0 stays -0.0.
  static DoubleDouble normalized(double s, double e) {
    if (!std::isfinite(s)) return {s, 0};
    const double hi = s + e;
    if (!std::isfinite(hi)) return {hi, 0};
    return {e == 0 ? s : hi, e - (hi - s)};
  }
  friend DoubleDouble operator+(DoubleDouble a, DoubleDouble b) {
    const double s = a.hi + b.hi;
    const double bb = s - a.hi;
    const double e = (a.hi - (s - bb)) + (b.hi - bb);  // TwoSum: a.hi + b.hi == s + e exactly
    return normalized(s, e + (a.lo + b.lo));
  }
  friend DoubleDouble operator*(DoubleDouble a, DoubleDouble b) {
    const double p = a.hi * b.hi;
    const double e = std::fma(a.hi, b.hi, -p);  // TwoProd: a.hi * b.hi == p + e exactly
    // Statements of their own: no multiply is fused into an add, on any target.
    const double cross_hi = a.hi * b.lo;
    const double cross_lo = a.lo * b.hi;
    return normalized(p, e + (cross_hi + cross_lo));
  }
};

// Storage type T, accumulator type Acc: float32 accumulates in float64, float16 and bfloat16 in
// float32, float64 in double-double (spec: each output rounded once); integers accumulate in
// their unsigned twin so that overflow wraps modulo 2^bits without undefined behaviour.
template <class T> struct ScanTraits;
template <> struct ScanTraits<float> { using Acc = double; };
template <> struct ScanTraits<float16_t> { using Acc = float; };
template <> struct ScanTraits<bfloat16_t> { using Acc = float; };
template <> struct ScanTraits<double> { using Acc = DoubleDouble; };
template <> struct ScanTraits<std::int32_t> { using Acc = std::uint32_t; };
template <> struct ScanTraits<std::uint32_t> { using Acc = std::uint32_t; };
template <> struct ScanTraits<std::int64_t> { using Acc = std::uint64_t; };
template <> struct ScanTraits<std::uint64_t> { using Acc = std::uint64_t; };

template <class T> using AccOf = typename ScanTraits<T>::Acc;

template <class T> inline AccOf<T> widen(T x) {
  if constexpr (std::is_same_v<T, double>)
    return {x, 0};
  else
    return static_cast<AccOf<T>>(x);
}
// Unsigned-to-signed conversion is modular in C++20; float narrowing rounds to nearest even.
template <class T> inline T narrow(AccOf<T> a) {
  if constexpr (std::is_same_v<T, double>)
    return a.hi;
  else
    return static_cast<T>(a);
}

/// A stored floating-point value as float64 (exact for every floating-point scan type).
template <class T> inline double to_double(T x) {
  if constexpr (std::is_same_v<T, bfloat16_t>)
    return double(float(x));
  else
    return double(x);
}

struct Sum {
  template <class A> static A identity() { return A{0}; }
  template <class A> static A apply(A a, A b) { return a + b; }
};
struct Product {
  template <class A> static A identity() { return A{1}; }
  template <class A> static A apply(A a, A b) { return a * b; }
};

/// Calls f(T{}) with the storage type of a cumulative operator's element type.
template <class F> decltype(auto) visit_scan_type(DataType t, F&& f) {
  switch (t) {
    case DataType::float32: return f(float{});
    case DataType::float16: return f(float16_t{});
    case DataType::float64: return f(double{});
    case DataType::bfloat16: return f(bfloat16_t{});
    case DataType::int32: return f(std::int32_t{});
    case DataType::uint32: return f(std::uint32_t{});
    case DataType::int64: return f(std::int64_t{});
    case DataType::uint64: return f(std::uint64_t{});
    default: break;
  }
  throw Error(Errc::invalid_type, "scan", "input", "internal: not a scan type");
}

/// Calls f(Sum{}) or f(Product{}).
template <class F> decltype(auto) visit_combine(bool product, F&& f) {
  return product ? f(Product{}) : f(Sum{});
}

}  // namespace hk::detail
