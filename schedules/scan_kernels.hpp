// The SIMD kernels of the cumulative schedules, one set per instruction-set level, chosen at run
// time from hk::active_isa(). Each level compiles the same generic kernels (scan_kernels.inc)
// for its vector width in its own file.
#pragma once

#include <cstdint>

#include "algorithms/scan_types.hpp"
#include "hetkern/info.hpp"

namespace hk::detail {

/// The carry an inclusive line starts from: combining it with x(0) yields exactly x(0), sign of
/// zero included (-0.0 + x == x for every x, whereas +0.0 + -0.0 == +0.0).
template <class Op, class Acc> constexpr Acc inclusive_start() {
  if constexpr (std::is_same_v<Op, Sum> && std::is_floating_point_v<Acc>)
    return -Acc(0);
  else if constexpr (std::is_same_v<Op, Sum> && std::is_same_v<Acc, DoubleDouble>)
    return DoubleDouble{-0.0, 0.0};
  else
    return Op::template identity<Acc>();
}

/// The carry a line starts from.
template <class Op, class Acc> constexpr Acc line_start(bool exclusive) {
  return exclusive ? Op::template identity<Acc>() : inclusive_start<Op, Acc>();
}

/// What every line of a call continues from: *carry (an Acc on the host: the fold of what precedes
/// the call's lines, when they are parts of longer ones) or, without one, the carry a line starts from.
template <class Op, class Acc> Acc line_start_value(const void* carry, bool exclusive) {
  return carry ? *static_cast<const Acc*>(carry) : line_start<Op, Acc>(exclusive);
}

/// How a run of contiguous elements is scanned.
struct RowMode {
  bool exclusive = false;
  bool backward = false;  // traversal walks x[0], x[-1], x[-2], ... (decreasing direction)
  bool stream = false;    // non-temporal stores for the aligned part of the output
  /// When set: as many bytes from here as the row reads are pulled towards L2 while the row
  /// computes, so that a scan bound by its arithmetic overlaps the memory reads of the next block.
  const void* prefetch = nullptr;
  /// When no `prefetch` is given: the row requests the elements this many bytes ahead of those it
  /// reads, in traversal order. Out of order execution alone keeps too few reads in flight behind
  /// the scan's arithmetic to reach the copy's bandwidth; 0 leaves it to the hardware prefetcher.
  std::int64_t lookahead_bytes = 0;
};

template <class T, class Op> struct ScanKernels {
  using Acc = AccOf<T>;
  /// Scans n elements, x and y pointing at the first traversed one, continuing from `carry`
  /// (the fold of everything traversed before). Returns the carry after the last element.
  /// Reads each element before writing its output, so x == y (in place) is allowed.
  Acc (*row)(const T* x, T* y, std::int64_t n, Acc carry, RowMode mode);
  /// The fold of x[0..n), starting from inclusive_start (any association: sums of lanes).
  Acc (*fold)(const T* x, std::int64_t n);
  /// `width` (<= max_scan_tile) neighbouring contiguous lines side by side, `length` steps along
  /// the scanned axis; step q reads x + q * in_step and writes y + q * out_step. The same
  /// arithmetic, element by element, as the reference.
  void (*columns)(const T* x, T* y, std::int64_t width, std::int64_t length,
                  std::int64_t in_step, std::int64_t out_step, bool exclusive, bool stream);
};

inline constexpr std::int64_t max_scan_tile = 4096;

/// Every kernel set of one instruction-set level.
struct ScanKernelSet {
  template <class T> struct PerType {
    ScanKernels<T, Sum> sum;
    ScanKernels<T, Product> product;
  };
  PerType<float> f32;
  PerType<float16_t> f16;
  PerType<double> f64;
  PerType<bfloat16_t> bf16;
  PerType<std::int32_t> i32;
  PerType<std::uint32_t> u32;
  PerType<std::int64_t> i64;
  PerType<std::uint64_t> u64;

  template <class T, class Op> const ScanKernels<T, Op>& get() const {
    const PerType<T>* p;
    if constexpr (std::is_same_v<T, float>) p = &f32;
    else if constexpr (std::is_same_v<T, float16_t>) p = &f16;
    else if constexpr (std::is_same_v<T, double>) p = &f64;
    else if constexpr (std::is_same_v<T, bfloat16_t>) p = &bf16;
    else if constexpr (std::is_same_v<T, std::int32_t>) p = &i32;
    else if constexpr (std::is_same_v<T, std::uint32_t>) p = &u32;
    else if constexpr (std::is_same_v<T, std::int64_t>) p = &i64;
    else p = &u64;
    if constexpr (std::is_same_v<Op, Sum>) return p->sum;
    else return p->product;
  }
};

const ScanKernelSet& scan_kernels_portable();
#if defined(__x86_64__)
const ScanKernelSet& scan_kernels_avx2();
const ScanKernelSet& scan_kernels_avx512();
#endif

/// The kernels for a level (avx512_vnni and amx use the avx512 ones).
const ScanKernelSet& scan_kernels(Isa isa);

/// The scan kernels used at a level, e.g. "avx512: 8 x f64 lanes, f16 via vcvtph2ps, streaming stores".
const char* scan_kernel_path(Isa isa);

}  // namespace hk::detail
