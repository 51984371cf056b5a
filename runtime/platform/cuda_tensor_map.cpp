// Tensor maps through the driver's cuTensorMapEncodeTiled (cuda_tensor_map.hpp).
#include "runtime/platform/cuda_tensor_map.hpp"

#include "runtime/platform/cuda_driver.hpp"

namespace hk::detail {
namespace {

// cuda.h's values, which this file does not include (nothing of hetkern links CUDA).
constexpr int uint8_type = 0, no_interleave = 0, l2_promotion_256 = 3, no_fill = 0;
constexpr int swizzle_mode(std::uint32_t box_bytes) { return box_bytes == 128 ? 3 : box_bytes == 64 ? 2 : 1; }

using Encode = int (*)(void* map, int type, std::uint32_t rank, void* base, const std::uint64_t* dims,
                       const std::uint64_t* strides, const std::uint32_t* box, const std::uint32_t* element_strides,
                       int interleave, int swizzle, int l2_promotion, int fill);

Encode encoder() {
  static const auto encode = reinterpret_cast<Encode>(cuda_driver_function("cuTensorMapEncodeTiled"));
  return encode;
}

}  // namespace

bool cuda_tensor_maps_available() { return encoder() != nullptr; }

bool cuda_byte_matrix_map(void* map, const void* base, std::uint64_t line_bytes, std::uint64_t lines,
                          std::uint64_t line_stride, std::uint32_t box_bytes, std::uint32_t box_lines) {
  const Encode encode = encoder();
  if (!encode || (box_bytes != 32 && box_bytes != 64 && box_bytes != 128)) return false;
  const std::uint64_t dims[2] = {line_bytes, lines}, strides[1] = {line_stride};
  const std::uint32_t box[2] = {box_bytes, box_lines}, element_strides[2] = {1, 1};
  return encode(map, uint8_type, 2, const_cast<void*>(base), dims, strides, box, element_strides, no_interleave,
                swizzle_mode(box_bytes), l2_promotion_256, no_fill) == 0;
}

}  // namespace hk::detail
