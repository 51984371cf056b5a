// Maps of the tensor memory accelerator (TMA, sm_90), which the CUDA driver alone can encode: the
// kernels that load boxes of a matrix with cp.async.bulk.tensor read them from device memory.
#pragma once

#include <cstdint>

namespace hk::detail {

/// The bytes of one map.
inline constexpr int cuda_tensor_map_bytes = 128;

/// Whether the driver makes tensor maps (cuTensorMapEncodeTiled, CUDA 12 and newer).
bool cuda_tensor_maps_available();

/// Fills `map` (cuda_tensor_map_bytes, 64-byte aligned, host memory) with the map of a byte matrix
/// at device address `base`: `lines` lines of `line_bytes` bytes, `line_stride` bytes apart (a
/// multiple of 16), loaded in boxes of `box_bytes` (32, 64 or 128) by `box_lines` (at most 256)
/// swizzled in the mode as wide as a box's line. False where the driver has no
/// cuTensorMapEncodeTiled (before CUDA 12) or refuses the matrix.
bool cuda_byte_matrix_map(void* map, const void* base, std::uint64_t line_bytes, std::uint64_t lines,
                          std::uint64_t line_stride, std::uint32_t box_bytes, std::uint32_t box_lines);

}  // namespace hk::detail
