// The cumulative kernels for the avx2 level: 32-byte vectors, float16 through F16C.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "schedules/scan_kernels.hpp"

#if defined(__x86_64__)
namespace hk::detail {

// Only the functions of this namespace get the target; everything included above stays
// baseline, so no inline function compiled for AVX2 can be picked by the linker for other code.
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
namespace scan_avx2 {

constexpr int vector_bytes = 32;
constexpr bool has_fma = true;
#include "schedules/scan_kernels.inc"

}  // namespace scan_avx2
#pragma clang attribute pop

const ScanKernelSet& scan_kernels_avx2() { return scan_avx2::kernel_set; }

}  // namespace hk::detail
#endif
