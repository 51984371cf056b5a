// The cumulative kernels for the portable level: the x86-64 baseline (16-byte vectors).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "schedules/scan_kernels.hpp"

namespace hk::detail {
namespace scan_portable {

constexpr int vector_bytes = 16;
constexpr bool has_fma = false;
#include "schedules/scan_kernels.inc"

}  // namespace scan_portable

const ScanKernelSet& scan_kernels_portable() { return scan_portable::kernel_set; }

}  // namespace hk::detail
