// The cumulative kernels for the avx512 level: 64-byte vectors (8 float64 or 16 float32 lanes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "schedules/scan_kernels.hpp"

#if defined(__x86_64__)
namespace hk::detail {

// Only the functions of this namespace get the target; everything included above stays
// baseline, so no inline function compiled for AVX-512 can be picked by the linker for other code.
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))), apply_to = function)
namespace scan_avx512 {

constexpr int vector_bytes = 64;
constexpr bool has_fma = true;
#include "schedules/scan_kernels.inc"

}  // namespace scan_avx512
#pragma clang attribute pop

const ScanKernelSet& scan_kernels_avx512() { return scan_avx512::kernel_set; }

}  // namespace hk::detail
#endif
