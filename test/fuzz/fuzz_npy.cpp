// The .npy reader on arbitrary bytes: it refuses with hk::Error(invalid_file) or returns an array
// whose data is exactly what its descriptor describes, and a C-order array written back by
// serialize reads back identical.
#include <cstddef>
#include <cstdint>
#include <span>

#include "test/fuzz/fuzz_support.hpp"
#include "tools/npy.hpp"

using namespace hk;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  npy::Array array;
  try {
    array = npy::parse(file, "fuzz.npy");
  } catch (const Error& e) {
    fuzz::require(e.code() == Errc::invalid_file && e.op() == "npy", "npy refused with another code");
    return 0;
  }
  const TensorDesc& d = array.desc;
  fuzz::require(d.rank() <= max_rank, "npy accepted a rank above 8");
  std::uint64_t bytes = size_of(d.dtype());
  for (std::int64_t s : d.sizes()) {
    fuzz::require(s >= 1, "npy accepted a size below 1");
    fuzz::require(!__builtin_mul_overflow(bytes, std::uint64_t(s), &bytes), "npy accepted a byte count beyond 64 bits");
  }
  fuzz::require(array.bytes.size() == bytes, "npy data size differs from its descriptor");
  fuzz::require(bytes < size, "npy returned more data than the file holds");
  if (d.is_packed()) {
    const auto again = npy::parse(npy::serialize(d, array.data()), "again.npy");
    fuzz::require(again.desc.to_string() == d.to_string() && again.bytes == array.bytes,
                  "serialize then parse changed the array");
  }
  return 0;
}
