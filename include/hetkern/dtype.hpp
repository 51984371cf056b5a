// Element types of hetkern tensors.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace hk {

enum class DataType {
  float16,
  float32,
  int8,
  uint8,
  int32,
  uint32,
  int64,
  uint64,
  float64,   // IEEE binary64
  bfloat16,  // the upper half of an IEEE binary32: 8 exponent bits, 7 fraction bits
};

/// Size of one element in bytes.
constexpr std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::uint8: return 1;
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::float32:
    case DataType::int32:
    case DataType::uint32: return 4;
    case DataType::int64:
    case DataType::uint64:
    case DataType::float64: return 8;
  }
  return 0;
}

/// Lower-case name as used in messages, schedules and the CLI ("float32", "uint8", ...).
constexpr std::string_view name_of(DataType t) {
  switch (t) {
    case DataType::float16: return "float16";
    case DataType::float32: return "float32";
    case DataType::int8: return "int8";
    case DataType::uint8: return "uint8";
    case DataType::int32: return "int32";
    case DataType::uint32: return "uint32";
    case DataType::int64: return "int64";
    case DataType::uint64: return "uint64";
    case DataType::float64: return "float64";
    case DataType::bfloat16: return "bfloat16";
  }
  return "?";
}

/// Inverse of name_of; also accepts the short forms f16, f32, f64, bf16, i8, u8, s8, i32, u32,
/// i64, u64.
std::optional<DataType> parse_data_type(std::string_view name);

}  // namespace hk
