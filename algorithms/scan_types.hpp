// The element and accumulator types of the cumulative operators, and their combine functions.
// Shared by the reference and every schedule so that all of them round identically.
#pragma once

#include <cstdint>
#include <type_traits>

#include "hetkern/dtype.hpp"
#include "hetkern/error.hpp"

namespace hk::detail {

using float16_t = _Float16;

// Storage type T, accumulator type Acc: float32 accumulates in float64 and float16 in float32
// (spec: each output rounded once); integers accumulate in their unsigned twin so that overflow
// wraps modulo 2^bits without undefined behaviour.
template <class T> struct ScanTraits;
template <> struct ScanTraits<float> { using Acc = double; };
template <> struct ScanTraits<float16_t> { using Acc = float; };
template <> struct ScanTraits<std::int32_t> { using Acc = std::uint32_t; };
template <> struct ScanTraits<std::uint32_t> { using Acc = std::uint32_t; };
template <> struct ScanTraits<std::int64_t> { using Acc = std::uint64_t; };
template <> struct ScanTraits<std::uint64_t> { using Acc = std::uint64_t; };

template <class T> using AccOf = typename ScanTraits<T>::Acc;

template <class T> inline AccOf<T> widen(T x) { return static_cast<AccOf<T>>(x); }
// Unsigned-to-signed conversion is modular in C++20; float narrowing rounds to nearest even.
template <class T> inline T narrow(AccOf<T> a) { return static_cast<T>(a); }

struct Sum {
  template <class A> static A identity() { return A(0); }
  template <class A> static A apply(A a, A b) { return a + b; }
};
struct Product {
  template <class A> static A identity() { return A(1); }
  template <class A> static A apply(A a, A b) { return a * b; }
};

/// Calls f(T{}) with the storage type of a cumulative operator's element type.
template <class F> decltype(auto) visit_scan_type(DataType t, F&& f) {
  switch (t) {
    case DataType::float32: return f(float{});
    case DataType::float16: return f(float16_t{});
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
