// Tensor descriptors and views: a data type, 1 to 8 sizes and element strides, plus a pointer.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "hetkern/dtype.hpp"

namespace hk {

inline constexpr int max_rank = 8;

/// Shape and layout of a tensor. Strides count elements, not bytes. Without explicit strides the
/// layout is packed row-major (last dimension fastest). On inputs a stride of 0 broadcasts that
/// dimension; strides larger than the packed ones describe padding or other orders (a Fortran-order
/// array is a strided tensor). Descriptors are checked by the operator that receives them, so a
/// descriptor may hold sizes an operator will reject; only a rank above 8 or a strides list of the
/// wrong length throws here.
class TensorDesc {
 public:
  TensorDesc() = default;
  TensorDesc(DataType dtype, std::span<const std::int64_t> sizes,
             std::span<const std::int64_t> strides = {});
  TensorDesc(DataType dtype, std::initializer_list<std::int64_t> sizes,
             std::initializer_list<std::int64_t> strides = {})
      : TensorDesc(dtype, std::span(sizes.begin(), sizes.size()),
                   std::span(strides.begin(), strides.size())) {}

  DataType dtype() const noexcept { return dtype_; }
  int rank() const noexcept { return rank_; }
  std::int64_t size(int dim) const noexcept { return sizes_[dim]; }
  std::int64_t stride(int dim) const noexcept { return strides_[dim]; }
  std::span<const std::int64_t> sizes() const noexcept { return {sizes_.data(), std::size_t(rank_)}; }
  std::span<const std::int64_t> strides() const noexcept { return {strides_.data(), std::size_t(rank_)}; }
  /// True when the strides are exactly the packed row-major ones.
  bool is_packed() const noexcept;
  /// Product of the sizes (1 for rank 0). Meaningful once an operator has validated the sizes.
  std::int64_t element_count() const noexcept;
  /// "float32{2,3,4}" or "float32{2,3,4} strides {1,2,6}" when not packed.
  std::string to_string() const;

 private:
  DataType dtype_ = DataType::float32;
  int rank_ = 0;
  std::array<std::int64_t, max_rank> sizes_{};
  std::array<std::int64_t, max_rank> strides_{};
};

/// A read-only tensor: descriptor plus the address of element {0,...,0}.
struct ConstTensor {
  TensorDesc desc;
  const void* data = nullptr;
};

/// A writable tensor: descriptor plus the address of element {0,...,0}.
struct Tensor {
  TensorDesc desc;
  void* data = nullptr;

  operator ConstTensor() const noexcept { return {desc, data}; }
};

}  // namespace hk
