// Reading and writing numpy's .npy files (format versions 1.0, 2.0 and 3.0).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hetkern/tensor.hpp"

namespace hk::npy {

/// An array read from a .npy file.
struct Array {
  /// Data type, sizes and element strides. A Fortran-order file gives column-major strides: the
  /// data is kept as stored, not transposed.
  TensorDesc desc;
  /// Little-endian element data exactly as in the file: element_count * size_of(dtype) bytes.
  std::vector<std::byte> bytes;

  const void* data() const noexcept { return bytes.data(); }
};

/// Reads a .npy file. Throws hk::Error(Errc::invalid_file, "npy", path, rule) when the file cannot
/// be read or is not a .npy file hetkern supports (see parse).
Array read(const std::string& path);

/// Parses the contents of a .npy file held in memory; `name` is the subject of errors. Accepts
/// descr '<f2' '<f4' '|i1' '|u1' '<i4' '<u4' '<i8' '<u8' ('=' for '<', and any byte order for
/// one-byte types), C or Fortran order, rank 0 to 8, sizes >= 1. Anything else, including trailing
/// bytes after the data, throws hk::Error(Errc::invalid_file, "npy", name, rule).
Array parse(std::span<const std::byte> file, const std::string& name);

/// The bytes of a version 1.0 .npy file holding a packed row-major tensor, with the preamble padded
/// to a multiple of 64 bytes as numpy does. Throws hk::Error (invalid_shape, invalid_stride or
/// invalid_parameter, subject "desc" or "data") when desc is not packed, has a size below 1 or a
/// byte size beyond 64 bits, or data is null.
std::vector<std::byte> serialize(const TensorDesc& desc, const void* data);

/// Writes serialize(desc, data) to path as cli::write_output does (tools/output_file.hpp): "-" is
/// standard output, links are followed, FIFOs and devices are written in place, and a regular file
/// is replaced atomically (on failure it is left as it was). Throws hk::Error(Errc::invalid_file,
/// "npy", path, reason); serialize's errors pass through.
void write(const std::string& path, const TensorDesc& desc, const void* data);

}  // namespace hk::npy
